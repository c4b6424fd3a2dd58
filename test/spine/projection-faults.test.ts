// One fact can never stop the ledger projection for everyone. Facts are written straight into the LEDGER stream, as
// an older version (or a bug) could have written them: text PostgreSQL cannot hold (NUL, a lone surrogate) is
// projected with the text made storable; a fact PostgreSQL refuses outright, and a message that is not JSON at all,
// are parked with their errors and raised as a health alert, and the facts after them are projected as usual.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import pino from 'pino';
import { principalFactsOf } from '../../actors/index.ts';
import { type HealthAlert, healthAlertKey, type LedgerFact } from '../../contracts/index.ts';
import { openPool, rebuildProjection } from '../../storage/index.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
before(async () => {
  sys = await startSystem();
});
after(async () => {
  await sys.stop();
});

const checkpointName = () => principalFactsOf(sys.names, sys.config).checkpoint;
const parked = () =>
  sys.sql<{ stream_seq: number; error: string; fact: string }[]>`
    SELECT stream_seq, error, fact FROM parked_facts WHERE projection = ${checkpointName()} ORDER BY stream_seq`;

test('[SPINE-PROJECTION-PARK] text a store cannot hold is made storable; an unwritable fact is parked and the projection goes on', async () => {
  const agent = await sys.register();
  const js = jetstream(sys.nc);
  const ghost = randomUUID();
  const subject = sys.names.ledgerSubject(ghost);
  const at = new Date().toISOString();
  const oddKey = 'odd\u0000key\ud800';
  const credited: LedgerFact = {
    type: 'credited',
    id: randomUUID(),
    at,
    principalId: ghost,
    sandbox: true,
    balanceAfterCents: 100,
    source: 'sandbox_topup',
    amountCents: 100,
    topupId: randomUUID(),
    idempotency: { key: oddKey, requestHash: 'h', agentId: randomUUID(), reply: { status: 201, body: {} } },
  };
  await js.publish(subject, JSON.stringify(credited));
  const unwritable = {
    type: 'escrow_held',
    id: randomUUID(),
    at,
    principalId: ghost,
    sandbox: true,
    balanceAfterCents: 0,
    orderId: 'not-a-uuid',
    agentId: randomUUID(),
    listingId: randomUUID(),
    artifactId: randomUUID(),
    editionId: randomUUID(),
    sellerPrincipalId: randomUUID(),
    priceCents: 100,
    formats: ['md'],
    floor: 0.5,
    priceSnapshotId: 'x@1',
    subscriptionId: null,
  };
  const badSeq = (await js.publish(subject, JSON.stringify(unwritable))).seq;
  const garbageSeq = (await js.publish(subject, '{ this is not json')).seq;

  // A later fact of a real principal, made through the API, reaches the projection.
  const topUp = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 7 }, key: 'after-bad' });
  assert.equal(topUp.status, 201);
  await eventually(
    'the top-up after the bad facts to be projected',
    async () => {
      const ledger = await sys.call('GET', '/v1/ledger', { token: agent.token });
      return ledger.body.items?.some((e: { amount_cents: number }) => e.amount_cents === 700) ? true : undefined;
    },
    15_000,
  );

  // The odd text is stored, made storable.
  const [entry] = await sys.sql`SELECT amount_cents FROM ledger_entries WHERE principal_id = ${ghost}`;
  assert.equal(entry?.amount_cents, 100);
  const [key] = await sys.sql<{ key: string }[]>`SELECT key FROM idempotency_keys WHERE principal_id = ${ghost}`;
  assert.equal(key?.key, 'odd\uFFFDkey\uFFFD');

  // The two facts that could not be written are parked, with what was wrong.
  const rows = await parked();
  assert.deepEqual(
    rows.map((r) => r.stream_seq),
    [badSeq, garbageSeq],
  );
  assert.match(rows[0]!.error, /uuid/i);
  assert.equal(JSON.parse(rows[0]!.fact).orderId, 'not-a-uuid');
  assert.match(rows[1]!.error, /not JSON/);

  // The operator is told: a health alert, and the parked-facts command.
  const health = await new Kvm(sys.nc).open(sys.names.buckets.health);
  const alert = (await health.get(healthAlertKey('projection_parked', checkpointName())))?.json<HealthAlert>();
  assert.equal(alert?.count, 2);
  assert.match(alert!.message, new RegExp(`sequence ${garbageSeq}`));
  const cli = await runCli(sys, ['parked-facts']);
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, new RegExp(`#${badSeq} parked`));

  // A rebuild tries them again (still unwritable: parked again), and leaves everything else as it was.
  const sql = openPool(sys.config.databaseUrl, 2);
  try {
    await rebuildProjection(sys.nc, sql, principalFactsOf(sys.names, sys.config), { log: pino({ level: 'silent' }) });
  } finally {
    await sql.end();
  }
  assert.deepEqual(
    (await parked()).map((r) => r.stream_seq),
    [badSeq, garbageSeq],
  );
  const ledger = await sys.call('GET', '/v1/ledger', { token: agent.token });
  assert.deepEqual(
    ledger.body.items.map((e: { amount_cents: number }) => e.amount_cents),
    [700, agent.balanceCents],
  );
});
