// Ledger entries: one per money fact on the LEDGER stream, keyed by principal and stream sequence, read through the
// `ledger` view. Credits are rows of ledger_entries; an escrow fact's entry is stored in its order's row (see
// principal-facts.ts), which has every other column of it already. Entries depend only on their fact, so a rebuild
// by replay produces identical entries.
import type { LedgerEntryT } from '../contracts/index.ts';
import { jsonRows, type Sql } from './postgres.ts';

export interface LedgerRow {
  stream_seq: number;
  id: string;
  principal_id: string;
  type: LedgerEntryT['type'];
  amount_cents: number;
  balance_after_cents: number;
  reference: string | null;
  run_id: string | null;
  sandbox: boolean;
  created_at: string;
}

/**
 * One statement of fixed shape whatever the batch size (the rows as one JSON array), so PostgreSQL parses and plans
 * it once and the client serialises with JSON.stringify rather than escaping arrays element by element.
 */
export async function insertLedgerRows(sql: Sql, rows: LedgerRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    INSERT INTO ledger_entries (stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, run_id,
                                sandbox, created_at)
    SELECT * FROM json_to_recordset(${jsonRows(rows)}::text::json)
      AS r(stream_seq bigint, id uuid, principal_id uuid, type text, amount_cents bigint, balance_after_cents bigint,
           reference text, run_id text, sandbox boolean, created_at timestamptz)
    ON CONFLICT (principal_id, stream_seq) DO NOTHING`;
}

/**
 * A place in a principal's ledger, newest first: the stream sequence of the entry's fact, and `part` 1 for the
 * settlement a hold recorded in the same fact (it follows the hold, at the same sequence), 0 for every other entry.
 */
export interface LedgerPosition {
  seq: number;
  part: 0 | 1;
}

export interface LedgerPageQuery {
  principalId: string;
  /** The page starts after this entry (exclusive), from the cursor; null for the newest. */
  before: LedgerPosition | null;
  limit: number;
}

/** Where a principal's ledger entries are, and the part each source's entries are at (see LedgerPosition). */
const ledgerSources = [
  ['ledger_entries', 0],
  ['ledger_escrow_held', 0],
  ['ledger_escrow_settled', 1],
] as const;

/**
 * A principal's ledger entries, newest first, before a position. Each source is read with its own index,
 * order and limit, then merged (see migration 010 for why not the view). A source's part is fixed, so "before
 * (seq, part)" is a plain bound on the sequence there: inclusive where the source's part is below the cursor's.
 */
function ledgerEntries(sql: Sql, q: { principalId: string; before: LedgerPosition | null; limit: number }) {
  const branch = ([source, part]: (typeof ledgerSources)[number]) => sql`(
    SELECT stream_seq, id, type, amount_cents, balance_after_cents, reference, run_id, sandbox, created_at,
           ${part}::int AS part
    FROM ${sql(source)}
    WHERE principal_id = ${q.principalId}
      ${q.before === null ? sql`` : part < q.before.part ? sql`AND stream_seq <= ${q.before.seq}` : sql`AND stream_seq < ${q.before.seq}`}
    ORDER BY stream_seq DESC LIMIT ${q.limit})`;
  const [a, b, c] = ledgerSources.map(branch);
  return sql<(LedgerRow & { created_at: Date; part: 0 | 1 })[]>`
    SELECT * FROM (${a!} UNION ALL ${b!} UNION ALL ${c!}) e ORDER BY stream_seq DESC, part DESC LIMIT ${q.limit}`;
}

/** Newest first; `before` is the exclusive upper bound taken from the cursor. */
export async function readLedgerPage(sql: Sql, q: LedgerPageQuery) {
  const rows = await ledgerEntries(sql, { principalId: q.principalId, before: q.before, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const items: LedgerEntryT[] = page.map((r) => ({
    id: r.id,
    type: r.type,
    amount_cents: r.amount_cents,
    balance_after_cents: r.balance_after_cents,
    reference: r.reference,
    run_id: r.run_id,
    sandbox: r.sandbox,
    created_at: r.created_at.toISOString(),
  }));
  const last = page.at(-1);
  const nextBefore: LedgerPosition | null =
    rows.length > q.limit && last ? { seq: Number(last.stream_seq), part: last.part } : null;
  return { items, nextBefore };
}
