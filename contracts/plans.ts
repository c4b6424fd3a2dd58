// The plans a principal can be on (Free, Pro, Enterprise, and Sandbox for the test side): the agent routes' rate limits
// by operation class, the daily quotas the principal actor enforces where money moves, and the context-file API's
// hourly rate. One table, so the limiter, the quotas, the docs and the operator command read the same numbers
// (docs/fleet.md).
import Type, { type Static } from 'typebox';

export const PlanName = Type.Union([
  Type.Literal('free'),
  Type.Literal('pro'),
  Type.Literal('enterprise'),
  Type.Literal('sandbox'),
]);
export type PlanName = Static<typeof PlanName>;
export const planNames: readonly PlanName[] = ['free', 'pro', 'enterprise', 'sandbox'];
/** The plans a live principal can be on: the sandbox plan spends test credits only. */
export const livePlanNames: readonly PlanName[] = ['free', 'pro', 'enterprise'];

/**
 * What an agent-route operation spends: a read, a purchase (buying, subscribing), a top-up, or another write.
 * Each class has its own buckets, so a burst of searches never starves purchases.
 */
export const RateClass = Type.Union([
  Type.Literal('read'),
  Type.Literal('write'),
  Type.Literal('purchase'),
  Type.Literal('topup'),
  Type.Literal('context'),
  Type.Literal('sync'),
]);
export type RateClass = Static<typeof RateClass>;
/**
 * `context` is the context-file API's hourly rate, per principal only (it has no agents): a bucket as large as the
 * hour's allowance that refills over the hour (docs/contexts.md).
 */
/**
 * `sync` is device sync's requests (`{web_url}/api/sync/`), per principal only like `context`: a first sync sends one
 * request per distinct file, so its bucket is large and refills fast (docs/sync.md, Rate limits).
 */
export const rateClasses: readonly RateClass[] = ['read', 'write', 'purchase', 'topup', 'context', 'sync'];

/** The bucket of an hourly allowance: all of it at once, refilled evenly over the hour. */
const perHour = (n: number): BucketSpec => ({ burst: n, perSecond: n / 3600 });

/** A token bucket: holds at most `burst` tokens, refilled at `perSecond`; a request spends one. */
export interface BucketSpec {
  burst: number;
  perSecond: number;
}

export interface Plan {
  /** Buckets of the whole principal (all its agents together), by class. */
  principal: Record<RateClass, BucketSpec>;
  /**
   * Quotas per UTC day, enforced by the principal actor so they are exact under concurrency; null: none. Spend
   * counts the price of every order held that day (a later refund does not give it back).
   */
  quotas: { purchasesPerDay: number | null; spendCentsPerDay: number | null };
}

/** Each agent of a principal gets this share of every principal bucket, so one agent cannot starve its fleet. */
export const agentShare = 0.5;

export const plans: Record<PlanName, Plan> = {
  free: {
    principal: {
      read: { burst: 60, perSecond: 10 },
      write: { burst: 20, perSecond: 2 },
      purchase: { burst: 20, perSecond: 1 },
      topup: { burst: 5, perSecond: 0.1 },
      context: perHour(100),
      sync: { burst: 1_000, perSecond: 50 },
    },
    quotas: { purchasesPerDay: 100, spendCentsPerDay: 10_000 },
  },
  pro: {
    principal: {
      read: { burst: 600, perSecond: 100 },
      write: { burst: 200, perSecond: 20 },
      purchase: { burst: 200, perSecond: 20 },
      topup: { burst: 20, perSecond: 1 },
      context: perHour(1_000),
      sync: { burst: 5_000, perSecond: 500 },
    },
    quotas: { purchasesPerDay: 10_000, spendCentsPerDay: 1_000_000 },
  },
  enterprise: {
    principal: {
      read: { burst: 10_000, perSecond: 2_000 },
      write: { burst: 2_000, perSecond: 200 },
      purchase: { burst: 10_000, perSecond: 2_000 },
      topup: { burst: 200, perSecond: 20 },
      context: perHour(10_000),
      sync: { burst: 20_000, perSecond: 2_000 },
    },
    quotas: { purchasesPerDay: null, spendCentsPerDay: null },
  },
  /**
   * The sandbox side's plan (ASSAY_SANDBOX_PLAN names it): generous enough to try a fleet on test credits. Each agent
   * gets half, so one agent alone may read 50 and write, buy or top up 25 times a second (Stripe's test mode allows
   * 25 requests a second), and a fleet of agents under one principal twice that together.
   */
  sandbox: {
    principal: {
      read: { burst: 1_000, perSecond: 100 },
      write: { burst: 500, perSecond: 50 },
      purchase: { burst: 500, perSecond: 50 },
      topup: { burst: 500, perSecond: 50 },
      context: perHour(10_000),
      sync: { burst: 5_000, perSecond: 500 },
    },
    quotas: { purchasesPerDay: 10_000, spendCentsPerDay: null },
  },
};

/** An agent's bucket of a class: its share of the principal's. */
export function agentBucket(spec: BucketSpec): BucketSpec {
  return { burst: Math.max(1, Math.floor(spec.burst * agentShare)), perSecond: spec.perSecond * agentShare };
}

/** The class of an agent-route operation: the row's own, or read for GET and write for the other methods. */
export function rateClassOf(op: { method: string; rateClass?: RateClass }): RateClass {
  return op.rateClass ?? (op.method === 'GET' ? 'read' : 'write');
}

/** The start of the UTC day `atMs` falls in, and of the next: a quota's period. */
export function utcDay(atMs: number): { startMs: number; endMs: number } {
  const startMs = Math.floor(atMs / 86_400_000) * 86_400_000;
  return { startMs, endMs: startMs + 86_400_000 };
}
