// A projector checks its own liveness, on a timer of its own rather than in the pass's chain of awaits, so that a
// pass waiting on a consumer that delivers nothing, on a consumer being created or on a commit is still seen:
//
// - It reads its stream's last sequence every `checkMs` (one stream info request) and compares it with each
//   projection's checkpoint. A projection its stream has been ahead of for longer than the stall bound with nothing
//   applied is *stalled*: a warning in the log, `assay_projection_stalled` 1 and `assay_projection_stalls_total`,
//   and a `projection_stalled` alert on /healthz (and so in `assay status`), kept up to date with the lag and
//   cleared once the projection moves again.
// - A consumer that has delivered nothing for longer than the same bound while the stream holds messages past what
//   it delivered is dropped, and the pass re-creates it from the checkpoint (`assay_projection_consumer_restarts_total`
//   with reason `stalled`, and a warning). This is what ends a stall after a NATS node loss whatever the client
//   library saw: a consumer on the dead node (heartbeats are not reported missed while the connection is being
//   re-established, and then the library waits on the dead consumer for ever), one re-created by the library on
//   the dead node (nats-server 2.9 places a one-replica consumer on any peer of the stream, a dead one included),
//   or one on a replica that is not current.
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { metrics, registerProjection } from './telemetry.ts';
import type { HealthAlerts } from './health.ts';

export interface LivenessOptions {
  /** The stall bound (ASSAY_PROJECTION_STALL_MS). */
  stallMs: number;
  log: Logger;
  alerts?: HealthAlerts;
}

/** How often the stream is read and the bound checked: often enough that a stall is seen soon after the bound. */
const livenessCheckMs = (stallMs: number) => Math.min(1000, Math.max(100, Math.floor(stallMs / 4)));
/** While stalled, the alert is refreshed (its lag) at most this often. */
const alertRefreshMs = 1000;

/** Where one projection stands, as its projector knows it. */
class ProjectionState {
  /** Its checkpoint (-1 until read). */
  applied = -1;
  /** When its checkpoint last moved, or it was last seen caught up with its stream (performance.now()). */
  movedAtMs = performance.now();
  stalledSinceMs: number | null = null;
  /** The stall alert as the bucket last took it: raised with this lag, or cleared (null). */
  alerted: { lag: number; atMs: number } | null = null;
  /** Whether the bucket may hold a stall alert of ours (or an earlier projector's) that is not cleared yet. */
  alertMayBeLive = true;
  /** A raise or a clear is in flight: one at a time, whatever it costs while NATS is slow. */
  alerting = false;
  /** Whether it waits for another projection of the pass to catch up (that one's progress counts as its own). */
  waiting = false;

  constructor(
    readonly checkpoint: string,
    readonly name: string,
  ) {}
}

/** One consumer a pass reads through, watched for delivering nothing while its stream moves on. */
export class ConsumerWatch {
  /** The last stream sequence it delivered (the checkpoint it started from, before any). */
  deliveredThrough: number;
  private lastMessageAtMs = performance.now();
  /** Still being created (until `created`): not dropped meanwhile. */
  creating = true;
  private readonly dropping = new AbortController();
  /** Why it was dropped, once it has been. */
  droppedFor: 'stalled' | 'heartbeats_missed' | null = null;

  constructor(
    readonly projections: readonly string[],
    from: number,
  ) {
    this.deliveredThrough = from;
  }

  /** Aborted when the consumer is dropped: the pass ends and re-creates it from its checkpoint. */
  get signal(): AbortSignal {
    return this.dropping.signal;
  }

  delivered(seq: number): void {
    this.deliveredThrough = seq;
    this.lastMessageAtMs = performance.now();
  }

  /**
   * Its consumer exists from now: silence counts from here. While it is being created it is not dropped (that would
   * only start the create again): creating is bounded on its own (projection-consumer.ts).
   */
  created(): void {
    this.lastMessageAtMs = performance.now();
    this.creating = false;
  }

  silentForMs(now: number): number {
    return now - this.lastMessageAtMs;
  }

