// What a purchase needs to know besides the buyer's own state: the listing (price, floor, formats, live, side of
// the sandbox line) and its artifact (current edition, judge version, open errata, trust). Both are cached in the
// actor host: a listing entry is dropped the moment its listing actor appends a fact (every fact on
// `<ns>.listing.>` also reaches core subscribers), and every entry expires after a few seconds regardless, which
// bounds staleness if such a notice is ever lost.
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { BusRequest, Names } from '../../contracts/index.ts';
import { catalogOps } from '../catalog/service.ts';
import type { ListingState } from '../listing/listing.ts';
import { listingOps } from '../listing/listing.ts';
import { busRequest } from '../runtime/service.ts';

export interface ListingQuote {
  state: ListingState;
  /** `<listingId>@<sequence of its last fact>`. */
  snapshotId: string;
}

export interface ArtifactQuote {
  editionId: string;
  judgeVersion: string;
  openErrata: boolean;
  trustScore: number;
}

export interface Quotes {
  listing(listingId: string): Promise<ListingQuote | null>;
  artifact(artifactId: string): Promise<ArtifactQuote | null>;
}

const entriesMax = 100_000;

export class QuoteCache implements Quotes {
  private readonly listings = new Map<string, { value: ListingQuote | null; atMs: number }>();
  private readonly artifacts = new Map<string, { value: ArtifactQuote | null; atMs: number }>();
  private sub: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    private readonly nowMs: () => number,
  ) {}

  start(): void {
    this.sub = this.nc.subscribe(`${this.names.namespace}.listing.*`, {
      callback: (_err, msg) => {
        this.listings.delete(msg.subject.slice(msg.subject.lastIndexOf('.') + 1));
      },
    });
  }

  stop(): void {
    this.sub?.unsubscribe();
  }

  async listing(listingId: string): Promise<ListingQuote | null> {
    return this.cached(this.listings, listingId, async () => {
      const r = await busRequest(
        this.nc,
        this.names.actorSubject('listing', listingId),
        internal(listingOps.state, { listingId }),
        this.timeoutMs,
      );
      if (!r.ok) throw new Error(r.error.message);
      return r.body as ListingQuote | null;
    });
  }

  async artifact(artifactId: string): Promise<ArtifactQuote | null> {
    return this.cached(this.artifacts, artifactId, async () => {
      const r = await busRequest(
        this.nc,
        this.names.serviceSubject('catalog'),
        internal(catalogOps.purchaseInfo, { artifactId }),
        this.timeoutMs,
      );
      if (!r.ok) throw new Error(r.error.message);
      return r.body as ArtifactQuote | null;
    });
  }

  private async cached<T>(
    map: Map<string, { value: T; atMs: number }>,
    key: string,
    load: () => Promise<T>,
  ): Promise<T> {
    const now = this.nowMs();
    const hit = map.get(key);
    if (hit && now - hit.atMs < this.ttlMs) return hit.value;
    const value = await load();
    if (map.size >= entriesMax) map.delete(map.keys().next().value!);
    map.set(key, { value, atMs: now });
    return value;
  }
}

const internal = (op: string, body: unknown): BusRequest => ({
  op,
  requestId: op,
  caller: null,
  params: {},
  query: {},
  body,
});
