// Shard leases in a JetStream KV bucket. Each host heartbeats `host.<id>`, renews the leases it holds by
// compare-and-set on their revision, and rebalances: it gives up shards above its fair share and claims free or
// lapsed ones below it. A lease is lapsed when its revision has not changed for ttlMs *as seen by this host's own
// clock*, so hosts need no synchronised clocks.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { QueuedIterator } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import Type from 'typebox';
import { Value } from 'typebox/value';
import { natsFailure } from '../../contracts/index.ts';
import { metrics } from './telemetry.ts';
import type { Clock } from './clock.ts';

/** A lease's value in the bucket: the host that holds it (other fields a later version adds are left alone). */
const LeaseValue = Type.Object({ host: Type.String() });

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
  private tickQueued = false;

  constructor(private readonly o: LeaseOptions) {}

  async start(): Promise<void> {
    this.watcher = await this.o.kv.watch({ key: '>' });
    void (async () => {
      for await (const e of this.watcher!) this.observe(e);
    })().catch((err) => this.o.log.error({ err }, 'lease watch ended'));
    await this.tickOnce();
    this.timer = setInterval(() => this.queueTick(), this.o.renewMs);
  }

  heldShards(): ShardRef[] {
    return [...this.held.values()].map((h) => h.ref);
  }

  /**
   * Stop renewing, stop serving every shard, then delete our leases so other hosts take over at once (release, not
   * lapse). The heartbeat goes first: the others then count one host fewer and claim each lease as it is deleted.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    await this.o.kv.delete(hostKey(this.o.pool, this.o.hostId)).catch(() => {});
    const held = [...this.held.values()];
    this.held.clear();
    for (const h of held) await this.o.released(h.ref);
    await Promise.all(held.map((h) => this.o.kv.delete(leaseKey(h.ref), { previousSeq: h.revision }).catch(() => {})));
    this.watcher?.stop();
  }

  /**
   * Tick now rather than at the next interval: a peer of our pool deleted its heartbeat or a lease of our kinds (a
   * graceful stop, or surplus given back), so there may be shards to claim. At most one extra tick is queued.
   */
  private tickSoon(): void {
    if (this.stopped || this.tickQueued) return;
    this.tickQueued = true;
    this.queueTick(() => {
      this.tickQueued = false;
    });
  }

  /** Ticks run one after another; one that throws is logged, and the next still runs (renewals must go on). */
  private queueTick(before?: () => void): void {
    this.ticking = this.ticking
      .then(() => {
        before?.();
        return this.tickOnce();
      })
      .catch((err) => this.o.log.error({ err }, 'lease tick failed'));
  }

  private observe(e: KvWatchEntry): void {
    const prev = this.observed.get(e.key);
    if (prev && prev.revision === e.revision) return;
    let owner: string | null = null;
    const deleted = e.operation !== 'PUT';
    if (!deleted) {
      try {
        const value: unknown = e.json();
        owner = Value.Check(LeaseValue, value) ? value.host : null;
      } catch {
        owner = null;
      }
    }
    this.observed.set(e.key, { revision: e.revision, owner, deleted, seenAtMs: this.o.clock.nowMs() });
    if (deleted && prev && !prev.deleted && prev.owner !== this.o.hostId && this.concerns(e.key)) this.tickSoon();
  }

  /** A key of this pool: a host's heartbeat in it, or a lease of one of its kinds. */
  private concerns(key: string): boolean {
    if (key.startsWith(hostKey(this.o.pool, ''))) return true;
    return this.o.kinds.some(({ kind }) => key.startsWith(`lease.${kind}.`));
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
        // Often still ours (an earlier renewal applied but its answer was lost): learn its revision to reclaim it.
        await this.refresh(key);
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
      const candidates: { ref: ShardRef; key: string; ob: Observed | undefined; lapsed: boolean }[] = [];
      for (let shard = 0; shard < shardCount; shard++) {
        const ref = { kind, shard };
        const key = leaseKey(ref);
        if (this.held.has(key)) continue;
        const ob = this.observed.get(key);
        const free = !ob || ob.deleted;
        // Ours but not held: a renewal whose reply was lost moved the revision; reclaim it without waiting.
        const lapsed = !!ob && !ob.deleted && (ob.owner === this.o.hostId || now - ob.seenAtMs > this.o.ttlMs);
        if (free || lapsed) candidates.push({ ref, key, ob, lapsed });
      }
      // Claimed `want` at a time, side by side: a host taking over half the shards (a peer stopped or died) would
      // otherwise pay two round trips per shard one after another, seconds on a busy machine.
      for (let next = 0; want > 0 && next < candidates.length; ) {
        const batch = candidates.slice(next, next + want);
        next += batch.length;
        const won = await Promise.all(
          batch.map(async ({ ref, key, ob, lapsed }) => {
            try {
              const revision = lapsed
                ? await this.o.kv.update(key, value, ob!.revision)
                : await this.o.kv.create(key, value);
              this.held.set(key, { ref, revision });
              want--;
              metrics.leasesAcquired.inc({ kind });
              // Taken from another host that stopped renewing it (ours, reclaimed after a lost reply, is no takeover).
              if (lapsed && ob!.owner !== this.o.hostId) {
                metrics.leaseTakeovers.inc({ kind });
                this.o.log.info({ shard: key, from: ob!.owner }, 'took over lapsed lease');
              }
              return ref;
            } catch {
              // Lost the race for this shard to another host, or the revision we knew is stale: the next batch
              // tries others, and the next tick knows the key as it is now.
              await this.refresh(key);
              return null;
            }
          }),
        );
        await Promise.all(
          won
            .filter((ref) => ref !== null)
            .map((ref) =>
              this.o.acquired(ref).catch(async (err) => {
                // A lease held but not served would answer no_responders until this host stopped: give it back, so
                // the next tick (here or on another host) claims and serves it.
                this.o.log.warn({ err, shard: leaseKey(ref) }, 'serving a shard failed; giving its lease back');
                const key = leaseKey(ref);
                const h = this.held.get(key);
                this.held.delete(key);
                await this.o.released(ref).catch(() => {});
                if (h) await this.o.kv.delete(key, { previousSeq: h.revision }).catch(() => {});
              }),
            ),
        );
      }
    }
  }

  /**
   * Read one key and observe it. The watch tells us every change, but its consumer lives on one NATS node: when that
   * node dies the watch is silent until the client notices and recreates it (10 s or more), and a compare-and-set
   * against the revision it last reported keeps failing. After a failed one we look for ourselves.
   */
  private async refresh(key: string): Promise<void> {
    try {
      const e = await this.o.kv.get(key);
      if (e) this.observe(e as unknown as KvWatchEntry);
    } catch {
      // The next failure looks again.
    }
  }

  /** A renewal that failed for want of an answer (not because another host holds the lease now). */
  private isTransient(err: unknown): boolean {
    const failure = natsFailure(err);
    return failure === 'timeout' || failure === 'no_responders' || failure === 'disconnected';
  }
}
