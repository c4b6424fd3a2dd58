// Settling one held order with its edition's report: released when the report meets the order's floor (the price
// is spent and accrues to the seller), auto-refunded when it misses. Idempotent by order id: an order no longer
// held has nothing to settle. The command comes from the actor itself right after a purchase, or from the
// settlement sweeper (actors/settlement) for orders whose report landed later.
import {
  type BusRequest,
  type LedgerFact,
  okReply,
  type RequestOf,
  type SettleCommand,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { internalRequest } from '../runtime/service.ts';
import { meetsFloor } from '../verification/report.ts';
import type { PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';

/** The internal command that settles one held order. */
export function settleRequest(c: SettleCommand): BusRequest {
  return internalRequest('escrow.settle', c, { requestId: `settle-${c.orderId}` });
}

export function settle(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'escrow.settle'>): Decision<LedgerFact> {
  const c = req.body;
  const order = state.held.get(c.orderId);
  if (!order) return { reply: okReply(200, { order_id: c.orderId, settled: false }) };
  const released = meetsFloor({ summary: { meanEntailment: c.meanEntailment } }, order.floor);
  const fact: LedgerFact = {
    id: d.ids.uuid(),
    at: d.clock.nowIso(),
    principalId: state.principalId,
    sandbox: order.sandbox,
    balanceAfterCents: released ? state.availableCents : state.availableCents + order.priceCents,
    type: released ? 'escrow_released' : 'escrow_refunded',
    orderId: c.orderId,
    priceCents: order.priceCents,
    listingId: order.listingId,
    artifactId: order.artifactId,
    sellerPrincipalId: order.sellerPrincipalId,
    agentId: order.agentId,
    reportDigest: c.reportDigest,
    meanEntailment: c.meanEntailment,
    floor: order.floor,
  };
  return { fact, reply: okReply(200, { order_id: c.orderId, settled: true, outcome: fact.type }) };
}
