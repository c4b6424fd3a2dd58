// `assay audit` (docs/operations.md, Audit), the real CLI against a running system: after top-ups and purchases
// that were released and refunded (their payouts accrued) it finds nothing; a projection row changed in PostgreSQL
// is reported as exactly that row, with what differs, and the exit code says so; it stays clean while purchases
// run during it; and a fact appended with the id of an earlier one is found as a duplicated event id.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import type { LedgerFact } from '../../contracts/index.ts';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { type Agent, eventually, ledgerFacts, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let buyers: Agent[] = [];
let listings: { good: string; bad: string };

before(async () => {
  sys = await startSystem();
  const seller = await registerSeller(sys);
  listings = {
    good: (await verifiedListing(sys, seller.token, 'audit-good', { price: 300, good: true })).listingId,
    bad: (await verifiedListing(sys, seller.token, 'audit-bad', { price: 500, good: false })).listingId,
  };
  buyers = await Promise.all([0, 1, 2].map(() => sys.register()));
});
after(async () => {
  await sys?.stop();
});

const audit = async (...args: string[]) => {
  const r = await runCli(sys, ['audit', '--json', ...args]);
  assert.ok(r.code === 0 || r.code === 2, `audit exit ${r.code}: ${r.stderr}`);
  return { code: r.code, report: JSON.parse(r.stdout) };
};

