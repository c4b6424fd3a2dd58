// Read queries over the orders projection (written by principal-facts.ts): a buyer's orders, a seller's payouts,
// held orders the settlement sweeper settles, and compliance bundles.
import type { Sql } from './postgres.ts';

export interface OrderRow {
  id: string;
  buyer_principal_id: string;
  buyer_agent_id: string;
  listing_id: string;
  artifact_id: string;
  edition_id: string;
  seller_principal_id: string;
  subscription_id: string | null;
  state: 'held' | 'released' | 'auto_refunded';
  escrow_cents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  idempotency_key: string;
  price_snapshot_id: string;
  report_digest: string | null;
  refund_reason: 'floor_missed' | 'no_report' | null;
  sandbox: boolean;
  held_seq: number;
  held_fact_id: string;
  held_balance_after_cents: number;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
  settled_seq: number | null;
  settled_fact_id: string | null;
  settled_balance_after_cents: number | null;
}

export async function ordersPage(
  sql: Sql,
  buyer: string,
  beforeSeq: number | null,
  limit: number,
): Promise<OrderRow[]> {
  return sql<OrderRow[]>`
    SELECT * FROM orders WHERE buyer_principal_id = ${buyer}
      ${beforeSeq === null ? sql`` : sql`AND held_seq < ${beforeSeq}`}
    ORDER BY held_seq DESC LIMIT ${limit}`;
}

export async function getOrder(sql: Sql, id: string): Promise<OrderRow | null> {
  const rows = await sql<OrderRow[]>`SELECT * FROM orders WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function payoutsPage(sql: Sql, seller: string, beforeSeq: number | null, limit: number) {
  return sql<
    {
      id: string;
      order_id: string;
      listing_id: string;
      amount_cents: number;
      sandbox: boolean;
      stream_seq: number;
      created_at: Date;
      /** The transfer that pays or is paying it (not a failed one), if any. */
      transfer_id: string | null;
      transfer_state: 'pending' | 'paid' | null;
    }[]
  >`
    SELECT p.id, p.order_id, p.listing_id, p.amount_cents, p.sandbox, p.stream_seq, p.created_at,
           t.id AS transfer_id, t.state AS transfer_state
    FROM payouts p
    -- Transfers that did not fail cover disjoint ranges of the seller's accruals (storage/billing.ts).
    LEFT JOIN payout_transfers t ON t.seller_principal_id = p.seller_principal_id AND t.state <> 'failed'
      AND p.stream_seq > t.from_seq AND p.stream_seq <= t.through_seq
    WHERE p.seller_principal_id = ${seller}
      ${beforeSeq === null ? sql`` : sql`AND p.stream_seq < ${beforeSeq}`}
    ORDER BY p.stream_seq DESC LIMIT ${limit}`;
}

/** Held orders whose edition has a report by now: what the settlement sweeper settles. */
export async function settleableOrders(sql: Sql, olderThan: Date, limit: number) {
  return sql<{ id: string; buyer_principal_id: string; sandbox: boolean; digest: string; mean_entailment: number }[]>`
    SELECT o.id, o.buyer_principal_id, o.sandbox, r.digest, r.mean_entailment
    FROM orders o JOIN reports r ON r.edition_id = o.edition_id
    WHERE o.state = 'held' AND o.created_at < ${olderThan}
    LIMIT ${limit}`;
}

/** Held orders older than `olderThan` whose edition still has no report: what waited too long for one. */
export async function ordersWithoutReport(sql: Sql, olderThan: Date, limit: number) {
  return sql<{ id: string; buyer_principal_id: string; created_at: Date }[]>`
    SELECT o.id, o.buyer_principal_id, o.created_at FROM orders o
    WHERE o.state = 'held' AND o.created_at < ${olderThan}
      AND NOT EXISTS (SELECT 1 FROM reports r WHERE r.edition_id = o.edition_id)
    ORDER BY o.created_at LIMIT ${limit}`;
}

export async function purchasedArtifactIds(sql: Sql, buyer: string): Promise<string[]> {
  const rows = await sql<
    { artifact_id: string }[]
  >`SELECT DISTINCT artifact_id FROM orders WHERE buyer_principal_id = ${buyer}`;
  return rows.map((r) => r.artifact_id);
}

export async function getBundle(sql: Sql, orderId: string): Promise<string | null> {
  const rows = await sql<{ bundle: string }[]>`SELECT bundle FROM compliance_bundles WHERE order_id = ${orderId}`;
  return rows[0]?.bundle ?? null;
}

export async function storeBundle(sql: Sql, orderId: string, digest: string, bundle: string, issuedAt: string) {
  await sql`INSERT INTO compliance_bundles (order_id, digest, bundle, issued_at)
            VALUES (${orderId}, ${digest}, ${bundle}, ${issuedAt}) ON CONFLICT (order_id) DO NOTHING`;
  return (await getBundle(sql, orderId))!;
}
