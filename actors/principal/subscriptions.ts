// Subscriptions to living listings, owned by the buyer's principal actor: a cycle's bill and the subscription's
// advance are one fact (an `escrow_held` carrying the subscription after the cycle), so a cycle runs at most once
// by (subscription, cycle number) from the actor's state alone, however often the scheduler asks. A cycle goes
// through the purchase rules of POST /v1/orders (purchase-policy.ts); a refused cycle bills nothing and is a
// `subscription_changed` fact (three in a row pause the subscription). docs/subscriptions.md has the semantics.
import {
  type EscrowHeldFact,
  errorReply,
  type LedgerFact,
  type ListingQuote,
  okReply,
  type RequestOf,
  type SubscriptionChangedFact,
  type SubscriptionRecord,
  internalRequest,
} from '../../contracts/index.ts';
import { askThen, type Decision } from '../runtime/host.ts';

import { derivedId } from '../shared/ids.ts';
import { subscriptionResource } from '../shared/subscription-resource.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { recordedCall } from './forwarding.ts';
import { keyOf, recordOf } from './idempotency.ts';
import { purchaseRefusal } from './purchase-policy.ts';
import { quotaUse } from './quotas.ts';
import { decideSettlement } from './settlement.ts';
import { currentMandate, type PrincipalState } from './state.ts';

const noSuchSubscription = 'no subscription with this id is yours or to your listings';

/** Failed cycles in a row that pause a subscription. */
export const failedCyclesToPause = 3;

/** The order a cycle makes: one id per (subscription, cycle), so a cycle can only ever be one order. */
export const cycleOrderId = (principalId: string, subscriptionId: string, cycle: number) =>
  derivedId(principalId, 'subscription-cycle', subscriptionId, String(cycle));

/**
 * When the cycle after one due at `dueMs` is due. Catch-up rule: after downtime the missed intervals are not billed
 * one by one; the late cycle runs once and the next is due one interval after it ran (re-anchored).
 */
export function nextDueAfter(dueMs: number, intervalSeconds: number, ranAtMs: number): string {
  const next = dueMs + intervalSeconds * 1000;
  return new Date(next > ranAtMs ? next : ranAtMs + intervalSeconds * 1000).toISOString();
}

const liveListing = (q: ListingQuote, sandbox: boolean) => {
  const l = q?.state;
  return l?.exists && l.state === 'live' && l.sandbox === sandbox ? l : null;
};

/** The reply body for `viewer`, with the listing's live price (what the next cycle bills). */
async function resourceFor(d: PrincipalDeps, state: PrincipalState, r: SubscriptionRecord, viewer: string) {
  const q = await d.quotes.listing(r.listingId);
  return subscriptionResource(r, state.principalId, q?.state.priceCents ?? 0, viewer);
}

function changed(
  d: PrincipalDeps,
  state: PrincipalState,
  change: SubscriptionChangedFact['change'],
  previous: SubscriptionRecord | null,
  next: SubscriptionRecord,
): SubscriptionChangedFact {
  return {
    ...factBase(d, state.principalId, next.sandbox, state.availableCents),
    type: 'subscription_changed',
    change,
    previousState: previous?.state ?? null,
    subscription: next,
  };
}

/**
 * POST /v1/subscriptions: the first cycle's rules are checked now, so a subscription its first cycle would refuse
 * is never created; the first cycle itself runs as the actor's next command (and, if that is lost in a crash, the
 * scheduler finds it due). An active subscription to the listing answers as it is; a paused one resumes.
 */
