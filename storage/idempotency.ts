// The idempotency index: where a principal actor finds the keys it no longer keeps in memory. Written by the
// principal-facts projection from the facts themselves; read by the ledger service for actor hosts.
import { jsonRows, type Sql } from './postgres.ts';

export interface IdempotencyKeyRow {
  principal_id: string;
  key: string;
  request_hash: string;
  stream_seq: number;
  created_at: string;
}

/** Index the keys of non-purchase facts (a purchase's key is in its order row); a key reused after expiry replaces. */
export async function insertIdempotencyKeys(tx: Sql, rows: IdempotencyKeyRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx`
    INSERT INTO idempotency_keys (principal_id, key, request_hash, stream_seq, created_at)
    SELECT * FROM json_to_recordset(${jsonRows(rows)}::text::json)
      AS r(principal_id uuid, key text, request_hash text, stream_seq bigint, created_at timestamptz)
    ON CONFLICT (principal_id, key) DO UPDATE
      SET request_hash = EXCLUDED.request_hash, stream_seq = EXCLUDED.stream_seq, created_at = EXCLUDED.created_at`;
}

/** Drop keys used before `before` (fact time, so a replay of the stream prunes the same rows). */
export async function pruneIdempotencyKeys(tx: Sql, before: string): Promise<void> {
  await tx`DELETE FROM idempotency_keys WHERE created_at < ${before}`;
}

/**
 * Find keys: each as (principal, key, the order id the key would have made), with the projection's checkpoint read
 * in the same statement, so in the same snapshot: every fact the checkpoint covers is visible to the lookup, and a
 * miss at or below it is a true miss. Keys other than purchases' count only if used after `usedAfter`.
 */
export async function lookupIdempotencyKeys(
  sql: Sql,
  checkpointName: string,
  keys: { principalId: string; key: string; orderId: string }[],
  usedAfter: string,
): Promise<{ indexedThroughSeq: number; found: [string, string, string, number][] }> {
  const rows = await sql<
    { checkpoint: number | null; principal_id: string | null; key: string; request_hash: string | null; seq: number }[]
  >`
    WITH k AS (
      SELECT * FROM unnest(${keys.map((k) => k.principalId)}::uuid[], ${keys.map((k) => k.key)}::text[],
                           ${keys.map((k) => k.orderId)}::uuid[]) AS k(principal_id, key, order_id)
    ), found AS (
      SELECT k.principal_id, k.key, o.request_hash, o.held_seq AS seq
        FROM k JOIN orders o ON o.id = k.order_id AND o.buyer_principal_id = k.principal_id
      UNION ALL
      SELECT k.principal_id, k.key, i.request_hash, i.stream_seq AS seq
        FROM k JOIN idempotency_keys i ON i.principal_id = k.principal_id AND i.key = k.key
       WHERE i.created_at >= ${usedAfter}
    )
    SELECT (SELECT last_seq FROM projection_checkpoints WHERE name = ${checkpointName}) AS checkpoint, found.*
      FROM (SELECT 1) one LEFT JOIN found ON true
      -- A key found twice (a purchase that waited for approval, then was bought) answers from its newest fact.
      ORDER BY found.seq`;
  return {
    indexedThroughSeq: Number(rows[0]?.checkpoint ?? 0),
    // Orders projected before request hashes were indexed carry none: such a key can only conflict.
    found: rows
      .filter((r) => r.principal_id !== null)
      .map((r) => [r.principal_id!, r.key, r.request_hash ?? '', Number(r.seq)]),
  };
}
