// Checkpointed projections: a stream read with an ordered consumer (no acknowledgements) from a checkpoint kept in
// PostgreSQL, each micro-batch committed together with the new checkpoint and guarded by the old one. A batch is
// applied exactly once; if the checkpoint moved under us (a rebuild reset it, or another projector ran) the batch
// rolls back and the projector restarts from the stored checkpoint.
//
// Projections of one stream run in one pass (`runProjections`): one consumer, each fact delivered and parsed once,
// each batch one transaction that applies every projection and moves every checkpoint. Checkpoints stay one per
// projection, since a rebuild resets only its own: a projection behind the others catches up on its own and then
// joins the shared pass.
//
// One fact can never stop a projection: when PostgreSQL refuses a batch for what is in it (a data error, not a
// lost connection), the projector commits that batch one fact at a time, and a fact that still cannot be written
// is parked (a `parked_facts` row with its error, in the transaction that moves the checkpoint past it), logged,
// and raised as a health alert; the facts after it go on.
//
// A lost NATS node never stops a projection for long: the projector checks its own liveness (projection-liveness.ts)
// and drops and re-creates a consumer that delivers nothing while its stream moves on, and creates consumers so
// that one placed on a dead node does not hold it up (projection-consumer.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { type Consumer, type ConsumerMessages, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import postgres from 'postgres';
import { configKeys } from '../contracts/index.ts';
import { metrics } from './telemetry.ts';
import type { HealthAlerts } from './health.ts';
import { createOrderedConsumer } from './projection-consumer.ts';
import { type ConsumerWatch, projectionLabel, StreamLiveness } from './projection-liveness.ts';
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
  /**
   * Called with a batch once its transaction has committed (never for a batch rolled back), to tell others what it
   * wrote; must not throw. A crash right after the commit skips it: what it sends must be something one may lose.
   */
  committed?(batch: { seq: number; fact: F }[]): void;
}

class CheckpointMoved extends Error {}

/** The pass's consumer was dropped (it delivered nothing, or missed heartbeats): re-create it at once. */
class ConsumerDropped extends Error {}

/** A message of the stream that is not JSON: it can only be parked. */
class UnreadableFact extends Error {}

/**
 * A batch is committed at most this often unless it is already large: every commit costs about ten statements
 * whatever its size, so under load waiting a few milliseconds makes batches larger and commits rarer. It adds at
 * most this much to projection lag.
 */
const commitIntervalMs = 20;
const batchLarge = 2000;
/** After a failure that is not the facts' fault (PostgreSQL or NATS unreachable), wait this long and start again. */
const retryAfterFailureMs = 1000;
/**
 * A pull request lives this long; the server sends heartbeats at half of it while the stream is idle. Two missed
 * heartbeats mean the consumer is gone (its NATS node died: an ordered consumer is one replica), and the projector
 * starts again from its checkpoint. With the client's default (30 s) it stayed stalled for over a minute. The client
 * does not count heartbeats while it reconnects, so this is the quick way out, not the only one: the liveness check
 * (projection-liveness.ts) drops a consumer that delivers nothing whatever the client saw.
 */
const pullExpiresMs = 5000;
/**
 * At most this many facts are parked per projection in a minute. A bug that made every fact unwritable must not
 * quietly park the whole stream: past the budget the projector stops and retries, and the alert says why.
 */
const parkedPerMinuteMax = 10;

export interface ProjectorOptions {
  log: Logger;
  /** Where parked facts and stalls are raised as alerts (absent in one-off rebuilds that report on their own). */
  alerts?: HealthAlerts;
  /** The stall bound (ASSAY_PROJECTION_STALL_MS; its default when absent). */
  stallMs?: number;
  /** Overrides `catchUpWhileOthersWaitMax` (tests lower it to exercise catching up in rounds). */
  catchUpWhileOthersWaitMax?: number;
}

export async function projectionCheckpoint(sql: Sql, p: Projection<unknown>): Promise<number> {
  const [row] = await sql<
    { last_seq: number }[]
  >`SELECT last_seq FROM projection_checkpoints WHERE name = ${p.checkpoint}`;
  return row?.last_seq ?? 0;
}

