// Facts: the durable records actors append to JetStream. A fact is never changed once written; state, projections
// and events are derived from them. Every fact carries a stable id (the id of its ledger entry or event) and its
// time. Appends carry no JetStream message id: the expected last subject sequence makes them exactly-once.
import type { ApprovalRecord, ListingState, MandateRecord, SubscriptionRecord } from './internal.ts';
import type { ContextRecord } from './context.ts';
import type { SkillRecord } from './skill.ts';
import type { WebhookRecord } from './webhook.ts';
import type { PlanName } from './plans.ts';

/**
 * The Idempotency-Key of the command that produced a fact, with the hash of its request and, unless the fact alone
 * rebuilds it, its reply. A purchase's reply is rebuilt from its `escrow_held` fact: stored, it was a third of the
 * hot path's bytes on the bus, on disk and in the projector.
 */
export interface IdempotencyRecord {
  key: string;
  requestHash: string;
  agentId: string;
  reply?: { status: number; body: unknown };
}

interface FactBase {
  id: string;
  /** ISO 8601 time the actor decided the fact. */
  at: string;
  principalId: string;
  sandbox: boolean;
  /** Available credits after this fact, in cents; written by the actor so projections need no fold. */
  balanceAfterCents: number;
  idempotency?: IdempotencyRecord;
}

/**
 * Credits landed: a sandbox top-up, the sandbox grant at registration, or a card payment the processor confirmed
 * (`card_topup`, written only from its signed webhook, once per PaymentIntent), or an x402 payment its facilitator
 * settled (`x402_payment`, once per authorization: docs/x402.md).
 */
export interface CreditedFact extends FactBase {
  type: 'credited';
  source: 'sandbox_topup' | 'sandbox_grant' | 'card_topup' | 'x402_payment';
  amountCents: number;
  topupId: string;
  /** The processor's PaymentIntent of a card top-up. */
  paymentIntentId?: string;
  /** The x402 payment credited: its id (network, asset, payer, nonce) and the facilitator's transaction. */
  x402?: { paymentId: string; network: string; payer: string; transaction: string };
  /** A sandbox grant (or an x402 credit) also sets the principal's mandate, in the same fact. */
  mandate?: MandateRecord;
}

/**
 * A mutating call whose effect lives elsewhere (an artifact, a listing) was completed: the fact stores only its
 * idempotency record, so the principal actor stays the one place that knows every key its principal used.
 */
export interface CallRecordedFact extends FactBase {
  type: 'call_recorded';
  op: string;
}

/** The principal's mandate, new or changed; it replaces the current one (mandates bind all the principal's agents). */
export interface MandateSetFact extends FactBase {
  type: 'mandate_set';
  mandate: MandateRecord;
}

export interface MandateRevokedFact extends FactBase {
  type: 'mandate_revoked';
  mandateId: string;
}

/** A purchase: the price moves from available to held, in escrow until settlement. The order's commit point. */
export interface EscrowHeldFact extends FactBase {
  type: 'escrow_held';
  orderId: string;
  agentId: string;
  listingId: string;
  artifactId: string;
  editionId: string;
  sellerPrincipalId: string;
  priceCents: number;
  formats: ('md' | 'pdf')[];
  /** The listing's floor at purchase: settlement releases when the edition's report meets it. */
  floor: number;
  /** `<listingId>@<listing stream sequence>`: the listing state the price was taken from. */
  priceSnapshotId: string;
  subscriptionId: string | null;
  /**
   * A subscription cycle's purchase carries the subscription as it stands after the cycle (cycle number, next cycle,
   * failures reset): the bill and the subscription's advance are one fact. Absent on ordinary purchases.
   */
  subscription?: SubscriptionRecord;
  /**
   * A purchase the principal approved: the approval as it stands after (approved, with this order), and the
   * approve call's own idempotency record (with its reply). `idempotency` is then the original purchase request's,
   * so the order is the one that request would have made. Absent on every other purchase.
   */
  approval?: { record: ApprovalRecord; call: IdempotencyRecord };
  /**
   * The order's settlement, committed with its hold: when the edition's report is known at purchase (the usual
   * case) the actor decides the release or refund in the same turn, and one append records both transitions. It is
   * the settlement fact less what this fact says already; `settlementOf` makes the whole fact, which the fold, the
   * projections, the events and the audit read as if it had been appended after this one, at the same sequence.
   */
  settled?: SettledAtPurchase;
}

