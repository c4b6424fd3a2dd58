// The revoked OAuth grants and access tokens, as this gateway knows them: a watch on the `<ns>_revoked` bucket
// (written by the oauth service before a revoking call answers), held in memory. Until the watch has delivered what
// the bucket held at start, the gateway cannot tell a revoked OAuth token from a live one and refuses them with
// 503; sandbox tokens are not revocable and pass. A watch that fails is started again; what it showed is kept
// (revocations are never taken back).
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { revokedKeys } from '../contracts/index.ts';

const rewatchAfterMs = 1000;

export class RevokedSet {
  /** Revoked grants and when (ms); after `rememberMs` no token issued before the revocation can still be live. */
  private readonly grants = new Map<string, number>();
  /** Revoked token ids and their expiry (seconds), dropped once the token could not be used anyway. */
  private readonly tokens = new Map<string, number>();
  private loaded = false;
  private stopped = false;
  private watch: { stop(): void } | null = null;
  private retry: NodeJS.Timeout | null = null;
  private whenLoaded: (() => void) | null = null;

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
    private readonly nowMs: () => number,
    private readonly rememberMs: number,
  ) {}

  /** Resolves once what the bucket held at start is known. */
  start(): Promise<void> {
    const loaded = new Promise<void>((resolve) => {
      this.whenLoaded = resolve;
    });
    void this.run();
    return loaded;
  }

  get ready(): boolean {
    return this.loaded;
  }

  isRevoked(grantId: string | undefined, jti: string): boolean {
    if (grantId !== undefined) {
      const at = this.grants.get(grantId);
      if (at !== undefined) {
        if (at + this.rememberMs < this.nowMs()) this.grants.delete(grantId);
        return true;
      }
    }
    const exp = this.tokens.get(jti);
    if (exp === undefined) return false;
    if (exp * 1000 < this.nowMs()) this.tokens.delete(jti);
    return true;
  }

  stop(): void {
    this.stopped = true;
    this.watch?.stop();
    if (this.retry) clearTimeout(this.retry);
  }

  private markLoaded(): void {
    if (this.loaded) return;
    this.loaded = true;
    this.whenLoaded?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        // An empty bucket sends nothing to say so; otherwise the entry with nothing pending after it (delta 0)
        // closes the initial load.
        if ((await this.kv.status()).values === 0) this.markLoaded();
        const watch = await this.kv.watch();
        this.watch = watch;
        for await (const entry of watch) {
          this.apply(entry);
          if (entry.delta === 0 || entry.isUpdate) this.markLoaded();
        }
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, 'watching the revocations bucket failed; watching again');
      }
      if (this.stopped) return;
      await new Promise<void>((resolve) => {
        this.retry = setTimeout(resolve, rewatchAfterMs).unref();
      });
    }
  }

  private apply(e: KvWatchEntry): void {
    if (e.operation !== 'PUT') return;
    const key = revokedKeys.parse(e.key);
    if (key?.kind === 'grant') this.grants.set(key.id, e.created.getTime());
    else if (key?.kind === 'token') this.tokens.set(key.id, Number(e.string()));
  }
}