/** Run a projection until `signal` aborts, restarting from its checkpoint after any failure. */
export function runProjection<F>(
  nc: NatsConnection,
  sql: Sql,
  p: Projection<F>,
  o: ProjectorOptions,
  signal: AbortSignal,
): Promise<void> {
  return runProjections(nc, sql, [p], o, signal);
}

/**
 * A projection at most this many facts behind the others catches up while they wait, so that all meet at one
 * checkpoint and share one pass again (a few seconds of replay at most). Further behind (a rebuild), the others go on
 * in their own pass meanwhile, and it catches up in rounds.
 */
const catchUpWhileOthersWaitMax = 20_000;

/**
 * Run projections of one stream in one pass until `signal` aborts, restarting from their checkpoints after any
 * failure. While their checkpoints differ, the ones furthest behind catch up to the next checkpoint first. Their
 * liveness is checked all along (projection-liveness.ts).
 */
export async function runProjections<F>(
  nc: NatsConnection,
  sql: Sql,
  ps: Projection<F>[],
  o: ProjectorOptions,
  signal: AbortSignal,
): Promise<void> {
  const liveness = new StreamLiveness(
    nc,
    ps[0]!.stream,
    ps.map((p) => p.checkpoint),
    { stallMs: o.stallMs ?? configKeys.projectionStallMs.default, log: o.log, alerts: o.alerts },
  );
  liveness.start();
  try {
    await runPasses(nc, sql, ps, o, signal, new Map(ps.map((p) => [p.checkpoint, new ParkingBudget()])), liveness);
  } finally {
    liveness.stop();
  }
}

async function runPasses<F>(
  nc: NatsConnection,
  sql: Sql,
  ps: Projection<F>[],
  o: ProjectorOptions,
  signal: AbortSignal,
  parking: Map<string, ParkingBudget>,
  liveness: StreamLiveness,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const at = await Promise.all(ps.map((p) => startingCheckpoint(sql, p as Projection<unknown>)));
      for (const [i, p] of ps.entries()) liveness.applied(p.checkpoint, at[i]!);
      const low = Math.min(...at);
      const behind = ps.filter((_, i) => at[i] === low);
      if (behind.length === ps.length) {
        await projectFromCheckpoint(nc, sql, ps, low, o, parking, signal, null, liveness);
        continue;
      }
      const ahead = ps.filter((_, i) => at[i] !== low);
      const next = Math.min(...at.filter((c) => c !== low));
      if (next - low <= (o.catchUpWhileOthersWaitMax ?? catchUpWhileOthersWaitMax)) {
        liveness.waitingFor(ahead.map((p) => p.checkpoint));
        try {
          await projectFromCheckpoint(nc, sql, behind, low, o, parking, signal, next, liveness);
        } finally {
          liveness.waitingFor([]);
        }
        continue;
      }
      const meanwhile = new AbortController();
      const aheadRun = runPasses(nc, sql, ahead, o, AbortSignal.any([signal, meanwhile.signal]), parking, liveness);
      try {
        await projectFromCheckpoint(nc, sql, behind, low, o, parking, signal, next, liveness);
      } finally {
        meanwhile.abort();
        await aheadRun;
      }
    } catch (err) {
      if (signal.aborted) break;
      // A dropped consumer was logged and counted where it was dropped: re-create it at once.
      if (err instanceof CheckpointMoved || err instanceof ConsumerDropped) continue;
      for (const p of ps)
        metrics.projectionConsumerRestarts.inc({ projection: projectionLabel(p.checkpoint), reason: 'failed' });
      o.log.error(
        { err, projection: ps.map((p) => p.checkpoint).join(',') },
        'projection failed; restarting from its checkpoint',
      );
      await sleep(retryAfterFailureMs, undefined, { signal }).catch(() => {});
    }
  }
}

/** A projection's checkpoint, created at 0 the first time it runs. */
async function startingCheckpoint(sql: Sql, p: Projection<unknown>): Promise<number> {
  await sql`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${p.checkpoint}, 0) ON CONFLICT DO NOTHING`;
  return projectionCheckpoint(sql, p);
}

