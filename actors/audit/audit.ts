// `assay audit` (docs/operations.md, Audit): replay the LEDGER and LISTINGS streams up to sequences fixed at the
// start, check the money and state invariants on the facts themselves, then check every projection row against the
// fact it comes from. The service keeps running: the streams are read with ordered consumers and PostgreSQL in one
// read-only snapshot, and facts appended after the start are outside the audit.
//
// The rules checked here are written from the facts' meaning (contracts/facts.ts, docs/money.md) and the actors'
// code that decides them (actors/principal/fold.ts, settlement.ts, billing.ts, actors/listing/listing.ts), not by
// running the fold again: an audit that reused the fold's asserts could only agree with them. Which facts make which
// events is the ledger service's rule, so event ids come from `eventRows`.
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import type { NatsConnection } from '@nats-io/nats-core';
import { factsRecorded, type LedgerFact, type ListingFact, type Names } from '../../contracts/index.ts';
import {
  type AuditSnapshot,
  checkpointsNow,
  replayStream,
  type Sql,
  streamLastSeq,
  withAuditSnapshot,
} from '../../storage/index.ts';
import { eventRows } from '../ledger/events.ts';
import type { Clock } from '../runtime/clock.ts';

export type ViolationKind =
  /** A stream message that is not JSON. */
  | 'fact_unreadable'
  /** Two facts of one stream with the same id. */
  | 'fact_id_duplicate'
  /** Two events (from the facts, or rows of the events store) with the same id. */
  | 'event_id_duplicate'
  /** A principal's facts on both sides of the sandbox line, or an order across it. */
  | 'sandbox_line'
  /** A fact's balanceAfterCents is not the balance before it plus what it moves, or a balance went negative. */
  | 'balance'
  /** A principal's credits in differ from available + held + spent. */
  | 'conservation'
  /** An order's facts are not held, then released or auto_refunded once, with the held order's terms. */
  | 'order_path'
  /** A transfer of a seller's accruals that is not the next range, not their sum, or finished out of turn. */
  | 'payout_path'
  /** A listing's facts are not created, repriced while live, unlisted once. */
  | 'listing_path'
  /** A fact at or below the audited sequence has no row where its projection puts one. */
  | 'row_missing'
  /** A row no fact at or below the audited sequence explains. */
  | 'row_unexpected'
  /** A row whose columns differ from its fact's. */
  | 'row_differs'
  /** A principal's events are not numbered 1, 2, 3, ... in stream order. */
  | 'event_sequence'
  /** A projection set a fact aside (assay parked-facts). */
  | 'parked_fact'
  /** A projection's checkpoint did not reach the audited sequence within the wait. */
  | 'projection_behind';

export interface Violation {
  kind: ViolationKind;
  /** What it is about: `order <id>`, `principal <id>`, `ledger_entries seq <n>`, ... */
  subject: string;
  message: string;
  /** For row_differs: each column that differs. */
  differences?: { field: string; expected: unknown; actual: unknown }[];
}

interface SideTotals {
  principals: number;
  creditedCents: number;
  availableCents: number;
  heldCents: number;
  spentCents: number;
  /** Released to sellers, by the facts. */
  releasedCents: number;
  /** Accrued to sellers, by the payouts rows. */
  accruedCents: number;
  /** Paid to sellers by finished transfers (live only). */
  paidCents: number;
}

export interface AuditReport {
  startedAt: string;
  tookMs: number;
  streams: { stream: string; throughSeq: number; factsRead: number }[];
  projections: { name: string; checkpoint: number; auditedThroughSeq: number }[];
  money: { sandbox: SideTotals; live: SideTotals };
  orders: { total: number; held: number; released: number; refunded: number };
  events: { expected: number; rowsChecked: number };
  listings: number;
  rowsChecked: Record<string, number>;
  violationCount: number;
  /** The first `violationsListedMax` violations (violationCount says how many there are). */
  violations: Violation[];
}

export interface AuditOptions {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  clock: Clock;
  /** How long to wait for each projection's checkpoint to reach the audited sequence. */
  waitForProjectionsMs: number;
  violationsListedMax?: number;
}

