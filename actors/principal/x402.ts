// The x402 rail's two commands to a payer's principal actor (docs/x402.md). `x402.check` runs the purchase rules
// as they would run once the payment is credited, so nothing is settled for a purchase the rules refuse; nothing is
// appended. `x402.credit` credits a payment the facilitator settled, once per authorization (its idempotency key
// names it), and sets the operator's x402 mandate in the same fact when the principal's differs.
import {
  type CreditedFact,
  errorReply,
  type LedgerFact,
  type MandateRecord,
  okReply,
  type RequestOf,
  type X402MandateT,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { derivedId } from '../shared/ids.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { replayOrConflict } from './idempotency.ts';
import { purchaseRefusal } from './purchase-policy.ts';
import { quotaUse } from './quotas.ts';
import { currentMandate, type PrincipalState } from './state.ts';

/** The principal's mandate under the operator's x402 settings; its id names the settings, so it is stable. */
function x402Mandate(principalId: string, m: X402MandateT, at: string): MandateRecord {
  return {
    id: derivedId(principalId, 'x402-mandate', String(m.perItemCapCents), String(m.minTrust), String(m.minFloor)),
    perItemCapCents: m.perItemCapCents,
    minTrust: m.minTrust,
    minFloor: m.minFloor,
    minJudgeVersion: null,
    rejectOpenJudgeErrata: false,
    approvalAboveCents: null,
    revoked: false,
    createdAt: at,
  };
}

export async function checkX402(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'x402.check'>,
): Promise<Decision<LedgerFact>> {
  const b = req.body;
  const quote = await d.quotes.listing(b.listingId);
  const listing = quote?.state ?? null;
  const visible = listing !== null && listing.state === 'live' && !listing.sandbox;
  const artifact = visible ? await d.quotes.artifact(listing.artifactId) : null;
  const refusal = purchaseRefusal({
    sandbox: false,
    formats: [b.format],
    maxPriceCents: b.paymentCents,
    listing,
    artifact,
    mandate: x402Mandate(state.principalId, b.mandate, d.clock.nowIso()),
    availableCents: state.availableCents + b.paymentCents,
    quota: quotaUse(d, state, false),
    // The operator's x402 mandate has no approval threshold: no person waits behind an x402 payer.
    approval: 'refuse',
  });
  if (refusal) return { reply: errorReply(refusal.code, refusal.message, refusal.retryAfterS) };
  return { reply: okReply(200, { priceCents: listing!.priceCents }) };
}

export async function creditX402(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'x402.credit'>,
): Promise<Decision<LedgerFact>> {
  const b = req.body;
  // One credit per authorization: a retried or replayed payment finds its credit and adds nothing.
  const key = `x402-credit:${b.paymentId}`;
  const requestHash = `${key}:${b.amountCents}`;
  const earlier = await replayOrConflict(d, state, key, requestHash);
  if (earlier) return { reply: earlier };
  const topupId = derivedId(state.principalId, 'x402-payment', b.paymentId);
  const wanted = x402Mandate(state.principalId, b.mandate, d.clock.nowIso());
  const current = currentMandate(state);
  const balance = state.availableCents + b.amountCents;
  const reply = { status: 201, body: { balance_cents: balance, topup_id: topupId } };
  const fact: CreditedFact = {
    ...factBase(d, state.principalId, false, balance),
    type: 'credited',
    source: 'x402_payment',
    amountCents: b.amountCents,
    topupId,
    x402: { paymentId: b.paymentId, network: b.network, payer: b.payer, transaction: b.transaction },
    idempotency: { key, requestHash, agentId: '', reply },
  };
  if (current?.id !== wanted.id || current.revoked) fact.mandate = wanted;
  return { fact, reply: okReply(reply.status, reply.body) };
}
