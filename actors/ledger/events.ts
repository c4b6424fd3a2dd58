// The events a principal's LEDGER facts make, written to the events store by storage/events.ts (its own projection,
// checkpoint `events:<LEDGER stream>`): every change of an order's state is an `order.state_changed` event, every
// landed top-up a `topup.credited` one, a subscription's change of state or failed cycle a `subscription.*` one, and
// a purchase that waits for the principal's approval an `approval.requested`, then an `approval.decided`; every
// change of a context file is one `context.*` event with the spec's payload; what the payment processor takes back
// from a top-up a `topup.refunded`, `topup.disputed` or `topup.dispute_closed` one.
// Rows depend only on their facts, so a rebuild by replay writes identical ids, sequences and data. An event's id is
// `evt_<fact id>`; a fact's further events are `evt_<fact id>.<n>`.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Static } from 'typebox';
import type {
  ApprovalRecord,
  ContextDeletedFact,
  ContextSavedFact,
  LedgerFact,
  Names,
  SubscriptionChangedFact,
  schemas,
  TopupDisputeClosedFact,
  TopupDisputedFact,
  TopupRefundedFact,
} from '../../contracts/index.ts';
import { eventsNoticeBodies, factsRecorded } from '../../contracts/index.ts';
import {
  type EventInsertRow,
  type EventRow,
  eventSeqThroughSource,
  eventsProjection,
  type Projection,
  projectionCheckpoint,
  type Sql,
  type WebhookRow,
} from '../../storage/index.ts';
import { decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';

type EventType = Static<typeof schemas.EventType>;
type Event = Static<typeof schemas.OutboxEvent>;

/** The events of one batch of facts, in stream order. */
export function eventRows(batch: { seq: number; fact: LedgerFact }[]): EventInsertRow[] {
  const rows: EventInsertRow[] = [];
  for (const { seq, fact } of batch) for (const f of factsRecorded(fact)) factEvents(seq, f);
  return rows;

  function factEvents(seq: number, f: LedgerFact): void {
    let made = 0;
    const add = (principalId: string, type: EventType, data: Record<string, unknown>) => {
      rows.push({
        principal_id: principalId,
        id: made === 0 ? `evt_${f.id}` : `evt_${f.id}.${made}`,
        type,
        data,
        sandbox: f.sandbox,
        source_seq: seq,
        created_at: f.at,
      });
      made++;
    };
    switch (f.type) {
      case 'credited':
        // A registration's grant is not a top-up: it has no event.
        if (f.source !== 'sandbox_grant') {
          add(f.principalId, 'topup.credited', {
            topup_id: f.topupId,
            amount_cents: f.amountCents,
            sandbox: f.sandbox,
            ...(f.paymentIntentId ? { payment_intent_id: f.paymentIntentId } : {}),
          });
        }
        break;
      case 'escrow_held':
        // A subscription cycle's purchase is an order like any other: its event names the subscription.
        add(f.principalId, 'order.state_changed', orderData(f, 'held', f.subscriptionId));
        // An approved purchase also tells the agent that waited that the principal decided.
        if (f.approval) add(f.principalId, 'approval.decided', approvalData(f.approval.record));
        break;
      case 'approval_requested':
        add(f.principalId, 'approval.requested', approvalData(f.approval));
        break;
      case 'approval_decided':
        add(f.principalId, 'approval.decided', approvalData(f.approval));
        break;
      case 'context_saved':
      case 'context_deleted':
        add(f.principalId, contextEventType(f), {
          context: { id: f.context.id, name: f.context.name, slug: f.context.slug, updated_at: f.context.updatedAt },
        });
        break;
      case 'escrow_released':
      case 'escrow_refunded': {
        // Only the held fact names the subscription today; a settlement fact that carries it too is read here, so
        // settlement events name it once the facts do (a lookup elsewhere would make rows depend on timing).
        const subscriptionId = (f as { subscriptionId?: string | null }).subscriptionId ?? null;
        if (f.type === 'escrow_released')
          add(f.principalId, 'order.state_changed', orderData(f, 'released', subscriptionId));
        else {
          // A refund says why: the report missed the floor, or no report came within the wait bound.
          const data = orderData(f, 'auto_refunded', subscriptionId);
          data.reason = f.reason ?? 'floor_missed';
          add(f.principalId, 'order.state_changed', data);
        }
        break;
      }
      case 'subscription_changed':
        subscriptionEvents(f, add);
        break;
      case 'webhook_saved':
        // Delivery that kept failing disabled it: the owner is told (by its other webhooks too, and the account page).
        // The owner's test: delivered to the webhook it names, and to no other (storage/webhooks.ts, fanOutDeliveries).
        if (f.change === 'tested') {
          const w = f.webhook;
          add(f.principalId, 'webhook.test', {
            webhook: { id: w.id, name: w.name, url: w.url },
            message: 'A test event, sent from the account page: nothing happened to your account.',
          });
        }
        if (f.change === 'disabled') {
          const w = f.webhook;
          add(f.principalId, 'webhook.disabled', {
            webhook: { id: w.id, name: w.name, url: w.url, reason: w.disabledReason },
          });
        }
        break;
      case 'topup_failed':
        add(f.principalId, 'topup.failed', {
          topup_id: f.topupId,
          amount_cents: f.amountCents,
          payment_intent_id: f.paymentIntentId,
          code: f.code,
          decline_code: f.declineCode,
          message: f.message,
        });
        break;
      case 'topup_refunded':
        add(f.principalId, 'topup.refunded', {
          ...chargebackData(f),
          amount_cents: f.amountCents,
          refunded_cents: f.refundedCents,
        });
        break;
      case 'topup_disputed':
        add(f.principalId, 'topup.disputed', {
          ...chargebackData(f),
          dispute_id: f.disputeId,
          amount_cents: f.amountCents,
        });
        break;
      case 'topup_dispute_closed':
        add(f.principalId, 'topup.dispute_closed', {
          ...chargebackData(f),
          dispute_id: f.disputeId,
          outcome: f.outcome,
          // Returned to available credits when won; what losing it kept (or took, if it was never seen open).
          amount_cents: f.amountCents,
          returned_cents: f.outcome === 'won' ? f.amountCents : 0,
        });
        break;
      case 'payout_finished':
        add(f.principalId, f.outcome === 'paid' ? 'payout.paid' : 'payout.failed', {
          transfer_id: f.transferId,
          amount_cents: f.amountCents,
          account_id: f.accountId,
          processor_transfer_id: f.processorTransferId,
          failure: f.failure,
        });
        break;
      case 'payment_method_saved':
      case 'topup_requested':
      case 'payout_account_updated':
      case 'payout_started':
      case 'webhook_deleted':
      case 'call_recorded':
      case 'mandate_set':
      case 'mandate_revoked':
      case 'plan_set':
      case 'skill_saved':
      case 'skill_deleted':
      case 'context_artifact_synced':
        break;
      default:
        throw unknownFact(f);
    }
  }
}

/**
 * One event per change of a context file: created, deleted, published or unpublished when `is_public` changed (a
 * change that also edits other fields is still one event, the publication), updated otherwise.
 */
function contextEventType(f: ContextSavedFact | ContextDeletedFact): EventType {
  if (f.type === 'context_deleted') return 'context.deleted';
  if (f.change === 'created') return 'context.created';
  if (f.wasPublic !== f.context.isPublic) return f.context.isPublic ? 'context.published' : 'context.unpublished';
  return 'context.updated';
}

/** What every chargeback event says: the top-up, its charge at the processor, and the balance after. */
function chargebackData(f: TopupRefundedFact | TopupDisputedFact | TopupDisputeClosedFact): Record<string, unknown> {
  return {
    topup_id: f.topupId,
    payment_intent_id: f.paymentIntentId,
    charge_id: f.chargeId,
    balance_cents: f.balanceAfterCents,
  };
}

/** An approval request as its events show it: enough for the waiting agent to continue without another call. */
function approvalData(a: ApprovalRecord): Record<string, unknown> {
  return {
    approval_id: a.id,
    state: a.state,
    agent_id: a.agentId,
    listing_id: a.listingId,
    price_cents: a.priceCents,
    formats: a.formats,
    expires_at: a.expiresAt,
    decided_by: a.decidedBy,
    order_id: a.orderId,
  };
}

function orderData(
  f: { orderId: string; listingId: string; priceCents: number },
  state: 'held' | 'released' | 'auto_refunded',
  subscriptionId: string | null,
): Record<string, unknown> {
  return {
    order_id: f.orderId,
    state,
    listing_id: f.listingId,
    escrow_cents: f.priceCents,
    subscription_id: subscriptionId,
  };
}

/**
 * A failed cycle is the buyer's `subscription.cycle_failed`; a change of state (subscribed, resumed, paused by
 * failures, canceled) is a `subscription.state_changed` for the buyer and for the seller, who sees subscriptions
 * to its listings start and end.
 */
function subscriptionEvents(
  f: SubscriptionChangedFact,
  add: (principalId: string, type: EventType, data: Record<string, unknown>) => void,
) {
  const s = f.subscription;
  if (f.change === 'cycle_failed') {
    add(f.principalId, 'subscription.cycle_failed', {
      subscription_id: s.id,
      listing_id: s.listingId,
      cycle: s.cycle,
      error_code: s.lastCycle?.errorCode ?? null,
      message: s.lastCycle?.message ?? null,
      consecutive_failures: s.consecutiveFailures,
      state: s.state,
    });
  }
  if (f.previousState === s.state) return;
  const data = {
    subscription_id: s.id,
    listing_id: s.listingId,
    state: s.state,
    previous_state: f.previousState,
    change: f.change,
    canceled_by: s.canceledBy,
    buyer_principal_id: f.principalId,
    seller_principal_id: s.sellerPrincipalId,
  };
  add(f.principalId, 'subscription.state_changed', data);
  // A seller subscribed to its own listing is told once.
  if (s.sellerPrincipalId !== f.principalId) add(s.sellerPrincipalId, 'subscription.state_changed', data);
}

/**
 * The events projection: one definition for the projector, rebuilds and the read side's checkpoint. Given `nc` (the
 * live projector), each committed batch publishes one `<ns>.notice.events` naming every principal it gave new events
 * (one message a batch, not one a principal: a purchase would otherwise cost the bus a message more), which gateways
 * turn into MCP resource notifications (docs/mcp.md); rebuilds and readers pass none.
 */
export function eventsOf(names: Names, nc?: NatsConnection): Projection<LedgerFact> {
  if (!nc) return eventsProjection(names, eventRows, webhookRows);
  // Whose events each batch made, noted as the batch is derived inside its transaction and told once it commits.
  const principals = new WeakMap<object, Set<string>>();
  const derive = (batch: { seq: number; fact: LedgerFact }[]) => {
    const rows = eventRows(batch);
    if (rows.length > 0) principals.set(batch, new Set(rows.map((r) => r.principal_id)));
    return rows;
  };
  return {
    ...eventsProjection(names, derive, webhookRows),
    committed(batch) {
      const told = principals.get(batch);
      if (!told) return;
      for (const body of eventsNoticeBodies([...told])) {
        try {
          nc.publish(names.notices.events, body);
        } catch {
          // A closed connection: the notice is lost, which only delays a notification (polling sees the events).
        }
      }
    },
  };
}

/** A stored event as the API shows it. */
export function eventResource(e: EventRow): Event {
  return { id: e.id, type: e.type as EventType, created_at: e.created_at.toISOString(), data: e.data };
}

/** A cursor of the events list: the principal's event sequence a page resumes after. */
export const eventsCursor = (seq: number) => encodeCursor('evseq', seq);

/**
 * The event sequence a page resumes after. An `evseq` cursor names it; an `events` cursor, handed out before the
 * store existed, names a LEDGER stream sequence, and resumes after the principal's last event from a fact at or
 * before it (the same place it resumed before). Null while the store has not projected that far yet (a new store
 * fills from the start of the stream): the page is empty and the cursor stays. 'bad' for a cursor of another list.
 */
export async function eventsResumeAfter(
  sql: Sql,
  events: Projection<LedgerFact>,
  principalId: string,
  cursor: string,
): Promise<number | null | 'bad'> {
  const seq = decodeNumberCursor('evseq', cursor);
  if (seq !== null) return seq;
  const streamSeq = decodeNumberCursor('events', cursor);
  if (streamSeq === null) return 'bad';
  if ((await projectionCheckpoint(sql, events as Projection<unknown>)) < streamSeq) return null;
  return eventSeqThroughSource(sql, principalId, streamSeq);
}

/** A fact type this switch does not name: a compile error while the union grows, a loud failure if one slips by. */
function unknownFact(f: never): Error {
  return new Error(`unknown ledger fact type ${(f as { type?: unknown }).type}`);
}

/** The webhook registrations a batch leaves, each as its newest fact has it: the events projection routes by them. */
export function webhookRows(batch: { seq: number; fact: LedgerFact }[]): WebhookRow[] {
  const rows = new Map<string, WebhookRow>();
  for (const { seq, fact: f } of batch) {
    if (f.type === 'webhook_saved') {
      const before = rows.get(f.webhook.id);
      const createdSeq = f.change === 'created' ? seq : before?.kind === 'saved' ? before.createdSeq : null;
      rows.set(f.webhook.id, { kind: 'saved', owner: f.principalId, seq, createdSeq, record: f.webhook });
    } else if (f.type === 'webhook_deleted') rows.set(f.webhook.id, { kind: 'deleted', id: f.webhook.id });
  }
  return [...rows.values()];
}
