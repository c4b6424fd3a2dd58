// Credits: top-ups (sandbox ones credited at once, no payment; live ones in billing.ts), the grant a new sandbox principal starts with (credits
// and its test mandate, in one fact), and the balance.
import {
  type CreditedFact,
  type LedgerFact,
  type MandateRecord,
  okReply,
  type RequestOf,
  type TopUpResultT,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';
import { replayOrConflict, recordOf } from './idempotency.ts';
import { liveTopUp } from './billing.ts';

export function topUp(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'topUp'>): Decision<LedgerFact> {
  if (!req.caller.sandbox) return liveTopUp(d, state, req);
  const amountCents = req.body.credits * 100;
  const reply = {
    status: 201,
    body: { status: 'credited', amount_cents: amountCents, sandbox: true } satisfies TopUpResultT,
  };
  const fact: CreditedFact = {
    ...factBase(d, state.principalId, true, state.availableCents + amountCents),
    type: 'credited',
    source: 'sandbox_topup',
    amountCents,
    topupId: d.ids.uuid(),
    idempotency: recordOf(req, req.caller.agentId, reply),
  };
  return { fact, reply: okReply(reply.status, reply.body) };
}

export async function grantSandbox(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'sandbox.grant'>,
): Promise<Decision<LedgerFact>> {
  const g = req.body;
  // Keyed by the registration, so the sandbox service retrying a registration grants once.
  const key = `sandbox-grant:${g.registrationId}`;
  const earlier = await replayOrConflict(d, state, key, key);
  // Answered as a first run: the sandbox service that asks is itself retrying.
  if (earlier) return { reply: earlier.ok ? okReply(earlier.status, earlier.body) : earlier };
  // A literal, not a spread: every sandbox principal keeps this object, and a spread's copy is more than twice
  // the size (test/bench/actor-memory.ts).
  const gm = g.mandate;
  const mandate: MandateRecord = {
    id: gm.id,
    perItemCapCents: gm.perItemCapCents,
    minTrust: gm.minTrust,
    minFloor: gm.minFloor,
    minJudgeVersion: gm.minJudgeVersion,
    rejectOpenJudgeErrata: gm.rejectOpenJudgeErrata,
    approvalAboveCents: gm.approvalAboveCents,
    revoked: gm.revoked,
    createdAt: d.clock.nowIso(),
  };
  const reply = { status: 200, body: { balance_cents: state.availableCents + g.amountCents, mandate } };
  const idempotency = { key, requestHash: key, agentId: '', reply };
  if (g.amountCents === 0) {
    const base = factBase(d, state.principalId, true, state.availableCents);
    return { fact: { ...base, type: 'mandate_set', mandate, idempotency }, reply: okReply(200, reply.body) };
  }
  const fact: CreditedFact = {
    ...factBase(d, state.principalId, true, state.availableCents + g.amountCents),
    type: 'credited',
    source: 'sandbox_grant',
    amountCents: g.amountCents,
    topupId: g.registrationId,
    mandate,
    idempotency,
  };
  return { fact, reply: okReply(reply.status, reply.body) };
}

export function getBalance(state: PrincipalState): Decision<LedgerFact> {
  return { reply: okReply(200, { balance_cents: state.availableCents, currency: 'credit' }) };
}
