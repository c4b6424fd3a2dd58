// The fold of a principal's facts into its state (state.ts). `checkFact` is the one place the money invariants live: the host runs it before an append (so a fact that would break one never becomes
// durable), and `applyFact` runs it again when it folds the fact in.
import assert from 'node:assert/strict';
import {
  type ApprovalRecord,
  type EscrowHeldFact,
  decisionCall,
  type LedgerFact,
  type SubscriptionRecord,
  type TopupDisputeClosedFact,
  type TopupDisputedFact,
  type TopupRefundedFact,
  utcDay,
} from '../../contracts/index.ts';
import { type HotKeyPolicy, rememberKey } from './idempotency.ts';
import { type ChargeTakenBack, openDisputes, own, ownBilling, ownChargebacks, type PrincipalState } from './state.ts';

interface Totals {
  availableCents: number;
  heldCents: number;
  spentCents: number;
  withheldCents: number;
  reversedCents: number;
  creditedCents: number;
}

type ChargebackFact = TopupRefundedFact | TopupDisputedFact | TopupDisputeClosedFact;

/** The money after `fact`, asserting every invariant it must keep; `state` is not changed. */
export function checkFact(state: PrincipalState, fact: LedgerFact): Totals {
  assert.equal(fact.principalId, state.principalId, 'fact on the wrong principal subject');
  let { availableCents, heldCents, spentCents, creditedCents } = state;
  let { withheldCents, reversedCents } = state.chargebacks;
  // A chargeback (the processor taking money back) is the one kind of fact that may leave the balance negative.
  let takesBack = false;
  let balanceAfterCents = fact.balanceAfterCents;
  switch (fact.type) {
    case 'credited':
      assert(Number.isInteger(fact.amountCents) && fact.amountCents > 0, 'credit must be positive cents');
      availableCents += fact.amountCents;
      creditedCents += fact.amountCents;
      break;
    case 'escrow_held':
      assert(Number.isInteger(fact.priceCents) && fact.priceCents >= 0, 'price is whole cents');
      assert(!state.held.has(fact.orderId), 'an order is held once');
      if (fact.subscription) checkCycle(state, fact.subscription, 'active');
      if (fact.approval) {
        checkDecision(state, fact.approval.record, 'approved');
        assert.equal(fact.approval.record.orderId, fact.orderId, 'an approval buys the order it names');
      }
      availableCents -= fact.priceCents;
      heldCents += fact.priceCents;
      if (fact.settled) {
        // Held and settled in one commit: the hold's balance is this fact's, the settlement's is its own.
        assert.equal(availableCents, fact.balanceAfterCents, 'fold and fact disagree on the balance after the hold');
        assert(availableCents >= 0, 'negative credits after a fact');
        heldCents -= fact.priceCents;
        if (fact.settled.type === 'escrow_released') spentCents += fact.priceCents;
        else availableCents += fact.priceCents;
        balanceAfterCents = fact.settled.balanceAfterCents;
      }
      break;
    case 'escrow_released':
    case 'escrow_refunded': {
      const order = state.held.get(fact.orderId);
      assert(order && order.priceCents === fact.priceCents, 'only a held order settles, once');
      heldCents -= fact.priceCents;
      if (fact.type === 'escrow_released') spentCents += fact.priceCents;
      else availableCents += fact.priceCents;
      break;
    }
    case 'mandate_revoked':
      assert(
        state.mandates.some((m) => m.id === fact.mandateId),
        'only a known mandate is revoked',
      );
      break;
    case 'subscription_changed':
      checkSubscriptionChange(state, fact);
      break;
    case 'approval_requested':
      assert(!state.approvals.has(fact.approval.id), 'an approval request is recorded once');
      assert.equal(fact.approval.state, 'pending', 'an approval request starts pending');
      assert(fact.idempotency, 'an approval request holds the purchase request it stands for');
      break;
    case 'approval_decided':
      checkDecision(state, fact.approval, fact.approval.state);
      assert(
        fact.approval.state === 'declined' || fact.approval.state === 'expired',
        'a decision without a purchase declines',
      );
      break;
    case 'context_saved': {
      const before = state.contexts.get(fact.context.id);
      assert.equal(Boolean(before), fact.change === 'updated', 'a file is created once and updated while it exists');
      const holder = state.contextSlugs.get(fact.context.slug);
      assert(holder === undefined || holder === fact.context.id, "a slug is unique among the owner's files");
      if (fact.change === 'created') assert(fact.content !== undefined, 'a new file has its text');
      break;
    }
    case 'context_deleted':
      assert(state.contexts.has(fact.context.id), 'only an existing file is deleted');
      break;
    case 'context_artifact_synced': {
      const held = state.contexts.get(fact.contextId);
      assert(held, 'only an existing file is synced to its artifact');
      assert(!held.artifact || held.artifact.id === fact.artifactId, 'a file is published as one artifact');
      break;
    }
    case 'skill_saved':
      assert.equal(
        fact.skill.version,
        (state.skills.get(fact.skill.id)?.record.version ?? 0) + 1,
        'each save of a skill is its next version',
      );
      break;
    case 'skill_deleted':
      assert(state.skills.has(fact.skill.id), 'only an existing skill is deleted');
      break;
    case 'webhook_saved':
      assert.equal(
        state.webhooks.has(fact.webhook.id),
        fact.change !== 'created',
        'a webhook is created once and changed while it exists',
      );
      break;
    case 'webhook_deleted':
      assert(state.webhooks.has(fact.webhook.id), 'only an existing webhook is deleted');
      break;
    case 'payout_started': {
      const b = state.billing;
      assert(!fact.sandbox, 'only live accruals are paid out');
      assert.equal(b.payoutInFlight, null, 'one transfer at a time');
      assert.equal(fact.fromSeq, b.payoutThroughSeq, 'a transfer takes the accruals after the last one, each once');
      assert(fact.throughSeq > fact.fromSeq && fact.amountCents > 0, 'a transfer moves a positive amount');
      assert(b.payoutAccount?.payoutsEnabled, 'only an enabled account receives transfers');
      break;
    }
    case 'payout_finished':
      assert.equal(state.billing.payoutInFlight?.transferId, fact.transferId, 'only the transfer in flight finishes');
      break;
    case 'topup_refunded': {
      const taken = checkChargeback(state, fact);
      assert.equal(
        fact.refundedCents,
        (taken?.refundedCents ?? 0) + fact.amountCents,
        'a refund debits what was refunded since the last one, once',
      );
      availableCents -= fact.amountCents;
      reversedCents += fact.amountCents;
      assert.equal(fact.openDisputes, openDisputes(state), 'a refund leaves the open disputes as they are');
      takesBack = true;
      break;
    }
    case 'topup_disputed': {
      const taken = checkChargeback(state, fact);
      assert(!taken?.disputes.some((d) => d.id === fact.disputeId), 'a dispute withholds once');
      availableCents -= fact.amountCents;
      withheldCents += fact.amountCents;
      assert.equal(fact.openDisputes, openDisputes(state) + 1, 'a dispute withheld is one more open');
      takesBack = true;
      break;
    }
    case 'topup_dispute_closed': {
      const taken = checkChargeback(state, fact);
      const dispute = taken?.disputes.find((d) => d.id === fact.disputeId);
      if (fact.wasWithheld) {
        assert(
          dispute?.state === 'open' && dispute.amountCents === fact.amountCents,
          'only an open dispute closes, once, with what it withheld',
        );
        withheldCents -= fact.amountCents;
        if (fact.outcome === 'won') availableCents += fact.amountCents;
        else reversedCents += fact.amountCents;
        assert.equal(fact.openDisputes, openDisputes(state) - 1, 'a dispute closed is one fewer open');
      } else {
        assert(!dispute, 'a dispute seen open closes from what it withheld');
        // Never seen open: losing it takes its amount now; winning it moves nothing.
        if (fact.outcome === 'lost') {
          availableCents -= fact.amountCents;
          reversedCents += fact.amountCents;
        } else assert.equal(fact.amountCents, 0, 'a dispute won before it was seen open moves nothing');
        assert.equal(fact.openDisputes, openDisputes(state), 'a dispute never seen open changes no open count');
      }
      takesBack = true;
      break;
    }
    case 'mandate_set':
    case 'call_recorded':
    case 'plan_set':
    case 'payment_method_saved':
    case 'topup_requested':
    case 'topup_failed':
    case 'payout_account_updated':
      break;
    default:
      return unknownFact(fact);
  }
  assert.equal(availableCents, balanceAfterCents, 'fold and fact disagree on the balance');
  assert(heldCents >= 0 && withheldCents >= 0 && reversedCents >= 0, 'negative credits after a fact');
  // Only the processor taking money back makes a balance negative; while it is, nothing is bought (a hold would
  // lower it) and it only rises.
  assert(
    availableCents >= 0 || takesBack || (fact.type !== 'escrow_held' && availableCents >= state.availableCents),
    'negative credits after a fact that is not a chargeback',
  );
  assert.equal(
    creditedCents,
    availableCents + heldCents + spentCents + withheldCents + reversedCents,
    'credits in must equal available + held + spent + withheld + reversed',
  );
  return { availableCents, heldCents, spentCents, withheldCents, reversedCents, creditedCents };
}

