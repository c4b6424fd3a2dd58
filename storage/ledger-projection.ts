// The ledger projection: one PostgreSQL row per fact on the LEDGER stream, keyed by stream sequence. Writing is
// idempotent (a redelivered fact inserts nothing), and rows depend only on the fact, so a rebuild by replay
// produces identical rows.
import { AckPolicy, DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { LedgerEntryT, LedgerFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';

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

export function ledgerRow(seq: number, fact: LedgerFact): LedgerRow {
  switch (fact.type) {
    case 'credited':
      return {
        stream_seq: seq,
        id: fact.id,
        principal_id: fact.principalId,
        type: fact.source === 'sandbox_grant' ? 'sandbox_grant' : 'topup_credited',
        amount_cents: fact.amountCents,
        balance_after_cents: fact.balanceAfterCents,
        reference: fact.topupId,
        run_id: null,
        sandbox: fact.sandbox,
        created_at: fact.at,
      };
  }
}

export async function insertLedgerRows(sql: Sql, rows: LedgerRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`INSERT INTO ledger_entries ${sql(rows as never)} ON CONFLICT (stream_seq) DO NOTHING`;
}

export interface LedgerPageQuery {
  principalId: string;
  beforeSeq: number | null;
  limit: number;
}

/** Newest first; `beforeSeq` is the exclusive upper bound taken from the cursor. */
export async function readLedgerPage(sql: Sql, q: LedgerPageQuery) {
  const rows = await sql<(LedgerRow & { created_at: Date })[]>`
    SELECT stream_seq, id, type, amount_cents, balance_after_cents, reference, run_id, sandbox, created_at
    FROM ledger_entries
    WHERE principal_id = ${q.principalId} ${q.beforeSeq === null ? sql`` : sql`AND stream_seq < ${q.beforeSeq}`}
    ORDER BY stream_seq DESC
    LIMIT ${q.limit + 1}`;
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

export async function ledgerHasSeq(sql: Sql, seq: number): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM ledger_entries WHERE stream_seq = ${seq}`;
  return rows.length > 0;
}

/**
 * Run the projector until `signal` aborts: a durable pull consumer shared by every worker process. Messages are
 * written in micro-batches (whatever arrived while the previous batch was being written) and acknowledged only
 * after their rows are committed, so a crash redelivers and the insert ignores what is already there.
 */
export async function runLedgerProjector(nc: NatsConnection, sql: Sql, n: Names, log: Logger, signal: AbortSignal) {
  const jsm = await jetstreamManager(nc);
  const stream = n.streams.ledger.name;
  const durable = n.consumers.ledgerProjector;
  await jsm.consumers.add(stream, {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_ack_pending: 20_000,
    ack_wait: 30_000_000_000,
  });
  const consumer = await jetstream(nc).consumers.get(stream, durable);
  let buffer: JsMsg[] = [];
  const waker: { wake: (() => void) | null } = { wake: null };
  const messages = await consumer.consume({ max_messages: 2000 });
  signal.addEventListener('abort', () => {
    void messages.close();
    waker.wake?.();
  });
  const reader = (async () => {
    for await (const m of messages) {
      buffer.push(m);
      waker.wake?.();
    }
  })();
  while (!signal.aborted) {
    if (buffer.length === 0) {
      await new Promise<void>((resolve) => {
        waker.wake = resolve;
      });
      waker.wake = null;
      continue;
    }
    const batch = buffer;
    buffer = [];
    try {
      await insertLedgerRows(
        sql,
        batch.map((m) => ledgerRow(m.seq, m.json<LedgerFact>())),
      );
      for (const m of batch) m.ack();
    } catch (err) {
      // Leave them unacknowledged: JetStream redelivers after ack_wait, and the insert is idempotent.
      log.error({ err, count: batch.length }, 'ledger projection batch failed');
      for (const m of batch) m.nak(1000);
    }
  }
  await reader.catch(() => {});
}

/**
 * Drop the projection and rebuild it by replaying the stream from its first fact. Safe while projectors run:
 * rows are deterministic and inserts idempotent, and every fact up to the stream's last sequence at truncate time
 * is replayed here; later facts reach the table through the live projector.
 */
export async function rebuildLedgerProjection(nc: NatsConnection, sql: Sql, n: Names): Promise<number> {
  await sql`TRUNCATE ledger_entries`;
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(n.streams.ledger.name);
  const lastSeq = info.state.last_seq;
  if (info.state.messages === 0) return 0;
  const consumer = await jetstream(nc).consumers.get(n.streams.ledger.name);
  const messages = await consumer.consume({ max_messages: 2000 });
  let rows: LedgerRow[] = [];
  let count = 0;
  for await (const m of messages) {
    rows.push(ledgerRow(m.seq, m.json<LedgerFact>()));
    count++;
    if (rows.length >= 1000 || m.seq >= lastSeq) {
      await insertLedgerRows(sql, rows);
      rows = [];
    }
    if (m.seq >= lastSeq) break;
  }
  await messages.close();
  return count;
}
