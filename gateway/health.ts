// The live operational alerts /healthz shows: a watch of the `<ns>_health` KV bucket (contracts/health.ts), where
// background jobs raise alerts and delete them when cleared. Every gateway process watches it, so any of them shows
// the same alerts a moment after they change. The whole bucket is also read every `rereadMs` without a consumer:
// the watch reads through a consumer of one replica, and when that replica's NATS node dies the watch is silent for
// a minute or more (its heartbeats are 30 s apart) and may be re-created on the dead node, which is when alerts
// matter most (a projection stalled by the same node loss).
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { alertOf, type HealthAlert, readHealthAlerts } from '../contracts/index.ts';

/** How long to wait before watching again after the watch failed (NATS gone for longer than it reconnects). */
const rewatchAfterMs = 1000;
/** How often the whole bucket is read as well: at most this late, whatever happened to the watch. */
const rereadMs = 2000;

export interface HealthBucket {
  kv: KV;
  /** Its name (`<ns>_health`). */
  bucket: string;
  nc: NatsConnection;
}

export class HealthAlerts {
  private readonly live = new Map<string, HealthAlert>();
  /** The latest revision seen of each key, by the watch or a re-read: an older one never overwrites it. */
  private readonly revisions = new Map<string, number>();
  private sorted: HealthAlert[] = [];
  private stopped = false;
  private watch: { stop(): void } | null = null;
  private retry: NodeJS.Timeout | null = null;
  private reread: NodeJS.Timeout | null = null;
  private jsm: JetStreamManager | null = null;
  private rereading = false;

  constructor(
    private readonly health: HealthBucket,
    private readonly log: Logger,
  ) {}

  /** The live alerts, by key. */
  list(): HealthAlert[] {
    return this.sorted;
  }

  start(): void {
    void this.run();
    this.reread = setInterval(() => this.readAll(), rereadMs);
    this.reread.unref();
  }

  stop(): void {
    this.stopped = true;
    this.watch?.stop();
    if (this.retry) clearTimeout(this.retry);
    if (this.reread) clearInterval(this.reread);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const watch = await this.health.kv.watch();
        this.watch = watch;
        for await (const entry of watch) this.apply(entry);
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, 'watching the health alerts bucket failed; watching again');
      }
      if (this.stopped) return;
      await new Promise<void>((resolve) => {
        this.retry = setTimeout(resolve, rewatchAfterMs).unref();
      });
    }
  }

  /** Read every key as it is now; one read at a time (a read that hangs while a stream elects skips turns). */
  private readAll(): void {
    if (this.rereading || this.stopped) return;
    this.rereading = true;
    void (async () => {
      try {
        this.jsm ??= await jetstreamManager(this.health.nc, { checkAPI: false });
        const entries = await readHealthAlerts(this.jsm, this.health.kv, this.health.bucket);
        for (const e of entries) this.record(e.key, e.revision, e.alert);
        // A key gone from the bucket altogether (purged) is gone from the view.
        const present = new Set(entries.map((e) => e.key));
        for (const key of [...this.revisions.keys()]) if (!present.has(key)) this.forget(key);
      } catch {
        // NATS unreachable or the bucket between leaders: the watch (if alive) and the next read cover it.
      } finally {
        this.rereading = false;
      }
    })();
  }

  private apply(entry: KvEntry): void {
    const alert = entry.operation === 'PUT' ? alertOf(entry) : null;
    if (entry.operation === 'PUT' && !alert)
      this.log.warn({ key: entry.key, revision: entry.revision }, 'a health alert is not a HealthAlert; ignored');
    this.record(entry.key, entry.revision, alert);
  }

  private record(key: string, revision: number, alert: HealthAlert | null): void {
    if ((this.revisions.get(key) ?? 0) > revision) return;
    this.revisions.set(key, revision);
    if (alert) this.live.set(key, alert);
    else this.live.delete(key);
    this.sort();
  }

  private forget(key: string): void {
    this.revisions.delete(key);
    if (this.live.delete(key)) this.sort();
  }

  private sort(): void {
    this.sorted = [...this.live.keys()].sort().map((k) => this.live.get(k)!);
  }
}
