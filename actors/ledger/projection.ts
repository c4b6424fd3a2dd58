// What each fact of a principal's ledger projects to: the ledger service's rules, written by
// storage/principal-facts.ts. A credit is a ledger entry; a purchase is an order row carrying its two escrow
// entries; a release accrues the seller's payout; every settlement decided by a report is a trust sample for the
// artifact, its seller and the buying agent; every mutating call's key goes to the idempotency index (a purchase's
// with its order); a subscription's record, and an approval request's state and expiry, are upserted from the
// newest fact that carries them.
// Rows depend only on their facts, so a rebuild by replay produces identical rows.
import type { ApprovalRecord, Config, IdempotencyRecord, LedgerFact, Names } from '../../contracts/index.ts';
import { decisionCall, factsRecorded, idempotencyRetentionMs } from '../../contracts/index.ts';
import {
  type ApprovalUpsertRow,
  type BillingRow,
  type ContextFileRow,
  type IdempotencyKeyRow,
  type LedgerRow,
  type OrderInsertRow,
  type OrderSettlementRow,
  type PrincipalFactRows,
  principalFactsProjection,
  type StandingRow,
  type SubscriptionUpsertRow,
} from '../../storage/index.ts';
import { weightAtEpoch } from '../shared/trust-weight.ts';

/** The ledger entry of a credit fact. */
function creditEntry(seq: number, f: Extract<LedgerFact, { type: 'credited' }>): LedgerRow {
  return {
    stream_seq: seq,
    id: f.id,
    principal_id: f.principalId,
    type: f.source === 'sandbox_grant' ? 'sandbox_grant' : 'topup_credited',
    amount_cents: f.amountCents,
    balance_after_cents: f.balanceAfterCents,
    reference: f.topupId,
    run_id: null,
    sandbox: f.sandbox,
    created_at: f.at,
  };
}

type ChargebackFact = Extract<LedgerFact, { type: 'topup_refunded' | 'topup_disputed' | 'topup_dispute_closed' }>;

/**
 * The ledger entry of a chargeback fact, or null for one that moves nothing (a dispute won before it was seen
 * open). Its amount is what it moves of available credits: a refund or a new dispute takes, a won dispute returns,
 * a lost one keeps what it withheld (0) or, never seen open, takes its amount.
 */
export function chargebackEntry(seq: number, f: ChargebackFact): LedgerRow | null {
  let type: LedgerRow['type'];
  let amountCents: number;
  if (f.type === 'topup_dispute_closed') {
    if (f.outcome === 'won' && !f.wasWithheld) return null;
    type = f.outcome === 'won' ? 'dispute_won' : 'dispute_lost';
    amountCents = f.outcome === 'won' ? f.amountCents : f.wasWithheld ? 0 : -f.amountCents;
  } else {
    type = f.type;
    amountCents = -f.amountCents;
  }
  return {
    stream_seq: seq,
    id: f.id,
    principal_id: f.principalId,
    type,
    amount_cents: amountCents,
    balance_after_cents: f.balanceAfterCents,
    reference: f.topupId,
    run_id: null,
    sandbox: f.sandbox,
    created_at: f.at,
  };
}

/**
 * Fold a batch into rows. An order held and settled within one batch (the usual case: the actor settles right
 * after the purchase) is inserted in its final state rather than inserted and then updated.
 */