/** What a settlement committed with its hold adds to the held fact (see EscrowHeldFact.settled). */
export interface SettledAtPurchase {
  /** The settlement's own id: its ledger entry's, its event's (`evt_<id>`) and its payout's. */
  id: string;
  type: 'escrow_released' | 'escrow_refunded';
  /** Available credits after the settlement (the held fact's own balanceAfterCents is the one after the hold). */
  balanceAfterCents: number;
  reportDigest: string;
  meanEntailment: number;
}

/** What a settlement fact repeats of its held order. */
export type SettledOrder = Pick<
  EscrowHeldFact,
  | 'principalId'
  | 'sandbox'
  | 'orderId'
  | 'priceCents'
  | 'listingId'
  | 'artifactId'
  | 'sellerPrincipalId'
  | 'agentId'
  | 'floor'
  | 'subscriptionId'
>;

/** The release or refund of a held order by its report, as its own fact, decided at `at`. */
export function settlementFact(
  o: SettledOrder,
  s: SettledAtPurchase,
  at: string,
): EscrowReleasedFact | EscrowRefundedFact {
  // Plain literals on the hot path: every purchase's settlement is read through here.
  return s.type === 'escrow_released'
    ? {
        id: s.id,
        at,
        principalId: o.principalId,
        sandbox: o.sandbox,
        balanceAfterCents: s.balanceAfterCents,
        type: 'escrow_released',
        orderId: o.orderId,
        priceCents: o.priceCents,
        listingId: o.listingId,
        artifactId: o.artifactId,
        sellerPrincipalId: o.sellerPrincipalId,
        agentId: o.agentId,
        floor: o.floor,
        subscriptionId: o.subscriptionId,
        reportDigest: s.reportDigest,
        meanEntailment: s.meanEntailment,
      }
    : {
        id: s.id,
        at,
        principalId: o.principalId,
        sandbox: o.sandbox,
        balanceAfterCents: s.balanceAfterCents,
        type: 'escrow_refunded',
        reason: 'floor_missed',
        orderId: o.orderId,
        priceCents: o.priceCents,
        listingId: o.listingId,
        artifactId: o.artifactId,
        sellerPrincipalId: o.sellerPrincipalId,
        agentId: o.agentId,
        floor: o.floor,
        subscriptionId: o.subscriptionId,
        reportDigest: s.reportDigest,
        meanEntailment: s.meanEntailment,
      };
}

/** The settlement a held fact carries, as the fact it records; null when the order was left held. */
export function settlementOf(f: EscrowHeldFact): EscrowReleasedFact | EscrowRefundedFact | null {
  return f.settled ? settlementFact(f, f.settled, f.at) : null;
}

/**
 * The facts one stored fact records, in order: the fact itself, then, for a hold settled in the same commit, its
 * settlement. Readers that reason per transition (projections, events, the audit) read the stream through this.
 */
export function factsRecorded(f: LedgerFact): LedgerFact[] {
  if (f.type !== 'escrow_held' || !f.settled) return [f];
  return [f, settlementOf(f)!];
}

/** The approve or decline call a fact records beside the purchase request's key, if any. */
export function decisionCall(fact: LedgerFact): IdempotencyRecord | undefined {
  if (fact.type === 'escrow_held') return fact.approval?.call;
  if (fact.type === 'approval_decided') return fact.call;
  return undefined;
}

interface SettlementFields {
  orderId: string;
  priceCents: number;
  listingId: string;
  artifactId: string;
  sellerPrincipalId: string;
  agentId: string;
  floor: number;
  /** The subscription a cycle order belongs to; absent on facts written before subscriptions, null otherwise. */
  subscriptionId?: string | null;
}

/** The edition's report met the floor: the held price is spent and accrues to the seller's payouts. */
export interface EscrowReleasedFact extends FactBase, SettlementFields {
  type: 'escrow_released';
  reportDigest: string;
  meanEntailment: number;
}

/**
 * The held price returns to the buyer's available credits: the edition's report missed the floor (`reason` absent
 * or `floor_missed`, with the report), or no report arrived within the wait bound (`no_report`: nothing was judged,
 * so there is no report and no trust sample).
 */
export type EscrowRefundedFact = FactBase &
  SettlementFields & { type: 'escrow_refunded' } & (
    | { reason?: 'floor_missed'; reportDigest: string; meanEntailment: number }
    | { reason: 'no_report'; reportDigest: null; meanEntailment: null; waitedSeconds: number }
  );

/**
 * A subscription changed without money moving: subscribed, resumed, a cycle that failed (and perhaps paused it), or
 * canceled. The fact carries the whole subscription as it stands after the change, so its projection is an upsert
 * of the record and the fold a replacement.
 */
export interface SubscriptionChangedFact extends FactBase {
  type: 'subscription_changed';
  change: 'subscribed' | 'resumed' | 'cycle_failed' | 'canceled';
  /** The state before the change; null for a new subscription. */
  previousState: SubscriptionRecord['state'] | null;
  subscription: SubscriptionRecord;
}

