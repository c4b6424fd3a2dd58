// The LEDGER stream, one fact at a time (audit.ts reads it once, in order). Each function takes one kind of fact,
// checks the rules that depend on the facts before it (an order's path, a transfer's, a charge's, the balance the
// fact states) and adds the fact to the state, answering what it found. A fact that breaks a rule is still taken
// for what it says, so one wrong fact is reported once.
//
// The rules are written from the facts' meaning (contracts/facts.ts, docs/money.md) and the actors' code that
// decides them (actors/principal/fold.ts, settlement.ts, billing.ts, chargebacks.ts), not by running the fold
// again: an audit that reused the fold's asserts could only agree with them. Which facts make which events is the
// ledger service's rule, so event ids come from `eventRows`.
import { factsRecorded, type LedgerFact } from '../../contracts/index.ts';
import { eventRows } from '../ledger/events.ts';
import {
  type AuditState,
  type ChargebackFact,
  disputedAt,
  iso,
  noMoney,
  type PrincipalMoney,
  sellerOf,
} from './state.ts';
import { notAFact, type Violation } from './violations.ts';

type FactOf<T extends LedgerFact['type']> = Extract<LedgerFact, { type: T }>;

/** One message of the LEDGER stream at `seq`: `f` is its JSON, null when it is not JSON. */
export function auditLedgerMessage(state: AuditState, seq: number, f: LedgerFact | null, raw: string): Violation[] {
  if (f === null || typeof f !== 'object' || typeof f.type !== 'string') return [notAFact('LEDGER', seq, f, raw)];
  if (f.type === 'escrow_held' && f.settled) {
    const t = f.settled.type;
    if ((t !== 'escrow_released' && t !== 'escrow_refunded') || typeof f.settled.id !== 'string')
      return [
        {
          kind: 'fact_unreadable',
          subject: `LEDGER seq ${seq}`,
          message: `a hold settled in its own commit names no settlement: ${JSON.stringify(f.settled).slice(0, 200)}`,
        },
      ];
  }
  const found: Violation[] = [];
  // A hold settled in the same commit records two transitions, each checked as its own fact.
  for (const r of factsRecorded(f)) {
    found.push(...factIdUnique(state.ledgerFactIds, r.id, 'LEDGER', seq));
    found.push(...ledgerFact(state, seq, r));
  }
  found.push(...eventIdsUnique(state, seq, f));
  return found;
}

/** A fact id is used once in its stream; a repeat is a violation, the first use is remembered. */
export function factIdUnique(seen: Set<string>, id: string, stream: string, seq: number): Violation[] {
  if (!seen.has(id)) {
    seen.add(id);
    return [];
  }
  return [
    {
      kind: 'fact_id_duplicate',
      subject: `fact ${id}`,
      message: `${stream} seq ${seq} repeats the id of an earlier fact`,
    },
  ];
}

/** The events a message makes have ids no earlier message's events have; they are the events store's rows. */
function eventIdsUnique(state: AuditState, seq: number, f: LedgerFact): Violation[] {
  let made: ReturnType<typeof eventRows>;
  try {
    made = eventRows([{ seq, fact: f }]);
  } catch (err) {
    return [{ kind: 'fact_unreadable', subject: `LEDGER seq ${seq}`, message: (err as Error).message }];
  }
  const found: Violation[] = [];
  for (const e of made) {
    if (state.events.has(e.id)) {
      found.push({
        kind: 'event_id_duplicate',
        subject: `event ${e.id}`,
        message: `LEDGER seq ${seq} makes an event whose id an earlier fact's event has`,
      });
      continue;
    }
    state.events.set(e.id, {
      sourceSeq: seq,
      row: {
        principal_id: e.principal_id,
        id: e.id,
        type: e.type,
        // As PostgreSQL's jsonb gives it back: no undefined members.
        data: JSON.parse(JSON.stringify(e.data)),
        sandbox: e.sandbox,
        source_seq: seq,
        created_at: iso(e.created_at),
      },
    });
  }
  return found;
}