/**
 * Whether PostgreSQL refused a batch for what is in it: a data exception (class 22: bad text, a number out of
 * range, an invalid uuid) or an integrity violation (class 23), or the projection's code could not handle a fact.
 * Anything else (connections, deadlocks, a missing table after a bad deploy) is retried, never parked.
 */
function refusedForItsFacts(err: unknown): boolean {
  if (err instanceof UnreadableFact || err instanceof TypeError || err instanceof RangeError) return true;
  if (!(err instanceof postgres.PostgresError)) return false;
  const sqlState = (err as { code?: unknown }).code;
  return typeof sqlState === 'string' && (sqlState.startsWith('22') || sqlState.startsWith('23'));
}

/** The facts parked in the last minute, against `parkedPerMinuteMax`. */
class ParkingBudget {
  private readonly parkedAtMs: number[] = [];

  take(): boolean {
    const now = Date.now();
    while (this.parkedAtMs.length > 0 && this.parkedAtMs[0]! < now - 60_000) this.parkedAtMs.shift();
    if (this.parkedAtMs.length >= parkedPerMinuteMax) return false;
    this.parkedAtMs.push(now);
    return true;
  }
}

type Read<F> = { seq: number; fact: F; raw?: undefined } | { seq: number; fact: null; raw: string };

async function projectFromCheckpoint<F>(
  nc: NatsConnection,
  sql: Sql,
  ps: Projection<F>[],
  from: number,
  o: ProjectorOptions,
  parking: Map<string, ParkingBudget>,
  signal: AbortSignal,
  untilSeq: number | null,
  liveness: StreamLiveness | null,
): Promise<void> {
  let checkpoint = from;
  if (untilSeq !== null && checkpoint >= untilSeq) return;
  const stream = ps[0]!.stream;
  const checkpoints = ps.map((p) => p.checkpoint);
  const watch: ConsumerWatch | null = liveness?.watch(checkpoints, checkpoint) ?? null;
  const dropped = watch ? AbortSignal.any([signal, watch.signal]) : signal;
  let consumer: Consumer | null = null;
  let messages: ConsumerMessages;
  try {
    consumer = await createOrderedConsumer(nc, stream, checkpoint + 1, signal);
    messages = await consumer.consume({ max_messages: 4000, expires: pullExpiresMs });
    watch?.created();
  } catch (err) {
    if (watch) liveness!.unwatch(watch);
    consumer?.delete().catch(() => {});
    throw err;
  }
  const waker: { wake: (() => void) | null } = { wake: null };
  const onDropped = () => {
    void messages.close();
    waker.wake?.();
  };
  dropped.addEventListener('abort', onDropped);
  if (dropped.aborted) onDropped();
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type !== 'heartbeats_missed') continue;
      if (watch) liveness!.heartbeatsMissed(watch);
      else void messages.close();
      return;
    }
  })().catch(() => {});
  let buffer: Read<F>[] = [];
  let ended = false;
  const reader = (async () => {
    try {
      for await (const m of messages) {
        watch?.delivered(m.seq);
        // The stream's head as the newest message says it (its sequence plus what is pending after it).
        liveness?.seen(m.seq + m.info.pending);
        try {
          buffer.push({ seq: m.seq, fact: m.json<F>() });
        } catch {
          buffer.push({ seq: m.seq, fact: null, raw: m.string() });
        }
        waker.wake?.();
      }
    } finally {
      ended = true;
      waker.wake?.();
    }
  })();
  let lastCommitAt = 0;
  // While the checkpoint is below this, batches are one fact each: a batch was refused for what is in it, and the
  // fact responsible must be found and parked.
  let oneByOneThroughSeq = 0;
  try {
    while (!signal.aborted && !(untilSeq !== null && checkpoint >= untilSeq)) {
      const wait = lastCommitAt + commitIntervalMs - performance.now();
      if (wait > 0 && buffer.length < batchLarge && !ended) {
        await sleep(wait, undefined, { signal }).catch(() => {});
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
      // Whatever arrived while the previous batch was being committed forms the next one, up to `untilSeq` when
      // catching up: the facts after it are the shared pass's.
      const take =
        oneByOneThroughSeq > checkpoint ? 1 : untilSeq === null ? buffer.length : countThrough(buffer, untilSeq);
      const batch = take === buffer.length ? buffer : buffer.slice(0, take);
      buffer = take === buffer.length ? [] : buffer.slice(take);
      lastCommitAt = performance.now();
      // A stream with no message at `untilSeq` (deleted) still gets there: nothing in between, the checkpoint moves.
      const through = batch.at(-1)?.seq ?? untilSeq!;
      try {
        await commitBatch(sql, ps, batch, checkpoint, through);
      } catch (err) {
        if (err instanceof CheckpointMoved || !refusedForItsFacts(err)) throw err;
        if (batch.length > 1) {
          buffer = batch.concat(buffer);
          oneByOneThroughSeq = through;
          continue;
        }
        // One fact that some projection refuses: each projection commits it on its own, and those that refuse it
        // park it; the others have it applied.
        await commitOrPark(sql, ps, o, parking, batch[0]!, checkpoint, ps.length > 1 ? null : err);
      }
      checkpoint = through;
      for (const c of checkpoints) liveness?.applied(c, through);
    }
    if (watch?.droppedFor && !signal.aborted) throw new ConsumerDropped(watch.droppedFor);
  } finally {
    if (watch) liveness!.unwatch(watch);
    dropped.removeEventListener('abort', onDropped);
    await messages.close();
    await reader.catch(() => {});
    // An ordered consumer outlives its reader by five minutes on the server unless deleted: a projector that
    // restarts (or catches up in rounds) would leave one behind each time. Not awaited: NATS may be what failed.
    consumer.delete().catch(() => {});
  }
}

