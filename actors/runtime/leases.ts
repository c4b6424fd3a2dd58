// Shard leases in a JetStream KV bucket. Each host heartbeats `host.<id>`, renews the leases it holds by
// compare-and-set on their revision, and rebalances: it gives up shards above its fair share and claims free or
// lapsed ones below it. A lease is lapsed when its revision has not changed for ttlMs *as seen by this host's own
// clock*, so hosts need no synchronised clocks.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { QueuedIterator } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { natsFailure } from '../../contracts/index.ts';
import { metrics } from '../../contracts/index.ts';
import type { Clock } from './clock.ts';

export interface ShardRef {
  kind: string;
  shard: number;
}

interface Observed {
  revision: number;
  owner: string | null;
  deleted: boolean;
  seenAtMs: number;
}

export interface LeaseOptions {
  kv: KV;
  hostId: string;
  /** Hosts share shards only within a pool (actor hosts, projector workers); each pool counts its own hosts. */
  pool: string;
  kinds: { kind: string; shardCount: number }[];
  ttlMs: number;
  renewMs: number;
  clock: Clock;
  log: Logger;
  /** Called after a lease is won; resolve once the host serves the shard. */
  acquired(ref: ShardRef): Promise<void>;
  /** Called when a lease is given up or lost; resolve once the host stopped serving it. */
  released(ref: ShardRef): Promise<void>;
}

const leaseKey = (r: ShardRef) => `lease.${r.kind}.${r.shard}`;
const hostKey = (pool: string, hostId: string) => `host.${pool}.${hostId}`;

export class ShardLeases {
  private readonly observed = new Map<string, Observed>();
  /** Leases this host holds: key -> revision of our last write. */
  private readonly held = new Map<string, { ref: ShardRef; revision: number }>();
  private watcher: QueuedIterator<KvWatchEntry> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly o: LeaseOptions) {}

  async start(): Promise<void> {
    this.watcher = await this.o.kv.watch({ key: '>' });
    void (async () => {
      for await (const e of this.watcher!) this.observe(e);
    })().catch((err) => this.o.log.error({ err }, 'lease watch ended'));
    await this.tickOnce();
    this.timer = setInterval(() => {
      this.ticking = this.ticking.then(() => this.tickOnce());
    }, this.o.renewMs);
  }

  heldShards(): ShardRef[] {
    return [...this.held.values()].map((h) => h.ref);
  }

  /** Stop renewing, stop serving every shard and delete our leases so other hosts take over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const [key, h] of [...this.held]) {
      this.held.delete(key);
      await this.o.released(h.ref);
      await this.o.kv.delete(key, { previousSeq: h.revision }).catch(() => {});
    }
    await this.o.kv.delete(hostKey(this.o.pool, this.o.hostId)).catch(() => {});
    this.watcher?.stop();
  }

  private observe(e: KvWatchEntry): void {
    const prev = this.observed.get(e.key);
    if (prev && prev.revision === e.revision) return;
    let owner: string | null = null;
    const deleted = e.operation !== 'PUT';
    if (!deleted) {
      try {
        owner = (e.json() as { host?: string }).host ?? null;
      } catch {
        owner = null;
      }
    }
    this.observed.set(e.key, { revision: e.revision, owner, deleted, seenAtMs: this.o.clock.nowMs() });
  }

  private async tickOnce(): Promise<void> {
    if (this.stopped) return;
    const now = this.o.clock.nowMs();
    const value = JSON.stringify({ host: this.o.hostId, at: now });
    try {
      await this.o.kv.put(hostKey(this.o.pool, this.o.hostId), value);
    } catch (err) {
      this.o.log.warn({ err }, 'host heartbeat failed');
    }
    // Renew what we hold. A failed compare-and-set means someone else holds it now: stop serving at once.
    for (const [key, h] of [...this.held]) {
      try {
        h.revision = await this.o.kv.update(key, value, h.revision);
      } catch (err) {
        if (this.isTransient(err)) continue;
        this.o.log.warn({ shard: key }, 'lease lost');
        this.held.delete(key);
        await this.o.released(h.ref);
      }
    }
    const liveHosts = new Set<string>([this.o.hostId]);
    const prefix = hostKey(this.o.pool, '');
    for (const [key, ob] of this.observed) {
      if (key.startsWith(prefix) && !ob.deleted && now - ob.seenAtMs <= this.o.ttlMs)
        liveHosts.add(key.slice(prefix.length));
    }
    for (const { kind, shardCount } of this.o.kinds) {
      const fair = Math.ceil(shardCount / liveHosts.size);
      const mine = [...this.held.values()].filter((h) => h.ref.kind === kind);
      // Give back the surplus, highest shards first, so the others can claim them on their next tick.
      for (const h of mine.sort((a, b) => b.ref.shard - a.ref.shard).slice(0, Math.max(0, mine.length - fair))) {
        const key = leaseKey(h.ref);
        this.held.delete(key);
        await this.o.released(h.ref);
        await this.o.kv.delete(key, { previousSeq: h.revision }).catch(() => {});
      }
      let want = fair - Math.min(mine.length, fair);
      for (let shard = 0; shard < shardCount && want > 0; shard++) {
        const ref = { kind, shard };
        const key = leaseKey(ref);
        if (this.held.has(key)) continue;
        const ob = this.observed.get(key);
        const free = !ob || ob.deleted;
        // Ours but not held: a renewal whose reply was lost moved the revision; reclaim it without waiting.
        const lapsed = ob && !ob.deleted && (ob.owner === this.o.hostId || now - ob.seenAtMs > this.o.ttlMs);
        if (!free && !lapsed) continue;
        try {
          const revision = free ? await this.o.kv.create(key, value) : await this.o.kv.update(key, value, ob!.revision);
          this.held.set(key, { ref, revision });
          want--;
          metrics.leasesAcquired.inc({ kind });
          // Taken from another host that stopped renewing it (ours, reclaimed after a lost reply, is no takeover).
          if (lapsed && ob!.owner !== this.o.hostId) {
            metrics.leaseTakeovers.inc({ kind });
            this.o.log.info({ shard: key, from: ob!.owner }, 'took over lapsed lease');
          }
          await this.o.acquired(ref);
        } catch {
          // Lost the race for this shard to another host; try the next one.
        }
      }
    }
  }

  /** A renewal that failed for want of an answer (not because another host holds the lease now). */
  private isTransient(err: unknown): boolean {
    const failure = natsFailure(err);
    return failure === 'timeout' || failure === 'no_responders' || failure === 'disconnected';
  }
}