/** One recorded transition of a principal's ledger. */
function ledgerFact(state: AuditState, seq: number, f: LedgerFact): Violation[] {
  const found: Violation[] = [];
  let p = state.principals.get(f.principalId);
  if (!p) {
    p = {
      sandbox: f.sandbox,
      ...noMoney(),
      charges: null,
      openDisputes: 0,
      disputedLog: [],
      standing: [],
    };
    state.principals.set(f.principalId, p);
  } else if (p.sandbox !== f.sandbox) {
    found.push({
      kind: 'sandbox_line',
      subject: `principal ${f.principalId}`,
      message: `LEDGER seq ${seq} (${f.type}) is ${f.sandbox ? 'sandbox' : 'live'}, the principal's earlier facts are not`,
    });
  }
  // Read before the fact changes the state: a settlement moves money only if its order was held and not settled.
  const movedCents = movedByFact(state, f);
  switch (f.type) {
    case 'credited':
      found.push(...credit(state, seq, f, p));
      break;
    case 'escrow_held':
      found.push(...escrowHeldOnce(state, seq, f, p));
      break;
    case 'escrow_released':
    case 'escrow_refunded':
      found.push(...escrowResolvesOnce(state, seq, f, p));
      break;
    case 'payout_started':
      found.push(...payoutStarted(state, seq, f));
      break;
    case 'payout_finished':
      found.push(...payoutFinished(state, seq, f));
      break;
    case 'topup_refunded':
    case 'topup_disputed':
    case 'topup_dispute_closed':
      found.push(...chargebackPath(state, seq, f, p));
      break;
    default:
      break;
  }
  found.push(...balanceFollows(seq, f, p, movedCents));
  followStanding(p, seq, f);
  return found;
}

const takesBack = (f: LedgerFact): f is ChargebackFact =>
  f.type === 'topup_refunded' || f.type === 'topup_disputed' || f.type === 'topup_dispute_closed';

/** What a fact moves to (or from) available credits, by the money rules. */
function movedByFact(state: AuditState, f: LedgerFact): number {
  switch (f.type) {
    case 'credited':
      return f.amountCents;
    case 'escrow_held':
      return -f.priceCents;
    case 'escrow_released':
    case 'escrow_refunded': {
      // A refund gives back what was held; a release moves nothing from available (it was held already).
      const order = state.orders.get(f.orderId);
      return order && !order.settlement && f.type === 'escrow_refunded' ? order.priceCents : 0;
    }
    case 'topup_refunded':
    case 'topup_disputed':
    case 'topup_dispute_closed':
      return chargebackMovedCents(f);
    default:
      return 0;
  }
}

/**
 * What a refund or dispute moves: a refund or a dispute opened takes its amount; a withheld dispute won gives it
 * back and one lost keeps it taken; a dispute closed without being seen open takes its amount only when lost.
 */
function chargebackMovedCents(f: ChargebackFact): number {
  switch (f.type) {
    case 'topup_refunded':
    case 'topup_disputed':
      return -f.amountCents;
    case 'topup_dispute_closed':
      if (f.wasWithheld) return f.outcome === 'won' ? f.amountCents : 0;
      return f.outcome === 'lost' ? -f.amountCents : 0;
  }
}

/**
 * The balance a fact states is the balance before it plus what it moves; only the processor taking money back makes
 * a balance negative, and while it is, nothing is bought and it only rises (docs/money.md, Refunds and disputes).
 */