/** An operator put the principal on a plan: its rate limits and quotas from now on (contracts/plans.ts). */
export interface PlanSetFact extends FactBase {
  type: 'plan_set';
  plan: PlanName;
  previous: PlanName | null;
}

/**
 * A purchase above the mandate's approval threshold was not charged but recorded as waiting for the principal.
 * `idempotency` is the purchase request's, here and on the fact that decides it, so a replay of that request
 * answers from the newest of them (its reply is rebuilt from the fact: pending, bought, declined or expired).
 */
export interface ApprovalRequestedFact extends FactBase {
  type: 'approval_requested';
  approval: ApprovalRecord;
}

/**
 * An approval request was declined by the principal (with the decline call's idempotency record) or expired; an
 * approval that buys is an `escrow_held` fact instead, so buying and deciding are one append.
 */
export interface ApprovalDecidedFact extends FactBase {
  type: 'approval_decided';
  approval: ApprovalRecord;
  /** The principal's decline call (its idempotency record, with its reply); absent when the request expired. */
  call?: IdempotencyRecord;
}

/**
 * A context file created or changed by its owner. `content` is present when the text is new (on create, and on an
 * update that sets it); the actor remembers which fact holds a file's current text. Its events derive from it.
 */
export interface ContextSavedFact extends FactBase {
  type: 'context_saved';
  change: 'created' | 'updated';
  context: ContextRecord;
  /** Whether it was public before this change; null on create. */
  wasPublic: boolean | null;
  content?: string;
}

/** A context file deleted by its owner: the record as it was. */
export interface ContextDeletedFact extends FactBase {
  type: 'context_deleted';
  context: ContextRecord;
}

/**
 * A context file's content is the current edition of its artifact in the catalog: the first one links the file to
 * the artifact it was published as; each later one follows a change of the file's text.
 */
export interface ContextArtifactSyncedFact extends FactBase {
  type: 'context_artifact_synced';
  contextId: string;
  artifactId: string;
  editionId: string;
  contentSha256: string;
}

/**
 * A webhook registered or changed: by its owner (created, updated, its secret rotated) or by delivery that kept
 * failing (disabled, which is also the owner's `webhook.disabled` event). `tested`: its owner asked for a test event,
 * the record unchanged; the fact makes a `webhook.test` event delivered to this webhook alone.
 */
export interface WebhookSavedFact extends FactBase {
  type: 'webhook_saved';
  change: 'created' | 'updated' | 'rotated' | 'disabled' | 'tested';
  webhook: WebhookRecord;
}

/** A webhook deleted by its owner: the record as it was. */
export interface WebhookDeletedFact extends FactBase {
  type: 'webhook_deleted';
  webhook: WebhookRecord;
}

/** A skill created or changed by its owner: a new version, with the template's text. */
export interface SkillSavedFact extends FactBase {
  type: 'skill_saved';
  skill: SkillRecord;
  template: string;
}

/** A skill deleted by its owner, with every version: the newest record as it was. */
export interface SkillDeletedFact extends FactBase {
  type: 'skill_deleted';
  skill: SkillRecord;
}

/** Facts on a principal's ledger subject (`<ns>.ledger.<principalId>`). */
/** The card a person saved through the processor's checkout: live top-ups charge it off-session (docs/money.md). */
export interface PaymentMethodSavedFact extends FactBase {
  type: 'payment_method_saved';
  card: SavedCard;
}

export interface SavedCard {
  customerId: string;
  paymentMethodId: string;
  brand: string;
  last4: string;
  savedAt: string;
}

/**
 * A live top-up the processor accepted: its PaymentIntent was created and confirmed off-session. Nothing is
 * credited: `credited` (source `card_topup`) follows when the processor's webhook confirms the payment.
 */
export interface TopupRequestedFact extends FactBase {
  type: 'topup_requested';
  topupId: string;
  paymentIntentId: string;
  amountCents: number;
}

/** The processor reported a live top-up's payment failed (its webhook): nothing was credited. */
export interface TopupFailedFact extends FactBase {
  type: 'topup_failed';
  topupId: string;
  paymentIntentId: string;
  amountCents: number;
  code: string;
  declineCode: string | null;
  message: string;
}

/**
 * What a chargeback fact says of the charge it takes money back from: the live top-up it paid (its PaymentIntent)
 * and the charge's amount at the processor, which bounds everything taken back from it.
 */
