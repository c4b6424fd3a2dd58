// The projection of the LEDGER stream into PostgreSQL, one transaction per batch: credit ledger entries, orders
// (each carrying its two escrow entries, read back through the `ledger` views), settlements of orders held in
// earlier batches, sellers' payout accruals, trust sums, the idempotency index, subscriptions, approval requests and context files. What each fact becomes is not
// decided here: `derive` (the ledger service's, in actors/) turns a batch into rows; this module writes them, each
// table with one statement of fixed shape whatever the batch, all sent at once on the transaction's connection. The
// tables every purchase writes (orders, payouts; trust sums and events in their modules) take their rows as one
// typed array per column (`arrayLiteral`), the rest as one JSON array.
import type { LedgerFact, Names } from '../contracts/index.ts';
import { metrics } from './telemetry.ts';
import { addToEscrowTotals } from './metrics-readings.ts';
import { type ApprovalUpsertRow, upsertApprovals } from './approvals.ts';
import {
  type BillingRow,
  billingTables,
  type StandingRow,
  writeBillingRows,
  writeChargebackStanding,
} from './billing.ts';
import { type ContextFileRow, writeContextFiles } from './context-files.ts';
import { type IdempotencyKeyRow, insertIdempotencyKeys, pruneIdempotencyKeys } from './idempotency.ts';
import { insertLedgerRows, type LedgerRow } from './ledger-projection.ts';
import { arrayLiteral, columnLiteral, type ElementKey, jsonRows, type Sql } from './postgres.ts';
import type { Projection } from './projector.ts';
import { type SubscriptionUpsertRow, upsertSubscriptions } from './subscriptions.ts';
import { addToTrustSums, dropTrustSamples, type TrustSample } from './trust.ts';

/** A new order, in its state at the end of the batch (held, or already settled when both facts are in it). */
export interface OrderInsertRow {
  id: string;
  buyer: string;
  agent: string;
  listing: string;
  artifact: string;
  edition: string;
  seller: string;
  subscription: string | null;
  escrow: number;
  floor: number;
  formats: string[];
  key: string;
  hash: string;
  snapshot: string;
  sandbox: boolean;
  seq: number;
  fact: string;
  balance: number;
  at: string;
  state: 'held' | 'released' | 'auto_refunded';
  digest: string | null;
  reason: 'floor_missed' | 'no_report' | null;
  settled_at: string | null;
  settled_seq: number | null;
  settled_fact: string | null;
  settled_balance: number | null;
}

/** What a settlement writes to an order held in an earlier batch: its outcome and the buyer's entry for it. */
export interface OrderSettlementRow {
  id: string;
  state: 'released' | 'auto_refunded';
  /** null when the order was refunded without a report (reason no_report). */
  digest: string | null;
  reason: 'floor_missed' | 'no_report' | null;
  settled_at: string;
  settled_seq: number;
  settled_fact: string;
  settled_balance: number;
}

export interface PayoutRow {
  id: string;
  order_id: string;
  seller: string;
  listing: string;
  amount: number;
  sandbox: boolean;
  seq: number;
  at: string;
}

/** Every row one batch of facts projects to. */
export interface PrincipalFactRows {
  credits: LedgerRow[];
  orders: OrderInsertRow[];
  settlements: OrderSettlementRow[];
  payouts: PayoutRow[];
  /** Applied to the sums only: each fact is projected exactly once (the checkpoint commits with the rows). */
  trustSamples: TrustSample[];
  keys: IdempotencyKeyRow[];
  subscriptions: SubscriptionUpsertRow[];
  approvals: ApprovalUpsertRow[];
  contexts: ContextFileRow[];
  /** Saved cards, connected accounts, live top-ups and transfers, in stream order (billing.ts). */
  billing: BillingRow[];
  /** The chargeback standing of principals the processor took money back from, the newest per principal. */
  standing: StandingRow[];
}

export type DeriveRows = (batch: { seq: number; fact: LedgerFact }[]) => PrincipalFactRows;

/** Idempotency keys are pruned at most this often, by fact time. */
const keyPruneEveryMs = 60_000;