function balanceFollows(seq: number, f: LedgerFact, p: PrincipalMoney, movedCents: number): Violation[] {
  const found: Violation[] = [];
  const availableBefore = p.availableCents;
  const expectedCents = p.availableCents + movedCents;
  if (f.balanceAfterCents !== expectedCents) {
    found.push({
      kind: 'balance',
      subject: `principal ${f.principalId}`,
      message: `LEDGER seq ${seq} (${f.type}) says the balance is ${f.balanceAfterCents} cents; the balance before it plus what it moves is ${expectedCents}`,
    });
  }
  // Go on from what the fact says, so one wrong fact is reported once.
  p.availableCents = f.balanceAfterCents;
  const negativeAllowed = takesBack(f) || (f.type !== 'escrow_held' && p.availableCents >= availableBefore);
  if ((p.availableCents < 0 && !negativeAllowed) || p.heldCents < 0)
    found.push({
      kind: 'balance',
      subject: `principal ${f.principalId}`,
      message: `after LEDGER seq ${seq} (${f.type}): available ${p.availableCents}, held ${p.heldCents} cents (negative)`,
    });
  return found;
}

/**
 * From a principal's first chargeback on, the payout-hold rule's input and its chargeback_standing row
 * (storage/billing.ts) follow the facts.
 */
function followStanding(p: PrincipalMoney, seq: number, f: LedgerFact): void {
  if (!p.charges) return;
  const disputed = p.openDisputes > 0 || p.availableCents < 0;
  if (p.disputedLog.at(-1)?.[1] !== disputed) p.disputedLog.push([seq, disputed]);
  const owed = Math.max(0, -p.availableCents);
  if (takesBack(f))
    p.standing.push({
      seq,
      row: { principal_id: f.principalId, open_disputes: p.openDisputes, owed_cents: owed, updated_seq: seq },
    });
  else if ((f.type === 'credited' && f.source === 'card_topup') || (f.type === 'escrow_refunded' && !f.sandbox))
    p.standing.push({ seq, row: { ...p.standing.at(-1)!.row, owed_cents: owed, updated_seq: seq } });
}

/** A credit adds a positive amount, and makes a ledger entry. */
function credit(state: AuditState, seq: number, f: FactOf<'credited'>, p: PrincipalMoney): Violation[] {
  const found: Violation[] = [];
  if (!Number.isInteger(f.amountCents) || f.amountCents <= 0)
    found.push({ kind: 'balance', subject: `fact ${f.id}`, message: `a credit of ${f.amountCents} cents` });
  p.creditedCents += f.amountCents;
  state.entries.set(seq, {
    stream_seq: seq,
    id: f.id,
    principal_id: f.principalId,
    type: f.source === 'sandbox_grant' ? 'sandbox_grant' : 'topup_credited',
    amount_cents: f.amountCents,
    balance_after_cents: f.balanceAfterCents,
    reference: f.topupId,
    sandbox: f.sandbox,
    created_at: iso(f.at),
  });
  return found;
}

/**
 * A refund or dispute of a card top-up (actors/principal/chargebacks.ts): its path against what the charge gave back
 * before. Never more than the charge, refunds in the processor's increments, a dispute withheld once and closed once,
 * the open disputes counted right.
 */