export async function subscribeListing(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'subscribeListing'>,
): Promise<Decision<LedgerFact>> {
  const { caller } = req;
  const listing = liveListing(await d.quotes.listing(req.body.listing_id), caller.sandbox);
  if (!listing) return { reply: errorReply('not_found', 'no live listing with this id') };
  if (!listing.billing) {
    return {
      reply: errorReply(
        'validation_failed',
        'this listing is not a living artifact (its billing is null), so it has no cycles; buy it once with POST /v1/orders',
      ),
    };
  }
  const existing = [...state.subscriptions.values()].find((s) => s.listingId === listing.id && s.state !== 'canceled');
  const key = keyOf(req).key;
  if (existing?.state === 'active') {
    // Answered as it is (201, like any subscribe), and the key recorded so a replay answers the same.
    return recordedCall(d, state, req, {
      status: 201,
      body: subscriptionResource(existing, state.principalId, listing.priceCents, caller.principalId),
    });
  }
  const refusal = purchaseRefusal({
    sandbox: caller.sandbox,
    formats: listing.formats,
    maxPriceCents: undefined,
    listing,
    artifact: await d.quotes.artifact(listing.artifactId),
    mandate: currentMandate(state),
    availableCents: state.availableCents,
    quota: quotaUse(d, state, caller.sandbox),
    approval: 'refuse',
  });
  if (refusal) return { reply: errorReply(refusal.code, refusal.message, refusal.retryAfterS) };
  const now = d.clock.nowIso();
  const next: SubscriptionRecord = existing
    ? {
        ...existing,
        state: 'active',
        agentId: caller.agentId,
        consecutiveFailures: 0,
        nextCycleAt: now,
        updatedAt: now,
      }
    : {
        id: derivedId(state.principalId, 'subscription', key),
        listingId: listing.id,
        sellerPrincipalId: listing.sellerPrincipalId,
        agentId: caller.agentId,
        intervalSeconds: listing.billing.intervalSeconds,
        sandbox: caller.sandbox,
        state: 'active',
        cycle: 0,
        consecutiveFailures: 0,
        nextCycleAt: now,
        lastCycle: null,
        canceledBy: null,
        createdAt: now,
        updatedAt: now,
      };
  const reply = {
    status: 201,
    body: subscriptionResource(next, state.principalId, listing.priceCents, caller.principalId),
  };
  const fact = changed(d, state, existing ? 'resumed' : 'subscribed', existing ?? null, next);
  fact.idempotency = recordOf(req, caller.agentId, reply);
  const followUp = internalRequest(
    'subscription.cycle',
    { subscriptionId: next.id, cycle: next.cycle + 1, asOf: now },
    { requestId: `cycle-${next.id}-${next.cycle + 1}` },
  );
  return { fact, reply: okReply(reply.status, reply.body), followUp };
}

/** One due cycle, from the scheduler (or this actor right after subscribing). */
export async function runCycle(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'subscription.cycle'>,
): Promise<Decision<LedgerFact>> {
  const c = req.body;
  const sub = state.subscriptions.get(c.subscriptionId);
  const answer = (outcome: 'held' | 'failed' | 'canceled' | 'skipped') =>
    okReply(200, { subscription_id: c.subscriptionId, cycle: c.cycle, outcome });
  const asOfMs = Date.parse(c.asOf);
  // Run already (or a duplicate timer), not due yet, or not active: nothing to do, whoever asks and how often.
  if (
    sub?.state !== 'active' ||
    c.cycle !== sub.cycle + 1 ||
    sub.nextCycleAt === null ||
    Date.parse(sub.nextCycleAt) > asOfMs
  ) {
    return { reply: answer('skipped') };
  }
  const quote = await d.quotes.listing(sub.listingId);
  const listing = liveListing(quote, sub.sandbox);
  if (!listing) {
    return { fact: cancellation(d, state, sub, 'listing_unlisted'), reply: answer('canceled') };
  }
  const artifact = await d.quotes.artifact(listing.artifactId);
  const refusal = purchaseRefusal({
    sandbox: sub.sandbox,
    formats: listing.formats,
    maxPriceCents: undefined,
    listing,
    artifact,
    mandate: currentMandate(state),
    availableCents: state.availableCents,
    quota: quotaUse(d, state, sub.sandbox),
    approval: 'refuse',
  });
  const at = d.clock.nowIso();
  const nextCycleAt = nextDueAfter(Date.parse(sub.nextCycleAt), sub.intervalSeconds, asOfMs);
  if (refusal) {
    const failures = sub.consecutiveFailures + 1;
    const paused = failures >= failedCyclesToPause;
    const next: SubscriptionRecord = {
      ...sub,
      state: paused ? 'paused' : 'active',
      cycle: c.cycle,
      consecutiveFailures: failures,
      nextCycleAt: paused ? null : nextCycleAt,
      lastCycle: {
        number: c.cycle,
        at,
        outcome: 'failed',
        orderId: null,
        errorCode: refusal.code,
        message: refusal.message,
      },
      updatedAt: at,
    };
    return { fact: changed(d, state, 'cycle_failed', sub, next), reply: answer('failed') };
  }
  const a = artifact!;
  const orderId = cycleOrderId(state.principalId, sub.id, c.cycle);
  const next: SubscriptionRecord = {
    ...sub,
    cycle: c.cycle,
    consecutiveFailures: 0,
    nextCycleAt,
    lastCycle: { number: c.cycle, at, outcome: 'held', orderId, errorCode: null, message: null },
    updatedAt: at,
  };
  const fact: EscrowHeldFact = {
    ...factBase(d, state.principalId, sub.sandbox, state.availableCents - listing.priceCents),
    type: 'escrow_held',
    orderId,
    agentId: sub.agentId,
    listingId: listing.id,
    artifactId: listing.artifactId,
    editionId: a.editionId,
    sellerPrincipalId: listing.sellerPrincipalId,
    priceCents: listing.priceCents,
    formats: listing.formats,
    floor: listing.floor,
    priceSnapshotId: quote!.snapshotId,
    subscriptionId: sub.id,
    subscription: next,
  };
  if (a.report) fact.settled = decideSettlement(d, fact.balanceAfterCents, listing, a.report);
  return { fact, reply: answer('held') };
}

