// The purchase rules as a pure function: each rule alone gives its status and code, and when two apply the one
// documented first wins. The order and the codes below are written out by hand from docs/purchases.md (which
// follows the error table's order), not taken from the implementation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PurchaseCheck, purchaseRefusal } from '../../actors/principal/purchase-policy.ts';
import { errorTable } from '../../contracts/index.ts';

const price = 500;
const base = (): PurchaseCheck => ({
  sandbox: true,
  formats: ['md'],
  maxPriceCents: price,
  listing: {
    id: '11111111-1111-4111-8111-111111111111',
    exists: true,
    artifactId: '22222222-2222-4222-8222-222222222222',
    sellerPrincipalId: '33333333-3333-4333-8333-333333333333',
    priceCents: price,
    floor: 0.7,
    formats: ['md'],
    billing: null,
    state: 'live',
    sandbox: true,
    createdAt: '2026-11-01T00:00:00.000Z',
    updatedAt: '2026-11-01T00:00:00.000Z',
  },
  artifact: {
    editionId: '44444444-4444-4444-8444-444444444444',
    judgeVersion: '1.2.0',
    openErrata: false,
    trustScore: 0.8,
    judgeSpecificity: 0.9,
    report: null,
  },
  mandate: {
    id: '55555555-5555-4555-8555-555555555555',
    perItemCapCents: 10_000,
    minTrust: 0,
    minJudgeVersion: null,
    rejectOpenJudgeErrata: false,
    revoked: false,
    createdAt: '2026-11-01T00:00:00.000Z',
  },
  availableCents: 10_000,
  quota: {
    plan: 'pro',
    quotas: { purchasesPerDay: 10, spendCentsPerDay: 5_000 },
    purchasesToday: 3,
    spentTodayCents: 1_500,
    resetsAtMs: Date.parse('2026-11-02T00:00:00.000Z'),
    nowMs: Date.parse('2026-11-01T12:00:00.000Z'),
  },
  approval: 'ask',
});

interface Rule {
  name: string;
  code: string;
  status: number;
  message: RegExp;
  /** What the rule needs that another rule may take away. */
  needs?: ('artifact' | 'mandate')[];
  takes?: ('artifact' | 'mandate')[];
  apply(p: PurchaseCheck): void;
}