export function principalFactRows(batch: { seq: number; fact: LedgerFact }[]): PrincipalFactRows {
  const rows: PrincipalFactRows = {
    credits: [],
    orders: [],
    settlements: [],
    payouts: [],
    trustSamples: [],
    keys: [],
    subscriptions: [],
    approvals: [],
    contexts: [],
    billing: [],
    standing: [],
  };
  const held = new Map<string, OrderInsertRow>();
  // Each fact carries the whole subscription record: the newest in the batch is the row.
  const subscriptions = new Map<string, SubscriptionUpsertRow>();
  // The newest fact per key: a request that waited for approval and its decision can share a batch.
  const keys = new Map<string, IdempotencyKeyRow>();
  const indexKey = (seq: number, f: LedgerFact, r: IdempotencyRecord) =>
    keys.set(`${f.principalId} ${r.key}`, {
      principal_id: f.principalId,
      key: r.key,
      request_hash: r.requestHash,
      stream_seq: seq,
      created_at: f.at,
    });
  const approvals = new Map<string, ApprovalUpsertRow>();
  const contexts = new Map<string, ContextFileRow>();
  // The newest standing per principal: a chargeback fact sets it all, a later credit or refund what is owed.
  const standing = new Map<string, StandingRow>();
  const owedChanged = (seq: number, f: LedgerFact) => {
    const owedCents = Math.max(0, -f.balanceAfterCents);
    const before = standing.get(f.principalId);
    standing.set(f.principalId, {
      principal: f.principalId,
      seq,
      openDisputes: before?.openDisputes ?? null,
      owedCents,
    });
  };
  for (const { seq, fact } of batch) for (const f of factsRecorded(fact)) project(seq, f);
  function project(seq: number, f: LedgerFact): void {
    // A purchase's key is indexed in its order row; every other call's in the index table, and so is the principal's
    // approve or decline call that a decision records beside it.
    if (f.idempotency && f.type !== 'escrow_held') indexKey(seq, f, f.idempotency);
    const call = decisionCall(f);
    if (call) indexKey(seq, f, call);
    switch (f.type) {
      case 'credited':
        rows.credits.push(creditEntry(seq, f));
        // A card top-up's credit also settles its top-up row, and may pay back what its principal owes.
        if (f.source === 'card_topup') {
          rows.billing.push(billingRow(seq, f));
          owedChanged(seq, f);
        }
        break;
      case 'topup_refunded':
      case 'topup_disputed':
      case 'topup_dispute_closed': {
        const entry = chargebackEntry(seq, f);
        if (entry) rows.credits.push(entry);
        standing.set(f.principalId, {
          principal: f.principalId,
          seq,
          openDisputes: f.openDisputes,
          owedCents: Math.max(0, -f.balanceAfterCents),
        });
        break;
      }
      case 'escrow_held': {
        const order: OrderInsertRow = {
          id: f.orderId,
          buyer: f.principalId,
          agent: f.agentId,
          listing: f.listingId,
          artifact: f.artifactId,
          edition: f.editionId,
          seller: f.sellerPrincipalId,
          subscription: f.subscriptionId,
          escrow: f.priceCents,
          floor: f.floor,
          formats: f.formats,
          key: f.idempotency?.key ?? '',
          hash: f.idempotency?.requestHash ?? '',
          snapshot: f.priceSnapshotId,
          sandbox: f.sandbox,
          seq,
          fact: f.id,
          balance: f.balanceAfterCents,
          at: f.at,
          state: 'held',
          digest: null,
          reason: null,
          settled_at: null,
          settled_seq: null,
          settled_fact: null,
          settled_balance: null,
        };
        held.set(f.orderId, order);
        rows.orders.push(order);
        if (f.subscription) subscriptions.set(f.subscription.id, { buyer: f.principalId, seq, record: f.subscription });
        if (f.approval) approvals.set(f.approval.record.id, approvalRow(seq, f.principalId, f.approval.record));
        break;
      }
      case 'approval_requested':
      case 'approval_decided':
        approvals.set(f.approval.id, approvalRow(seq, f.principalId, f.approval));
        break;
      case 'context_saved': {
        // A change without text keeps the text an earlier fact of the same batch gave.
        const earlier = contexts.get(f.context.id);
        const content = f.content ?? (earlier?.kind === 'saved' ? earlier.content : null);
        contexts.set(f.context.id, { kind: 'saved', owner: f.principalId, seq, record: f.context, content });
        break;
      }
      case 'context_deleted':
        contexts.set(f.context.id, { kind: 'deleted', id: f.context.id, seq });
        break;
      case 'subscription_changed':
        subscriptions.set(f.subscription.id, { buyer: f.principalId, seq, record: f.subscription });
        break;
      case 'escrow_released':
      case 'escrow_refunded': {
        const released = f.type === 'escrow_released';
        const refundReason = f.type === 'escrow_refunded' ? (f.reason ?? 'floor_missed') : null;
        // A live refund may pay back what its buyer owes (sandbox principals are never charged back).
        if (!released && !f.sandbox) owedChanged(seq, f);
        const outcome: OrderSettlementRow = {
          id: f.orderId,
          state: released ? 'released' : 'auto_refunded',
          digest: f.reportDigest,
          reason: refundReason,
          settled_at: f.at,
          settled_seq: seq,
          settled_fact: f.id,
          settled_balance: f.balanceAfterCents,
        };
        const heldNow = held.get(f.orderId);
        if (heldNow) {
          heldNow.state = outcome.state;
          heldNow.digest = outcome.digest;
          heldNow.reason = outcome.reason;
          heldNow.settled_at = outcome.settled_at;
          heldNow.settled_seq = outcome.settled_seq;
          heldNow.settled_fact = outcome.settled_fact;
          heldNow.settled_balance = outcome.settled_balance;
        } else rows.settlements.push(outcome);
        if (released) {
          rows.payouts.push({
            id: f.id,
            order_id: f.orderId,
            seller: f.sellerPrincipalId,
            listing: f.listingId,
            amount: f.priceCents,
            sandbox: f.sandbox,
            seq,
            at: f.at,
          });
        }
        // An order refunded because no report came judged nothing: no trust sample, for or against anyone.
        if (refundReason === 'no_report') break;
        const weight = weightAtEpoch(Date.parse(f.at));
        for (const subject of [`artifact:${f.artifactId}`, `principal:${f.sellerPrincipalId}`, `agent:${f.agentId}`]) {
          rows.trustSamples.push({
            subject,
            sourceKind: 'settlement',
            sourceId: f.orderId,
            pass: released,
            at: f.at,
            weightAtEpoch: weight,
          });
        }
        break;
      }
      case 'call_recorded':
      case 'mandate_set':
      case 'mandate_revoked':
      case 'plan_set':
      case 'skill_saved':
      case 'skill_deleted':
      case 'context_artifact_synced':
      case 'webhook_saved':
      case 'webhook_deleted':
        break;
      case 'payment_method_saved':
      case 'payout_account_updated':
      case 'topup_requested':
      case 'topup_failed':
      case 'payout_started':
      case 'payout_finished':
        rows.billing.push(billingRow(seq, f));
        break;
      default:
        throw unknownFact(f);
    }
  }
  rows.subscriptions = [...subscriptions.values()];
  rows.keys = [...keys.values()];
  rows.approvals = [...approvals.values()];
  rows.contexts = [...contexts.values()];
  rows.standing = [...standing.values()];
  return rows;
}

