// One fact can never stop the ledger projection for everyone. Facts are written straight into the LEDGER stream, as
// an older version (or a bug) could have written them: text PostgreSQL cannot hold (NUL, a lone surrogate) is
// projected with the text made storable; a fact PostgreSQL refuses outright, and a message that is not JSON at all,
// are parked with their errors and raised as a health alert, and the facts after them are projected as usual.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import pino from 'pino';
import { eventsOf, principalFactsOf } from '../../actors/index.ts';
import { type HealthAlert, healthAlertKey, type LedgerFact } from '../../contracts/index.ts';
import { openPool, type Projection, rebuildProjection, runProjections, type Sql } from '../../storage/index.ts';
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
  // A held order whose text columns carry what an array literal must escape ("quotes", \backslashes, {braces},
  // commas, the word NULL) and what PostgreSQL cannot hold: written with that text intact or made storable.
  const oddText = 'a "b" \\c {d},NULL\u0000\ud800';
  const oddOrder = {
    ...unwritable,
    id: randomUUID(),
    orderId: randomUUID(),
    priceSnapshotId: oddText,
    formats: [oddText, 'md'],
    idempotency: { key: oddText, requestHash: 'h', agentId: randomUUID() },
  };
  await js.publish(subject, JSON.stringify(oddOrder));
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

  const storable = 'a "b" \\c {d},NULL\uFFFD\uFFFD';
  const [order] = await sys.sql<{ price_snapshot_id: string; formats: string[]; idempotency_key: string }[]>`
    SELECT price_snapshot_id, formats, idempotency_key FROM orders WHERE id = ${oddOrder.orderId}`;
  assert.deepEqual(order, { price_snapshot_id: storable, formats: [storable, 'md'], idempotency_key: storable });
  const [event] = await sys.sql<{ data: { order_id: string } }[]>`
    SELECT data FROM events WHERE id = ${`evt_${oddOrder.id}`}`;
  assert.equal(event?.data.order_id, oddOrder.orderId);

  // The two facts that could not be written are parked, with what was wrong.
  const rows = await parked();
  assert.deepEqual(
    rows.map((r) => r.stream_seq),
    [badSeq, garbageSeq],
  );
  assert.match(rows[0]!.error, /uuid/i);
  assert.equal(JSON.parse(rows[0]!.fact).orderId, 'not-a-uuid');
  assert.match(rows[1]!.error, /not JSON/);
  // The events store shares the pass but parks only what it cannot write itself: the message that is not JSON.
  const eventsParked = await sys.sql<{ stream_seq: number }[]>`
    SELECT stream_seq FROM parked_facts WHERE projection = ${eventsOf(sys.names).checkpoint} ORDER BY stream_seq`;
  assert.deepEqual(
    eventsParked.map((r) => Number(r.stream_seq)),
    [garbageSeq],
  );

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

test('[SPINE-PROJECTION-ONE-PASS] projections of one stream share a pass; each parks, and catches up after a rebuild, on its own', async () => {
  const jsm = await jetstreamManager(sys.nc);
  const js = jetstream(sys.nc);
  const stream = `${sys.names.streams.ledger.name}_ONEPASS`;
  const subject = `${sys.config.namespace}.onepass.fact`;
  await jsm.streams.add({ name: stream, subjects: [subject] });
  // Two stores of the same facts: one holds numbers only, so it refuses a fact the other takes.
  await sys.sql`CREATE TABLE onepass_numbers (seq bigint PRIMARY KEY, v integer NOT NULL)`;
  await sys.sql`CREATE TABLE onepass_texts (seq bigint PRIMARY KEY, v text NOT NULL)`;
  const store = (table: string): Projection<{ v: string }> => ({
    checkpoint: `${table}:${stream}`,
    stream,
    async apply(tx, batch) {
      await tx`INSERT INTO ${tx(table)} ${tx(batch.map((b) => ({ seq: b.seq, v: b.fact.v })))}`;
    },
    async truncate(tx) {
      await tx`TRUNCATE ${tx(table)}`;
    },
  });
  const numbers = store('onepass_numbers');
  const texts = store('onepass_texts');
  const publish = async (n: number, at: number) => {
    let seq = 0;
    for (let i = 0; i < n; i++) seq = (await js.publish(subject, JSON.stringify({ v: String(at + i) }))).seq;
    return seq;
  };
  const checkpoints = async () =>
    Object.fromEntries(
      (
        await sys.sql<{ name: string; last_seq: number }[]>`
          SELECT name, last_seq FROM projection_checkpoints WHERE name IN (${numbers.checkpoint}, ${texts.checkpoint})`
      ).map((r) => [r.name.split(':')[0], Number(r.last_seq)]),
    );
  const bothThrough = (seq: number, what: string) =>
    eventually(what, async () => {
      const c = await checkpoints();
      return c.onepass_numbers === seq && c.onepass_texts === seq ? true : undefined;
    });
  const counted = async () => {
    const [r] = await sys.sql<{ numbers: number; texts: number }[]>`
      SELECT (SELECT count(*)::int FROM onepass_numbers) AS numbers, (SELECT count(*)::int FROM onepass_texts) AS texts`;
    return r!;
  };
  const parkedFor = async (p: Projection<unknown>) =>
    (
      await sys.sql<{ stream_seq: number }[]>`
        SELECT stream_seq FROM parked_facts WHERE projection = ${p.checkpoint} ORDER BY stream_seq`
    ).map((r) => Number(r.stream_seq));
  const consumers = async () => (await jsm.consumers.list(stream).next()).length;

  await publish(9, 1);
  const notANumber = (await js.publish(subject, JSON.stringify({ v: 'ten' }))).seq;
  let last = await publish(20, 11);
  const stop = new AbortController();
  const running = runProjections(
    sys.nc,
    sys.sql,
    [numbers, texts],
    { log: pino({ level: 'silent' }), catchUpWhileOthersWaitMax: 5 },
    stop.signal,
  );
  try {
    await bothThrough(last, 'both stores to hold every fact');
    assert.deepEqual(await counted(), { numbers: 29, texts: 30 });
    assert.deepEqual(await parkedFor(numbers as Projection<unknown>), [notANumber]);
    assert.deepEqual(await parkedFor(texts as Projection<unknown>), []);
    assert.equal(await consumers(), 1, 'one consumer serves both projections');

    // A rebuild resets one store while the projector runs; facts keep coming. The reset store catches up (in rounds:
    // it is further behind than the others wait for), and both end in one pass again.
    await sys.sql.begin(async (tx) => {
      await numbers.truncate(tx as unknown as Sql);
      await tx`DELETE FROM parked_facts WHERE projection = ${numbers.checkpoint}`;
      await tx`UPDATE projection_checkpoints SET last_seq = 0 WHERE name = ${numbers.checkpoint}`;
    });
    last = await publish(20, 31);
    await bothThrough(last, 'both stores to hold every fact after the reset');
    assert.deepEqual(await counted(), { numbers: 49, texts: 50 });
    assert.deepEqual(await parkedFor(numbers as Projection<unknown>), [notANumber]);
    assert.deepEqual(await parkedFor(texts as Projection<unknown>), []);
    await eventually('the two projections to share one consumer again', async () =>
      (await consumers()) === 1 ? true : undefined,
    );
    last = await publish(3, 51);
    await bothThrough(last, 'the shared pass to project new facts');
    assert.deepEqual(await counted(), { numbers: 52, texts: 53 });
  } finally {
    stop.abort();
    await running;
    await jsm.streams.delete(stream).catch(() => {});
  }
});