/** Fields of an order as its held fact has it, and its settlement once one is read. */
interface ExpectedOrder {
  row: Record<string, unknown>;
  principalId: string;
  sandbox: boolean;
  heldSeq: number;
  priceCents: number;
  listingId: string;
  artifactId: string;
  sellerPrincipalId: string;
  agentId: string;
  floor: number;
  subscriptionId: string | null;
  settlement: { seq: number; row: Record<string, unknown> } | null;
}

interface PrincipalMoney {
  sandbox: boolean;
  creditedCents: number;
  availableCents: number;
  heldCents: number;
  spentCents: number;
}

interface SellerPayouts {
  /** Live accruals as [stream seq, cents], in stream order. */
  accruals: [number, number][];
  throughSeq: number;
  inFlight: { transferId: string; amountCents: number; fromSeq: number } | null;
  paidCents: number;
}

interface ExpectedTransfer {
  seq: number;
  row: Record<string, unknown>;
  finished: { seq: number; state: string; processorTransferId: string | null } | null;
}

interface ListingHistory {
  facts: { seq: number; fact: ListingFact }[];
}

type ExpectedEvent = { sourceSeq: number; row: Record<string, unknown> };

const iso = (s: string) => (s.length === 24 && s.endsWith('Z') ? s : new Date(s).toISOString());

/** A row's value in the form expected values are kept in: dates as ISO strings. */
const plain = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

function differences(expected: Record<string, unknown>, actual: Record<string, unknown>) {
  const out: { field: string; expected: unknown; actual: unknown }[] = [];
  for (const [field, want] of Object.entries(expected)) {
    const got = plain(actual[field]);
    if (!isDeepStrictEqual(want, got)) out.push({ field, expected: want, actual: got });
  }
  return out;
}

