// The principal's rate-limit buckets, one per class for the principal and one per class for each of its agents.
// Gateways take tokens from them in batches (`rate.lease`, gateway/rate-limiter.ts), so every gateway process spends
// from the same buckets and the actor's mailbox makes each take atomic. Buckets live in memory, not in facts: an actor
// that reloads or leaves the cache starts with full buckets, which is at most one burst more than the limit.
import { agentBucket, type BucketSpec, okReply, plans, type RequestOf } from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import type { PrincipalDeps } from './deps.ts';
import { planOf } from './plans.ts';
import type { PrincipalState } from './state.ts';

interface Bucket {
  tokens: number;
  atMs: number;
  /** The burst the bucket was last filled under: a plan change moves its tokens by the difference. */
  burst: number;
}

/** Buckets by `<agentId> <class>` (an agent's) and `* <class>` (the principal's), tied to the state they limit. */

const bucketsOf = new WeakMap<PrincipalState, Map<string, Bucket>>();

/** Agents' buckets an actor keeps; beyond it, full ones are forgotten (a full bucket is what a new one is). */
const agentBucketsMax = 10_000;

/** Refill `b` to `nowMs` under `spec`; returns it. */
function refill(b: Bucket, spec: BucketSpec, nowMs: number): Bucket {
  if (b.burst !== spec.burst) {
    // The principal changed plans: an upgrade adds the new room at once, a downgrade takes the difference away.
    b.tokens = Math.max(0, Math.min(spec.burst, b.tokens + spec.burst - b.burst));
    b.burst = spec.burst;
  }
  if (nowMs > b.atMs) {
    b.tokens = Math.min(spec.burst, b.tokens + ((nowMs - b.atMs) / 1000) * spec.perSecond);
    b.atMs = nowMs;
  }
  return b;
}

function bucket(map: Map<string, Bucket>, key: string, spec: BucketSpec, nowMs: number): Bucket {
  let b = map.get(key);
  if (!b) {
    if (map.size >= agentBucketsMax) forgetFull(map, nowMs);
    b = { tokens: spec.burst, atMs: nowMs, burst: spec.burst };
    map.set(key, b);
  }
  return b;
}

function forgetFull(map: Map<string, Bucket>, nowMs: number): void {
  // Entries are in creation order; a bucket idle for a minute is full under every plan but the smallest top-up one,
  // and forgetting a bucket that is not quite full only gives its agent a few tokens early.
  for (const [k, b] of map) if (nowMs - b.atMs > 60_000) map.delete(k);
}

const msUntil = (tokensNeeded: number, spec: BucketSpec) => Math.ceil((tokensNeeded * 1000) / spec.perSecond);
const waitForOne = (b: Bucket, spec: BucketSpec) => (b.tokens >= 1 ? 0 : msUntil(1 - b.tokens, spec));

export function leaseRate(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'rate.lease'>): Decision<never> {
  const { agentId, rateClass, want, giveBack, sandbox } = req.body;
  const nowMs = d.clock.nowMs();
  let map = bucketsOf.get(state);
  if (!map) {
    map = new Map();
    bucketsOf.set(state, map);
  }
  const plan = plans[planOf(d, state, sandbox)];
  const principalSpec = plan.principal[rateClass];
  const p = refill(bucket(map, `* ${rateClass}`, principalSpec, nowMs), principalSpec, nowMs);
  // A lease for the principal as a whole (the context-file API, device sync) spends the principal's bucket alone.
  const whole = agentId === null;
  const agentSpec = whole ? principalSpec : agentBucket(principalSpec);
  const a = whole ? p : refill(bucket(map, `${agentId} ${rateClass}`, agentSpec, nowMs), agentSpec, nowMs);
  if (giveBack > 0) {
    p.tokens = Math.min(principalSpec.burst, p.tokens + giveBack);
    if (!whole) a.tokens = Math.min(agentSpec.burst, a.tokens + giveBack);
  }
  // A whole batch at least, even when a gateway asks for one (its first ask, before it has heard the batch): a
  // gateway that held a single token would ask again at its next call, and a fast-refilling bucket (Enterprise reads,
  // 1,000 an agent a second) would be full again by then, so X-RateLimit-Remaining would not move between the calls.
  const batch = batchFor(agentSpec, d.rateLeaseMs);
  const granted = Math.max(0, Math.min(Math.max(want, batch), Math.floor(p.tokens), Math.floor(a.tokens)));
  p.tokens -= granted;
  if (!whole) a.tokens -= granted;
  // The bucket that runs out first is the one the caller is told about.
  const agentTighter = a.tokens / agentSpec.burst <= p.tokens / principalSpec.burst;
  const tight = agentTighter ? a : p;
  const spec = agentTighter ? agentSpec : principalSpec;
  return {
    reply: okReply(200, {
      granted,
      limit: spec.burst,
      remaining: Math.floor(tight.tokens),
      resetMs: msUntil(spec.burst - tight.tokens, spec),
      retryAfterMs: granted > 0 ? 0 : Math.max(1, waitForOne(a, agentSpec), waitForOne(p, principalSpec)),
      batch,
    }),
  };
}

/**
 * A gateway's batch: what the agent's bucket refills in a quarter of a lease, at most an eighth of its burst, so a
 * gateway holds few tokens another could have used and, at full rate, asks four times a lease.
 */
export function batchFor(spec: BucketSpec, leaseMs: number): number {
  return Math.max(1, Math.min(Math.floor(spec.burst / 8), Math.floor((spec.perSecond * leaseMs) / 4000)));
}
