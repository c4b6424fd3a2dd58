// The purchase rules as one pure function of what a purchase knows: the listing, its artifact, the mandate, the
// buyer's credits and the request. Every rule that refuses is collected, and the refusal that wins is the one whose
// code comes first in the error table (contracts/errors.ts): the table's order is the precedence, here and
// everywhere. Within one code, the order below decides (the cap before min_trust; the judge version before errata).
import {
  type ArtifactQuote,
  type ErrorCode,
  firstByPrecedence,
  type ListingState,
  type MandateRecord,
} from '../../contracts/index.ts';
import type { Static } from 'typebox';
import type { QuotaUse } from './quotas.ts';

type Format = 'md' | 'pdf';

export interface PurchaseCheck {
  /** The buyer's side of the sandbox line. */
  sandbox: boolean;
  formats: Format[];
  maxPriceCents: number | undefined;
  /** The listing's state, or null when there is no such listing. */
  listing: Static<typeof ListingState> | null;
  /** The listed artifact's quote, or null when it does not exist (or the listing is not visible). */
  artifact: Exclude<Static<typeof ArtifactQuote>, null> | null;
  /** The principal's current mandate, revoked or not; null before the first. */
  mandate: MandateRecord | null;
  availableCents: number;
  /** Today's use of the plan's daily quotas. */
  quota: QuotaUse;
  /**
   * A price above the mandate's approval threshold: `ask` refuses with pending_approval (a purchase, which then
   * waits for the principal); `approved` lets it through (the principal approved this one); `refuse` refuses with
   * mandate_exceeded (a subscription, whose cycles cannot each wait for a person).
   */
  approval: 'ask' | 'approved' | 'refuse';
}

export interface PurchaseRefusal {
  code: ErrorCode;
  message: string;
  /** Seconds until retrying can succeed, where that is known (a quota's reset). */
  retryAfterS?: number;
}