/** The principal-facts projection's checkpoint: its rows are the LEDGER stream's facts through it. */
export const principalFactsCheckpoint = (n: Names) => `principal_facts:${n.streams.ledger.name}`;

/** `keyRetentionMs`: how long a key other than a purchase's stays in the idempotency index. */
export function principalFactsProjection(n: Names, derive: DeriveRows, keyRetentionMs: number): Projection<LedgerFact> {
  let prunedAtMs = 0;
  return {
    checkpoint: principalFactsCheckpoint(n),
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      const rows = derive(batch);
      // Orders held and settled within one batch are written settled: their lag is known here.
      for (const o of rows.orders) {
        if (o.settled_at)
          metrics.settlementLagSeconds.observe(Math.max(0, (Date.parse(o.settled_at) - Date.parse(o.at)) / 1000));
      }
      const writes: Promise<unknown>[] = [insertLedgerRows(tx, rows.credits), insertOrders(tx, rows.orders)];
      // The money in orders by state (the metrics' escrow totals): new orders in their state, settled ones moved.
      const newOrders = rows.orders.map((o) => ({ state: o.state, sandbox: o.sandbox, cents: o.escrow }));
      const settling = rows.settlements.length > 0 ? settleOrders(tx, rows.settlements) : Promise.resolve([]);
      writes.push(
        settling.then((settled) =>
          addToEscrowTotals(tx, [
            ...newOrders,
            ...settled.flatMap((o) => [
              { state: 'held' as const, sandbox: o.sandbox, cents: -o.cents },
              { state: o.state, sandbox: o.sandbox, cents: o.cents },
            ]),
          ]),
        ),
      );
      if (rows.payouts.length > 0) writes.push(insertPayouts(tx, rows.payouts));
      if (rows.trustSamples.length > 0) writes.push(addToTrustSums(tx, rows.trustSamples));
      writes.push(insertIdempotencyKeys(tx, rows.keys));
      if (rows.subscriptions.length > 0) writes.push(upsertSubscriptions(tx, rows.subscriptions));
      if (rows.approvals.length > 0) writes.push(upsertApprovals(tx, rows.approvals));
      if (rows.contexts.length > 0) writes.push(writeContextFiles(tx, rows.contexts));
      if (rows.billing.length > 0) writes.push(writeBillingRows(tx, rows.billing));
      if (rows.standing.length > 0) writes.push(writeChargebackStanding(tx, rows.standing));
      const lastAtMs = Date.parse(batch.at(-1)!.fact.at);
      if (lastAtMs - prunedAtMs >= keyPruneEveryMs) {
        writes.push(pruneIdempotencyKeys(tx, new Date(lastAtMs - keyRetentionMs).toISOString()));
        prunedAtMs = lastAtMs;
      }
      await Promise.all(writes);
    },
    async truncate(tx) {
      await tx`TRUNCATE ledger_entries, orders, payouts, idempotency_keys, subscriptions, approvals, context_files`;
      await tx.unsafe(`TRUNCATE ${billingTables}, escrow_totals`);
      await dropTrustSamples(tx, 'settlement');
    },
  };
}

