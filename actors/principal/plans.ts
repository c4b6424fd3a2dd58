// The principal's plan (Free, Pro, Enterprise: contracts/plans.ts), set by an operator (`assay plan set`). It is a
// fact on the principal's own ledger, so the quotas its actor enforces and the history of its plan are one log.
import { type LedgerFact, okReply, type PlanName, type RequestOf } from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';

/** The principal's plan: the one an operator set, else the configured default. */
export function planOf(d: PrincipalDeps, state: PrincipalState): PlanName {
  return state.plan ?? d.defaultPlan;
}

const planReply = (d: PrincipalDeps, state: PrincipalState) =>
  okReply(200, { principalId: state.principalId, plan: planOf(d, state), explicit: state.plan !== null });

export function setPlan(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'plan.set'>): Decision<LedgerFact> {
  const { plan } = req.body;
  // Setting the plan it is on already records nothing: the command is safe to repeat.
  if (state.plan === plan) return { reply: planReply(d, state) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.body.sandbox, state.availableCents),
    type: 'plan_set',
    plan,
    previous: state.plan,
  };
  return { fact, reply: okReply(200, { principalId: state.principalId, plan, explicit: true }) };
}

export function getPlan(d: PrincipalDeps, state: PrincipalState): Decision<LedgerFact> {
  return { reply: planReply(d, state) };
}