function chargebackPath(state: AuditState, seq: number, f: ChargebackFact, p: PrincipalMoney): Violation[] {
  const problems: string[] = [];
  if (f.sandbox) problems.push('a sandbox principal has no card top-ups to take back');
  if (!Number.isInteger(f.amountCents) || f.amountCents < 0) problems.push(`it moves ${f.amountCents} cents`);
  if (!p.charges) p.charges = new Map();
  let c = p.charges.get(f.chargeId);
  if (!c) {
    c = { paymentIntentId: f.paymentIntentId, chargeCents: f.chargeCents, refundedCents: 0, disputes: new Map() };
    p.charges.set(f.chargeId, c);
  } else if (c.paymentIntentId !== f.paymentIntentId || c.chargeCents !== f.chargeCents)
    problems.push(`it names the charge as ${f.chargeCents} cents of ${f.paymentIntentId}, earlier facts otherwise`);
  let taken = c.refundedCents;
  for (const d of c.disputes.values()) if (d.state !== 'won') taken += d.amountCents;
  const moved = chargebackMovedCents(f);
  let takes = 0;
  const dispute = f.type === 'topup_refunded' ? undefined : c.disputes.get(f.disputeId);
  switch (f.type) {
    case 'topup_refunded':
      if (f.amountCents <= 0) problems.push('a refund debits a positive amount');
      if (f.refundedCents !== c.refundedCents + f.amountCents)
        problems.push(
          `refunded ${f.refundedCents} cents in all, after ${c.refundedCents} and a debit of ${f.amountCents}`,
        );
      c.refundedCents += f.amountCents;
      takes = f.amountCents;
      p.reversedCents += f.amountCents;
      break;
    case 'topup_disputed':
      if (dispute) problems.push(`dispute ${f.disputeId} withheld again (it is ${dispute.state})`);
      if (f.amountCents <= 0) problems.push('a dispute withholds a positive amount');
      c.disputes.set(f.disputeId, { amountCents: f.amountCents, state: 'open' });
      takes = f.amountCents;
      p.withheldCents += f.amountCents;
      p.openDisputes++;
      break;
    case 'topup_dispute_closed':
      if (f.wasWithheld) {
        if (dispute?.state !== 'open' || dispute.amountCents !== f.amountCents)
          problems.push(`dispute ${f.disputeId} closes ${f.amountCents} cents it did not withhold open`);
        p.withheldCents -= f.amountCents;
        p.openDisputes--;
        if (f.outcome !== 'won') p.reversedCents += f.amountCents;
      } else {
        if (dispute) problems.push(`dispute ${f.disputeId} was seen open, yet closes as never withheld`);
        if (f.outcome === 'won' && f.amountCents !== 0) problems.push('a dispute won unseen moves money');
        if (f.outcome === 'lost') {
          takes = f.amountCents;
          p.reversedCents += f.amountCents;
        }
      }
      c.disputes.set(f.disputeId, { amountCents: f.amountCents, state: f.outcome });
      break;
  }
  if (taken + takes > c.chargeCents)
    problems.push(`takes back ${taken + takes} cents of a ${c.chargeCents}-cent charge`);
  if (f.openDisputes !== p.openDisputes)
    problems.push(`says ${f.openDisputes} disputes are open; the facts say ${p.openDisputes}`);
  // Its ledger entry (storage/ledger-projection.ts): none for a dispute won before it was seen open.
  if (!(f.type === 'topup_dispute_closed' && f.outcome === 'won' && !f.wasWithheld))
    state.entries.set(seq, {
      stream_seq: seq,
      id: f.id,
      principal_id: f.principalId,
      type: f.type === 'topup_dispute_closed' ? (f.outcome === 'won' ? 'dispute_won' : 'dispute_lost') : f.type,
      amount_cents: moved,
      balance_after_cents: f.balanceAfterCents,
      reference: f.topupId,
      sandbox: f.sandbox,
      created_at: iso(f.at),
    });
  if (problems.length === 0) return [];
  return [
    {
      kind: 'chargeback_path',
      subject: `charge ${f.chargeId}`,
      message: `LEDGER seq ${seq} (${f.type}): ${problems.join('; ')}`,
    },
  ];
}

/** An order is held once, for a whole number of cents. */
function escrowHeldOnce(state: AuditState, seq: number, f: FactOf<'escrow_held'>, p: PrincipalMoney): Violation[] {
  if (state.orders.has(f.orderId))
    return [{ kind: 'order_path', subject: `order ${f.orderId}`, message: `held again at LEDGER seq ${seq}` }];
  const found: Violation[] = [];
  if (!Number.isInteger(f.priceCents) || f.priceCents < 0)
    found.push({ kind: 'order_path', subject: `order ${f.orderId}`, message: `held for ${f.priceCents} cents` });
  p.heldCents += f.priceCents;
  state.orders.set(f.orderId, {
    principalId: f.principalId,
    sandbox: f.sandbox,
    heldSeq: seq,
    priceCents: f.priceCents,
    listingId: f.listingId,
    artifactId: f.artifactId,
    sellerPrincipalId: f.sellerPrincipalId,
    agentId: f.agentId,
    floor: f.floor,
    subscriptionId: f.subscriptionId ?? null,
    settlement: null,
    row: {
      id: f.orderId,
      buyer_principal_id: f.principalId,
      buyer_agent_id: f.agentId,
      listing_id: f.listingId,
      artifact_id: f.artifactId,
      edition_id: f.editionId,
      seller_principal_id: f.sellerPrincipalId,
      subscription_id: f.subscriptionId ?? null,
      escrow_cents: f.priceCents,
      floor: f.floor,
      formats: f.formats,
      idempotency_key: f.idempotency?.key ?? '',
      request_hash: f.idempotency?.requestHash ?? '',
      price_snapshot_id: f.priceSnapshotId,
      sandbox: f.sandbox,
      held_seq: seq,
      held_fact_id: f.id,
      held_balance_after_cents: f.balanceAfterCents,
      created_at: iso(f.at),
    },
  });
  return found;
}

