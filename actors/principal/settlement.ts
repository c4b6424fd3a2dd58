// Settling one held order with its edition's report: released when the report meets the order's floor (the price
// is spent and accrues to the seller), auto-refunded when it misses. When the report is known at purchase (the
// usual case) the settlement is decided with the hold and committed in the same fact (`settledAtPurchase`);
// otherwise the settlement sweeper (actors/settlement) sends `escrow.settle` once the report lands. Idempotent by
// order id: an order no longer held has nothing to settle.
import {
  type BusRequest,
  type LedgerFact,
  okReply,
  type RequestOf,
  type SettleCommand,
  type SettledAtPurchase,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { internalRequest } from '../runtime/service.ts';
import { meetsFloor } from '../verification/report.ts';
import type { PrincipalDeps } from './deps.ts';
import type { HeldOrder, PrincipalState } from './state.ts';

/**
 * The settlement of an order decided in its purchase's turn, from the report its artifact quote carried:
 * `balanceAfterHoldCents` is the available credits once the price is held. The same rule as `settle`.
 */
export function settledAtPurchase(
  d: PrincipalDeps,
  balanceAfterHoldCents: number,
  order: { priceCents: number; floor: number },
  report: { digest: string; meanEntailment: number },
): SettledAtPurchase {
  const released = meetsFloor({ summary: { meanEntailment: report.meanEntailment } }, order.floor);
  return {
    id: d.ids.uuid(),
    type: released ? 'escrow_released' : 'escrow_refunded',
    balanceAfterCents: released ? balanceAfterHoldCents : balanceAfterHoldCents + order.priceCents,
    reportDigest: report.digest,
    meanEntailment: report.meanEntailment,
  };
}

/** The internal command that settles one held order. */
export function settleRequest(c: SettleCommand): BusRequest {
  return internalRequest('escrow.settle', c, { requestId: `settle-${c.orderId}` });
}

export function settle(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'escrow.settle'>): Decision<LedgerFact> {
  const c = req.body;
  const order = state.held.get(c.orderId);
  // Unknown here means settled already (or never held): settling is idempotent by order id, whichever path comes
  // second (a report that lands as the wait for it runs out: the first command the actor takes decides).
  if (!order) return { reply: okReply(200, { order_id: c.orderId, settled: false }) };
  let fact: LedgerFact;
  if ('noReportAfterSeconds' in c) {
    // Rare (a judge unreachable for the whole wait), so off the hot path's plain-literal rule.
    fact = {
      ...settlementFields(d, state, c.orderId, order),
      balanceAfterCents: state.availableCents + order.priceCents,
      type: 'escrow_refunded',
      reason: 'no_report',
      reportDigest: null,
      meanEntailment: null,
      waitedSeconds: c.noReportAfterSeconds,
    };
  } else {
    // Every purchase settles here: plain literals, no spreads (docs/REVIEW.md).
    const released = meetsFloor({ summary: { meanEntailment: c.meanEntailment } }, order.floor);
    fact = released
      ? {
          id: d.ids.uuid(),
          at: d.clock.nowIso(),
          principalId: state.principalId,
          sandbox: order.sandbox,
          balanceAfterCents: state.availableCents,
          type: 'escrow_released',
          orderId: c.orderId,
          priceCents: order.priceCents,
          listingId: order.listingId,
          artifactId: order.artifactId,
          sellerPrincipalId: order.sellerPrincipalId,
          agentId: order.agentId,
          floor: order.floor,
          subscriptionId: order.subscriptionId,
          reportDigest: c.reportDigest,
          meanEntailment: c.meanEntailment,
        }
      : {
          id: d.ids.uuid(),
          at: d.clock.nowIso(),
          principalId: state.principalId,
          sandbox: order.sandbox,
          balanceAfterCents: state.availableCents + order.priceCents,
          type: 'escrow_refunded',
          reason: 'floor_missed',
          orderId: c.orderId,
          priceCents: order.priceCents,
          listingId: order.listingId,
          artifactId: order.artifactId,
          sellerPrincipalId: order.sellerPrincipalId,
          agentId: order.agentId,
          floor: order.floor,
          subscriptionId: order.subscriptionId,
          reportDigest: c.reportDigest,
          meanEntailment: c.meanEntailment,
        };
  }
  return { fact, reply: okReply(200, { order_id: c.orderId, settled: true, outcome: fact.type }) };
}

function settlementFields(d: PrincipalDeps, state: PrincipalState, orderId: string, order: HeldOrder) {
  return {
    id: d.ids.uuid(),
    at: d.clock.nowIso(),
    principalId: state.principalId,
    sandbox: order.sandbox,
    orderId,
    priceCents: order.priceCents,
    listingId: order.listingId,
    artifactId: order.artifactId,
    sellerPrincipalId: order.sellerPrincipalId,
    agentId: order.agentId,
    floor: order.floor,
    subscriptionId: order.subscriptionId,
  };
}