  drop(reason: 'stalled' | 'heartbeats_missed'): boolean {
    if (this.droppedFor) return false;
    this.droppedFor = reason;
    this.dropping.abort();
    return true;
  }
}

/** The liveness of the projections one projector runs over one stream. */
export class StreamLiveness {
  private readonly states = new Map<string, ProjectionState>();
  private readonly watches = new Set<ConsumerWatch>();
  /** The stream's last sequence, as last read (or as the newest message said: its sequence plus what is pending). */
  private head = 0;
  private jsm: JetStreamManager | null = null;
  private reading = false;
  private timer: NodeJS.Timeout | null = null;
  private unregister: (() => void)[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly stream: string,
    checkpoints: readonly string[],
    private readonly o: LivenessOptions,
  ) {
    for (const c of checkpoints) this.states.set(c, new ProjectionState(c, projectionLabel(c)));
  }

  /**
   * Start checking. A stall alert an earlier projector left (it stopped while stalled) is cleared: nothing is known
   * yet, and it is raised again if the stall goes on.
   */
  start(): void {
    for (const s of this.states.values()) {
      this.unregister.push(
        registerProjection({
          name: s.name,
          position: () => ({ applied: Math.max(0, s.applied), head: Math.max(this.head, s.applied) }),
          stalled: () => s.stalledSinceMs !== null,
        }),
      );
    }
    this.timer = setInterval(() => this.check(), livenessCheckMs(this.o.stallMs));
  }

  /** Stop checking. A live stall alert stays: the projector that takes over clears or refreshes it. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    for (const u of this.unregister) u();
    this.unregister = [];
  }

  /** A projection's checkpoint, as read or committed. A change is progress (a rebuild resetting it is one too). */
  applied(checkpoint: string, seq: number): void {
    const s = this.states.get(checkpoint);
    if (!s || s.applied === seq) return;
    s.applied = seq;
    this.moved(s);
    // Projections that wait for this one to catch up to them (a few seconds of replay at most) are not stalled.
    for (const other of this.states.values()) if (other.waiting) this.moved(other);
  }

  /** Mark projections as waiting for the others of their pass to catch up, or (`[]`) none. */
  waitingFor(checkpoints: readonly string[]): void {
    for (const s of this.states.values()) s.waiting = checkpoints.includes(s.checkpoint);
  }

  /** The stream holds at least this sequence (a message's sequence plus the messages pending after it). */
  seen(headSeq: number): void {
    if (headSeq > this.head) this.head = headSeq;
  }

  /** Watch a consumer a pass starts reading from `from` (its checkpoint) until `unwatch`. */
  watch(checkpoints: readonly string[], from: number): ConsumerWatch {
    const w = new ConsumerWatch(checkpoints, from);
    this.watches.add(w);
    return w;
  }

  unwatch(w: ConsumerWatch): void {
    this.watches.delete(w);
  }

  /**
   * Count and log a consumer dropped for missing heartbeats (the client library's own check, which is quicker
   * than the stall bound when it fires at all).
   */
  heartbeatsMissed(w: ConsumerWatch): void {
    if (!w.drop('heartbeats_missed')) return;
    for (const c of w.projections)
      metrics.projectionConsumerRestarts.inc({ projection: projectionLabel(c), reason: 'heartbeats_missed' });
    this.o.log.warn(
      { stream: this.stream, projection: w.projections.join(','), deliveredThrough: w.deliveredThrough },
      'projection consumer missed two heartbeats; dropping it and re-creating it from the checkpoint',
    );
  }

  private check(): void {
    this.readHead();
    const now = performance.now();
    for (const s of this.states.values()) {
      if (s.applied < 0) continue;
      // Caught up: nothing to wait for, so the time without progress starts again from here.
      if (this.head <= s.applied) this.moved(s);
      else if (s.stalledSinceMs === null && now - s.movedAtMs > this.o.stallMs) this.stalled(s, now);
      this.reconcileAlert(s, now);
    }
    for (const w of this.watches) {
      // Messages past what it delivered, and none delivered for longer than the bound: it is not delivering.
      if (w.creating || this.head <= w.deliveredThrough || w.silentForMs(now) <= this.o.stallMs) continue;
      if (!w.drop('stalled')) continue;
      for (const c of w.projections)
        metrics.projectionConsumerRestarts.inc({ projection: projectionLabel(c), reason: 'stalled' });
      this.o.log.warn(
        {
          stream: this.stream,
          projection: w.projections.join(','),
          deliveredThrough: w.deliveredThrough,
          streamLastSeq: this.head,
          silentMs: Math.round(w.silentForMs(now)),
        },
        'projection consumer delivered nothing while its stream moved on; dropping it and re-creating it from the checkpoint',
      );
    }
  }

