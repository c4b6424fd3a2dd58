// A purchase: the listing's and the artifact's quotes, the rules (purchase-policy.ts), then one `escrow_held` fact
// that moves the price from available to held (or, above the mandate's approval threshold, an approval request:
// approvals.ts). When the edition's report is known already (the usual case) the order's settlement is decided
// with it and recorded in the same fact, one append; otherwise the settlement sweeper settles it once the report lands.
import { type EscrowHeldFact, errorReply, type LedgerFact, okReply, type RequestOf } from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { purchaseOrderId } from '../shared/ids.ts';
import type { PrincipalDeps } from './deps.ts';
import { currentMandate, type PrincipalState } from './state.ts';
import { purchaseRefusal } from './purchase-policy.ts';
import { quotaUse } from './quotas.ts';
import { requestApproval } from './approvals.ts';
import { keyOf } from './idempotency.ts';
import { purchaseReply } from './purchase-reply.ts';
import { decideSettlement } from './settlement.ts';

export async function purchase(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'purchaseArtifact'>,
): Promise<Decision<LedgerFact>> {
  const { caller, body } = req;
  const { key, requestHash } = keyOf(req);
  const quote = await d.quotes.listing(body.listing_id);
  const listing = quote?.state ?? null;
  const visible = listing !== null && listing.state === 'live' && listing.sandbox === caller.sandbox;
  const artifact = visible ? await d.quotes.artifact(listing.artifactId) : null;
  const refusal = purchaseRefusal({
    sandbox: caller.sandbox,
    formats: body.formats,
    maxPriceCents: body.max_price_cents,
    listing,
    artifact,
    mandate: currentMandate(state),
    availableCents: state.availableCents,
    quota: quotaUse(d, state, caller.sandbox),
    approval: 'ask',
  });
  if (refusal?.code === 'pending_approval') return requestApproval(d, state, req, listing!.id, listing!.priceCents);
  if (refusal) return { reply: errorReply(refusal.code, refusal.message, refusal.retryAfterS) };
  // The policy let it through, so both quotes exist.
  const l = listing!;
  const a = artifact!;
  const orderId = purchaseOrderId(state.principalId, key);
  const reply = purchaseReply(orderId, l.priceCents, body.formats);
  // The hot path's facts are plain literals: spreading a base object into them cost more than the rest.
  const fact: EscrowHeldFact = {
    id: d.ids.uuid(),
    at: d.clock.nowIso(),
    principalId: state.principalId,
    sandbox: caller.sandbox,
    balanceAfterCents: state.availableCents - l.priceCents,
    type: 'escrow_held',
    orderId,
    agentId: caller.agentId,
    listingId: l.id,
    artifactId: l.artifactId,
    editionId: a.editionId,
    sellerPrincipalId: l.sellerPrincipalId,
    priceCents: l.priceCents,
    formats: body.formats,
    floor: l.floor,
    priceSnapshotId: quote!.snapshotId,
    subscriptionId: null,
    // No reply: the fact rebuilds it (idempotency.ts, replyOf).
    idempotency: { key, requestHash, agentId: caller.agentId },
  };
  if (a.report) fact.settled = decideSettlement(d, fact.balanceAfterCents, l, a.report);
  return { fact, reply: okReply(reply.status, reply.body) };
}
