// The principal's plan (Free, Pro, Enterprise, Sandbox: contracts/plans.ts), set by an operator (`assay plan set`). It
// is a fact on the principal's own ledger, so the quotas its actor enforces and the history of its plan are one log.
// A principal no operator has put on a plan is on its side's default: ASSAY_SANDBOX_PLAN for a sandbox principal,
// ASSAY_DEFAULT_PLAN for a live one. The side is the caller's (its verified token), which is the principal's own.
import {
  errorReply,
  type LedgerFact,
  livePlanNames,
  okReply,
  type PlanName,
  type RequestOf,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';

/** The principal's plan: the one an operator set, else the configured default of its side of the sandbox line. */
export function planOf(d: PrincipalDeps, state: PrincipalState, sandbox: boolean): PlanName {
  return state.plan ?? (sandbox ? d.sandboxPlan : d.defaultPlan);
}

const planReply = (d: PrincipalDeps, state: PrincipalState, sandbox: boolean) =>
  okReply(200, { principalId: state.principalId, plan: planOf(d, state, sandbox), explicit: state.plan !== null });

export function setPlan(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'plan.set'>): Decision<LedgerFact> {
  const { plan, sandbox } = req.body;
  // The sandbox plan's quotas are for test credits: real money stays under a live plan's.
  if (!sandbox && !livePlanNames.includes(plan)) {
    return { reply: errorReply('validation_failed', `a live principal's plan is one of ${livePlanNames.join(', ')}`) };
  }
  // Setting the plan it is on already records nothing: the command is safe to repeat.
  if (state.plan === plan) return { reply: planReply(d, state, sandbox) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.body.sandbox, state.availableCents),
    type: 'plan_set',
    plan,
    previous: state.plan,
  };
  return { fact, reply: okReply(200, { principalId: state.principalId, plan, explicit: true }) };
}

export function getPlan(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'plan.get'>): Decision<LedgerFact> {
  return { reply: planReply(d, state, req.body.sandbox) };
}