/**
 * A chargeback fact names a live card top-up's charge consistently, and takes back no more than the charge: its
 * refunds and its disputes open or lost stay within the charge's amount. Answers what was taken from it before.
 */
function checkChargeback(state: PrincipalState, fact: ChargebackFact): ChargeTakenBack | undefined {
  assert(!fact.sandbox, 'only live card top-ups are taken back');
  assert(Number.isInteger(fact.amountCents) && fact.amountCents >= 0, 'a chargeback moves whole cents');
  assert(fact.type === 'topup_dispute_closed' || fact.amountCents > 0, 'a refund or a new dispute moves money');
  const taken = state.chargebacks.charges.get(fact.chargeId);
  if (taken) {
    assert.equal(taken.paymentIntentId, fact.paymentIntentId, 'a charge belongs to one PaymentIntent');
    assert.equal(taken.chargeCents, fact.chargeCents, "a charge's amount does not change");
  }
  const takes = fact.type === 'topup_dispute_closed' ? (fact.wasWithheld ? 0 : fact.amountCents) : fact.amountCents;
  assert(takenCents(taken) + takes <= fact.chargeCents, 'nothing is taken back beyond the charge');
  return taken;
}

/** What a charge's refunds and its disputes open or lost have taken from the principal. */
export function takenCents(c: ChargeTakenBack | undefined): number {
  if (!c) return 0;
  let cents = c.refundedCents;
  for (const d of c.disputes) if (d.state !== 'won') cents += d.amountCents;
  return cents;
}