async function buy(agent: Agent, listingId: string, key: string): Promise<string> {
  const r = await sys.call('POST', '/v1/orders', {
    token: agent.token,
    body: { listing_id: listingId, formats: ['md'] },
    key,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.order_id;
}

/** Every order settled and every projection at the stream's end. */
async function quiet() {
  await eventually(
    'orders settled and projections caught up',
    async () => {
      const [r] = await sys.sql<{ held: number; behind: number }[]>`
        SELECT (SELECT count(*)::int FROM orders WHERE state = 'held') held,
               (SELECT count(*)::int FROM projection_checkpoints
                 WHERE name LIKE ${`%:${sys.names.streams.ledger.name}`}
                   AND last_seq < ${(await ledgerFacts(sys)).at(-1)?.seq ?? 0}) behind`;
      return r!.held === 0 && r!.behind === 0 ? true : undefined;
    },
    30_000,
  );
}

test('[HARDEN-AUDIT] after top-ups, released and refunded purchases the audit is clean; a changed balance, order state or missing accrual is reported as exactly that row', async () => {
  const released: string[] = [];
  for (const [i, b] of buyers.entries()) {
    const t = await sys.call('POST', '/v1/topups', { token: b.token, body: { credits: 5 }, key: `top-${i}` });
    assert.equal(t.status, 201);
    released.push(await buy(b, listings.good, `good-${i}`));
    await buy(b, listings.bad, `bad-${i}`);
    released.push(await buy(b, listings.good, `good-again-${i}`));
  }
  await quiet();

  const clean = await audit();
  assert.equal(clean.code, 0, JSON.stringify(clean.report.violations));
  assert.equal(clean.report.violationCount, 0);
  assert.deepEqual(clean.report.orders, { total: 9, held: 0, released: 6, refunded: 3 });
  const sandbox = clean.report.money.sandbox;
  assert.equal(sandbox.releasedCents, 6 * 300);
  assert.equal(sandbox.accruedCents, 6 * 300, 'released = payouts accrued');
  assert.equal(sandbox.creditedCents, sandbox.availableCents + sandbox.heldCents + sandbox.spentCents);
  assert.equal(clean.report.rowsChecked.orders, 9);
  assert.equal(clean.report.rowsChecked.payouts, 6);
  assert.ok(clean.report.rowsChecked.events >= 9 * 2 + 3, 'every order event and top-up event was checked');
  assert.ok(clean.report.listings >= 2);

  // A balance changed behind the projection's back: the top-up's ledger entry.
  const [entry] = await sys.sql<{ stream_seq: number; balance_after_cents: number }[]>`
    SELECT stream_seq, balance_after_cents FROM ledger_entries
    WHERE principal_id = ${buyers[0]!.principalId} AND type = 'topup_credited'`;
  await sys.sql`UPDATE ledger_entries SET balance_after_cents = balance_after_cents + 100
                WHERE stream_seq = ${entry!.stream_seq}`;
  let found = await audit();
  assert.equal(found.code, 2);
  assert.deepEqual(found.report.violations, [
    {
      kind: 'row_differs',
      subject: `ledger_entries seq ${entry!.stream_seq}`,
      message: `balance_after_cents: fact says ${entry!.balance_after_cents}, row has ${entry!.balance_after_cents + 100}`,
      differences: [
        {
          field: 'balance_after_cents',
          expected: entry!.balance_after_cents,
          actual: entry!.balance_after_cents + 100,
        },
      ],
    },
  ]);
  await sys.sql`UPDATE ledger_entries SET balance_after_cents = ${entry!.balance_after_cents}
                WHERE stream_seq = ${entry!.stream_seq}`;

  // A released order shown as refunded.
  const order = released[1]!;
  await sys.sql`UPDATE orders SET state = 'auto_refunded' WHERE id = ${order}`;
  found = await audit();
  assert.equal(found.code, 2);
  assert.equal(found.report.violationCount, 1, JSON.stringify(found.report.violations));
  assert.deepEqual(found.report.violations[0].subject, `order ${order}`);
  assert.deepEqual(found.report.violations[0].differences, [
    { field: 'state', expected: 'released', actual: 'auto_refunded' },
  ]);
  const plain = await runCli(sys, ['audit']);
  assert.equal(plain.code, 2);
  assert.match(plain.stdout, /1 VIOLATION/);
  assert.match(plain.stdout, /Orders: 9 \(6 released, 3 auto_refunded, 0 held\)/);
  assert.match(
    plain.stdout,
    new RegExp(`row_differs order ${order}: state: fact says "released", row has "auto_refunded"`),
  );
  await sys.sql`UPDATE orders SET state = 'released' WHERE id = ${order}`;

  // A seller's accrual lost.
  const [payout] = await sys.sql<Record<string, unknown>[]>`SELECT * FROM payouts WHERE order_id = ${order}`;
  await sys.sql`DELETE FROM payouts WHERE order_id = ${order}`;
  found = await audit();
  assert.equal(found.code, 2);
  assert.deepEqual(
    found.report.violations.map((v: any) => [v.kind, v.subject]),
    [['row_missing', `payout of order ${order}`]],
  );
  assert.equal(found.report.money.sandbox.accruedCents, 5 * 300, 'the summary shows accrued short of released');
  await sys.sql`INSERT INTO payouts ${sys.sql(payout!)}`;

  assert.equal((await audit()).code, 0, 'clean again once the rows are put back');
});

test('[HARDEN-AUDIT-RUNNING] the audit is clean while purchases and settlements are appended during it', async () => {
  let running = true;
  const load = buyers.map(async (b, i) => {
    for (let n = 0; running; n++) {
      const t = await sys.call('POST', '/v1/topups', {
        token: b.token,
        body: { credits: 1 },
        key: `run-top-${i}-${n}`,
      });
      assert.equal(t.status, 201);
      await buy(b, n % 2 === 0 ? listings.good : listings.bad, `run-${i}-${n}`);
      // Under the plan's top-up rate (20 a second per principal, a burst of 200): the audit takes seconds, and an
      // unpaced loop on a fast machine ran past it into 429.
      await new Promise((res) => setTimeout(res, 60));
    }
  });
  try {
    // Let the load get going, so facts land before, during and after the audit's fixed end.
    const before = (await ledgerFacts(sys)).length;
    await eventually('purchases under way', async () =>
      (await ledgerFacts(sys)).length > before + 20 ? true : undefined,
    );
    for (let i = 0; i < 2; i++) {
      const r = await audit();
      assert.equal(r.code, 0, JSON.stringify(r.report.violations));
      assert.ok(r.report.orders.total > 9);
    }
  } finally {
    running = false;
    await Promise.all(load);
  }
  await quiet();
  const after = await audit();
  assert.equal(after.code, 0, JSON.stringify(after.report.violations));
  assert.equal(after.report.orders.held, 0);
});

test('[HARDEN-AUDIT-DUPLICATE] a fact appended with the id of an earlier one is found: a duplicated fact id and event id', async () => {
  const facts = await ledgerFacts(sys);
  const topup = facts.find(
    (f): f is { seq: number; fact: Extract<LedgerFact, { type: 'credited' }> } =>
      f.fact.type === 'credited' && f.fact.source === 'sandbox_topup',
  )!;
  assert.ok(topup, 'a top-up to copy');
  // The same fact, id and all, as the first fact of a new principal: its money is consistent, its ids are not.
  const principalId = randomUUID();
  const copy = { ...topup.fact, principalId, balanceAfterCents: topup.fact.amountCents, idempotency: undefined };
  await jetstream(sys.nc).publish(sys.names.ledgerSubject(principalId), JSON.stringify(copy), {
    expect: { lastSubjectSequence: 0 },
  });
  const found = await audit();
  assert.equal(found.code, 2);
  const byKind = new Map<string, string[]>();
  for (const v of found.report.violations) byKind.set(v.kind, [...(byKind.get(v.kind) ?? []), v.subject]);
  assert.deepEqual(byKind.get('event_id_duplicate'), [`event evt_${topup.fact.id}`]);
  assert.deepEqual(byKind.get('fact_id_duplicate'), [`fact ${topup.fact.id}`]);
  // The events store could not hold the second event (its id is unique there), so it set the fact aside.
  assert.deepEqual(byKind.get('parked_fact'), [`projection events:${sys.names.streams.ledger.name}`]);
  assert.deepEqual([...byKind.keys()].sort(), ['event_id_duplicate', 'fact_id_duplicate', 'parked_fact']);
});

test('[HARDEN-AUDIT-CONSERVATION] a fact that makes money out of nothing is found: its balance, and the principal whose credits no longer add up', async () => {
  // A top-up whose fact the forgery copies (this test may run alone).
  const made = await sys.call('POST', '/v1/topups', {
    token: buyers[0]!.token,
    body: { credits: 1 },
    key: 'conservation-source',
  });
  assert.equal(made.status, 201);
  const facts = await ledgerFacts(sys);
  const topup = facts.find(
    (f): f is { seq: number; fact: Extract<LedgerFact, { type: 'credited' }> } =>
      f.fact.type === 'credited' && f.fact.source === 'sandbox_topup',
  )!;
  assert.ok(topup, 'a top-up to copy');
  // A new principal's first fact: a credit of 1,000 cents that says the balance after it is 1,100.
  const principalId = randomUUID();
  const forged = {
    ...topup.fact,
    id: randomUUID(),
    topupId: randomUUID(),
    principalId,
    amountCents: 1_000,
    balanceAfterCents: 1_100,
    idempotency: undefined,
  };
  const ack = await jetstream(sys.nc).publish(sys.names.ledgerSubject(principalId), JSON.stringify(forged), {
    expect: { lastSubjectSequence: 0 },
  });
  const found = await audit();
  assert.equal(found.code, 2);
  const about = found.report.violations.filter((v: any) => v.subject === `principal ${principalId}`);
  assert.deepEqual(
    about.map((v: any) => [v.kind, v.message]),
    [
      [
        'balance',
        `LEDGER seq ${ack.seq} (credited) says the balance is 1100 cents; the balance before it plus what it moves is 1000`,
      ],
      ['conservation', 'credits in 1000 cents, but available 1100 + held 0 + spent 0 + withheld 0 + reversed 0 = 1100'],
    ],
  );
});
