// The live operational alerts /healthz shows: a watch of the `<ns>_health` KV bucket (contracts/health.ts), where
// background jobs raise alerts and delete them when cleared. Every gateway process watches it, so any of them shows
// the same alerts a moment after they change.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { Compile } from 'typebox/compile';
import { type HealthAlert, schemas } from '../contracts/index.ts';

const isAlert = Compile(schemas.HealthAlert);

/** How long to wait before watching again after the watch failed (NATS gone for longer than it reconnects). */
const rewatchAfterMs = 1000;

export class HealthAlerts {
  private readonly live = new Map<string, HealthAlert>();
  private sorted: HealthAlert[] = [];
  private stopped = false;
  private watch: { stop(): void } | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
  ) {}

  /** The live alerts, by key. */
  list(): HealthAlert[] {
    return this.sorted;
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.watch?.stop();
    if (this.retry) clearTimeout(this.retry);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const watch = await this.kv.watch();
        this.watch = watch;
        // A new watch starts with every current value: forget what the previous one showed.
        this.live.clear();
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

  private apply(entry: KvWatchEntry): void {
    if (entry.operation !== 'PUT') this.live.delete(entry.key);
    else {
      let alert: unknown;
      try {
        alert = entry.json();
      } catch {
        alert = null;
      }
      if (isAlert.Check(alert)) this.live.set(entry.key, alert);
      else {
        this.live.delete(entry.key);
        this.log.warn({ key: entry.key, revision: entry.revision }, 'a health alert is not a HealthAlert; ignored');
      }
    }
    this.sorted = [...this.live.keys()].sort().map((k) => this.live.get(k)!);
  }
}