/** The refusal of this purchase, or null when every rule lets it through. */
export function purchaseRefusal(p: PurchaseCheck): PurchaseRefusal | null {
  const refusals: PurchaseRefusal[] = [];
  const refuse = (code: ErrorCode, message: string, retryAfterS?: number) =>
    refusals.push({ code, message, retryAfterS });
  const l = p.listing;
  // A listing that is not live, or on the other side of the sandbox line, does not exist for this buyer: nothing
  // else about it is checked (or revealed).
  if (!l?.exists || l.state !== 'live' || l.sandbox !== p.sandbox) {
    return { code: 'not_found', message: 'no live listing with this id' };
  }
  const a = p.artifact;
  if (!a) refuse('not_found', 'the listed artifact no longer exists');
  const missing = p.formats.filter((f) => !l.formats.includes(f));
  if (missing.length > 0) {
    refuse('validation_failed', `this listing offers ${l.formats.join(', ')}, not ${missing.join(', ')}`);
  }
  if (p.maxPriceCents !== undefined && l.priceCents > p.maxPriceCents) {
    refuse('requote_required', `the live price is ${l.priceCents} cents, above max_price_cents ${p.maxPriceCents}`);
  }
  const m = p.mandate;
  if (!m) refuse('mandate_revoked', 'the principal has no mandate');
  else {
    if (m.revoked) refuse('mandate_revoked', "the principal's mandate is revoked");
    if (l.priceCents > m.perItemCapCents) {
      refuse(
        'mandate_exceeded',
        `the price ${l.priceCents} cents exceeds the mandate's per-item cap of ${m.perItemCapCents}`,
      );
    }
    if (a && a.trustScore < m.minTrust) {
      refuse('mandate_exceeded', `the artifact's trust ${a.trustScore} is below the mandate's min_trust ${m.minTrust}`);
    }
    const minFloor = m.minFloor ?? 0;
    if (l.floor < minFloor) {
      refuse('floor_not_met', `the listing's floor ${l.floor} is below the mandate's min_floor ${minFloor}`);
    }
    if (a?.report && a.report.meanEntailment < minFloor) {
      refuse(
        'floor_not_met',
        `the edition's report shows mean entailment ${a.report.meanEntailment}, below the mandate's min_floor ${minFloor}`,
      );
    }
    const threshold = m.approvalAboveCents ?? null;
    if (threshold !== null && l.priceCents > threshold && p.approval !== 'approved') {
      if (p.approval === 'ask') {
        refuse(
          'pending_approval',
          `the price ${l.priceCents} cents is above the mandate's approval threshold ${threshold}`,
        );
      } else {
        refuse(
          'mandate_exceeded',
          `the price ${l.priceCents} cents is above the mandate's approval threshold ${threshold}, and a subscription cannot wait for approval`,
        );
      }
    }
    if (a && m.minJudgeVersion && compareVersions(a.judgeVersion, m.minJudgeVersion) < 0) {
      refuse(
        'judge_version_rejected',
        `judged by ${a.judgeVersion}; the mandate requires ${m.minJudgeVersion} or later`,
      );
    }
    const minSpecificity = m.minJudgeSpecificity ?? null;
    if (a && minSpecificity !== null && (a.judgeSpecificity === null || a.judgeSpecificity < minSpecificity)) {
      refuse(
        'judge_version_rejected',
        a.judgeSpecificity === null
          ? `judge ${a.judgeVersion} has no measured specificity; the mandate requires ${minSpecificity} or more`
          : `judge ${a.judgeVersion} measured a specificity of ${a.judgeSpecificity} on the reference set; the mandate requires ${minSpecificity} or more`,
      );
    }
    if (a && m.rejectOpenJudgeErrata && a.openErrata) {
      refuse(
        'judge_version_rejected',
        `open judge errata affect judge ${a.judgeVersion}, and the mandate rejects them`,
      );
    }
  }
  quotaRefusals(p.quota, l.priceCents, refuse);
  if (p.availableCents < 0) {
    // Even a free listing: a negative balance is money owed for a top-up the processor took back (docs/money.md).
    refuse(
      'insufficient_credits',
      `the balance is ${p.availableCents} cents: a card top-up was refunded or disputed at the payment processor after its credits were spent; top up at least ${-p.availableCents} cents to pay it back before buying`,
    );
  } else if (p.availableCents < l.priceCents) {
    refuse('insufficient_credits', `the price is ${l.priceCents} cents; ${p.availableCents} are available`);
  }
  return firstByPrecedence(refusals);
}

/** The plan's daily quotas, if this purchase would pass one. */
function quotaRefusals(
  q: QuotaUse,
  priceCents: number,
  refuse: (code: ErrorCode, message: string, retryAfterS: number) => void,
): void {
  const { purchasesPerDay, spendCentsPerDay } = q.quotas;
  // Worded only when refusing: this runs on every purchase.
  const resets = () => `the quota resets at ${new Date(q.resetsAtMs).toISOString()} (UTC midnight)`;
  const retryAfterS = Math.max(1, Math.ceil((q.resetsAtMs - q.nowMs) / 1000));
  if (purchasesPerDay !== null && q.purchasesToday + 1 > purchasesPerDay) {
    refuse(
      'quota_exhausted',
      `the ${q.plan} plan allows ${purchasesPerDay} purchases a day and ${q.purchasesToday} were made today; ${resets()}`,
      retryAfterS,
    );
  }
  if (spendCentsPerDay !== null && q.spentTodayCents + priceCents > spendCentsPerDay) {
    refuse(
      'quota_exhausted',
      `the ${q.plan} plan allows ${spendCentsPerDay} cents of purchases a day; ${q.spentTodayCents} were spent today and the price is ${priceCents}; ${resets()}`,
      retryAfterS,
    );
  }
}

/** Compare two `major.minor.patch` versions numerically. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}
