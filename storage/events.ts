// The events store: a projection of the LEDGER stream with its own checkpoint, one row per event a principal can
// poll. Which facts make which events is the ledger service's rule (`derive`, in actors/); this module gives each
// event its principal's next sequence and writes it, in one statement of fixed shape whatever the batch.
import type { LedgerFact, Names } from '../contracts/index.ts';
import { arrayLiteral, columnLiteral, type ElementKey, storableJson, type Sql } from './postgres.ts';
import type { Projection } from './projector.ts';
import { fanOutDeliveries, type WebhookRow, writeWebhooks } from './webhooks.ts';

/** One event, as derived from its fact; the store adds the principal's sequence. */
export interface EventInsertRow {
  principal_id: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  sandbox: boolean;
  /** The LEDGER stream sequence of the fact the event comes from. */
  source_seq: number;
  created_at: string;
}

export interface EventRow {
  seq: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  source_seq: number;
  created_at: Date;
}

export type DeriveEvents = (batch: { seq: number; fact: LedgerFact }[]) => EventInsertRow[];

export type DeriveWebhooks = (batch: { seq: number; fact: LedgerFact }[]) => WebhookRow[];

/**
 * Events, and the webhooks they are delivered to: registrations are written first, so each event of the batch is
 * routed by the registrations as they stood when it was made, and its deliveries are written with it.
 */
export function eventsProjection(
  n: Names,
  derive: DeriveEvents,
  deriveWebhooks: DeriveWebhooks,
): Projection<LedgerFact> {
  return {
    checkpoint: `events:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      await writeWebhooks(tx, deriveWebhooks(batch));
      const rows = derive(batch);
      await insertEvents(tx, rows);
      await fanOutDeliveries(
        tx,
        rows.map((r) => r.id),
      );
    },
    async truncate(tx) {
      // Deliveries and their attempts stay: a rebuilt event keeps its id, so its delivery history still applies.
      await tx`TRUNCATE events, event_heads, webhooks`;
    },
  };
}

/**
 * Sequences are allocated from `event_heads` in the projection's transaction, which also moves the checkpoint: a
 * batch is applied exactly once, so each principal's events are numbered 1, 2, 3, ... in stream order with no gaps,
 * and a replay numbers them the same. Heads are taken in principal order, so a rebuild racing the live projector
 * waits for it rather than deadlocking (the loser's checkpoint guard then rolls it back).
 */
async function insertEvents(tx: Sql, rows: EventInsertRow[]): Promise<void> {
  if (rows.length === 0) return;
  // Each event's rank among its principal's events in this batch.
  const ranks = new Map<string, number>();
  const n = rows.map((r) => {
    const rank = (ranks.get(r.principal_id) ?? 0) + 1;
    ranks.set(r.principal_id, rank);
    return rank;
  });
  const column = (k: ElementKey<EventInsertRow>) => columnLiteral(rows, k);
  await tx`
    WITH r AS (
      SELECT * FROM unnest(${column('principal_id')}::uuid[], ${arrayLiteral(n)}::bigint[], ${column('id')}::text[],
                           ${column('type')}::text[], ${arrayLiteral(rows.map((r) => storableJson(r.data)))}::json[],
                           ${column('sandbox')}::boolean[], ${column('source_seq')}::bigint[],
                           ${column('created_at')}::timestamptz[])
        AS r(principal_id, n, id, type, data, sandbox, source_seq, created_at)
    ), counts AS (
      SELECT principal_id, max(n) AS added FROM r GROUP BY principal_id
    ), heads AS (
      INSERT INTO event_heads AS h (principal_id, last_seq)
      SELECT principal_id, added FROM counts ORDER BY principal_id
      ON CONFLICT (principal_id) DO UPDATE SET last_seq = h.last_seq + excluded.last_seq
      RETURNING h.principal_id, h.last_seq
    )
    INSERT INTO events (principal_id, seq, id, type, data, sandbox, source_seq, created_at)
    SELECT r.principal_id, h.last_seq - c.added + r.n, r.id, r.type, r.data, r.sandbox, r.source_seq, r.created_at
    FROM r JOIN counts c USING (principal_id) JOIN heads h USING (principal_id)`.execute();
}

/**
 * The one event type the type index leaves out (migration 030: most of every store, so a page of it reads the
 * primary key in order instead). Must be the index predicate's literal.
 */
const typeOutsideIndex = 'order.state_changed';

/**
 * The type filter of a page: any other type also says it is not `typeOutsideIndex`, in the index predicate's own
 * words, so the planner can use the partial index whatever the parameter (a generic plan cannot see its value).
 */
function typeFilter(sql: Sql, type: string | undefined) {
  if (type === undefined) return sql``;
  if (type === typeOutsideIndex) return sql`AND type = ${type}`;
  return sql`AND type = ${type} AND type <> 'order.state_changed'`;
}

/** A principal's events after a sequence, oldest first, optionally of one type. */
export async function eventsPage(
  sql: Sql,
  q: { principalId: string; afterSeq: number; type: string | undefined; limit: number },
): Promise<EventRow[]> {
  return sql<EventRow[]>`
    SELECT seq, id, type, data, source_seq, created_at FROM events
    WHERE principal_id = ${q.principalId} AND seq > ${q.afterSeq} ${typeFilter(sql, q.type)}
    ORDER BY seq LIMIT ${q.limit}`;
}

/**
 * A principal's newest events, optionally of one type, returned oldest first like every page: read backwards by the
 * same index as a page, so it costs the events returned whatever the principal's history.
 */
export async function latestEvents(
  sql: Sql,
  q: { principalId: string; type: string | undefined; limit: number },
): Promise<EventRow[]> {
  const rows = await sql<EventRow[]>`
    SELECT seq, id, type, data, source_seq, created_at FROM events
    WHERE principal_id = ${q.principalId} ${typeFilter(sql, q.type)}
    ORDER BY seq DESC LIMIT ${q.limit}`;
  return rows.reverse();
}

/**
 * The sequence of the principal's last event from a fact at or before a LEDGER sequence (0 if none): where a cursor
 * that named a stream sequence resumes. Read backwards from the newest event, so it costs the events after it.
 */
export async function eventSeqThroughSource(sql: Sql, principalId: string, sourceSeq: number): Promise<number> {
  const [row] = await sql<{ seq: number }[]>`
    SELECT seq FROM events WHERE principal_id = ${principalId} AND source_seq <= ${sourceSeq}
    ORDER BY seq DESC LIMIT 1`;
  return row?.seq ?? 0;
}
