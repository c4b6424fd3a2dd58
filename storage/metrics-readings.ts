// Readings the metrics take from PostgreSQL when scraped (cli/metrics.ts): small reads of totals kept as
// the facts are projected, never a scan of orders.
import { jsonRows, type Sql } from './postgres.ts';

export type EscrowState = 'held' | 'released' | 'auto_refunded';

/** Add each batch's changes to the running totals (migration 027), in the projection's transaction. */
export async function addToEscrowTotals(
  tx: Sql,
  deltas: { state: EscrowState; sandbox: boolean; cents: number }[],
): Promise<void> {
  // One row per key: a statement may not update the same row twice.
  const sums = new Map<string, { state: EscrowState; sandbox: boolean; cents: number }>();
  for (const d of deltas) {
    const key = `${d.state} ${d.sandbox}`;
    const sum = sums.get(key);
    if (sum) sum.cents += d.cents;
    else sums.set(key, { ...d });
  }
  const nonZero = [...sums.values()].filter((d) => d.cents !== 0);
  if (nonZero.length === 0) return;
  await tx`
    INSERT INTO escrow_totals AS t (state, sandbox, cents)
    SELECT d.state, d.sandbox, d.cents FROM json_to_recordset(${jsonRows(nonZero)}::text::json)
      AS d(state text, sandbox boolean, cents bigint)
    ON CONFLICT (state, sandbox) DO UPDATE SET cents = t.cents + excluded.cents`;
}

export async function escrowTotals(sql: Sql): Promise<{ state: EscrowState; sandbox: boolean; cents: number }[]> {
  return sql<{ state: EscrowState; sandbox: boolean; cents: number }[]>`
    SELECT state, sandbox, cents::float8 AS cents FROM escrow_totals`;
}

/** Webhook deliveries not finished: due now or waiting for a retry. */
export async function pendingDeliveries(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'pending'`;
  return row?.n ?? 0;
}