/** Fold one fact at its LEDGER sequence into the state (checked first, so a bad fact changes nothing). */
export function applyFact(state: PrincipalState, fact: LedgerFact, seq: number, keys: HotKeyPolicy): PrincipalState {
  const totals = checkFact(state, fact);
  state.availableCents = totals.availableCents;
  state.heldCents = totals.heldCents;
  state.spentCents = totals.spentCents;
  state.creditedCents = totals.creditedCents;
  const c = state.chargebacks;
  // Most principals are never charged back: their shared record is left as it is.
  if (c.withheldCents !== totals.withheldCents || c.reversedCents !== totals.reversedCents) {
    const own = ownChargebacks(state);
    own.withheldCents = totals.withheldCents;
    own.reversedCents = totals.reversedCents;
  }
  switch (fact.type) {
    case 'credited':
      // A new array of exactly the mandates: a push would grow it to room for 17 (most principals have one).
      if (fact.mandate) state.mandates = [...state.mandates, fact.mandate];
      break;
    case 'escrow_held':
      // Settled in the same commit: the order was held and left escrow within this fact.
      if (!fact.settled)
        own(state, 'held').set(fact.orderId, {
          priceCents: fact.priceCents,
          floor: fact.floor,
          listingId: fact.listingId,
          artifactId: fact.artifactId,
          sellerPrincipalId: fact.sellerPrincipalId,
          agentId: fact.agentId,
          sandbox: fact.sandbox,
          subscriptionId: fact.subscriptionId,
        });
      if (fact.subscription) own(state, 'subscriptions').set(fact.subscription.id, fact.subscription);
      if (fact.approval) decide(state, fact.approval.record, fact.at, keys.retentionMs);
      countTowardQuota(state, fact);
      break;
    case 'escrow_released':
    case 'escrow_refunded':
      state.held.delete(fact.orderId);
      break;
    case 'subscription_changed':
      own(state, 'subscriptions').set(fact.subscription.id, fact.subscription);
      break;
    case 'mandate_set': {
      state.mandates = [...state.mandates.filter((m) => m.id !== fact.mandate.id), fact.mandate];
      break;
    }
    case 'mandate_revoked':
      state.mandates.find((m) => m.id === fact.mandateId)!.revoked = true;
      break;
    case 'plan_set':
      state.plan = fact.plan;
      break;
    case 'approval_requested': {
      const { key, requestHash } = fact.idempotency!;
      own(state, 'approvals').set(fact.approval.id, { record: fact.approval, key, requestHash });
      break;
    }
    case 'approval_decided':
      decide(state, fact.approval, fact.at, keys.retentionMs);
      break;
    case 'context_saved': {
      const before = state.contexts.get(fact.context.id);
      if (before) state.contextSlugs.delete(before.record.slug);
      own(state, 'contextSlugs').set(fact.context.slug, fact.context.id);
      const contentSeq = fact.content === undefined ? before!.contentSeq : seq;
      own(state, 'contexts').set(fact.context.id, { record: fact.context, contentSeq, artifact: before?.artifact });
      break;
    }
    case 'context_deleted':
      state.contexts.delete(fact.context.id);
      state.contextSlugs.delete(fact.context.slug);
      break;
    case 'context_artifact_synced':
      state.contexts.get(fact.contextId)!.artifact = { id: fact.artifactId, contentSha256: fact.contentSha256 };
      break;
    case 'skill_saved': {
      const versionSeqs = [...(state.skills.get(fact.skill.id)?.versionSeqs ?? []), seq];
      own(state, 'skills').set(fact.skill.id, { record: fact.skill, versionSeqs });
      break;
    }
    case 'skill_deleted':
      state.skills.delete(fact.skill.id);
      break;
    case 'webhook_saved':
      own(state, 'webhooks').set(fact.webhook.id, fact.webhook);
      break;
    case 'webhook_deleted':
      state.webhooks.delete(fact.webhook.id);
      break;
    case 'payment_method_saved':
      ownBilling(state).card = fact.card;
      break;
    case 'payout_account_updated':
      ownBilling(state).payoutAccount = { accountId: fact.accountId, payoutsEnabled: fact.payoutsEnabled };
      break;
    case 'payout_started': {
      const { transferId, accountId, amountCents, fromSeq, throughSeq } = fact;
      const b = ownBilling(state);
      b.payoutInFlight = { transferId, accountId, amountCents, fromSeq, throughSeq };
      b.payoutThroughSeq = throughSeq;
      break;
    }
    case 'payout_finished': {
      const b = ownBilling(state);
      // A refused transfer leaves its accruals owed: the next run takes them again.
      if (fact.outcome === 'paid') b.paidOutCents += b.payoutInFlight!.amountCents;
      else b.payoutThroughSeq = b.payoutInFlight!.fromSeq;
      b.payoutInFlight = null;
      break;
    }
    case 'topup_refunded':
      chargeOf(state, fact).refundedCents = fact.refundedCents;
      break;
    case 'topup_disputed':
      chargeOf(state, fact).disputes.push({ id: fact.disputeId, amountCents: fact.amountCents, state: 'open' });
      break;
    case 'topup_dispute_closed': {
      const charge = chargeOf(state, fact);
      const dispute = charge.disputes.find((d) => d.id === fact.disputeId);
      if (dispute) dispute.state = fact.outcome;
      else charge.disputes.push({ id: fact.disputeId, amountCents: fact.amountCents, state: fact.outcome });
      break;
    }
    case 'call_recorded':
    case 'topup_requested':
    case 'topup_failed':
      break;
    default:
      return unknownFact(fact);
  }
  if (fact.idempotency) rememberKey(state, fact.idempotency, seq, Date.parse(fact.at), keys);
  // A decision also answers the principal's approve or decline call under its own key.
  const call = decisionCall(fact);
  if (call) rememberKey(state, call, seq, Date.parse(fact.at), keys);
  return state;
}

