// Human approval: a purchase priced above the mandate's approval threshold is not charged but recorded as a request
// waiting for the principal (`approval_requested`, answered pending_approval). The principal approves, which buys
// with the original request (its key, its agent, its formats; at most the price it was asked at) in one
// `escrow_held` fact, or declines (`approval_decided`); a request nobody decides expires. Every fact of a request
// carries the original purchase request's key, so replaying that request answers how it stands now, from the fact.
import {
  type ApprovalRecord,
  errorReply,
  type EscrowHeldFact,
  type LedgerFact,
  okReply,
  pageLimits,
  type RequestOf,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { purchaseOrderId } from '../shared/ids.ts';
import { badCursor, decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';
import { pendingReply } from './approval-reply.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { recordOf } from './idempotency.ts';
import { purchaseRefusal } from './purchase-policy.ts';
import type { StoredReply } from './purchase-reply.ts';
import { quotaUse } from './quotas.ts';
import { decideSettlement } from './settlement.ts';
import { currentMandate, type HeldRequest, type PrincipalState } from './state.ts';

const noSuchApproval = 'no approval request of this principal has this id';

/** Record a purchase that waits for approval; `requestedPrice` is the listing's price now. */
export function requestApproval(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'purchaseArtifact'>,
  listingId: string,
  priceCents: number,
): Decision<LedgerFact> {
  const { caller, body } = req;
  const now = d.clock.nowMs();
  const approval: ApprovalRecord = {
    id: d.ids.uuid(),
    state: 'pending',
    agentId: caller.agentId,
    listingId,
    priceCents,
    formats: body.formats,
    sandbox: caller.sandbox,
    requestedAt: new Date(now).toISOString(),
    expiresAt: new Date(now + d.approvalTtlMs).toISOString(),
    decidedAt: null,
    decidedBy: null,
    orderId: null,
  };
  const { key, requestHash } = req.idempotency!;
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, caller.sandbox, state.availableCents),
    type: 'approval_requested',
    approval,
    idempotency: { key, requestHash, agentId: caller.agentId },
  };
  return { fact, reply: pendingReply(approval) };
}

/** The request `id` names, on the caller's side of the sandbox line. */
function requestOf(state: PrincipalState, id: string, sandbox: boolean): HeldRequest | null {
  const held = state.approvals.get(id);
  return held && held.record.sandbox === sandbox ? held : null;
}

const decided = (
  a: ApprovalRecord,
  state: ApprovalRecord['state'],
  at: string,
  orderId: string | null,
): ApprovalRecord => ({
  ...a,
  state,
  decidedAt: at,
  decidedBy: state === 'expired' ? 'expiry' : 'principal',
  orderId,
});

const isPast = (a: ApprovalRecord, nowMs: number) => nowMs >= Date.parse(a.expiresAt);

/** The fact that declines or expires a request, carrying the purchase request's key (and the call's, if any). */
function declineFact(
  d: PrincipalDeps,
  state: PrincipalState,
  held: HeldRequest,
  after: ApprovalRecord,
  call: LedgerFact['idempotency'],
): LedgerFact {
  return {
    ...factBase(d, state.principalId, after.sandbox, state.availableCents),
    type: 'approval_decided',
    approval: after,
    idempotency: { key: held.key, requestHash: held.requestHash, agentId: after.agentId },
    ...(call ? { call } : {}),
  };
}

/**
 * POST /v1/approvals/{id}/approve: buy with the original request, now. The purchase rules run again (the mandate,
 * quotas and credits as they are now; the threshold is what this call answers), and the price may not have risen
 * above the one asked about. A refusal leaves the request pending, so the principal can top up and approve again.
 * A request already decided answers as it stands: a second approval does nothing. One past its time expires.
 */
export function approve(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'approvePurchase'>) {
  return onPending(d, state, req, (held, at) => buyApproved(d, state, req, held, at));
}

