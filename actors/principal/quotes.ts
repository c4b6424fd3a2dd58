// What a purchase needs to know besides the buyer's own state: the listing (price, floor, formats, live, side of
// the sandbox line) and its artifact (current edition and its report, judge version, open errata, trust). Both are
// cached in the actor host, because every purchase needs them and they change rarely:
// - a listing entry is dropped the moment its listing actor appends a fact (facts on `<ns>.listing.>` also reach
//   core subscribers);
// - an artifact entry is dropped on a notice that its edition or report changed, and every artifact entry on an
//   errata notice;
// - after a reconnect everything is dropped (notices may have been missed while away);
// - every entry is refreshed in the background once it is three quarters of the time to live old, and not used
//   past it, which bounds how stale a trust score can be (trust moves with every settlement, with no notice).
import { internalRequest } from '../../contracts/index.ts';
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { ArtifactQuote, ListingQuote, Names } from '../../contracts/index.ts';
import { askInternal } from '../runtime/service.ts';

export interface Quotes {
  listing(listingId: string): Promise<ListingQuote>;
  artifact(artifactId: string): Promise<ArtifactQuote>;
}

const entriesMax = 200_000;

interface Entry<T> {
  value: T;
  atMs: number;
}

/** One kind of cached quote: entries, loads in flight (one per key), and a generation per key for invalidation. */
export class QuoteMap<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly loading = new Map<string, Promise<T>>();
  /** Bumped by every invalidation, so a load that started before one does not store what it read. */
  private generation = 0;
  private readonly invalidatedAt = new Map<string, number>();
  private clearedAt = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly nowMs: () => number,
    private readonly load: (key: string) => Promise<T>,
  ) {}

  get(key: string): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) {
      const age = this.nowMs() - hit.atMs;
      if (age < this.ttlMs) {
        if (age >= this.ttlMs * 0.75) void this.fetch(key).catch(() => {});
        return Promise.resolve(hit.value);
      }
    }
    return this.fetch(key);
  }

  invalidate(key: string): void {
    this.entries.delete(key);
    this.invalidatedAt.set(key, ++this.generation);
    // Keep the invalidation marks bounded. Forgetting them counts as a clear, so no load in flight stores its
    // possibly stale read.
    if (this.invalidatedAt.size > 10_000) {
      this.invalidatedAt.clear();
      this.clearedAt = this.generation;
    }
  }

  clear(): void {
    this.entries.clear();
    this.invalidatedAt.clear();
    this.generation++;
    this.clearedAt = this.generation;
  }

  private fetch(key: string): Promise<T> {
    const running = this.loading.get(key);
    if (running) return running;
    const startedAt = this.generation;
    const p = this.load(key)
      .then((value) => {
        const stale = (this.invalidatedAt.get(key) ?? 0) > startedAt || this.clearedAt > startedAt;
        if (!stale) {
          if (this.entries.size >= entriesMax) this.entries.delete(this.entries.keys().next().value!);
          this.entries.delete(key);
          this.entries.set(key, { value, atMs: this.nowMs() });
        }
        return value;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, p);
    return p;
  }
}

export class QuoteCache implements Quotes {
  private readonly listings: QuoteMap<ListingQuote>;
  private readonly artifacts: QuoteMap<ArtifactQuote>;
  private readonly subs: Subscription[] = [];
  private stopped = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
    ttlMs: number,
    timeoutMs: number,
    nowMs: () => number,
  ) {
    this.listings = new QuoteMap(ttlMs, nowMs, async (listingId) => {
      const subject = names.actorSubject('listing', listingId);
      const r = await askInternal(nc, subject, internalRequest('listing.state', null), timeoutMs);
      // A refusal here is not a quote: the purchase fails (and answers unavailable) rather than decide without one.
      if (!r.ok) throw new Error('no listing quote');
      return r.body;
    });
    this.artifacts = new QuoteMap(ttlMs, nowMs, async (artifactId) => {
      const subject = names.serviceSubject('catalog');
      const r = await askInternal(nc, subject, internalRequest('catalog.purchase_info', { artifactId }), timeoutMs);
      if (!r.ok) throw new Error('no artifact quote');
      return r.body;
    });
  }

  async start(): Promise<void> {
    const lastToken = (subject: string) => subject.slice(subject.lastIndexOf('.') + 1);
    const on = (subject: string, drop: (subject: string) => void) =>
      this.subs.push(this.nc.subscribe(subject, { callback: (_err, msg) => drop(msg.subject) }));
    on(`${this.names.namespace}.listing.*`, (s) => this.listings.invalidate(lastToken(s)));
    on(this.names.notices.anyArtifact, (s) => this.artifacts.invalidate(lastToken(s)));
    on(this.names.notices.errata, () => this.artifacts.clear());
    // The subscriptions must be in place before the first quote is cached, or a change could slip between.
    await this.nc.flush();
    void (async () => {
      for await (const s of this.nc.status()) {
        if (this.stopped) break;
        if (s.type === 'reconnect') {
          this.listings.clear();
          this.artifacts.clear();
        }
      }
    })();
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.subs) s.unsubscribe();
  }

  listing(listingId: string): Promise<ListingQuote> {
    return this.listings.get(listingId);
  }

  artifact(artifactId: string): Promise<ArtifactQuote> {
    return this.artifacts.get(artifactId);
  }
}
