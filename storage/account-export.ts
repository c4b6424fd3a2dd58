// The account export's large sections (GET /api/account/export, docs/money.md: Account export): one person's rows
// of each table, a page at a time in a stable key order, so the gateway streams any number of them in bounded
// memory. Columns are named one by one: nothing that is a secret (webhook secrets, key hashes) is ever selected.
import type { AccountExportSection } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';

type ExportSection = AccountExportSection;

/** One page of a section after `after` (the key of the last row of the page before, or null for the first). */
export async function exportPage(
  sql: Sql,
  principalId: string,
  section: ExportSection,
  after: string | null,
  limit: number,
): Promise<{ items: Record<string, unknown>[]; next: string | null }> {
  const rows = await sectionRows(sql, principalId, section, after, limit);
  const last = rows.at(-1);
  const next = rows.length === limit && last ? String(last.export_key) : null;
  for (const r of rows) delete r.export_key;
  return { items: rows, next };
}

type Row = Record<string, unknown> & { export_key?: unknown };

function sectionRows(sql: Sql, p: string, section: ExportSection, after: string | null, limit: number) {
  const afterSeq = after === null ? -1 : Number(after);
  const afterId = after ?? '';
  switch (section) {
    case 'ledger':
      return sql<Row[]>`
        SELECT stream_seq AS export_key, id, type, amount_cents::float8 AS amount_cents,
               balance_after_cents::float8 AS balance_after_cents, reference, run_id, sandbox, created_at
        FROM ledger WHERE principal_id = ${p} AND stream_seq > ${afterSeq} ORDER BY stream_seq LIMIT ${limit}`;
    case 'orders':
      return sql<Row[]>`
        SELECT held_seq AS export_key, id, buyer_agent_id AS agent_id, listing_id, artifact_id, edition_id,
               seller_principal_id, subscription_id, state, escrow_cents::float8 AS price_cents, floor, formats,
               report_digest, refund_reason, sandbox, created_at, settled_at
        FROM orders WHERE buyer_principal_id = ${p} AND held_seq > ${afterSeq} ORDER BY held_seq LIMIT ${limit}`;
    case 'subscriptions':
      return sql<Row[]>`
        SELECT id::text AS export_key, id, buyer_principal_id, seller_principal_id, listing_id, agent_id, sandbox,
               state, interval_seconds, cycle, next_cycle_at, canceled_by, created_at, updated_at
        FROM subscriptions WHERE (buyer_principal_id = ${p} OR seller_principal_id = ${p}) AND id::text > ${afterId}
        ORDER BY id::text LIMIT ${limit}`;
    case 'payouts':
      return sql<Row[]>`
        SELECT stream_seq AS export_key, id, order_id, listing_id, amount_cents::float8 AS amount_cents, sandbox,
               stream_seq::float8 AS ledger_seq, created_at
        FROM payouts WHERE seller_principal_id = ${p} AND stream_seq > ${afterSeq} ORDER BY stream_seq LIMIT ${limit}`;
    case 'payout_transfers':
      return sql<Row[]>`
        SELECT id::text AS export_key, id, account_id, amount_cents::float8 AS amount_cents,
               from_seq::float8 AS from_seq, through_seq::float8 AS through_seq, state, processor_transfer_id,
               failure, started_at, finished_at
        FROM payout_transfers WHERE seller_principal_id = ${p} AND id::text > ${afterId} ORDER BY id::text
        LIMIT ${limit}`;
    case 'topups':
      return sql<Row[]>`
        SELECT id AS export_key, id, payment_intent_id, amount_cents::float8 AS amount_cents, state, failure_code,
               failure_message, created_at, updated_at
        FROM topups WHERE principal_id = ${p} AND id > ${afterId} ORDER BY id LIMIT ${limit}`;
    case 'context_files':
      return sql<Row[]>`
        SELECT id::text AS export_key, id, name, slug, description, content, content_sha256, is_public, created_at,
               updated_at
        FROM context_files WHERE owner_principal_id = ${p} AND id::text > ${afterId} ORDER BY id::text
        LIMIT ${limit}`;
    case 'webhooks':
      // The routing table holds the signing secrets: they are not selected.
      return sql<Row[]>`
        SELECT id::text AS export_key, id, name, url, events, is_active
        FROM webhooks WHERE owner_principal_id = ${p} AND id::text > ${afterId} ORDER BY id::text LIMIT ${limit}`;
    case 'test_mode_agents':
      // The sandbox agents the person issued on the account page (test mode), with the sandbox principal they act for.
      return sql<Row[]>`
        SELECT g.id::text AS export_key, g.id, g.name, s.sandbox_principal_id, g.created_at
        FROM account_sandboxes s JOIN agents g ON g.principal_id = s.sandbox_principal_id
        WHERE s.principal_id = ${p} AND g.id::text > ${afterId} ORDER BY g.id::text LIMIT ${limit}`;
  }
}