/** The state's record of the charge a chargeback fact names, made at its first. */
function chargeOf(state: PrincipalState, fact: ChargebackFact): ChargeTakenBack {
  const charges = ownChargebacks(state).charges;
  let charge = charges.get(fact.chargeId);
  if (!charge) {
    charge = {
      topupId: fact.topupId,
      paymentIntentId: fact.paymentIntentId,
      chargeCents: fact.chargeCents,
      refundedCents: 0,
      disputes: [],
    };
    charges.set(fact.chargeId, charge);
  }
  return charge;
}

/** A decision moves a pending request to its final state, once. */
function checkDecision(state: PrincipalState, after: ApprovalRecord, stateAfter: ApprovalRecord['state']) {
  const before = state.approvals.get(after.id);
  assert.equal(before?.record.state, 'pending', 'only a pending approval request is decided, once');
  assert.equal(after.state, stateAfter, 'the decision is the one the fact records');
}

/**
 * Record a decision, and let decided requests go once the idempotency retention has passed since their decision
 * (their facts still answer the keys that used them).
 */
function decide(state: PrincipalState, after: ApprovalRecord, at: string, retentionMs: number): void {
  state.approvals.get(after.id)!.record = after;
  const before = Date.parse(at) - retentionMs;
  for (const [id, held] of state.approvals) {
    const decidedAt = held.record.decidedAt;
    if (decidedAt !== null && Date.parse(decidedAt) < before) state.approvals.delete(id);
  }
}

