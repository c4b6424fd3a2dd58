// The subscription scheduler, run by every worker: due cycles are rows of the subscriptions projection with a
// due-time index, claimed with FOR UPDATE SKIP LOCKED so that many schedulers split the work without waiting on one
// another, and sent to the buyers' principal actors. Nothing lives only in memory: a scheduler that dies leaves its
// claims to expire (ASSAY_SUBSCRIPTION_CLAIM_SECONDS) and another takes the cycles up. A claim only spares the
// others duplicate work; what makes a cycle run once is the actor, which runs cycle n only after n - 1 and only
// when due (actors/principal/subscriptions.ts). The clock is injected: tests move it instead of sleeping.
import { internalRequest } from '../../contracts/index.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ClaimedCycle,
  claimDueCycles,
  releaseClaims,
  subscriptionsOfUnlistedListings,
} from '../../storage/index.ts';
import { busRequest } from '../runtime/service.ts';
import type { DueWorkLoopDeps } from '../runtime/worker-deps.ts';

export interface SchedulerDeps extends DueWorkLoopDeps {
  claimSeconds: number;
  /** Cycles claimed per pass, and how many of them are in flight at once. */
  batch?: number;
  concurrency?: number;
}

/** A failed command's claim is given back this soon, so a busy actor or a lost reply is retried promptly. */
const retryAfterMs = 1000;
/** Passes between two sweeps for subscriptions of unlisted listings. */
const unlistedSweepEvery = 5;

export async function runSubscriptionScheduler(d: SchedulerDeps, signal: AbortSignal): Promise<void> {
  let pass = 0;
  while (!signal.aborted) {
    let full = false;
    try {
      full = await runDueCycles(d);
      if (pass++ % unlistedSweepEvery === 0) await cancelUnlisted(d);
    } catch (err) {
      d.log.error({ err }, 'subscription scheduler pass failed');
    }
    // A full batch means more are due: go on at once.
    if (!full) await sleep(d.pollMs, undefined, { signal }).catch(() => {});
  }
}

/** One pass: claim what is due, run it, give back the claims whose command failed. True when the batch was full. */
export async function runDueCycles(d: SchedulerDeps): Promise<boolean> {
  const batch = d.batch ?? 256;
  const asOf = new Date(d.clock.nowMs());
  const claimed = await claimDueCycles(d.sql, asOf, d.claimSeconds, batch);
  if (claimed.length === 0) return false;
  const failed: string[] = [];
  await inParallel(claimed, d.concurrency ?? 64, async (c) => {
    const reply = await sendCycle(d, c, asOf);
    if (!reply.ok) failed.push(c.id);
  });
  if (failed.length > 0) {
    d.log.warn({ failed: failed.length }, 'subscription cycles to retry');
    await releaseClaims(d.sql, failed, new Date(asOf.getTime() + retryAfterMs));
  }
  return claimed.length === batch;
}

function sendCycle(d: SchedulerDeps, c: ClaimedCycle, asOf: Date) {
  const request = internalRequest(
    'subscription.cycle',
    { subscriptionId: c.id, cycle: c.cycle, asOf: asOf.toISOString() },
    { requestId: `cycle-${c.id}-${c.cycle}` },
  );
  return busRequest(d.nc, d.names.actorSubject('principal', c.buyer_principal_id), request, d.timeoutMs, d.log);
}

/** Unlisting a living listing cancels its subscriptions (paused ones too, which have no cycle to notice it). */
async function cancelUnlisted(d: SchedulerDeps): Promise<void> {
  const rows = await subscriptionsOfUnlistedListings(d.sql, 256);
  await inParallel(rows, d.concurrency ?? 64, async (r) => {
    const request = internalRequest(
      'subscription.cancel',
      { subscriptionId: r.id, by: 'listing_unlisted', sellerPrincipalId: r.seller_principal_id },
      { requestId: `unlisted-${r.id}` },
    );
    await busRequest(d.nc, d.names.actorSubject('principal', r.buyer_principal_id), request, d.timeoutMs, d.log);
  });
}

async function inParallel<T>(items: T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