// In documented precedence order (docs/purchases.md).
const rules: Rule[] = [
  {
    name: "the day's purchases are used up",
    code: 'quota_exhausted',
    status: 429,
    message: /allows 10 purchases a day and 10 were made today; the quota resets at 2026-11-02T00:00:00.000Z/,
    apply: (p) => {
      p.quota.purchasesToday = 10;
    },
  },
  {
    name: "the price would pass the day's spend quota",
    code: 'quota_exhausted',
    status: 429,
    message: /allows 5000 cents of purchases a day; 4501 were spent today and the price is 500/,
    apply: (p) => {
      p.quota.spentTodayCents = 4_501;
    },
  },
  {
    name: 'a format the listing does not offer',
    code: 'validation_failed',
    status: 422,
    message: /offers md, not pdf/,
    apply: (p) => {
      p.formats = ['pdf'];
    },
  },
  {
    name: 'the listed artifact is gone',
    code: 'not_found',
    status: 404,
    message: /artifact no longer exists/,
    takes: ['artifact'],
    apply: (p) => {
      p.artifact = null;
    },
  },
  {
    name: 'the live price is above max_price_cents',
    code: 'requote_required',
    status: 409,
    message: /above max_price_cents/,
    apply: (p) => {
      p.maxPriceCents = price - 1;
    },
  },
  {
    name: 'no mandate',
    code: 'mandate_revoked',
    status: 403,
    message: /has no mandate/,
    takes: ['mandate'],
    apply: (p) => {
      p.mandate = null;
    },
  },
  {
    name: 'the mandate is revoked',
    code: 'mandate_revoked',
    status: 403,
    message: /mandate is revoked/,
    needs: ['mandate'],
    apply: (p) => {
      p.mandate!.revoked = true;
    },
  },
  {
    name: "the price is above the mandate's per-item cap",
    code: 'mandate_exceeded',
    status: 403,
    message: /per-item cap/,
    needs: ['mandate'],
    apply: (p) => {
      p.mandate!.perItemCapCents = price - 1;
    },
  },
  {
    name: "the artifact's trust is below min_trust",
    code: 'mandate_exceeded',
    status: 403,
    message: /below the mandate's min_trust/,
    needs: ['mandate', 'artifact'],
    apply: (p) => {
      p.mandate!.minTrust = 0.9;
    },
  },
  {
    name: "the judge version is below the mandate's minimum",
    code: 'judge_version_rejected',
    status: 403,
    message: /requires 2\.0\.0 or later/,
    needs: ['mandate', 'artifact'],
    apply: (p) => {
      p.mandate!.minJudgeVersion = '2.0.0';
    },
  },
  {
    name: "the judge's measured specificity is below the mandate's minimum",
    code: 'judge_version_rejected',
    status: 403,
    message: /measured a specificity of 0\.9 on the reference set; the mandate requires 0\.95 or more/,
    needs: ['mandate', 'artifact'],
    apply: (p) => {
      p.mandate!.minJudgeSpecificity = 0.95;
    },
  },
  {
    name: 'open judge errata the mandate rejects',
    code: 'judge_version_rejected',
    status: 403,
    message: /open judge errata/,
    needs: ['mandate', 'artifact'],
    apply: (p) => {
      p.artifact!.openErrata = true;
      p.mandate!.rejectOpenJudgeErrata = true;
    },
  },
  {
    name: "the price is above the mandate's approval threshold",
    code: 'pending_approval',
    status: 403,
    message: /above the mandate's approval threshold 499/,
    needs: ['mandate'],
    apply: (p) => {
      p.mandate!.approvalAboveCents = price - 1;
    },
  },
  {
    name: 'the credits do not cover the price',
    code: 'insufficient_credits',
    status: 409,
    message: /are available/,
    apply: (p) => {
      p.availableCents = price - 1;
    },
  },
  {
    name: "the listing's floor is below the mandate's min_floor",
    code: 'floor_not_met',
    status: 409,
    message: /listing's floor 0\.7 is below the mandate's min_floor 0\.8/,
    needs: ['mandate'],
    apply: (p) => {
      p.mandate!.minFloor = Math.max(p.mandate!.minFloor ?? 0, 0.8);
    },
  },
  {
    name: "the edition's report is below the mandate's min_floor",
    code: 'floor_not_met',
    status: 409,
    message: /report shows mean entailment 0\.5, below the mandate's min_floor/,
    needs: ['mandate', 'artifact'],
    apply: (p) => {
      p.artifact!.report = { digest: 'a'.repeat(64), meanEntailment: 0.5 };
      p.mandate!.minFloor = Math.max(p.mandate!.minFloor ?? 0, 0.6);
    },
  },
];

const compatible = (a: Rule, b: Rule) =>
  !(a.takes ?? []).some((t) => (b.needs ?? []).includes(t)) &&
  !(b.takes ?? []).some((t) => (a.needs ?? []).includes(t));

test('[BUY-RULES] a purchase every rule lets through is not refused', () => {
  assert.equal(purchaseRefusal(base()), null);
});

test('[BUY-RULES] each rule alone refuses with its documented code, status and message', () => {
  for (const rule of rules) {
    const p = base();
    rule.apply(p);
    const r = purchaseRefusal(p);
    assert.ok(r, rule.name);
    assert.equal(r.code, rule.code, rule.name);
    assert.equal(errorTable[r.code].status, rule.status, rule.name);
    assert.match(r.message, rule.message, rule.name);
  }
});

test('[BUY-RULES] when two rules apply, the one documented first wins (every pair)', () => {
  let pairs = 0;
  for (let i = 0; i < rules.length; i++) {
    for (let j = i + 1; j < rules.length; j++) {
      const [first, second] = [rules[i]!, rules[j]!];
      if (!compatible(first, second)) continue;
      for (const order of [
        [first, second],
        [second, first],
      ]) {
        const p = base();
        for (const rule of order) rule.apply(p);
        const r = purchaseRefusal(p);
        assert.equal(r?.code, first.code, `${first.name} before ${second.name}`);
        assert.match(r!.message, first.message, `${first.name} before ${second.name}`);
      }
      pairs++;
    }
  }
  assert.ok(pairs >= 30, `${pairs} pairs checked`);
});

