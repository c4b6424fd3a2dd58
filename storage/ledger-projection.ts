// The ledger projection: one PostgreSQL row per fact on the LEDGER stream, keyed by stream sequence. Writing is
// idempotent (a redelivered fact inserts nothing), and rows depend only on the fact, so a rebuild by replay
// produces identical rows.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
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

/**
 * One statement of fixed shape whatever the batch size (columns as arrays, unnested), so PostgreSQL parses and
 * plans it once and the client sends ten parameters instead of ten per row.
 */
const oid = { bool: 16, int8: 20, text: 25, timestamptz: 1184, uuid: 2950 } as const;

export async function insertLedgerRows(sql: Sql, rows: LedgerRow[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof LedgerRow>(k: K, oid: number) => sql.array(rows.map((r) => r[k]) as never[], oid);
  await sql`
    INSERT INTO ledger_entries (stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, run_id,
                                sandbox, created_at)
    SELECT * FROM unnest(${col('stream_seq', oid.int8)}::bigint[], ${col('id', oid.uuid)}::uuid[],
                         ${col('principal_id', oid.uuid)}::uuid[], ${col('type', oid.text)}::text[],
                         ${col('amount_cents', oid.int8)}::bigint[], ${col('balance_after_cents', oid.int8)}::bigint[],
                         ${col('reference', oid.text)}::text[], ${col('run_id', oid.text)}::text[],
                         ${col('sandbox', oid.bool)}::boolean[], ${col('created_at', oid.timestamptz)}::timestamptz[])
    ON CONFLICT (stream_seq) DO NOTHING`;
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

const checkpointName = (n: Names) => `ledger:${n.streams.ledger.name}`;

/** The stream sequence up to which the ledger projection is complete. */
export async function ledgerCheckpoint(sql: Sql, n: Names): Promise<number> {
  const [row] = await sql<
    { last_seq: number }[]
  >`SELECT last_seq FROM projection_checkpoints WHERE name = ${checkpointName(n)}`;
  return row?.last_seq ?? 0;
}

/** Thrown inside a batch transaction when the checkpoint moved under us (a rebuild, or another projector). */
class CheckpointMoved extends Error {}

/**
 * Run the ledger projector until `signal` aborts. It reads the stream with an ordered consumer (no acks) from the
 * checkpoint, and commits each micro-batch of rows together with the new checkpoint, guarded by the old one: a
 * batch is applied exactly once, and if the checkpoint moved (a rebuild reset it) the batch rolls back and the
 * projector restarts from the stored checkpoint. Run one projector per deployment (the workers role holds a lease
 * for it); a second one is harmless but wasted.
 */
export async function runLedgerProjector(nc: NatsConnection, sql: Sql, n: Names, log: Logger, signal: AbortSignal) {
  while (!signal.aborted) {
    try {
      await projectFromCheckpoint(nc, sql, n, signal, null);
    } catch (err) {
      if (signal.aborted) break;
      if (!(err instanceof CheckpointMoved)) {
        log.error({ err }, 'ledger projector failed; restarting from its checkpoint');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

/**
 * Project from the stored checkpoint until aborted, or (with `untilSeq`) until the checkpoint reaches it.
 * Messages are written in micro-batches: whatever arrived while the previous batch was being committed.
 */
async function projectFromCheckpoint(
  nc: NatsConnection,
  sql: Sql,
  n: Names,
  signal: AbortSignal,
  untilSeq: number | null,
): Promise<void> {
  await sql`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${checkpointName(n)}, 0) ON CONFLICT DO NOTHING`;
  let checkpoint = await ledgerCheckpoint(sql, n);
  if (untilSeq !== null && checkpoint >= untilSeq) return;
  const consumer = await jetstream(nc).consumers.get(n.streams.ledger.name, { opt_start_seq: checkpoint + 1 });
  const messages = await consumer.consume({ max_messages: 4000 });
  let buffer: { seq: number; fact: LedgerFact }[] = [];
  const waker: { wake: (() => void) | null } = { wake: null };
  let ended = false;
  const onAbort = () => {
    void messages.close();
    waker.wake?.();
  };
  signal.addEventListener('abort', onAbort);
  const reader = (async () => {
    try {
      for await (const m of messages) {
        buffer.push({ seq: m.seq, fact: m.json<LedgerFact>() });
        waker.wake?.();
      }
    } finally {
      ended = true;
      waker.wake?.();
    }
  })();
  try {
    while (!signal.aborted && !(untilSeq !== null && checkpoint >= untilSeq)) {
      if (buffer.length === 0) {
        if (ended) break;
        await new Promise<void>((resolve) => {
          waker.wake = resolve;
        });
        waker.wake = null;
        continue;
      }
      const batch = buffer;
      buffer = [];
      const next = batch.at(-1)!.seq;
      const expected = checkpoint;
      await sql.begin(async (tx) => {
        await insertLedgerRows(
          tx as unknown as Sql,
          batch.map((b) => ledgerRow(b.seq, b.fact)),
        );
        const moved = await tx`UPDATE projection_checkpoints SET last_seq = ${next}
                               WHERE name = ${checkpointName(n)} AND last_seq = ${expected}`;
        if (moved.count !== 1) throw new CheckpointMoved();
      });
      checkpoint = next;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    await messages.close();
    await reader.catch(() => {});
  }
}

/**
 * Drop the projection and rebuild it by replaying the stream from its first fact: truncate and reset the checkpoint
 * in one transaction, then project until the stream's last sequence at that moment. Safe while a live projector
 * runs: whichever commits a batch first advances the checkpoint and the other one's batch rolls back and restarts.
 */
export async function rebuildLedgerProjection(nc: NatsConnection, sql: Sql, n: Names): Promise<number> {
  const jsm = await jetstreamManager(nc);
  let lastSeq = 0;
  await sql.begin(async (tx) => {
    await tx`TRUNCATE ledger_entries`;
    await tx`UPDATE projection_checkpoints SET last_seq = 0 WHERE name = ${checkpointName(n)}`;
    lastSeq = (await jsm.streams.info(n.streams.ledger.name)).state.last_seq;
  });
  const never = new AbortController().signal;
  while ((await ledgerCheckpoint(sql, n)) < lastSeq) {
    try {
      await projectFromCheckpoint(nc, sql, n, never, lastSeq);
    } catch (err) {
      if (!(err instanceof CheckpointMoved)) throw err;
    }
  }
  const [row] = await sql<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM ledger_entries WHERE stream_seq <= ${lastSeq}`;
  return row!.n;
}