/** How many reads at the front of `buffer` (in stream order) are at or before `seq`. */
function countThrough<F>(buffer: Read<F>[], seq: number): number {
  let n = 0;
  while (n < buffer.length && buffer[n]!.seq <= seq) n++;
  return n;
}

/**
 * Apply a batch and move every projection's checkpoint from `expected` to `through`, in one transaction; then tell
 * each projection's `committed`.
 */
async function commitBatch<F>(
  sql: Sql,
  ps: Projection<F>[],
  batch: Read<F>[],
  expected: number,
  through: number,
): Promise<void> {
  const unreadable = batch.find((r) => r.fact === null);
  if (unreadable) throw new UnreadableFact(`stream message ${unreadable.seq} is not JSON`);
  const facts = batch as { seq: number; fact: F }[];
  await sql.begin(async (tx) => {
    // The statements are sent together and run in order (a projection may pipeline its own too): a round trip per
    // batch costs both processes a wake-up and a system call, and batches come every 20 ms. A commit lost in a
    // crash loses its checkpoint with it, and the batch is read again from the stream: the projection needs no
    // flush to disk per batch.
    const unflushed = tx`SET LOCAL synchronous_commit TO off`.execute();
    const applied = ps.map((p) => (facts.length === 0 ? undefined : p.apply(tx as unknown as Sql, facts)));
    const moved = ps.map((p) =>
      tx`UPDATE projection_checkpoints SET last_seq = ${through}
         WHERE name = ${p.checkpoint} AND last_seq = ${expected}`.execute(),
    );
    // Awaiting all of them also handles the rejections of those a failed statement aborted.
    const [, , m] = await Promise.all([unflushed, Promise.all(applied), Promise.all(moved)]);
    if (m.some((r) => r.count !== 1)) throw new CheckpointMoved();
  });
  for (const p of ps) p.committed?.(facts);
}

/**
 * Commit one fact that a projection refused, projection by projection: each that refuses it (`refusal` says why
 * when already known, for a projection alone) parks it. Every checkpoint ends just past it.
 */
