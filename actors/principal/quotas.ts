// The daily quotas of the principal's plan (contracts/plans.ts), as a purchase sees them: what today (UTC) has held
// so far, from the fold's counts (fold.ts), and when the day ends. Checked in the actor's mailbox with the rest of the
// purchase rules, so concurrent purchases can never pass a quota together.
import { type Plan, type PlanName, plans, utcDay } from '../../contracts/index.ts';
import type { PrincipalDeps } from './deps.ts';
import { planOf } from './plans.ts';
import type { PrincipalState } from './state.ts';

export interface QuotaUse {
  plan: PlanName;
  quotas: Plan['quotas'];
  purchasesToday: number;
  spentTodayCents: number;
  /** When today's counts start again from zero, and the time they were read. */
  resetsAtMs: number;
  nowMs: number;
}

export function quotaUse(d: PrincipalDeps, state: PrincipalState, sandbox: boolean): QuotaUse {
  const plan = planOf(d, state, sandbox);
  const nowMs = d.clock.nowMs();
  const day = utcDay(nowMs);
  const today = state.quotaDayStartMs === day.startMs;
  return {
    plan,
    quotas: plans[plan].quotas,
    purchasesToday: today ? state.purchasesToday : 0,
    spentTodayCents: today ? state.spentTodayCents : 0,
    resetsAtMs: day.endMs,
    nowMs,
  };
}