/**
 * A hold resolves once, released or refunded (never both, never twice), with the held order's terms, by the
 * settlement rule; a release accrues the price to the seller.
 */
function escrowResolvesOnce(
  state: AuditState,
  seq: number,
  f: FactOf<'escrow_released' | 'escrow_refunded'>,
  p: PrincipalMoney,
): Violation[] {
  const order = state.orders.get(f.orderId);
  const subject = `order ${f.orderId}`;
  const outcome = f.type === 'escrow_released' ? 'released' : 'auto_refunded';
  if (!order) return [{ kind: 'order_path', subject, message: `${outcome} at LEDGER seq ${seq} but never held` }];
  if (order.settlement)
    return [
      {
        kind: 'order_path',
        subject,
        message: `${outcome} at LEDGER seq ${seq} after it was settled at seq ${order.settlement.seq}`,
      },
    ];
  const found: Violation[] = [];
  const terms: [string, unknown, unknown][] = [
    ['principalId', order.principalId, f.principalId],
    ['priceCents', order.priceCents, f.priceCents],
    ['listingId', order.listingId, f.listingId],
    ['artifactId', order.artifactId, f.artifactId],
    ['sellerPrincipalId', order.sellerPrincipalId, f.sellerPrincipalId],
    ['agentId', order.agentId, f.agentId],
    ['floor', order.floor, f.floor],
    ['sandbox', order.sandbox, f.sandbox],
  ];
  // Settlement facts written before subscriptions existed do not name one.
  if (f.subscriptionId !== undefined) terms.push(['subscriptionId', order.subscriptionId, f.subscriptionId]);
  const changed = terms.filter(([, a, b]) => a !== b).map(([name]) => name);
  if (changed.length > 0)
    found.push({
      kind: 'order_path',
      subject,
      message: `${outcome} at LEDGER seq ${seq} with terms other than the held order's: ${changed.join(', ')}`,
    });
  // The settlement rule (actors/principal/settlement.ts): released when the report meets the floor, refunded when
  // it misses or when no report came (then without a report).
  const reason = f.type === 'escrow_refunded' ? (f.reason ?? 'floor_missed') : null;
  if (f.type === 'escrow_released' && !(f.meanEntailment >= order.floor))
    found.push({
      kind: 'order_path',
      subject,
      message: `released with a report (${f.meanEntailment}) below its floor ${order.floor}`,
    });
  if (reason === 'floor_missed' && !((f.meanEntailment ?? Number.NaN) < order.floor))
    found.push({
      kind: 'order_path',
      subject,
      message: `refunded for its floor with a report (${f.meanEntailment}) that meets it`,
    });
  if (reason === 'no_report' && f.reportDigest !== null)
    found.push({ kind: 'order_path', subject, message: 'refunded for want of a report, yet names one' });
  order.settlement = {
    seq,
    row: {
      state: outcome,
      report_digest: f.reportDigest,
      refund_reason: reason,
      settled_at: iso(f.at),
      settled_seq: seq,
      settled_fact_id: f.id,
      settled_balance_after_cents: f.balanceAfterCents,
    },
  };
  p.heldCents -= order.priceCents;
  if (f.type === 'escrow_refunded') return found;
  p.spentCents += order.priceCents;
  state.payouts.set(f.orderId, {
    seq,
    row: {
      id: f.id,
      order_id: f.orderId,
      seller_principal_id: f.sellerPrincipalId,
      listing_id: f.listingId,
      amount_cents: f.priceCents,
      state: 'accrued',
      sandbox: f.sandbox,
      stream_seq: seq,
      created_at: iso(f.at),
    },
  });
  if (!f.sandbox) sellerOf(state, f.sellerPrincipalId).accruals.push([seq, f.priceCents, f.principalId]);
  return found;
}

