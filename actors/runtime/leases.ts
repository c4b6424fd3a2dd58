// Shard leases in a JetStream KV bucket. Each host writes its heartbeat `host.<pool>.<id>` every renewMs; a lease
// `lease.<kind>.<shard>` names its holder and is written only when it changes hands, so an idle host writes one key
// per renewal, not one per shard it holds (each write is echoed to the watch of every process using the bucket: one
// watch per process, lease-watch.ts). A host gives up shards above its fair share and claims free or lapsed ones
// below it. A lease is lapsed when its holder's heartbeat has not moved for ttlMs *as seen by this host's own clock*
// (hosts need no synchronised clocks), confirmed by reading that heartbeat afresh before taking over: a watch can be
// silent for seconds after its NATS node dies. The holder stops serving every shard once its own heartbeat has gone
// unwritten for ttlMs less one renewal, before anyone can take them over, and a shard whose lease it sees another
// host write it stops serving at once.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { natsFailure } from '../../contracts/index.ts';
import { metrics } from './telemetry.ts';
import type { Clock } from './clock.ts';
import { watchLeases } from './lease-watch.ts';

/**
 * The host a lease's value names (it also holds the pool and when it was taken, for `assay status`; other fields a
 * later version adds are left alone), or null. A plain check: it runs for every heartbeat each host's watch sees,
 * and TypeBox's uncompiled Value.Check was a tenth of an idle host's CPU.
 */
function leaseHolder(value: unknown): string | null {
  const host = typeof value === 'object' && value !== null ? (value as { host?: unknown }).host : undefined;
  return typeof host === 'string' ? host : null;
}

export interface ShardRef {
  kind: string;
  shard: number;
}

interface Observed {
  revision: number;
  owner: string | null;
  deleted: boolean;
  seenAtMs: number;
  /** A heartbeat written by a host of the earlier rule, which renews each lease and takes one it sees unrenewed. */
  renewsLeases: boolean;
}