export async function runAudit(o: AuditOptions): Promise<AuditReport> {
  const startedMs = performance.now();
  const startedAt = o.clock.nowIso();
  const listedMax = o.violationsListedMax ?? 1000;
  const violations: Violation[] = [];
  let violationCount = 0;
  const violate = (v: Violation) => {
    violationCount++;
    if (violations.length < listedMax) violations.push(v);
  };
  /** A fact id is used once in its stream; a repeat is a violation, the first use is remembered. */
  const noteFactId = (seen: Set<string>, id: string, stream: string, seq: number) => {
    if (seen.has(id))
      violate({
        kind: 'fact_id_duplicate',
        subject: `fact ${id}`,
        message: `${stream} seq ${seq} repeats the id of an earlier fact`,
      });
    else seen.add(id);
  };

  const ledgerStream = o.names.streams.ledger.name;
  const listingsStream = o.names.streams.listings.name;
  // The audit's end, fixed now: facts appended while it runs are outside it.
  const ledgerThrough = await streamLastSeq(o.nc, ledgerStream);
  const listingsThrough = await streamLastSeq(o.nc, listingsStream);

  // ---- The LEDGER stream.
  const principals = new Map<string, PrincipalMoney>();
  const orders = new Map<string, ExpectedOrder>();
  const credits = new Map<number, Record<string, unknown>>();
  const payouts = new Map<string, { seq: number; row: Record<string, unknown> }>();
  const sellers = new Map<string, SellerPayouts>();
  const transfers = new Map<string, ExpectedTransfer>();
  const events = new Map<string, ExpectedEvent>();
  const factIds = new Set<string>();
  const sellerOf = (id: string) => {
    let s = sellers.get(id);
    if (!s) {
      s = { accruals: [], throughSeq: 0, inFlight: null, paidCents: 0 };
      sellers.set(id, s);
    }
    return s;
  };

  const ledgerRead = await replayStream<LedgerFact>(o.nc, ledgerStream, ledgerThrough, (seq, f, raw) => {
    if (f === null || typeof f !== 'object' || typeof f.type !== 'string') {
      violate({
        kind: 'fact_unreadable',
        subject: `LEDGER seq ${seq}`,
        message: `not a fact: ${(raw || JSON.stringify(f)).slice(0, 200)}`,
      });
      return;
    }
    if (f.type === 'escrow_held' && f.settled) {
      const t = f.settled.type;
      if ((t !== 'escrow_released' && t !== 'escrow_refunded') || typeof f.settled.id !== 'string') {
        violate({
          kind: 'fact_unreadable',
          subject: `LEDGER seq ${seq}`,
          message: `a hold settled in its own commit names no settlement: ${JSON.stringify(f.settled).slice(0, 200)}`,
        });
        return;
      }
    }
    // A hold settled in the same commit records two transitions, each checked as its own fact.
    for (const r of factsRecorded(f)) {
      noteFactId(factIds, r.id, 'LEDGER', seq);
      ledgerFact(seq, r);
    }
    let made: ReturnType<typeof eventRows>;
    try {
      made = eventRows([{ seq, fact: f }]);
    } catch (err) {
      violate({ kind: 'fact_unreadable', subject: `LEDGER seq ${seq}`, message: (err as Error).message });
      return;
    }
    for (const e of made) {
      if (events.has(e.id)) {
        violate({
          kind: 'event_id_duplicate',
          subject: `event ${e.id}`,
          message: `LEDGER seq ${seq} makes an event whose id an earlier fact's event has`,
        });
        continue;
      }
      events.set(e.id, {
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
  });

  function ledgerFact(seq: number, f: LedgerFact) {
    let p = principals.get(f.principalId);
    if (!p) {
      p = { sandbox: f.sandbox, creditedCents: 0, availableCents: 0, heldCents: 0, spentCents: 0 };
      principals.set(f.principalId, p);
    } else if (p.sandbox !== f.sandbox) {
      violate({
        kind: 'sandbox_line',
        subject: `principal ${f.principalId}`,
        message: `LEDGER seq ${seq} (${f.type}) is ${f.sandbox ? 'sandbox' : 'live'}, the principal's earlier facts are not`,
      });
    }
    // What the fact moves from available credits, by the money rules.
    let movedCents = 0;
    switch (f.type) {
      case 'credited':
        if (!Number.isInteger(f.amountCents) || f.amountCents <= 0)
          violate({ kind: 'balance', subject: `fact ${f.id}`, message: `a credit of ${f.amountCents} cents` });
        movedCents = f.amountCents;
        p.creditedCents += f.amountCents;
        credits.set(seq, {
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
        break;
      case 'escrow_held':
        movedCents = -f.priceCents;
        held(seq, f, p);
        break;
      case 'escrow_released':
      case 'escrow_refunded':
        movedCents = settled(seq, f, p);
        break;
      case 'payout_started':
      case 'payout_finished':
        payout(seq, f);
        break;
      default:
        break;
    }
    const expectedCents = p.availableCents + movedCents;
    if (f.balanceAfterCents !== expectedCents) {
      violate({
        kind: 'balance',
        subject: `principal ${f.principalId}`,
        message: `LEDGER seq ${seq} (${f.type}) says the balance is ${f.balanceAfterCents} cents; the balance before it plus what it moves is ${expectedCents}`,
      });
    }
    // Go on from what the fact says, so one wrong fact is reported once.
    p.availableCents = f.balanceAfterCents;
    if (p.availableCents < 0 || p.heldCents < 0)
      violate({
        kind: 'balance',
        subject: `principal ${f.principalId}`,
        message: `after LEDGER seq ${seq}: available ${p.availableCents}, held ${p.heldCents} cents (negative)`,
      });
  }

  function held(seq: number, f: Extract<LedgerFact, { type: 'escrow_held' }>, p: PrincipalMoney) {
    if (orders.has(f.orderId)) {
      violate({ kind: 'order_path', subject: `order ${f.orderId}`, message: `held again at LEDGER seq ${seq}` });
      return;
    }
    if (!Number.isInteger(f.priceCents) || f.priceCents < 0)
      violate({ kind: 'order_path', subject: `order ${f.orderId}`, message: `held for ${f.priceCents} cents` });
    p.heldCents += f.priceCents;
    orders.set(f.orderId, {
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
  }

  /** A settlement: checks its path and terms, and answers what it moves to available credits. */
  function settled(
    seq: number,
    f: Extract<LedgerFact, { type: 'escrow_released' | 'escrow_refunded' }>,
    p: PrincipalMoney,
  ): number {
    const order = orders.get(f.orderId);
    const subject = `order ${f.orderId}`;
    const outcome = f.type === 'escrow_released' ? 'released' : 'auto_refunded';
    if (!order) {
      violate({ kind: 'order_path', subject, message: `${outcome} at LEDGER seq ${seq} but never held` });
      return 0;
    }
    if (order.settlement) {
      violate({
        kind: 'order_path',
        subject,
        message: `${outcome} at LEDGER seq ${seq} after it was settled at seq ${order.settlement.seq}`,
      });
      return 0;
    }
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
      violate({
        kind: 'order_path',
        subject,
        message: `${outcome} at LEDGER seq ${seq} with terms other than the held order's: ${changed.join(', ')}`,
      });
    // The settlement rule (actors/principal/settlement.ts): released when the report meets the floor, refunded when
    // it misses or when no report came (then without a report).
    const reason = f.type === 'escrow_refunded' ? (f.reason ?? 'floor_missed') : null;
    if (f.type === 'escrow_released' && !(f.meanEntailment >= order.floor))
      violate({
        kind: 'order_path',
        subject,
        message: `released with a report (${f.meanEntailment}) below its floor ${order.floor}`,
      });
    if (reason === 'floor_missed' && !((f.meanEntailment ?? Number.NaN) < order.floor))
      violate({
        kind: 'order_path',
        subject,
        message: `refunded for its floor with a report (${f.meanEntailment}) that meets it`,
      });
    if (reason === 'no_report' && f.reportDigest !== null)
      violate({ kind: 'order_path', subject, message: 'refunded for want of a report, yet names one' });
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
    if (f.type === 'escrow_refunded') return order.priceCents;
    p.spentCents += order.priceCents;
    payouts.set(f.orderId, {
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
    if (!f.sandbox) sellerOf(f.sellerPrincipalId).accruals.push([seq, f.priceCents]);
    return 0;
  }

  /** A seller's transfers (actors/principal/billing.ts, actors/payments/payouts.ts). */
  function payout(seq: number, f: Extract<LedgerFact, { type: 'payout_started' | 'payout_finished' }>) {
    const s = sellerOf(f.principalId);
    const subject = `transfer ${f.transferId}`;
    if (f.type === 'payout_started') {
      const problems: string[] = [];
      if (f.sandbox) problems.push('sandbox accruals are never transferred');
      if (s.inFlight) problems.push(`transfer ${s.inFlight.transferId} is still in flight`);
      if (f.fromSeq !== s.throughSeq)
        problems.push(`it starts after seq ${f.fromSeq}, the last one ended at ${s.throughSeq}`);
      if (!(f.throughSeq > f.fromSeq) || f.throughSeq >= seq)
        problems.push(`its range (${f.fromSeq}, ${f.throughSeq}] is not before it`);
      const owed = s.accruals.reduce(
        (sum, [at, cents]) => (at > f.fromSeq && at <= f.throughSeq ? sum + cents : sum),
        0,
      );
      if (owed !== f.amountCents)
        problems.push(`it moves ${f.amountCents} cents, the accruals in its range are ${owed}`);
      if (problems.length > 0) violate({ kind: 'payout_path', subject, message: problems.join('; ') });
      s.inFlight = { transferId: f.transferId, amountCents: f.amountCents, fromSeq: f.fromSeq };
      s.throughSeq = f.throughSeq;
      transfers.set(f.transferId, {
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
      return;
    }
    if (s.inFlight?.transferId !== f.transferId || s.inFlight.amountCents !== f.amountCents) {
      violate({
        kind: 'payout_path',
        subject,
        message: `finished at LEDGER seq ${seq} but it is not the transfer in flight`,
      });
      return;
    }
    if (f.outcome === 'paid') s.paidCents += f.amountCents;
    else s.throughSeq = s.inFlight.fromSeq;
    s.inFlight = null;
    const t = transfers.get(f.transferId);
    if (t) t.finished = { seq, state: f.outcome, processorTransferId: f.processorTransferId };
  }

  // ---- The LISTINGS stream.
  const listings = new Map<string, ListingHistory>();
  const listingFactIds = new Set<string>();
  const listingsRead = await replayStream<ListingFact>(o.nc, listingsStream, listingsThrough, (seq, f, raw) => {
    if (f === null || typeof f !== 'object' || typeof f.type !== 'string') {
      violate({
        kind: 'fact_unreadable',
        subject: `LISTINGS seq ${seq}`,
        message: `not a fact: ${(raw || JSON.stringify(f)).slice(0, 200)}`,
      });
      return;
    }
    noteFactId(listingFactIds, f.id, 'LISTINGS', seq);
    let h = listings.get(f.listingId);
    const subject = `listing ${f.listingId}`;
    // The listing actor's rules: created once; repriced only while live; unlisted once (unlisting an unlisted
    // listing answers without a fact).
    const state = h ? listingAt(h, Number.POSITIVE_INFINITY)?.state : undefined;
    if (f.type === 'listing_created' && h) {
      violate({ kind: 'listing_path', subject, message: `created again at LISTINGS seq ${seq}` });
      return;
    }
    if (f.type !== 'listing_created' && !h) {
      violate({ kind: 'listing_path', subject, message: `${f.type} at LISTINGS seq ${seq} before it was created` });
      return;
    }
    if (f.type !== 'listing_created' && state !== 'live')
      violate({ kind: 'listing_path', subject, message: `${f.type} at LISTINGS seq ${seq} while ${state}` });
    if (f.type !== 'listing_unlisted' && (!Number.isInteger(f.priceCents) || f.priceCents < 0))
      violate({ kind: 'listing_path', subject, message: `priced at ${f.priceCents} cents` });
    if (!h) {
      h = { facts: [] };
      listings.set(f.listingId, h);
    }
    h.facts.push({ seq, fact: f });
  });

  // ---- The facts alone: conservation per principal, orders across the sandbox line, transfers per seller.
  const side = (): SideTotals => ({
    principals: 0,
    creditedCents: 0,
    availableCents: 0,
    heldCents: 0,
    spentCents: 0,
    releasedCents: 0,
    accruedCents: 0,
    paidCents: 0,
  });
  const money = { sandbox: side(), live: side() };
  for (const [id, p] of principals) {
    if (p.creditedCents !== p.availableCents + p.heldCents + p.spentCents)
      violate({
        kind: 'conservation',
        subject: `principal ${id}`,
        message: `credits in ${p.creditedCents} cents, but available ${p.availableCents} + held ${p.heldCents} + spent ${p.spentCents} = ${p.availableCents + p.heldCents + p.spentCents}`,
      });
    const t = p.sandbox ? money.sandbox : money.live;
    t.principals++;
    t.creditedCents += p.creditedCents;
    t.availableCents += p.availableCents;
    t.heldCents += p.heldCents;
    t.spentCents += p.spentCents;
    t.releasedCents += p.spentCents;
  }
  for (const [id, s] of sellers) {
    money.live.paidCents += s.paidCents;
    const accrued = s.accruals.reduce((sum, [, cents]) => sum + cents, 0);
    if (s.paidCents > accrued)
      violate({
        kind: 'payout_path',
        subject: `seller ${id}`,
        message: `paid ${s.paidCents} cents of ${accrued} accrued`,
      });
  }
  const orderCounts = { total: orders.size, held: 0, released: 0, refunded: 0 };
  for (const [id, order] of orders) {
    const st = order.settlement?.row.state;
    if (st === 'released') orderCounts.released++;
    else if (st === 'auto_refunded') orderCounts.refunded++;
    else orderCounts.held++;
    const listing = listings.get(order.listingId);
    const listingSandbox =
      listing?.facts[0]?.fact.type === 'listing_created' ? listing.facts[0].fact.sandbox : undefined;
    if (listingSandbox !== undefined && listingSandbox !== order.sandbox)
      violate({
        kind: 'sandbox_line',
        subject: `order ${id}`,
        message: `a ${order.sandbox ? 'sandbox' : 'live'} order of a ${listingSandbox ? 'sandbox' : 'live'} listing`,
      });
  }

  // ---- The projections: wait (briefly) until each has reached the audited sequence, then read one snapshot.
  const projections = [
    { name: `principal_facts:${ledgerStream}`, through: ledgerThrough },
    { name: `events:${ledgerStream}`, through: ledgerThrough },
    { name: `listings:${listingsStream}`, through: listingsThrough },
  ];
  const waitUntil = performance.now() + o.waitForProjectionsMs;
  for (;;) {
    const now = await checkpointsNow(o.sql);
    if (projections.every((p) => (now.get(p.name) ?? 0) >= p.through)) break;
    if (performance.now() >= waitUntil) break;
    await sleep(100);
  }

  const rowsChecked: Record<string, number> = {};
  const counted = (table: string, n: number) => {
    rowsChecked[table] = (rowsChecked[table] ?? 0) + n;
  };
  const projected = await withAuditSnapshot(o.sql, async (snap) => {
    const horizon = (name: string, through: number) => Math.min(through, snap.checkpoints.get(name) ?? 0);
    const out = projections.map((p) => {
      const checkpoint = snap.checkpoints.get(p.name) ?? 0;
      if (checkpoint < p.through)
        violate({
          kind: 'projection_behind',
          subject: `projection ${p.name}`,
          message: `its checkpoint ${checkpoint} did not reach the audited sequence ${p.through} within ${o.waitForProjectionsMs} ms; its rows are checked through ${checkpoint}`,
        });
      return { name: p.name, checkpoint, auditedThroughSeq: Math.min(checkpoint, p.through) };
    });
    const factsH = horizon(projections[0]!.name, ledgerThrough);
    const eventsH = horizon(projections[1]!.name, ledgerThrough);
    const listingsH = horizon(projections[2]!.name, listingsThrough);
    // Everything after the audited sequence is outside the audit: facts appended since it started.
    const snapshotPastEnd = (snap.checkpoints.get(projections[0]!.name) ?? 0) > ledgerThrough;

    for (const parked of await snap.parked()) {
      const p = projections.find((x) => x.name === parked.projection);
      if (!p || parked.stream_seq > p.through) continue;
      violate({
        kind: 'parked_fact',
        subject: `projection ${parked.projection}`,
        message: `the fact at seq ${parked.stream_seq} was set aside: ${parked.error}`,
      });
    }
    await checkLedgerEntries(snap, factsH);
    await checkOrders(snap, factsH);
    await checkPayouts(snap, factsH);
    await checkTransfers(snap, factsH, snapshotPastEnd);
    await checkEvents(snap, eventsH);
    await checkListings(snap, listingsH);
    return out;
  });

  async function checkLedgerEntries(snap: AuditSnapshot, h: number) {
    const seen = new Set<number>();
    for await (const chunk of snap.ledgerEntries()) {
      for (const r of chunk) {
        if (r.stream_seq > h) continue;
        counted('ledger_entries', 1);
        const want = credits.get(r.stream_seq);
        const subject = `ledger_entries seq ${r.stream_seq}`;
        if (!want || seen.has(r.stream_seq)) {
          violate({
            kind: 'row_unexpected',
            subject,
            message: `no credit fact at LEDGER seq ${r.stream_seq} makes it`,
          });
          continue;
        }
        seen.add(r.stream_seq);
        rowDiffers(subject, want, r as unknown as Record<string, unknown>);
      }
    }
    for (const [seq, want] of credits) {
      if (seq <= h && !seen.has(seq))
        violate({
          kind: 'row_missing',
          subject: `ledger_entries seq ${seq}`,
          message: `the credit ${String(want.id)} has no entry`,
        });
    }
  }

  function rowDiffers(subject: string, want: Record<string, unknown>, row: Record<string, unknown>) {
    const d = differences(want, row);
    if (d.length > 0)
      violate({
        kind: 'row_differs',
        subject,
        message: `${d.map((x) => `${x.field}: fact says ${JSON.stringify(x.expected)}, row has ${JSON.stringify(x.actual)}`).join('; ')}`,
        differences: d,
      });
  }

  async function checkOrders(snap: AuditSnapshot, h: number) {
    const seen = new Set<string>();
    const heldState = {
      state: 'held',
      report_digest: null,
      refund_reason: null,
      settled_at: null,
      settled_seq: null,
      settled_fact_id: null,
      settled_balance_after_cents: null,
    };
    for await (const chunk of snap.orders()) {
      for (const r of chunk) {
        if (r.held_seq > h) continue;
        counted('orders', 1);
        const subject = `order ${r.id}`;
        const want = orders.get(r.id);
        if (!want || want.heldSeq > h) {
          violate({
            kind: 'row_unexpected',
            subject,
            message: 'no held fact at or below the audited sequence makes it',
          });
          continue;
        }
        seen.add(r.id);
        // The order as of the audited sequence; a row settled by a later fact is judged as held.
        const expected = want.settlement && want.settlement.seq <= h ? want.settlement.row : heldState;
        const row = r as unknown as Record<string, unknown>;
        const asOf = r.settled_seq !== null && r.settled_seq > h ? { ...row, ...heldState } : row;
        rowDiffers(subject, { ...want.row, ...expected }, asOf);
      }
    }
    for (const [id, want] of orders) {
      if (want.heldSeq <= h && !seen.has(id))
        violate({ kind: 'row_missing', subject: `order ${id}`, message: `held at LEDGER seq ${want.heldSeq}, no row` });
    }
  }

  async function checkPayouts(snap: AuditSnapshot, h: number) {
    const seen = new Set<string>();
    for await (const chunk of snap.payouts()) {
      for (const r of chunk) {
        if (r.stream_seq > h) continue;
        counted('payouts', 1);
        (r.sandbox ? money.sandbox : money.live).accruedCents += r.amount_cents;
        const subject = `payout of order ${r.order_id}`;
        const want = payouts.get(r.order_id);
        if (!want || want.seq > h) {
          violate({
            kind: 'row_unexpected',
            subject,
            message: 'no release at or below the audited sequence accrues it',
          });
          continue;
        }
        seen.add(r.order_id);
        rowDiffers(subject, want.row, r as unknown as Record<string, unknown>);
      }
    }
    for (const [orderId, want] of payouts) {
      if (want.seq <= h && !seen.has(orderId))
        violate({
          kind: 'row_missing',
          subject: `payout of order ${orderId}`,
          message: `released at LEDGER seq ${want.seq}, nothing accrued to the seller`,
        });
    }
  }

  async function checkTransfers(snap: AuditSnapshot, h: number, snapshotPastEnd: boolean) {
    const seen = new Set<string>();
    for await (const chunk of snap.transfers()) {
      for (const r of chunk) {
        const subject = `payout_transfers ${r.id}`;
        const want = transfers.get(r.id);
        if (!want) {
          // Its fact may come after the audited sequence (a row does not say where its fact is).
          if (!snapshotPastEnd)
            violate({ kind: 'row_unexpected', subject, message: 'no payout_started fact makes it' });
          continue;
        }
        if (want.seq > h) continue;
        counted('payout_transfers', 1);
        seen.add(r.id);
        const finished = want.finished && want.finished.seq <= h ? want.finished : null;
        const expected: Record<string, unknown> = { ...want.row };
        // A transfer still in flight at the audited sequence may have finished since.
        if (finished || r.state === 'pending') {
          expected.state = finished?.state ?? 'pending';
          expected.processor_transfer_id = finished?.processorTransferId ?? null;
        }
        rowDiffers(subject, expected, r as unknown as Record<string, unknown>);
      }
    }
    for (const [id, want] of transfers) {
      if (want.seq <= h && !seen.has(id))
        violate({
          kind: 'row_missing',
          subject: `payout_transfers ${id}`,
          message: `started at LEDGER seq ${want.seq}, no row`,
        });
    }
  }

  async function checkEvents(snap: AuditSnapshot, h: number) {
    const seen = new Set<string>();
    let principal = '';
    let next = 1;
    let lastSource = 0;
    for await (const chunk of snap.events()) {
      for (const r of chunk) {
        if (r.principal_id !== principal) {
          principal = r.principal_id;
          next = 1;
          lastSource = 0;
        }
        if (r.source_seq > h) continue;
        counted('events', 1);
        const subject = `event ${r.id}`;
        // Numbered 1, 2, 3, ... per principal in stream order: the events at or below the audited sequence come first.
        if (r.seq !== next || r.source_seq < lastSource)
          violate({
            kind: 'event_sequence',
            subject,
            message: `principal ${r.principal_id}'s event ${r.seq} (from LEDGER seq ${r.source_seq}) should be number ${next}, after seq ${lastSource}`,
          });
        next = r.seq + 1;
        lastSource = r.source_seq;
        if (seen.has(r.id)) {
          violate({ kind: 'event_id_duplicate', subject, message: 'the events store holds it twice' });
          continue;
        }
        seen.add(r.id);
        const want = events.get(r.id);
        if (!want || want.sourceSeq > h) {
          violate({ kind: 'row_unexpected', subject, message: `no fact at or below the audited sequence makes it` });
          continue;
        }
        rowDiffers(subject, want.row, r as unknown as Record<string, unknown>);
      }
    }
    for (const [id, want] of events) {
      if (want.sourceSeq <= h && !seen.has(id))
        violate({
          kind: 'row_missing',
          subject: `event ${id}`,
          message: `LEDGER seq ${want.sourceSeq} makes it; no row`,
        });
    }
  }

  async function checkListings(snap: AuditSnapshot, h: number) {
    const seen = new Set<string>();
    for await (const chunk of snap.listings()) {
      for (const r of chunk) {
        const subject = `listing ${r.id}`;
        const history = listings.get(r.id);
        const want = history ? listingAt(history, h) : null;
        if (!want) {
          // Created after the audited sequence, or by no fact at all.
          if (r.last_seq <= h)
            violate({
              kind: 'row_unexpected',
              subject,
              message: 'no listing_created fact at or below the audited sequence makes it',
            });
          continue;
        }
        counted('listings', 1);
        seen.add(r.id);
        const row = r as unknown as Record<string, unknown>;
        // Changed by a fact after the audited sequence: what that fact set is outside the audit.
        const expected: Record<string, unknown> =
          r.last_seq > h
            ? Object.fromEntries(
                Object.entries(want).filter(([k]) => !['price_cents', 'state', 'updated_at', 'last_seq'].includes(k)),
              )
            : want;
        rowDiffers(subject, expected, row);
      }
    }
    for (const [id, history] of listings) {
      if (!seen.has(id) && listingAt(history, h))
        violate({ kind: 'row_missing', subject: `listing ${id}`, message: 'created, no row' });
    }
  }

  const tookMs = Math.round(performance.now() - startedMs);
  return {
    startedAt,
    tookMs,
    streams: [
      { stream: ledgerStream, throughSeq: ledgerThrough, factsRead: ledgerRead },
      { stream: listingsStream, throughSeq: listingsThrough, factsRead: listingsRead },
    ],
    projections: projected,
    money,
    orders: orderCounts,
    events: { expected: events.size, rowsChecked: rowsChecked.events ?? 0 },
    listings: listings.size,
    rowsChecked,
    violationCount,
    violations,
  };
}

/** A listing's row as its facts at or below `h` make it (storage/listings.ts), or null before it was created. */
function listingAt(h: ListingHistory, through: number): Record<string, unknown> | null {
  let row: Record<string, unknown> | null = null;
  for (const { seq, fact: f } of h.facts) {
    if (seq > through) break;
    if (f.type === 'listing_created') {
      row = {
        id: f.listingId,
        artifact_id: f.artifactId,
        seller_principal_id: f.sellerPrincipalId,
        price_cents: f.priceCents,
        floor: f.floor,
        formats: f.formats,
        billing_interval_seconds: f.billing?.intervalSeconds ?? null,
        state: 'live',
        sandbox: f.sandbox,
        created_at: iso(f.at),
        updated_at: iso(f.at),
        last_seq: seq,
      };
      continue;
    }
    if (!row) continue;
    if (f.type === 'listing_repriced') row.price_cents = f.priceCents;
    else row.state = 'unlisted';
    row.updated_at = iso(f.at);
    row.last_seq = seq;
  }
  return row;
}