  /** Read the stream's last sequence, one request at a time (a read that hangs during an election skips ticks). */
  private readHead(): void {
    if (this.reading) return;
    this.reading = true;
    void (async () => {
      try {
        // Answered by the stream's leader; bounded by the stall bound so a lost request does not hold up the next.
        this.jsm ??= await jetstreamManager(this.nc, { checkAPI: false, timeout: Math.min(5000, this.o.stallMs) });
        this.seen((await this.jsm.streams.info(this.stream)).state.last_seq);
      } catch {
        // NATS unreachable or the stream between leaders: the head stays as last known; the next tick reads again.
      } finally {
        this.reading = false;
      }
    })();
  }

  private moved(s: ProjectionState): void {
    s.movedAtMs = performance.now();
    if (s.stalledSinceMs !== null) this.resumed(s);
  }

  private stalled(s: ProjectionState, now: number): void {
    const stuckMs = now - s.movedAtMs;
    s.stalledSinceMs = s.movedAtMs;
    metrics.projectionStalls.inc({ projection: s.name });
    this.o.log.warn(
      {
        stream: this.stream,
        projection: s.checkpoint,
        appliedSeq: s.applied,
        streamLastSeq: this.head,
        lag: this.head - s.applied,
        stuckMs: Math.round(stuckMs),
      },
      'projection stalled: its stream is ahead of it and nothing was applied within the stall bound',
    );
  }

  private resumed(s: ProjectionState): void {
    const stalledMs = performance.now() - (s.stalledSinceMs ?? 0);
    s.stalledSinceMs = null;
    this.o.log.info(
      { stream: this.stream, projection: s.checkpoint, appliedSeq: s.applied, stalledMs: Math.round(stalledMs) },
      'projection moving again after a stall',
    );
    this.reconcileAlert(s, performance.now());
  }

  /**
   * Bring the bucket to what is true: a stall alert with the current lag (refreshed at most every second) while
   * stalled, none otherwise. One request at a time; one the bucket did not take is tried again at the next check.
   */
  private reconcileAlert(s: ProjectionState, now: number): void {
    const alerts = this.o.alerts;
    if (!alerts || s.alerting) return;
    const lag = this.head - s.applied;
    if (s.stalledSinceMs !== null) {
      if (s.alerted && (s.alerted.lag === lag || now - s.alerted.atMs < alertRefreshMs)) return;
      const message =
        `${s.name} has applied nothing for ${((now - s.stalledSinceMs) / 1000).toFixed(1)} s while its stream ` +
        `${this.stream} moved ahead (applied ${s.applied}, stream at ${this.head}, ${lag} behind); its projector ` +
        're-creates its consumer when that delivers nothing (docs/operations.md, Stalled projections)';
      s.alerting = true;
      s.alertMayBeLive = true;
      void alerts.raise('projection_stalled', s.checkpoint, message, Math.max(1, lag)).then((taken) => {
        s.alerted = taken ? { lag, atMs: now } : null;
        s.alerting = false;
      });
    } else if (s.alertMayBeLive) {
      s.alerting = true;
      void alerts.clear('projection_stalled', s.checkpoint).then((taken) => {
        s.alerted = null;
        s.alertMayBeLive = !taken;
        s.alerting = false;
        // A stall that began while the clear was in flight is raised at the next check.
      });
    }
  }
}

/** The metric label of a checkpoint name (`principal_facts:<stream>` -> `principal_facts`). */
export function projectionLabel(checkpoint: string): string {
  return checkpoint.split(':')[0]!;
}