async function insertOrders(tx: Sql, rows: OrderInsertRow[]): Promise<void> {
  if (rows.length === 0) return;
  const column = (k: ElementKey<OrderInsertRow>) => columnLiteral(rows, k);
  // A row's formats travel as an array literal of their own, one text element per order (unnest flattens nested
  // arrays), read back with a cast.
  const formats = arrayLiteral(rows.map((r) => arrayLiteral(r.formats)));
  await tx`
    INSERT INTO orders (id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
      seller_principal_id, subscription_id, state, escrow_cents, floor, formats, idempotency_key, request_hash,
      price_snapshot_id, sandbox, held_seq, held_fact_id, held_balance_after_cents, created_at, report_digest,
      refund_reason, updated_at, settled_at, settled_seq, settled_fact_id, settled_balance_after_cents)
    SELECT r.id, r.buyer, r.agent, r.listing, r.artifact, r.edition, r.seller, r.subscription, r.state, r.escrow,
           r.floor, r.formats::text[], r.key, r.hash, r.snapshot, r.sandbox, r.seq, r.fact, r.balance, r.at, r.digest,
           r.reason, coalesce(r.settled_at, r.at), r.settled_at, r.settled_seq, r.settled_fact, r.settled_balance
    FROM unnest(${column('id')}::uuid[], ${column('buyer')}::uuid[], ${column('agent')}::uuid[],
                ${column('listing')}::uuid[], ${column('artifact')}::uuid[], ${column('edition')}::uuid[],
                ${column('seller')}::uuid[], ${column('subscription')}::uuid[], ${column('escrow')}::bigint[],
                ${column('floor')}::float8[], ${formats}::text[], ${column('key')}::text[], ${column('hash')}::text[],
                ${column('snapshot')}::text[], ${column('sandbox')}::boolean[], ${column('seq')}::bigint[],
                ${column('fact')}::uuid[], ${column('balance')}::bigint[], ${column('at')}::timestamptz[],
                ${column('state')}::text[], ${column('digest')}::text[], ${column('reason')}::text[],
                ${column('settled_at')}::timestamptz[], ${column('settled_seq')}::bigint[],
                ${column('settled_fact')}::uuid[], ${column('settled_balance')}::bigint[])
         AS r(id, buyer, agent, listing, artifact, edition, seller, subscription, escrow, floor, formats, key, hash,
              snapshot, sandbox, seq, fact, balance, at, state, digest, reason, settled_at, settled_seq, settled_fact,
              settled_balance)
    ON CONFLICT (id) DO NOTHING`.execute();
}

/** Settle orders held in earlier batches; answers each one's amount, side and new state (for the escrow totals). */
async function settleOrders(
  tx: Sql,
  rows: OrderSettlementRow[],
): Promise<{ cents: number; sandbox: boolean; state: 'released' | 'auto_refunded' }[]> {
  const settled = await tx<{ lag: number; cents: number; sandbox: boolean; state: 'released' | 'auto_refunded' }[]>`
    UPDATE orders o SET state = u.state, report_digest = u.digest, refund_reason = u.reason, updated_at = u.settled_at,
      settled_at = u.settled_at, settled_seq = u.settled_seq, settled_fact_id = u.settled_fact,
      settled_balance_after_cents = u.settled_balance
    FROM json_to_recordset(${jsonRows(rows)}::text::json)
         AS u(id uuid, state text, digest text, reason text, settled_at timestamptz, settled_seq bigint,
              settled_fact uuid, settled_balance bigint)
    WHERE o.id = u.id
      -- Names the rows for the planner: joined to a function's rows alone, it chose to scan every order.
      AND o.id = ANY(${rows.map((r) => r.id)}::uuid[])
    RETURNING extract(epoch FROM o.settled_at - o.created_at)::float8 AS lag, o.escrow_cents::float8 AS cents,
              o.sandbox, o.state`.execute();
  for (const r of settled) metrics.settlementLagSeconds.observe(Math.max(0, r.lag));
  return settled;
}

async function insertPayouts(tx: Sql, rows: PayoutRow[]): Promise<void> {
  const column = (k: ElementKey<PayoutRow>) => columnLiteral(rows, k);
  await tx`
    INSERT INTO payouts (id, order_id, seller_principal_id, listing_id, amount_cents, state, sandbox, stream_seq,
                         created_at)
    SELECT p.id, p.order_id, p.seller, p.listing, p.amount, 'accrued', p.sandbox, p.seq, p.at
    FROM unnest(${column('id')}::uuid[], ${column('order_id')}::uuid[], ${column('seller')}::uuid[],
                ${column('listing')}::uuid[], ${column('amount')}::bigint[], ${column('sandbox')}::boolean[],
                ${column('seq')}::bigint[], ${column('at')}::timestamptz[])
         AS p(id, order_id, seller, listing, amount, sandbox, seq, at)
    ON CONFLICT (order_id) DO NOTHING`.execute();
}
