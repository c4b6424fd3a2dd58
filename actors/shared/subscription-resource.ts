// The subscription resource as both faces answer it (contracts/schemas.ts, Subscription), from the record the
// buyer's principal actor keeps: the actor answers its commands with it, the ledger service its reads.
import type { Static } from 'typebox';
import type { SubscriptionRecord, schemas } from '../../contracts/index.ts';

export type SubscriptionResource = Static<typeof schemas.Subscription>;

/**
 * `priceCents` is the listing's live price (what the next cycle bills); `viewer` decides `role`, the caller's side
 * of the subscription.
 */
export function subscriptionResource(
  r: SubscriptionRecord,
  buyerPrincipalId: string,
  priceCents: number,
  viewer: string,
): SubscriptionResource {
  return {
    id: r.id,
    listingId: r.listingId,
    buyerPrincipalId,
    sellerPrincipalId: r.sellerPrincipalId,
    role: viewer === buyerPrincipalId ? 'buyer' : 'seller',
    state: r.state,
    billing: { intervalSeconds: r.intervalSeconds, priceCents },
    consecutiveFailures: r.consecutiveFailures,
    cycles: r.cycle,
    nextCycleAt: r.nextCycleAt,
    lastCycle: r.lastCycle,
    canceledBy: r.canceledBy,
    sandbox: r.sandbox,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
