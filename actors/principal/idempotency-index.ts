// The cold tier of a principal's idempotency records. A principal actor keeps only its most recent keys in memory
// (ASSAY_IDEMPOTENCY_HOT_KEYS); older ones are found in PostgreSQL, where the principal-facts projector indexes every
// fact's key: a purchase's in its order row (the order id derives from the key), any other call's in
// `idempotency_keys`. The actor host asks the ledger service, batching the keys that every actor on the host needs
// within two milliseconds into one request and one query.
import { internalRequest } from '../../contracts/index.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Names } from '../../contracts/index.ts';
import { askInternal } from '../runtime/service.ts';

export interface IndexedKey {
  requestHash: string;
  /** LEDGER stream sequence of the fact that used the key. */
  seq: number;
}

export interface IdempotencyIndex {
  /**
   * The LEDGER sequence the index is known to hold every key through (the projector's checkpoint, as last heard):
   * a record may leave an actor's memory once its fact is at or below it.
   */
  indexedThroughSeq(): number;
  /** The key's record if the index holds it, and how far the index reached when asked; null when it cannot answer. */
  lookup(principalId: string, key: string): Promise<{ found: IndexedKey | null; indexedThroughSeq: number } | null>;
}

interface Pending {
  principalId: string;
  key: string;
  resolve(r: { found: IndexedKey | null; indexedThroughSeq: number } | null): void;
}

/** Lookups per request at most; more wait for the next one. */
const batchMax = 500;
/** A lookup waits this long for others to share its request: one query serves every actor of the host. */
const batchWaitMs = 2;
/** How often the host re-reads the checkpoint when no lookup tells it. */
const refreshMs = 1000;

export class IdempotencyIndexClient implements IdempotencyIndex {
  private indexed = 0;
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private refresher: NodeJS.Timeout | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
    private readonly timeoutMs: number,
  ) {}

  async start(): Promise<void> {
    await this.ask([]);
    this.refresher = setInterval(() => void this.ask([]), refreshMs);
    this.refresher.unref();
  }

  stop(): void {
    if (this.refresher) clearInterval(this.refresher);
    if (this.timer) clearTimeout(this.timer);
    for (const p of this.pending.splice(0)) p.resolve(null);
  }

  indexedThroughSeq(): number {
    return this.indexed;
  }

  lookup(principalId: string, key: string) {
    return new Promise<{ found: IndexedKey | null; indexedThroughSeq: number } | null>((resolve) => {
      this.pending.push({ principalId, key, resolve });
      if (this.pending.length >= batchMax) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), batchWaitMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending.splice(0, batchMax);
    if (this.pending.length > 0) this.timer = setTimeout(() => this.flush(), 0);
    void this.ask(batch);
  }

  private async ask(batch: Pending[]): Promise<void> {
    const reply = await askInternal(
      this.nc,
      this.names.serviceSubject('ledger'),
      internalRequest(
        'idempotency.lookup',
        { keys: batch.map((p) => [p.principalId, p.key] as [string, string]) },
        { requestId: `idempotency-lookup-${Date.now()}` },
      ),
      this.timeoutMs,
    );
    if (!reply.ok) {
      for (const p of batch) p.resolve(null);
      return;
    }
    const body = reply.body;
    // Taken as it is, also when it moved back (a rebuild restarted the projection): records then stay in memory,
    // and a miss the index cannot vouch for yet is refused rather than run twice.
    this.indexed = body.indexedThroughSeq;

    const found = new Map(
      body.found.map(([principalId, key, requestHash, seq]) => [`${principalId} ${key}`, { requestHash, seq }]),
    );
    for (const p of batch) {
      p.resolve({ found: found.get(`${p.principalId} ${p.key}`) ?? null, indexedThroughSeq: body.indexedThroughSeq });
    }
  }
}