/**
 * A seller's transfer (actors/principal/billing.ts, actors/payments/payouts.ts) starts where the last one ended,
 * one at a time, moves the sum of the live accruals in its range, and pays none whose buyer had funds in dispute
 * at the sequence the run checked (docs/money.md, Payouts held).
 */
function payoutStarted(state: AuditState, seq: number, f: FactOf<'payout_started'>): Violation[] {
  const s = sellerOf(state, f.principalId);
  const problems: string[] = [];
  if (f.sandbox) problems.push('sandbox accruals are never transferred');
  if (s.inFlight) problems.push(`transfer ${s.inFlight.transferId} is still in flight`);
  if (f.fromSeq !== s.throughSeq)
    problems.push(`it starts after seq ${f.fromSeq}, the last one ended at ${s.throughSeq}`);
  if (!(f.throughSeq > f.fromSeq) || f.throughSeq >= seq)
    problems.push(`its range (${f.fromSeq}, ${f.throughSeq}] is not before it`);
  const owed = s.accruals.reduce((sum, [at, cents]) => (at > f.fromSeq && at <= f.throughSeq ? sum + cents : sum), 0);
  if (owed !== f.amountCents) problems.push(`it moves ${f.amountCents} cents, the accruals in its range are ${owed}`);
  // Transfers from before the payout-hold rule name no checked sequence.
  const checked = f.checkedThroughSeq;
  if (checked !== undefined) {
    if (checked < f.throughSeq || checked >= seq)
      problems.push(`it was checked at seq ${checked}, not between its range's end ${f.throughSeq} and itself`);
    for (const [at, , buyer] of s.accruals) {
      if (at > f.fromSeq && at <= f.throughSeq && disputedAt(state, buyer, checked))
        problems.push(`it pays the accrual at seq ${at}, whose buyer ${buyer} had funds in dispute at seq ${checked}`);
    }
  }
  s.inFlight = { transferId: f.transferId, amountCents: f.amountCents, fromSeq: f.fromSeq };
  s.throughSeq = f.throughSeq;
  state.transfers.set(f.transferId, {
    seq,
    finished: null,
    row: {
      id: f.transferId,
      seller_principal_id: f.principalId,
      account_id: f.accountId,
      amount_cents: f.amountCents,
      from_seq: f.fromSeq,
      through_seq: f.throughSeq,
    },
  });
  return problems.length > 0
    ? [{ kind: 'payout_path', subject: `transfer ${f.transferId}`, message: problems.join('; ') }]
    : [];
}

/** A transfer finishes once, as the one in flight; a failed one gives its range back. */
function payoutFinished(state: AuditState, seq: number, f: FactOf<'payout_finished'>): Violation[] {
  const s = sellerOf(state, f.principalId);
  if (s.inFlight?.transferId !== f.transferId || s.inFlight.amountCents !== f.amountCents)
    return [
      {
        kind: 'payout_path',
        subject: `transfer ${f.transferId}`,
        message: `finished at LEDGER seq ${seq} but it is not the transfer in flight`,
      },
    ];
  if (f.outcome === 'paid') s.paidCents += f.amountCents;
  else s.throughSeq = s.inFlight.fromSeq;
  s.inFlight = null;
  const t = state.transfers.get(f.transferId);
  if (t) t.finished = { seq, state: f.outcome, processorTransferId: f.processorTransferId };
  return [];
}
