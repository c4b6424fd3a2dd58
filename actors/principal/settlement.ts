// Settling one held order with its edition's report: released when the report meets the order's floor (the price
// is spent and accrues to the seller), auto-refunded when it misses; `decideSettlement` is that rule, for both
// paths. When the report is known at purchase (the usual case) the settlement is decided with the hold and
// committed in the same fact; otherwise the settlement sweeper (actors/settlement) sends `escrow.settle` once the
// report lands. Idempotent by order id: an order no longer held has nothing to settle.
import {
  type BusRequest,
  type LedgerFact,
  okReply,
  type RequestOf,
  type SettleCommand,
  type SettledAtPurchase,
  settlementFact,
  internalRequest,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';

import { meetsFloor } from '../verification/report.ts';
import type { PrincipalDeps } from './deps.ts';
import type { HeldOrder, PrincipalState } from './state.ts';

/**
 * The one settlement rule: a held order's report releases it when it meets the order's floor (the price is spent)
 * and refunds it when it misses (the price returns to available credits). `availableCents` is the available credits
 * before the settlement: once the price is held, whether in the purchase's own turn or later.
 */
export function decideSettlement(
  d: PrincipalDeps,
  availableCents: number,
  order: { priceCents: number; floor: number },
  report: { digest: string; meanEntailment: number },
): SettledAtPurchase {
  const released = meetsFloor({ summary: { meanEntailment: report.meanEntailment } }, order.floor);
  return {
    id: d.ids.uuid(),
    type: released ? 'escrow_released' : 'escrow_refunded',
    balanceAfterCents: released ? availableCents : availableCents + order.priceCents,
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
    // A report that landed after the purchase (the sweeper's command); the settlement is the purchase's own rule.
    const decided = decideSettlement(d, state.availableCents, order, {
      digest: c.reportDigest,
      meanEntailment: c.meanEntailment,
    });
    fact = settlementFact({ principalId: state.principalId, orderId: c.orderId, ...order }, decided, d.clock.nowIso());
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