async function buyApproved(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'approvePurchase'>,
  held: HeldRequest,
  at: string,
): Promise<Decision<LedgerFact>> {
  const a = held.record;
  const quote = await d.quotes.listing(a.listingId);
  const listing = quote?.state ?? null;
  const visible = listing !== null && listing.state === 'live' && listing.sandbox === a.sandbox;
  const artifact = visible ? await d.quotes.artifact(listing.artifactId) : null;
  const refusal = purchaseRefusal({
    sandbox: a.sandbox,
    formats: a.formats,
    maxPriceCents: a.priceCents,
    listing,
    artifact,
    mandate: currentMandate(state),
    availableCents: state.availableCents,
    quota: quotaUse(d, state, a.sandbox),
    approval: 'approved',
  });
  if (refusal) {
    const message = `approval request ${a.id} stays pending: ${refusal.message}`;
    return { reply: errorReply(refusal.code, message, refusal.retryAfterS) };
  }
  const l = listing!;
  const art = artifact!;
  const orderId = purchaseOrderId(state.principalId, held.key);
  const after = decided(a, 'approved', at, orderId);
  const reply: StoredReply = { status: 201, body: after };
  const fact: EscrowHeldFact = {
    ...factBase(d, state.principalId, a.sandbox, state.availableCents - l.priceCents),
    type: 'escrow_held',
    orderId,
    agentId: a.agentId,
    listingId: l.id,
    artifactId: l.artifactId,
    editionId: art.editionId,
    sellerPrincipalId: l.sellerPrincipalId,
    priceCents: l.priceCents,
    formats: a.formats,
    floor: l.floor,
    priceSnapshotId: quote!.snapshotId,
    subscriptionId: null,
    idempotency: { key: held.key, requestHash: held.requestHash, agentId: a.agentId },
    approval: { record: after, call: recordOf(req, req.caller.agentId, reply) },
  };
  if (art.report) fact.settled = decideSettlement(d, fact.balanceAfterCents, l, art.report);
  return { fact, reply: okReply(reply.status, reply.body) };
}

/** POST /v1/approvals/{id}/decline: nothing is bought; the agent's request answers that it was declined. */
export function decline(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'declinePurchase'>) {
  return onPending(d, state, req, (held, at) =>
    closeRequest(d, state, req, held, decided(held.record, 'declined', at, null)),
  );
}

/**
 * Decide on the caller's request `approval_id` if it is pending and in time. A request decided already answers as
 * it stands (200); one past its time expires now, and the call answers the expired request.
 */
async function onPending(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'approvePurchase' | 'declinePurchase'>,
  decide: (held: HeldRequest, at: string) => Decision<LedgerFact> | Promise<Decision<LedgerFact>>,
): Promise<Decision<LedgerFact>> {
  const held = requestOf(state, req.params.approval_id, req.caller.sandbox);
  if (!held) return { reply: errorReply('not_found', noSuchApproval) };
  if (held.record.state !== 'pending') return { reply: okReply(200, held.record) };
  const at = d.clock.nowIso();
  if (isPast(held.record, d.clock.nowMs())) {
    return closeRequest(d, state, req, held, decided(held.record, 'expired', at, null));
  }
  return decide(held, at);
}

/** The principal's call declines the request (or finds it expired): one fact, and the request as the reply. */
function closeRequest(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'approvePurchase' | 'declinePurchase'>,
  held: HeldRequest,
  after: ApprovalRecord,
): Decision<LedgerFact> {
  const reply: StoredReply = { status: 201, body: after };
  return {
    fact: declineFact(d, state, held, after, recordOf(req, req.caller.agentId, reply)),
    reply: okReply(reply.status, reply.body),
  };
}

/** `approval.expire` from the sweep: a pending request past its time (as of the sweep's clock) expires, once. */
export function expire(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'approval.expire'>) {
  const held = state.approvals.get(req.body.approvalId);
  if (!held) return { reply: errorReply('not_found', noSuchApproval) };
  const a = held.record;
  if (a.state !== 'pending' || !isPast(a, Date.parse(req.body.asOf))) return { reply: okReply(200, a) };
  const after = decided(a, 'expired', d.clock.nowIso(), null);
  return { fact: declineFact(d, state, held, after, undefined), reply: okReply(200, after) };
}

/** GET /v1/approvals: the caller's side's requests, newest first, optionally of one state. */
export function getApprovals(state: PrincipalState, req: RequestOf<'getApprovals'>): Decision<LedgerFact> {
  let offset = 0;
  if (req.query.cursor !== undefined) {
    const o = decodeNumberCursor('approvals', req.query.cursor);
    if (o === null) return { reply: badCursor('approvals') };
    offset = o;
  }
  const limit = req.query.limit ?? pageLimits.default;
  const wanted = req.query.state;
  const all = [...state.approvals.values()]
    .map((h) => h.record)
    .filter((a) => a.sandbox === req.caller.sandbox && (wanted === undefined || a.state === wanted))
    .reverse();
  const items = all.slice(offset, offset + limit);
  const more = offset + limit < all.length;
  return { reply: okReply(200, { items, next_cursor: more ? encodeCursor('approvals', offset + limit) : null }) };
}