type BillingFact = Extract<
  LedgerFact,
  {
    type:
      | 'payment_method_saved'
      | 'payout_account_updated'
      | 'topup_requested'
      | 'topup_failed'
      | 'payout_started'
      | 'payout_finished'
      | 'credited';
  }
>;

/** The billing row of a billing fact (storage/billing.ts writes them in stream order). */
function billingRow(seq: number, f: BillingFact): BillingRow {
  const principal = f.principalId;
  switch (f.type) {
    case 'payment_method_saved': {
      const c = f.card;
      return {
        kind: 'card',
        principal,
        seq,
        customer: c.customerId,
        paymentMethod: c.paymentMethodId,
        brand: c.brand,
        last4: c.last4,
        at: c.savedAt,
      };
    }
    case 'payout_account_updated':
      return { kind: 'account', principal, seq, account: f.accountId, enabled: f.payoutsEnabled };
    case 'topup_requested':
    case 'topup_failed':
    case 'credited': {
      const failed = f.type === 'topup_failed';
      return {
        kind: 'topup',
        principal,
        seq,
        id: f.topupId,
        paymentIntent: f.paymentIntentId ?? '',
        amount: f.amountCents,
        state: f.type === 'credited' ? 'credited' : failed ? 'failed' : 'pending',
        failureCode: failed ? (f.declineCode ?? f.code) : null,
        failureMessage: failed ? f.message : null,
        at: f.at,
      };
    }
    case 'payout_started':
      return {
        kind: 'transfer_started',
        principal,
        id: f.transferId,
        account: f.accountId,
        amount: f.amountCents,
        fromSeq: f.fromSeq,
        throughSeq: f.throughSeq,
        at: f.at,
      };
    case 'payout_finished':
      return {
        kind: 'transfer_finished',
        id: f.transferId,
        state: f.outcome,
        processorTransfer: f.processorTransferId,
        failure: f.failure,
        at: f.at,
      };
  }
}

function approvalRow(seq: number, principalId: string, a: ApprovalRecord): ApprovalUpsertRow {
  return { id: a.id, principal: principalId, state: a.state, expires: a.expiresAt, seq };
}

/** The principal-facts projection with this deployment's key retention: one definition for the projector and rebuilds. */
export function principalFactsOf(names: Names, config: Config) {
  return principalFactsProjection(names, principalFactRows, idempotencyRetentionMs(config));
}

/** A fact type this switch does not name: a compile error while the union grows, a loud failure if one slips by. */
function unknownFact(f: never): Error {
  return new Error(`unknown ledger fact type ${(f as { type?: unknown }).type}`);
}
