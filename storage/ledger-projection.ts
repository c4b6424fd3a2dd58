// The ledger projection: one ledger entry per money fact on the LEDGER stream, keyed by principal and stream
// sequence, read through the `ledger` view. Credits are rows of ledger_entries; an escrow fact's entry is stored in
// its order's row by the commerce projection (storage/orders.ts), which has every other column of it already.
// Entries depend only on their fact, so a rebuild by replay produces identical entries.
import type { LedgerEntryT, LedgerFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';
import type { Projection } from './projector.ts';

interface LedgerRow {
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

/** The ledger entry of a money fact; null for facts that move no money (a recorded call, a mandate change). */
export function ledgerRow(seq: number, fact: LedgerFact): LedgerRow | null {
  const row = (type: LedgerEntryT['type'], amountCents: number, reference: string, runId: string | null) => ({
    stream_seq: seq,
    id: fact.id,
    principal_id: fact.principalId,
    type,
    amount_cents: amountCents,
    balance_after_cents: fact.balanceAfterCents,
    reference,
    run_id: runId,
    sandbox: fact.sandbox,
    created_at: fact.at,
  });
  switch (fact.type) {
    case 'call_recorded':
    case 'mandate_set':
    case 'mandate_revoked':
      return null;
    case 'escrow_held':
      return row('escrow_held', -fact.priceCents, fact.orderId, fact.orderId);
    // Release spends what was held: available credits do not change, so the entry moves 0.
    case 'escrow_released':
      return row('escrow_released', 0, fact.orderId, fact.orderId);
    case 'escrow_refunded':
      return row('escrow_refunded', fact.priceCents, fact.orderId, fact.orderId);

    case 'credited':
      return row(
        fact.source === 'sandbox_grant' ? 'sandbox_grant' : 'topup_credited',
        fact.amountCents,
        fact.topupId,
        null,
      );
  }
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
    SELECT * FROM json_to_recordset(${JSON.stringify(rows)}::text::json)
      AS r(stream_seq bigint, id uuid, principal_id uuid, type text, amount_cents bigint, balance_after_cents bigint,
           reference text, run_id text, sandbox boolean, created_at timestamptz)
    ON CONFLICT (principal_id, stream_seq) DO NOTHING`;
}

export interface LedgerPageQuery {
  principalId: string;
  beforeSeq: number | null;
  limit: number;
}

/** Where a principal's ledger entries are: credits in their table, an order's two escrow entries in its row. */
const ledgerSources = ['ledger_entries', 'ledger_escrow_held', 'ledger_escrow_settled'] as const;

/**
 * A principal's ledger entries in stream order, strictly between two sequences, optionally of some types only.
 * Each source is read with its own index, order and limit, then merged (see migration 010 for why not the view).
 */
export function ledgerEntries(
  sql: Sql,
  q: {
    principalId: string;
    afterSeq?: number;
    beforeSeq?: number;
    types?: string[];
    newestFirst: boolean;
    limit: number;
  },
) {
  const direction = q.newestFirst ? sql`DESC` : sql`ASC`;
  const branch = (source: string) => sql`(
    SELECT stream_seq, id, type, amount_cents, balance_after_cents, reference, run_id, sandbox, created_at
    FROM ${sql(source)}
    WHERE principal_id = ${q.principalId}
      ${q.afterSeq === undefined ? sql`` : sql`AND stream_seq > ${q.afterSeq}`}
      ${q.beforeSeq === undefined ? sql`` : sql`AND stream_seq < ${q.beforeSeq}`}
      ${q.types === undefined ? sql`` : sql`AND type = ANY(${q.types})`}
    ORDER BY stream_seq ${direction} LIMIT ${q.limit})`;
  const [a, b, c] = ledgerSources.map(branch);
  return sql<(LedgerRow & { created_at: Date })[]>`
    SELECT * FROM (${a!} UNION ALL ${b!} UNION ALL ${c!}) e ORDER BY stream_seq ${direction} LIMIT ${q.limit}`;
}

/** Newest first; `beforeSeq` is the exclusive upper bound taken from the cursor. */
export async function readLedgerPage(sql: Sql, q: LedgerPageQuery) {
  const rows = await ledgerEntries(sql, {
    principalId: q.principalId,
    beforeSeq: q.beforeSeq ?? undefined,
    newestFirst: true,
    limit: q.limit + 1,
  });
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
  return { items, nextBeforeSeq: rows.length > q.limit && last ? last.stream_seq : null };
}

/** The ledger projection of a namespace: a ledger_entries row per credit fact of its LEDGER stream. */
export function ledgerProjection(n: Names): Projection<LedgerFact> {
  return {
    checkpoint: `ledger:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    apply: (tx, batch) =>
      insertLedgerRows(
        tx,
        batch.flatMap((b) => (b.fact.type === 'credited' ? ledgerRow(b.seq, b.fact)! : [])),
      ),
    truncate: async (tx) => {
      await tx`TRUNCATE ledger_entries`;
    },
  };
}