test('[BUY-RULES] a listing that is not live, missing, or across the sandbox line is not_found whatever else applies', () => {
  const hidden: [string, (p: PurchaseCheck) => void][] = [
    ['no such listing', (p) => (p.listing = null)],
    ['unlisted', (p) => (p.listing!.state = 'unlisted')],
    ['across the sandbox line', (p) => (p.listing!.sandbox = false)],
  ];
  for (const [name, hide] of hidden) {
    for (const rule of rules) {
      const p = base();
      rule.apply(p);
      hide(p);
      const r = purchaseRefusal(p);
      assert.equal(r?.code, 'not_found', `${name} with ${rule.name}`);
      assert.doesNotMatch(r!.message, /offers|price|mandate|trust|judge|credits/, 'nothing about the listing leaks');
    }
  }
});

test('[FLEET-FLOOR] min_floor: a floor or report score equal to it passes, below it is floor_not_met, and an edition not yet judged is not refused by it', () => {
  const at = (floor: number, report: number | null, minFloor: number | undefined) => {
    const p = base();
    p.listing!.floor = floor;
    p.artifact!.report = report === null ? null : { digest: 'a'.repeat(64), meanEntailment: report };
    if (minFloor === undefined) delete p.mandate!.minFloor;
    else p.mandate!.minFloor = minFloor;
    return purchaseRefusal(p)?.code ?? null;
  };
  assert.equal(at(0.7, 0.7, 0.7), null, 'equal to min_floor meets it');
  assert.equal(at(0.69, 0.9, 0.7), 'floor_not_met');
  assert.equal(at(0.9, 0.69, 0.7), 'floor_not_met');
  // Settlement decides an edition without a report yet; the filter judges only what is known.
  assert.equal(at(0.9, null, 0.7), null);
  // A mandate written before min_floor existed filters nothing.
  assert.equal(at(0, 0, undefined), null);
});

test('[FLEET-APPROVAL] the approval threshold: a price equal to it passes, above it waits for approval, an approved request passes, and a subscription is refused rather than left waiting', () => {
  const at = (threshold: number | null | undefined, approval: PurchaseCheck['approval']) => {
    const p = base();
    p.approval = approval;
    if (threshold === undefined) delete p.mandate!.approvalAboveCents;
    else p.mandate!.approvalAboveCents = threshold;
    return purchaseRefusal(p);
  };
  assert.equal(at(price, 'ask'), null, 'a price equal to the threshold needs no approval');
  assert.equal(at(null, 'ask'), null, 'no threshold: nothing waits');
  assert.equal(at(undefined, 'ask'), null, 'a mandate set before approvals existed asks for none');
  assert.equal(at(price - 1, 'ask')?.code, 'pending_approval');
  assert.equal(at(price - 1, 'approved'), null, 'the principal approved this one');
  const sub = at(price - 1, 'refuse');
  assert.equal(sub?.code, 'mandate_exceeded');
  assert.match(sub!.message, /subscription cannot wait for approval/);
  // Approval lifts only the threshold: every other rule still refuses an approved purchase.
  const p = base();
  p.approval = 'approved';
  p.mandate!.approvalAboveCents = 0;
  p.availableCents = price - 1;
  assert.equal(purchaseRefusal(p)?.code, 'insufficient_credits');
});

test('[JUDGE-QUALITY-MANDATE] min_judge_specificity: a judge measured at the minimum passes, below it or with no published figures is judge_version_rejected, and null asks for nothing', () => {
  const at = (minimum: number | null, specificity: number | null) => {
    const p = base();
    p.mandate!.minJudgeSpecificity = minimum;
    p.artifact!.judgeSpecificity = specificity;
    return purchaseRefusal(p);
  };
  assert.equal(at(0.9, 0.9), null);
  assert.equal(at(0.9, 0.8999)?.code, 'judge_version_rejected');
  assert.match(at(0.9, null)!.message, /judge 1\.2\.0 has no measured specificity; the mandate requires 0\.9 or more/);
  assert.equal(at(null, null), null);
  assert.equal(at(0, null)?.code, 'judge_version_rejected', 'a model judge meets no minimum, not even 0');
  // Mandates set before the field existed have none: any judge.
  const p = base();
  delete p.mandate!.minJudgeSpecificity;
  p.artifact!.judgeSpecificity = null;
  assert.equal(purchaseRefusal(p), null);
});
