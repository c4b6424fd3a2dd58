// The replies of a purchase waiting for approval, answered when it is asked and rebuilt from its facts when its key
// replays (the facts do not store them; purchase-reply.ts does the same for a purchase).
import {
  type ApprovalRecord,
  type BusReply,
  errorReply,
  type LedgerFact,
  pendingApprovalReply,
} from '../../contracts/index.ts';

/** What a purchase waiting in `a` answers, the first time and on every replay while it waits. */
export const pendingReply = (a: ApprovalRecord): BusReply =>
  pendingApprovalReply(
    a.id,
    `the price ${a.priceCents} cents is above the mandate's approval threshold: approval request ${a.id} awaits the principal until ${a.expiresAt}; watch approval.decided events or retry this request with the same key`,
  );

/** What the purchase request answers once its approval request was declined or expired: nothing was bought. */
const refusedReply = (a: ApprovalRecord): BusReply =>
  errorReply(
    'mandate_exceeded',
    a.state === 'expired'
      ? `approval request ${a.id} expired at ${a.expiresAt} without a decision; nothing was bought`
      : `the principal declined approval request ${a.id}; nothing was bought`,
  );

/** The reply a fact of an approval request rebuilds for the purchase request's key. */
export function approvalReplyOf(fact: LedgerFact): BusReply | null {
  if (fact.type === 'approval_requested') return pendingReply(fact.approval);
  if (fact.type === 'approval_decided') return refusedReply(fact.approval);
  return null;
}
