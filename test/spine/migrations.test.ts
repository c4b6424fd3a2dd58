// Upgrading a database that holds money: migration 010 moves a purchase's two ledger entries from ledger_entries
// into its order row. A deployment projected before it must read back the same ledger, entry for entry.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { ensureDatabase, migrate, openPool, readLedgerPage, type Sql } from '../../storage/index.ts';
import { dropDatabase, pgServerUrl, uniqueNamespace } from '../support/env.ts';

const db = `assay_${uniqueNamespace('mig')}`;
let sql: Sql;
before(async () => {
  await ensureDatabase(`${pgServerUrl}/${db}`);
  sql = openPool(`${pgServerUrl}/${db}`, 2);
});
after(async () => {
  await sql.end();
  await dropDatabase(db);
});

const columns = `stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, run_id, sandbox,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`;

test('[SPINE-MIGRATE-LEDGER] migration 010 keeps every ledger entry: same ids, sequences, amounts, balances and order', async () => {
  assert.ok((await migrate(sql, '009')).includes('009_idempotency_index.sql'));
  const buyer = randomUUID();
  const at = (s: number) => `2026-11-01T10:00:0${s}.000Z`;
  // As the projection wrote them before 010: a grant, then three orders (released, refunded, still held), each
  // with its entries in ledger_entries.
  const orders = [
    { id: randomUUID(), price: 500, held: 2, settled: 3, state: 'released' },
    { id: randomUUID(), price: 700, held: 4, settled: 5, state: 'auto_refunded' },
    { id: randomUUID(), price: 300, held: 6, settled: null, state: 'held' },
  ];
  const entry = (seq: number, type: string, amount: number, balance: number, ref: string, run: string | null) => ({
    stream_seq: seq,
    id: randomUUID(),
    principal_id: buyer,
    type,
    amount_cents: amount,
    balance_after_cents: balance,
    reference: ref,
    run_id: run,
    sandbox: true,
    created_at: at(seq),
  });
  const entries = [
    entry(1, 'sandbox_grant', 100_000, 100_000, randomUUID(), null),
    entry(2, 'escrow_held', -500, 99_500, orders[0]!.id, orders[0]!.id),
    entry(3, 'escrow_released', 0, 99_500, orders[0]!.id, orders[0]!.id),
    entry(4, 'escrow_held', -700, 98_800, orders[1]!.id, orders[1]!.id),
    entry(5, 'escrow_refunded', 700, 99_500, orders[1]!.id, orders[1]!.id),
    entry(6, 'escrow_held', -300, 99_200, orders[2]!.id, orders[2]!.id),
  ];
  await sql`INSERT INTO ledger_entries ${sql(entries)}`;
  for (const o of orders) {
    await sql`
      INSERT INTO orders (id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
        seller_principal_id, state, escrow_cents, floor, formats, idempotency_key, price_snapshot_id, sandbox, held_seq,
        created_at, updated_at, settled_at, report_digest)
      VALUES (${o.id}, ${buyer}, ${randomUUID()}, ${randomUUID()}, ${randomUUID()}, ${randomUUID()}, ${randomUUID()},
        ${o.state}, ${o.price}, 0.5, ${['md']}, ${`k-${o.held}`}, 's@1', true, ${o.held}, ${at(o.held)},
        ${at(o.settled ?? o.held)}, ${o.settled ? at(o.settled) : null}, ${o.settled ? 'sha256:x' : null})`;
  }
  const before = await sql.unsafe(`SELECT ${columns} FROM ledger_entries ORDER BY stream_seq`);

  assert.deepEqual(await migrate(sql, '010'), ['010_escrow_entries_in_orders.sql']);
  const afterMigration = await sql.unsafe(`SELECT ${columns} FROM ledger ORDER BY stream_seq`);
  assert.deepEqual(
    afterMigration.map((r) => ({ ...r })),
    before.map((r) => ({ ...r })),
  );
  const [left] = await sql<{ n: number }[]>`SELECT count(*)::int n FROM ledger_entries`;
  assert.equal(left!.n, 1, 'only the credit stays in ledger_entries');

  // The later migrations apply on top (012 records why earlier refunds were refunded: their floor).
  await migrate(sql);
  const reasons = await sql`SELECT state, refund_reason FROM orders ORDER BY held_seq`;
  assert.deepEqual(
    reasons.map((r) => [r.state, r.refund_reason]),
    [
      ['released', null],
      ['auto_refunded', 'floor_missed'],
      ['held', null],
    ],
  );

  // The paged ledger reads back the same entries, newest first.
  const page = await readLedgerPage(sql, { principalId: buyer, before: null, limit: 10 });
  assert.deepEqual(
    page.items.map((e) => [e.id, e.type, e.amount_cents, e.balance_after_cents]),
    [...entries].reverse().map((e) => [e.id, e.type, e.amount_cents, e.balance_after_cents]),
  );
});