interface ChargedTopup {
  topupId: string;
  paymentIntentId: string;
  chargeId: string;
  chargeCents: number;
  /** The principal's disputes still open after this fact (all charges): payouts from its purchases wait meanwhile. */
  openDisputes: number;
}

/**
 * The processor refunded (part of) a card top-up's charge (`charge.refunded`): what it refunded since the last one
 * recorded is debited. Available credits may go below zero; the principal then buys nothing and is paid out nothing
 * until a top-up brings them back (docs/money.md, Refunds and disputes).
 */
export interface TopupRefundedFact extends FactBase, ChargedTopup {
  type: 'topup_refunded';
  /** The debit: the processor's refunded total less what earlier refunds of this charge debited. */
  amountCents: number;
  /** Every refund of this charge debited so far, this one included. */
  refundedCents: number;
}

/**
 * The cardholder disputed a card top-up's charge (`charge.dispute.created`): the disputed amount is withheld from
 * available credits until the dispute closes (`topup_dispute_closed`), once per dispute.
 */
export interface TopupDisputedFact extends FactBase, ChargedTopup {
  type: 'topup_disputed';
  disputeId: string;
  /** Withheld: the dispute's amount, bounded by what the charge still holds. */
  amountCents: number;
}

/**
 * A dispute closed (`charge.dispute.closed`): `won` returns what was withheld to available credits, `lost` keeps it
 * (it is reversed for good). A dispute the ledger never saw open (its events came out of order) closes here too:
 * `lost` then debits its amount, `won` moves nothing and only records it, so a late `created` withholds nothing.
 */
export interface TopupDisputeClosedFact extends FactBase, ChargedTopup {
  type: 'topup_dispute_closed';
  disputeId: string;
  outcome: 'won' | 'lost';
  /** What the dispute withheld (returned when won) or, when it was never seen open, what losing it debits. */
  amountCents: number;
  /** Whether `topup_disputed` withheld `amountCents` before this fact. */
  wasWithheld: boolean;
}

/** The seller's connected account at the processor, as its latest `account.updated` (or onboarding start) says. */
export interface PayoutAccountUpdatedFact extends FactBase {
  type: 'payout_account_updated';
  accountId: string;
  payoutsEnabled: boolean;
}

/**
 * A payout run took the seller's released accruals in (fromSeq, throughSeq] of the LEDGER stream, `amountCents`
 * in all, for one transfer: recorded before the processor is asked, so a crash and a rerun resume this transfer
 * (same idempotency key) and never start a second one for the same accruals.
 */
export interface PayoutStartedFact extends FactBase {
  type: 'payout_started';
  transferId: string;
  accountId: string;
  amountCents: number;
  fromSeq: number;
  throughSeq: number;
  /**
   * The principal-facts projection's checkpoint the run read the accruals at: none of them came from a buyer whose
   * funds were in dispute as of that sequence (docs/money.md, Payouts held). Absent on transfers made before the rule.
   */
  checkedThroughSeq?: number;
}

/** The processor made the transfer (`paid`), or refused it (`failed`: the accruals are owed again). */
export interface PayoutFinishedFact extends FactBase {
  type: 'payout_finished';
  transferId: string;
  accountId: string;
  amountCents: number;
  outcome: 'paid' | 'failed';
  processorTransferId: string | null;
  failure: string | null;
}

export type LedgerFact =
  | CreditedFact
  | PaymentMethodSavedFact
  | TopupRequestedFact
  | TopupFailedFact
  | TopupRefundedFact
  | TopupDisputedFact
  | TopupDisputeClosedFact
  | PayoutAccountUpdatedFact
  | PayoutStartedFact
  | PayoutFinishedFact
  | CallRecordedFact
  | MandateSetFact
  | MandateRevokedFact
  | EscrowHeldFact
  | EscrowReleasedFact
  | EscrowRefundedFact
  | SubscriptionChangedFact
  | PlanSetFact
  | ApprovalRequestedFact
  | ApprovalDecidedFact
  | ContextSavedFact
  | ContextDeletedFact
  | ContextArtifactSyncedFact
  | SkillSavedFact
  | WebhookSavedFact
  | WebhookDeletedFact
  | SkillDeletedFact;

interface ListingFactBase {
  id: string;
  at: string;
  listingId: string;
}

/** Facts on a listing's subject (`<ns>.listing.<listingId>`). */
export type ListingFact =
  | (ListingFactBase & { type: 'listing_created' } & Pick<
        ListingState,
        'artifactId' | 'sellerPrincipalId' | 'priceCents' | 'floor' | 'formats' | 'billing' | 'sandbox'
      >)
  | (ListingFactBase & { type: 'listing_repriced'; priceCents: number })
  | (ListingFactBase & { type: 'listing_unlisted' });