function cancellation(
  d: PrincipalDeps,
  state: PrincipalState,
  sub: SubscriptionRecord,
  by: NonNullable<SubscriptionRecord['canceledBy']>,
): SubscriptionChangedFact {
  const at = d.clock.nowIso();
  const next: SubscriptionRecord = { ...sub, state: 'canceled', nextCycleAt: null, canceledBy: by, updatedAt: at };
  return changed(d, state, 'canceled', sub, next);
}

/**
 * POST /v1/subscriptions/{id}/cancel. The buyer's own subscription is canceled here; otherwise the caller may be
 * its seller: the projection names the buyer, and the buyer's actor cancels it (a seller's actor never holds
 * another principal's subscriptions). Anyone else gets 404. Cancelling twice answers the same canceled record.
 */
export async function cancelSubscription(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'cancelSubscription'>,
): Promise<Decision<LedgerFact>> {
  const { caller } = req;
  const id = req.params.subscription_id;
  const own = state.subscriptions.get(id);
  const notFound = { reply: errorReply('not_found', noSuchSubscription) };
  if (own && own.sandbox === caller.sandbox) {
    if (own.state === 'canceled') return { reply: okReply(201, await resourceFor(d, state, own, caller.principalId)) };
    const fact = cancellation(d, state, own, 'buyer');
    const reply = { status: 201, body: await resourceFor(d, state, fact.subscription, caller.principalId) };
    fact.idempotency = recordOf(req, caller.agentId, reply);
    return { fact, reply: okReply(reply.status, reply.body) };
  }
  return askThen(
    d.names.serviceSubject('ledger'),
    internalRequest('subscription.parties', { subscriptionId: id }, { requestId: req.requestId }),
    (parties) => {
      if (!parties.ok) return { reply: parties.reply };
      const p = parties.body;
      if (!p || p.sellerPrincipalId !== caller.principalId || p.sandbox !== caller.sandbox) return notFound;
      return askThen(
        d.names.actorSubject('principal', p.buyerPrincipalId),
        internalRequest(
          'subscription.cancel',
          { subscriptionId: id, by: 'seller', sellerPrincipalId: caller.principalId },
          { requestId: req.requestId },
        ),
        (canceled) =>
          canceled.ok
            ? recordedCall(d, state, req, { status: 201, body: { ...canceled.body, role: 'seller' } })
            : { reply: canceled.reply },
      );
    },
  );
}

/** Cancel in the buyer's actor, for the subscription's seller or because its listing was unlisted. */
export async function cancelForSeller(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'subscription.cancel'>,
): Promise<Decision<LedgerFact>> {
  const c = req.body;
  const sub = state.subscriptions.get(c.subscriptionId);
  if (!sub || sub.sellerPrincipalId !== c.sellerPrincipalId) {
    return { reply: errorReply('not_found', noSuchSubscription) };
  }
  if (sub.state === 'canceled') return { reply: okReply(200, await resourceFor(d, state, sub, c.sellerPrincipalId)) };
  const fact = cancellation(d, state, sub, c.by === 'seller' ? 'seller' : 'listing_unlisted');
  return { fact, reply: okReply(200, await resourceFor(d, state, fact.subscription, c.sellerPrincipalId)) };
}
