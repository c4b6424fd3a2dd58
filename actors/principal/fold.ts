// The fold of a principal's facts into its state (state.ts). `checkFact` is the one place the money invariants live: the host runs it before an append (so a fact that would break one never becomes
// durable), and `applyFact` runs it again when it folds the fact in.
import assert from 'node:assert/strict';
import {
  type ApprovalRecord,
  type EscrowHeldFact,
  type IdempotencyRecord,
  type LedgerFact,
  type SubscriptionRecord,
  utcDay,
} from '../../contracts/index.ts';
import { type HotKeyPolicy, rememberKey } from './idempotency.ts';
import { own, ownBilling, type PrincipalState } from './state.ts';

interface Totals {
  availableCents: number;
  heldCents: number;
  spentCents: number;
  creditedCents: number;
}

/** The money after `fact`, asserting every invariant it must keep; `state` is not changed. */
export function checkFact(state: PrincipalState, fact: LedgerFact): Totals {
  assert.equal(fact.principalId, state.principalId, 'fact on the wrong principal subject');
  let { availableCents, heldCents, spentCents, creditedCents } = state;
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
  assert(availableCents >= 0 && heldCents >= 0, 'negative credits after a fact');
  assert.equal(
    creditedCents,
    availableCents + heldCents + spentCents,
    'credits in must equal available + held + spent',
  );
  return { availableCents, heldCents, spentCents, creditedCents };
}

/** Fold one fact at its LEDGER sequence into the state (checked first, so a bad fact changes nothing). */
export function applyFact(state: PrincipalState, fact: LedgerFact, seq: number, keys: HotKeyPolicy): PrincipalState {
  const totals = checkFact(state, fact);
  state.availableCents = totals.availableCents;
  state.heldCents = totals.heldCents;
  state.spentCents = totals.spentCents;
  state.creditedCents = totals.creditedCents;
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

/** The approve or decline call a fact records beside the purchase request's key, if any. */
export function decisionCall(fact: LedgerFact): IdempotencyRecord | undefined {
  if (fact.type === 'escrow_held') return fact.approval?.call;
  if (fact.type === 'approval_decided') return fact.call;
  return undefined;
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