async function commitOrPark<F>(
  sql: Sql,
  ps: Projection<F>[],
  o: ProjectorOptions,
  parking: Map<string, ParkingBudget>,
  read: Read<F>,
  expected: number,
  refusal: unknown,
): Promise<void> {
  for (const p of ps) {
    let err = refusal;
    if (err === null) {
      try {
        await commitBatch(sql, [p], [read], expected, read.seq);
        continue;
      } catch (e) {
        if (e instanceof CheckpointMoved || !refusedForItsFacts(e)) throw e;
        err = e;
      }
    }
    if (!parking.get(p.checkpoint)!.take()) throw err;
    await park(sql, p, o, read, err, expected);
  }
}

/** Set one fact aside with its error and move the checkpoint past it, in one transaction; then say so loudly. */
async function park<F>(
  sql: Sql,
  p: Projection<F>,
  o: ProjectorOptions,
  read: Read<F>,
  err: unknown,
  expected: number,
): Promise<void> {
  const error = String((err as Error)?.message ?? err).slice(0, 2000);
  // JSON.stringify escapes NUL and lone surrogates, so the text fits a text column whatever the fact holds.
  const fact = read.fact === null ? JSON.stringify(read.raw) : JSON.stringify(read.fact);
  let parked = 0;
  await sql.begin(async (tx) => {
    await tx`INSERT INTO parked_facts (projection, stream_seq, error, fact)
             VALUES (${p.checkpoint}, ${read.seq}, ${error}, ${fact}) ON CONFLICT DO NOTHING`;
    const moved = await tx`UPDATE projection_checkpoints SET last_seq = ${read.seq}
                           WHERE name = ${p.checkpoint} AND last_seq = ${expected}`;
    if (moved.count !== 1) throw new CheckpointMoved();
    const [row] = await tx<{ parked: number }[]>`
      SELECT count(*)::int AS parked FROM parked_facts WHERE projection = ${p.checkpoint}`;
    parked = row!.parked;
  });
  o.log.error(
    { err, projection: p.checkpoint, streamSeq: read.seq },
    'a fact could not be projected and was parked; the projection goes on',
  );
  await o.alerts?.raise(
    'projection_parked',
    p.checkpoint,
    `${parked} fact(s) of ${p.stream} could not be projected and were set aside (latest: sequence ${read.seq}: ${error}); see \`assay parked-facts\``,
    parked,
  );
}

/** The facts a projection parked, oldest first. */
export async function parkedFacts(sql: Sql, projection?: string) {
  return sql<{ projection: string; stream_seq: number; error: string; fact: string; parked_at: Date }[]>`
    SELECT projection, stream_seq, error, fact, parked_at FROM parked_facts
    ${projection === undefined ? sql`` : sql`WHERE projection = ${projection}`}
    ORDER BY projection, stream_seq`;
}

/**
 * Drop a projection and rebuild it by replaying its stream: truncate, forget its parked facts and reset the
 * checkpoint in one transaction, then project up to the stream's last sequence at that moment. Safe while a live
 * projector runs: whichever commits a batch first advances the checkpoint, and the other's batch rolls back and
 * restarts from it. Returns the stream's last sequence the rebuild covered.
 */
export async function rebuildProjection<F>(
  nc: NatsConnection,
  sql: Sql,
  p: Projection<F>,
  o: ProjectorOptions,
): Promise<number> {
  const jsm = await jetstreamManager(nc);
  let lastSeq = 0;
  await sql.begin(async (tx) => {
    await p.truncate(tx as unknown as Sql);
    await tx`DELETE FROM parked_facts WHERE projection = ${p.checkpoint}`;
    await tx`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${p.checkpoint}, 0)
             ON CONFLICT (name) DO UPDATE SET last_seq = 0`;
    lastSeq = (await jsm.streams.info(p.stream)).state.last_seq;
  });
  await o.alerts?.clear('projection_parked', p.checkpoint);
  const never = new AbortController().signal;
  const parking = new Map([[p.checkpoint, new ParkingBudget()]]);
  const checkpoint = () => projectionCheckpoint(sql, p as Projection<unknown>);
  for (let at = await checkpoint(); at < lastSeq; at = await checkpoint()) {
    try {
      await projectFromCheckpoint(nc, sql, [p], at, o, parking, never, lastSeq, null);
    } catch (err) {
      if (!(err instanceof CheckpointMoved)) throw err;
    }
  }
  return lastSeq;
}