/** What a heartbeat says of the rule its host follows; a heartbeat without it is of the earlier rule. */
const leaseRule = 'heartbeat';

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
  /** Leases this host holds: key -> revision of our write. */
  private readonly held = new Map<string, { ref: ShardRef; revision: number }>();
  /** Held leases the watch saw another host write (or delete): given up at the next tick. */
  private readonly lost = new Set<string>();
  /**
   * Leases this host deleted, by the revision deleted, until the watch shows the deletion: releaseUnserved must not
   * send a second delete for what the watch has not caught up with.
   */
  private readonly deleted = new Map<string, number>();
  /** Leaves the process's watch of the bucket (lease-watch.ts), once joined. */
  private leaveWatch: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private tickQueued = false;
  /**
   * When the renewal timer last fired (our clock), or null before the first. Its lateness, not a tick's, tells a
   * pause: ticks run one after another and a slow one (its KV calls answered late) starts the next late, while the
   * process ran all along; read as a pause, that kept a host whose heartbeat failed serving after another took over.
   */
  private lastTimerAtMs: number | null = null;
  /** When this process last resumed after not running (the renewal timer fired far later than its interval). */
  private resumedAtMs = Number.NEGATIVE_INFINITY;
  /** When our newest written heartbeat was sent (our clock), or null before the first. */
  private heartbeatAtMs: number | null = null;
  /** Heartbeat writes under way: they run beside the ticks, so a slow tick never delays one. */
  private readonly beating = new Set<Promise<void>>();
  /** Past this long without a heartbeat written, this host may no longer serve: others take over after ttlMs. */
  private readonly fenceAfterMs: number;

  constructor(private readonly o: LeaseOptions) {
    this.fenceAfterMs = o.ttlMs - o.renewMs;
  }

  async start(): Promise<void> {
    this.leaveWatch = await watchLeases(this.o.kv, this.o.log, (e) => this.observe(e));
    await this.beat();
    await this.tickOnce();
    this.lastTimerAtMs = this.o.clock.nowMs();
    this.timer = setInterval(() => {
      const now = this.o.clock.nowMs();
      // Far later than its interval: this process was not running (a pause, a starved CPU), so neither were its
      // heartbeat writes nor the reading of their answers.
      if (this.lastTimerAtMs !== null && now - this.lastTimerAtMs > 2 * this.o.renewMs) this.resumedAtMs = now;
      this.lastTimerAtMs = now;
      void this.beat();
      this.queueTick();
    }, this.o.renewMs);
  }

  heldShards(): ShardRef[] {
    return [...this.held.values()].map((h) => h.ref);
  }

  /**
   * Stop serving every shard (commands under way finish first), delete our leases so other hosts claim them at once
   * (release, not lapse), then delete our heartbeat, after any write of it under way, which would bring it back. The
   * heartbeat goes last: a lease whose holder has no heartbeat is lapsed, and taking one over while its commands
   * finish here would race them. Once it is gone the others count one host fewer and claim the rest.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    const held = [...this.held.values()];
    this.held.clear();
    for (const h of held) await this.o.released(h.ref);
    await Promise.all(held.map((h) => this.o.kv.delete(leaseKey(h.ref), { previousSeq: h.revision }).catch(() => {})));
    await Promise.all(this.beating);
    await this.o.kv.delete(hostKey(this.o.pool, this.o.hostId)).catch(() => {});
    this.leaveWatch?.();
  }

  /**
   * Write our heartbeat. At most two writes are under way at once: a write that hangs (its NATS node died) does not
   * keep the next from being sent, and a NATS that answers nothing does not pile them up.
   */
  private beat(): Promise<void> {
    if (this.stopped || this.beating.size >= 2) return Promise.resolve();
    const sentAtMs = this.o.clock.nowMs();
    const value = JSON.stringify({ host: this.o.hostId, at: sentAtMs, leases: leaseRule });
    const write: Promise<void> = this.o.kv
      .put(hostKey(this.o.pool, this.o.hostId), value)
      .then(
        () => {
          this.heartbeatAtMs = Math.max(this.heartbeatAtMs ?? sentAtMs, sentAtMs);
        },
        (err: unknown) => this.o.log.warn({ err }, 'host heartbeat failed'),
      )
      .finally(() => this.beating.delete(write));
    this.beating.add(write);
    return write;
  }

  /** Whether our heartbeat was written recently enough that no other host may take our leases over yet. */
  private heartbeatFresh(now: number): boolean {
    return this.heartbeatAtMs !== null && now - this.heartbeatAtMs <= this.fenceAfterMs;
  }

  /**
   * Tick now rather than at the next interval: a peer of our pool deleted its heartbeat or a lease of our kinds (a
   * graceful stop, or surplus given back), so there may be shards to claim; or another host wrote a lease we hold.
   * At most one extra tick is queued.
   */
  private tickSoon(): void {
    if (this.stopped || this.tickQueued) return;
    this.tickQueued = true;
    this.queueTick(() => {
      this.tickQueued = false;
    });
  }

  /** Ticks run one after another; one that throws is logged, and the next still runs. */
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
    let renewsLeases = false;
    const deleted = e.operation !== 'PUT';
    if (!deleted) {
      try {
        const value: unknown = e.json();
        owner = leaseHolder(value);
        renewsLeases = e.key.startsWith('host.') && (value as { leases?: unknown }).leases !== leaseRule;
      } catch {
        owner = null;
      }
    }
    this.observed.set(e.key, { revision: e.revision, owner, deleted, seenAtMs: this.o.clock.nowMs(), renewsLeases });
    if (e.revision > (this.deleted.get(e.key) ?? Number.POSITIVE_INFINITY)) this.deleted.delete(e.key);
    // A lease of ours written by someone else, or deleted: it is theirs (or nobody's) now. Our own writes of it name
    // us, and we forget a lease before deleting it.
    const mine = this.held.get(e.key);
    if (mine && e.revision > mine.revision && (deleted || owner !== this.o.hostId)) {
      this.lost.add(e.key);
      this.tickSoon();
    }
    if (deleted && prev && !prev.deleted && prev.owner !== this.o.hostId && this.concerns(e.key)) this.tickSoon();
  }

  /** A key of this pool: a host's heartbeat in it, or a lease of one of its kinds. */
  private concerns(key: string): boolean {
    if (key.startsWith(hostKey(this.o.pool, ''))) return true;
    return this.o.kinds.some(({ kind }) => key.startsWith(`lease.${kind}.`));
  }

  /** Stop serving a lease we no longer hold (it is forgotten first, so nothing renews or deletes it). */
  private async giveUp(key: string): Promise<void> {
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    await this.o.released(h.ref);
  }

  /** Whether `host`'s heartbeat in our pool has moved within ttlMs, as this host saw it. */
  private hostAlive(host: string, now: number): boolean {
    const hb = this.observed.get(hostKey(this.o.pool, host));
    return !!hb && !hb.deleted && now - hb.seenAtMs <= this.o.ttlMs;
  }

  private async tickOnce(): Promise<void> {
    if (this.stopped) return;
    const now = this.o.clock.nowMs();
    for (const key of [...this.lost]) {
      this.lost.delete(key);
      if (!this.held.has(key)) continue;
      this.o.log.warn({ shard: key, to: this.observed.get(key)?.owner ?? null }, 'lease lost');
      await this.giveUp(key);
    }
    // Our heartbeat has not been written for too long: the others may take our leases over soon. Stop serving
    // before they can; the leases still name us, and we reclaim them once our heartbeat is written again. After a
    // pause of the process the time counts from when it resumed: its heartbeat had no chance meanwhile, and stopping
    // would turn every pause into a handover (if another host took a lease meanwhile, its write tells us).
    if (!this.heartbeatFresh(now)) {
      if (now - this.resumedAtMs <= this.fenceAfterMs) return;
      if (this.held.size > 0) {
        this.o.log.warn(
          { shards: this.held.size, sinceHeartbeatMs: this.heartbeatAtMs === null ? null : now - this.heartbeatAtMs },
          'host heartbeat not written within the lease time to live less one renewal; stopping serving every shard',
        );
        for (const key of [...this.held.keys()]) await this.giveUp(key);
      }
      return;
    }
    const value = JSON.stringify({ host: this.o.hostId, pool: this.o.pool, at: now });
    const liveHosts = new Set<string>([this.o.hostId]);
    let earlierRuleAlive = false;
    const prefix = hostKey(this.o.pool, '');
    for (const [key, ob] of this.observed) {
      if (!key.startsWith(prefix) || !this.hostAlive(key.slice(prefix.length), now)) continue;
      liveHosts.add(key.slice(prefix.length));
      earlierRuleAlive ||= ob.renewsLeases;
    }
    // During a rolling upgrade from a release that renewed each lease: while one of its hosts is alive in the pool,
    // renew ours as it expects, or it would take them every time to live.
    if (earlierRuleAlive) await this.renewHeld(value);
    for (const { kind, shardCount } of this.o.kinds) {
      const fair = Math.ceil(shardCount / liveHosts.size);
      const mine = [...this.held.values()].filter((h) => h.ref.kind === kind);
      // Give back the surplus, highest shards first, so the others can claim them on their next tick.
      for (const h of mine.sort((a, b) => b.ref.shard - a.ref.shard).slice(0, Math.max(0, mine.length - fair))) {
        const key = leaseKey(h.ref);
        await this.giveUp(key);
        await this.deleteLease(key, h.revision).catch(() => {});
      }
      let want = fair - Math.min(mine.length, fair);
      if (want <= 0) {
        await this.releaseUnserved(kind, shardCount);
        continue;
      }
      const candidates: { ref: ShardRef; key: string; ob: Observed | undefined; lapsed: boolean }[] = [];
      /** Holders that look dead to us, whose heartbeat is read afresh before any of their leases is taken. */
      const suspects = new Set<string>();
      for (let shard = 0; shard < shardCount; shard++) {
        const ref = { kind, shard };
        const key = leaseKey(ref);
        if (this.held.has(key)) continue;
        const ob = this.observed.get(key);
        const free = !ob || ob.deleted;
        // Ours but not held (we stopped serving when our heartbeat failed): reclaim it without waiting.
        const lapsed =
          !!ob &&
          !ob.deleted &&
          (ob.owner === this.o.hostId ||
            (ob.owner === null ? now - ob.seenAtMs > this.o.ttlMs : !this.hostAlive(ob.owner, now)));
        if (lapsed && ob!.owner !== null && ob!.owner !== this.o.hostId) suspects.add(ob!.owner);
        if (free || lapsed) candidates.push({ ref, key, ob, lapsed });
      }
      const alive = await this.stillAlive(suspects);
      const claimable = candidates.filter((c) => !(c.lapsed && c.ob!.owner !== null && alive.has(c.ob!.owner)));
      // Claimed `want` at a time, side by side: a host taking over half the shards (a peer stopped or died) would
      // otherwise pay two round trips per shard one after another, seconds on a busy machine.
      for (let next = 0; want > 0 && next < claimable.length; ) {
        const batch = claimable.slice(next, next + want);
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
              // Taken from another host that stopped its heartbeat (ours, reclaimed, is no takeover).
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
                if (h) await this.deleteLease(key, h.revision).catch(() => {});
              }),
            ),
        );
      }
      if (want <= 0) await this.releaseUnserved(kind, shardCount);
    }
  }

  /**
   * Delete the leases of a kind that still name this host but that it does not serve, once it holds its fair share
   * of the kind. The others take such a lease for a live host's and never claim it, so without this it stays
   * unserved as long as this host lives: one whose deletion was lost (it gave the lease back as surplus, or failed
   * to serve it, and the delete timed out unapplied), or more than its share after it stopped serving on a late
   * heartbeat while a host joined. Compare-and-set on the revision seen: a write we have not seen yet wins.
   */
  private async releaseUnserved(kind: string, shardCount: number): Promise<void> {
    const stale: { key: string; revision: number }[] = [];
    for (let shard = 0; shard < shardCount; shard++) {
      const key = leaseKey({ kind, shard });
      const ob = this.observed.get(key);
      const named = ob && !ob.deleted && ob.owner === this.o.hostId && this.deleted.get(key) !== ob.revision;
      if (named && !this.held.has(key)) stale.push({ key, revision: ob.revision });
    }
    await Promise.all(
      stale.map(async ({ key, revision }) => {
        try {
          await this.deleteLease(key, revision);
          this.o.log.info({ shard: key }, 'released a lease this host named but did not serve');
        } catch {
          await this.refresh(key);
        }
      }),
    );
  }

  /** Delete a lease by compare-and-set on `revision`, remembered until the watch shows it. */
  private async deleteLease(key: string, revision: number): Promise<void> {
    await this.o.kv.delete(key, { previousSeq: revision });
    this.deleted.set(key, revision);
  }

  /** Renew every lease we hold by compare-and-set; one another host wrote meanwhile is given up. */
  private async renewHeld(value: string): Promise<void> {
    for (const [key, h] of [...this.held]) {
      try {
        h.revision = await this.o.kv.update(key, value, h.revision);
      } catch (err) {
        const failure = natsFailure(err);
        if (failure === 'timeout' || failure === 'no_responders' || failure === 'disconnected') continue;
        this.o.log.warn({ shard: key }, 'lease lost');
        await this.giveUp(key);
        // Often still ours (an earlier renewal applied but its answer was lost): learn its revision to reclaim it.
        await this.refresh(key);
      }
    }
  }

  /**
   * Of hosts whose heartbeat looks stopped to us, those whose heartbeat has in fact moved: read afresh, since our
   * watch may have been silent (its NATS node died) while they kept writing. A host whose heartbeat cannot be read
   * counts as alive: a lease is taken over only when its holder is known to be gone.
   */
  private async stillAlive(hosts: Set<string>): Promise<Set<string>> {
    const alive = new Set<string>();
    await Promise.all(
      [...hosts].map(async (host) => {
        const key = hostKey(this.o.pool, host);
        const known = this.observed.get(key);
        try {
          const e = await this.o.kv.get(key);
          if (e && e.operation === 'PUT' && e.revision !== known?.revision) {
            this.observe(e as unknown as KvWatchEntry);
            alive.add(host);
          }
        } catch {
          alive.add(host);
        }
      }),
    );
    return alive;
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
}