/** An order held counts toward its UTC day's quotas (the day of its fact's time). */
function countTowardQuota(state: PrincipalState, fact: EscrowHeldFact): void {
  const day = utcDay(Date.parse(fact.at)).startMs;
  if (day !== state.quotaDayStartMs) {
    state.quotaDayStartMs = day;
    state.purchasesToday = 0;
    state.spentTodayCents = 0;
  }
  state.purchasesToday += 1;
  state.spentTodayCents += fact.priceCents;
}

/** A cycle (billed or failed) advances an active subscription by exactly one: a cycle never runs twice. */
function checkCycle(state: PrincipalState, after: SubscriptionRecord, stateAfter?: SubscriptionRecord['state']) {
  const before = state.subscriptions.get(after.id);
  assert(before?.state === 'active', 'only an active subscription runs a cycle');
  assert.equal(after.cycle, before.cycle + 1, 'cycles run one at a time, each once');
  if (stateAfter) assert.equal(after.state, stateAfter, 'a billed cycle leaves the subscription active');
}

function checkSubscriptionChange(state: PrincipalState, fact: Extract<LedgerFact, { type: 'subscription_changed' }>) {
  const before = state.subscriptions.get(fact.subscription.id);
  assert.equal(before?.state ?? null, fact.previousState, 'a subscription change starts from its current state');
  switch (fact.change) {
    case 'subscribed':
      assert(!before && fact.subscription.state === 'active', 'a new subscription starts active');
      break;
    case 'resumed':
      assert(before?.state === 'paused' && fact.subscription.state === 'active', 'only a paused subscription resumes');
      break;
    case 'cycle_failed':
      checkCycle(state, fact.subscription);
      break;
    case 'canceled':
      assert(before && before.state !== 'canceled' && fact.subscription.state === 'canceled', 'cancel is terminal');
      break;
  }
}

function unknownFact(fact: never): never {
  throw new Error(`unknown ledger fact type ${(fact as { type?: unknown }).type}`);
}
