// Checkpointed projections: a stream read with an ordered consumer (no acknowledgements) from a checkpoint kept in
// PostgreSQL, each micro-batch committed together with the new checkpoint and guarded by the old one. A batch is
// applied exactly once; if the checkpoint moved under us (a rebuild reset it, or another projector ran) the batch
// rolls back and the projector restarts from the stored checkpoint.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Sql } from './postgres.ts';

export interface Projection<F> {
  /** Checkpoint name; include the stream name so databases shared by test namespaces never mix them up. */
  checkpoint: string;
  stream: string;
  /**
   * Apply one batch inside the projector's transaction; facts are in stream order. Statements may be sent without
   * waiting for each other (they run in order on the transaction's connection); resolve once all have completed.
   */
  apply(tx: Sql, batch: { seq: number; fact: F }[]): Promise<void>;
  /** Remove everything the projection wrote (for a rebuild), inside the rebuild's transaction. */
  truncate(tx: Sql): Promise<void>;
}

class CheckpointMoved extends Error {}

/**
 * A batch is committed at most this often unless it is already large: every commit costs about ten statements
 * whatever its size, so under load waiting a few milliseconds makes batches larger and commits rarer. It adds at
 * most this much to projection lag.
 */
const commitIntervalMs = 20;
const batchLarge = 2000;

export async function projectionCheckpoint(sql: Sql, p: Projection<unknown>): Promise<number> {
  const [row] = await sql<
    { last_seq: number }[]
  >`SELECT last_seq FROM projection_checkpoints WHERE name = ${p.checkpoint}`;
  return row?.last_seq ?? 0;
}

/** Run a projection until `signal` aborts, restarting from its checkpoint after any failure. */
export async function runProjection<F>(
  nc: NatsConnection,
  sql: Sql,
  p: Projection<F>,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await projectFromCheckpoint(nc, sql, p, signal, null);
    } catch (err) {
      if (signal.aborted) break;
      if (!(err instanceof CheckpointMoved)) {
        log.error({ err, projection: p.checkpoint }, 'projection failed; restarting from its checkpoint');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

async function projectFromCheckpoint<F>(
  nc: NatsConnection,
  sql: Sql,
  p: Projection<F>,
  signal: AbortSignal,
  untilSeq: number | null,
): Promise<void> {
  await sql`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${p.checkpoint}, 0) ON CONFLICT DO NOTHING`;
  let checkpoint = await projectionCheckpoint(sql, p as Projection<unknown>);
  if (untilSeq !== null && checkpoint >= untilSeq) return;
  const consumer = await jetstream(nc).consumers.get(p.stream, { opt_start_seq: checkpoint + 1 });
  const messages = await consumer.consume({ max_messages: 4000 });
  let buffer: { seq: number; fact: F }[] = [];
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
        buffer.push({ seq: m.seq, fact: m.json<F>() });
        waker.wake?.();
      }
    } finally {
      ended = true;
      waker.wake?.();
    }
  })();
  let lastCommitAt = 0;
  try {
    while (!signal.aborted && !(untilSeq !== null && checkpoint >= untilSeq)) {
      const wait = lastCommitAt + commitIntervalMs - performance.now();
      if (wait > 0 && buffer.length < batchLarge && !ended) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      if (buffer.length === 0) {
        if (ended) break;
        await new Promise<void>((resolve) => {
          waker.wake = resolve;
        });
        waker.wake = null;
        continue;
      }
      // Whatever arrived while the previous batch was being committed forms the next one.
      const batch = buffer;
      buffer = [];
      const next = batch.at(-1)!.seq;
      const expected = checkpoint;
      lastCommitAt = performance.now();

      await sql.begin(async (tx) => {
        // The statements are sent together and run in order (a projection may pipeline its own too): a round trip
        // per batch costs both processes a wake-up and a system call, and batches come every 20 ms.
        // A commit lost in a crash loses its checkpoint with it, and the batch is read again from the stream: the
        // projection needs no flush to disk per batch.
        const unflushed = tx`SET LOCAL synchronous_commit TO off`.execute();
        const applied = p.apply(tx as unknown as Sql, batch);
        const moved = tx`UPDATE projection_checkpoints SET last_seq = ${next}
                         WHERE name = ${p.checkpoint} AND last_seq = ${expected}`.execute();
        // Awaiting all three also handles the rejections of those a failed statement aborted.
        const [, , m] = await Promise.all([unflushed, applied, moved]);
        if (m.count !== 1) throw new CheckpointMoved();
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
 * Drop a projection and rebuild it by replaying its stream: truncate and reset the checkpoint in one transaction,
 * then project up to the stream's last sequence at that moment. Safe while a live projector runs: whichever
 * commits a batch first advances the checkpoint, and the other's batch rolls back and restarts from it.
 * Returns the stream's last sequence the rebuild covered.
 */
export async function rebuildProjection<F>(nc: NatsConnection, sql: Sql, p: Projection<F>): Promise<number> {
  const jsm = await jetstreamManager(nc);
  let lastSeq = 0;
  await sql.begin(async (tx) => {
    await p.truncate(tx as unknown as Sql);
    await tx`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${p.checkpoint}, 0)
             ON CONFLICT (name) DO UPDATE SET last_seq = 0`;
    lastSeq = (await jsm.streams.info(p.stream)).state.last_seq;
  });
  const never = new AbortController().signal;
  while ((await projectionCheckpoint(sql, p as Projection<unknown>)) < lastSeq) {
    try {
      await projectFromCheckpoint(nc, sql, p, never, lastSeq);
    } catch (err) {
      if (!(err instanceof CheckpointMoved)) throw err;
    }
  }
  return lastSeq;
}
