// The agent routes' rate limits, as a gateway spends them. The buckets live in each principal's actor
// (actors/principal/rate.ts), so every gateway process spends from the same ones; a gateway takes tokens in batches
// and spends a batch locally, so the usual call costs a map lookup, not a bus round trip. A batch is spent within
// ASSAY_RATE_LEASE_MS or given back with the next request for more. A batch is small (what the agent's bucket
// refills in a quarter of a lease, at most an eighth of its burst), so a gateway holds little another could use.
// Most keys renew when their lease ends, not when their batch runs out, so the lease's length is what sets the
// number of bus requests: with 10 s, bench:purchases' 1,000 principals ask about 100 times a second beside 3,000
// purchases, and spending a held token takes about 0.3 µs.
import type { Logger } from 'pino';
import type { Caller, Names, RateClass } from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';

/** What the limiter decided for one call: spend allowed or not, and what the response headers say. */
export interface RateVerdict {
  ok: boolean;
  /** X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (seconds until the bucket is full again). */
  headers: Record<string, string>;
  /** On a refusal: seconds until a token is there (Retry-After). */
  retryAfterS: number;
}

interface Lease {
  /** Tokens taken from the actor and not spent yet. */
  tokens: number;
  /** When the unspent tokens must go back rather than be spent. */
  expiresAtMs: number;
  /** The actor's last answer: its bucket after the grant, and when that was. */
  limit: number;
  remaining: number;
  resetAtMs: number;
  /**
   * After a refusal, further calls are refused here without asking until this time: when a token can be there, or
   * a second at most, so a plan the operator raised meanwhile applies within a second.
   */
  deniedUntilMs: number;
  /** After a refusal: when a token can be there under the plan as last heard (Retry-After). */
  retryAtMs: number;
  batch: number;
  /** Calls waiting for the request in flight; the next request asks for at least this many. */
  waiting: number;
  pending: Promise<void> | null;
}

export interface RateLimiterDeps {
  bus: GatewayBus;
  names: Names;
  leaseMs: number;
  nowMs: () => number;
  log: Logger;
}

/** What spends a call's token: the limiter, or `admitAll` where an operator turned a limit off. */
export type RateTaker = Pick<RateLimiter, 'take'>;

/**
 * Admits every call and says nothing of limits: the context-file API under ASSAY_CONTEXT_RATE_LIMIT=off, so a
 * benchmark can measure the limiter against the same route without it.
 */
export const admitAll: RateTaker = { take: () => ({ ok: true, headers: {}, retryAfterS: 0 }) };

/** The longest a gateway refuses on its own after a refusal before asking the actor again. */
const askAgainAfterMs = 1000;
/** How long a gateway lets calls through on its own when the principal's actor cannot be asked. */
const unreachableGraceMs = 1000;

export class RateLimiter {
  private readonly leases = new Map<string, Lease>();
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly d: RateLimiterDeps) {
    // Leases idle for a minute are forgotten; their unspent tokens lapse (the bucket refills them anyway).
    this.sweep = setInterval(() => this.forgetIdle(), 30_000);
    this.sweep.unref();
  }

  close(): void {
    clearInterval(this.sweep);
  }

  /**
   * Spend one token of `rateClass` for the caller's agent and principal (`per: 'agent'`), or for its principal as a
   * whole (`per: 'principal'`: the context-file API's and device sync's hourly rates, whoever calls): at once when
   * the gateway holds one.
   */
  take(caller: Caller, rateClass: RateClass, per: 'agent' | 'principal' = 'agent'): RateVerdict | Promise<RateVerdict> {
    const agentId = per === 'agent' ? caller.agentId : null;
    const key = `${caller.principalId} ${agentId ?? '*'} ${rateClass}`;
    const lease = this.leases.get(key);
    if (lease !== undefined && lease.pending === null) {
      const now = this.d.nowMs();
      if (lease.tokens >= 1 && now < lease.expiresAtMs) {
        lease.tokens -= 1;
        return this.verdict(lease, true, now);
      }
      if (now < lease.deniedUntilMs) return this.verdict(lease, false, now);
    }
    return this.takeAfterAsking(key, caller, agentId, rateClass);
  }

  private async takeAfterAsking(
    key: string,
    caller: Caller,
    agentId: string | null,
    rateClass: RateClass,
  ): Promise<RateVerdict> {
    let lease = this.leases.get(key);
    if (!lease) {
      lease = {
        tokens: 0,
        expiresAtMs: 0,
        limit: 0,
        remaining: 0,
        resetAtMs: 0,
        deniedUntilMs: 0,
        retryAtMs: 0,
        batch: 1,
        waiting: 0,
        pending: null,
      };
      this.leases.set(key, lease);
    }
    lease.waiting++;
    try {
      for (;;) {
        if (lease.pending) {
          await lease.pending;
          continue;
        }
        const now = this.d.nowMs();
        if (lease.tokens >= 1 && now < lease.expiresAtMs) {
          lease.tokens -= 1;
          return this.verdict(lease, true, now);
        }
        if (now < lease.deniedUntilMs) return this.verdict(lease, false, now);
        lease.pending = this.ask(lease, caller, agentId, rateClass).finally(() => {
          lease.pending = null;
        });
      }
    } finally {
      lease.waiting--;
    }
  }

  /** One request to the principal's actor for a batch, giving back what the expired one left. */
  private async ask(lease: Lease, caller: Caller, agentId: string | null, rateClass: RateClass): Promise<void> {
    const { principalId, sandbox } = caller;
    const giveBack = Math.floor(lease.tokens);
    lease.tokens = 0;
    const body = { agentId, rateClass, want: Math.max(lease.batch, lease.waiting), giveBack, sandbox };
    const answer = await this.d.bus.ask('rate.lease', body, {
      requestId: 'rate-lease',
      actorId: principalId,
    });
    const now = this.d.nowMs();
    if (!answer.ok) {
      // The actor cannot be asked (its shard is moving, NATS is down): let one batch a second through rather than
      // refuse every call; the call itself meets the same outage and answers for it.
      this.d.log.warn({ principalId, error: answer.reply.error }, 'rate-limit batch not granted');
      lease.tokens = lease.batch;
      lease.expiresAtMs = now + unreachableGraceMs;
      return;
    }
    const r = answer.body;
    lease.tokens = r.granted;
    lease.expiresAtMs = now + this.d.leaseMs;
    lease.limit = r.limit;
    lease.remaining = r.remaining;
    lease.resetAtMs = now + r.resetMs;
    lease.batch = r.batch;
    lease.deniedUntilMs = r.granted > 0 ? 0 : now + Math.min(r.retryAfterMs, askAgainAfterMs);
    lease.retryAtMs = r.granted > 0 ? 0 : now + r.retryAfterMs;
  }

  private verdict(lease: Lease, ok: boolean, now: number): RateVerdict {
    const remaining = lease.remaining + Math.floor(lease.tokens);
    return {
      ok,
      headers: {
        'x-ratelimit-limit': String(lease.limit),
        'x-ratelimit-remaining': String(remaining),
        'x-ratelimit-reset': String(Math.max(0, Math.ceil((lease.resetAtMs - now) / 1000))),
      },
      retryAfterS: ok ? 0 : Math.max(1, Math.ceil((lease.retryAtMs - now) / 1000)),
    };
  }

  private forgetIdle(): void {
    const now = this.d.nowMs();
    for (const [key, lease] of this.leases) {
      if (lease.pending === null && now - lease.expiresAtMs > 60_000 && now > lease.deniedUntilMs) {
        this.leases.delete(key);
      }
    }
  }
}
