// The principal actor: owns one principal's money and policy. Its state is a fold of the facts on
// `<ns>.ledger.<id>`: available, held and spent credits, the orders in escrow, the mandate that binds the
// principal's agents, and the idempotency records of the principal's mutating calls. Every command commits by one
// append; a purchase is one `escrow_held` fact, and settlement later appends `escrow_released` or
// `escrow_refunded` for it, exactly once.
import assert from 'node:assert/strict';
import {
  type BusReply,
  type BusRequest,
  type CallRecordedFact,
  type Caller,
  type CreditedFact,
  type EscrowHeldFact,
  errorReply,
  type IdempotencyRecord,
  type LedgerFact,
  type MandateRecord,
  type Names,
  okReply,
  type TopUpResultT,
} from '../../contracts/index.ts';
import { catalogOps } from '../catalog/service.ts';
import { listingOps } from '../listing/listing.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { ActorBehaviour, Decision } from '../runtime/host.ts';
import { derivedId, purchaseOrderId } from '../shared/ids.ts';
import { meetsFloor } from '../verification/report.ts';
import type { IdempotencyIndex, IndexedKey } from './idempotency-index.ts';
import type { Quotes } from './quotes.ts';

/**
 * A key the actor keeps in memory, packed into one string, `<seq> <atMs> <requestHash>`: one heap object for the
 * garbage collector instead of four. The reply is not kept: a replay reads the fact at `seq` (replays are rare).
 */
type HotRecord = string;
const hotRecord = (seq: number, atMs: number, requestHash: string): HotRecord => `${seq} ${atMs} ${requestHash}`;
function unpackHot(r: HotRecord): IndexedKey & { atMs: number } {
  const a = r.indexOf(' ');
  const b = r.indexOf(' ', a + 1);
  return { seq: Number(r.slice(0, a)), atMs: Number(r.slice(a + 1, b)), requestHash: r.slice(b + 1) };
}

type StoredReply = { status: number; body: unknown };

/** What a purchase answers, whether first run or replayed from its `escrow_held` fact. */
function purchaseReply(orderId: string, escrowCents: number, formats: ('md' | 'pdf')[]): StoredReply {
  return {
    status: 201,
    body: {
      order_id: orderId,
      state: 'held',
      escrow_cents: escrowCents,
      formats,
      poll: `GET /v1/orders, or watch order.state_changed events for order ${orderId}`,
    },
  };
}

/** The reply a fact's command gave: stored in the fact, or rebuilt from it (a purchase). */
function replyOf(fact: LedgerFact): StoredReply | null {
  if (fact.idempotency?.reply) return fact.idempotency.reply;
  if (fact.type === 'escrow_held') return purchaseReply(fact.orderId, fact.priceCents, fact.formats);
  return null;
}

interface HeldOrder {
  priceCents: number;
  floor: number;
  listingId: string;
  artifactId: string;
  sellerPrincipalId: string;
  agentId: string;
  sandbox: boolean;
}

export interface PrincipalState {
  principalId: string;
  availableCents: number;
  heldCents: number;
  spentCents: number;
  /** Everything ever credited (top-ups and grants), in cents: always available + held + spent. */
  creditedCents: number;
  /** Orders in escrow, by order id; an order leaves when it settles, so settling twice finds nothing to do. */
  held: Map<string, HeldOrder>;
  /** The current mandate last; earlier ones stay for the principal's history. */
  mandates: MandateRecord[];
  /**
   * The most recent idempotency records by key, oldest first (facts arrive in time order). A record leaves once
   * there are more than ASSAY_IDEMPOTENCY_HOT_KEYS or it is past the retention window, and only once the
   * idempotency index holds it.
   */
  idempotency: Map<string, HotRecord>;
  /** LEDGER sequence of the newest record that left memory; 0 if none has, and then memory alone knows every key. */
  evictedThroughSeq: number;
}

export const principalOps = {
  /** Internal: credits and a test mandate for a new sandbox principal (from the sandbox service). */
  grantSandbox: 'sandbox.grant',
  /** Internal: settle one held order with its edition's report (from the settlement worker). */
  settle: 'escrow.settle',
} as const;

export interface GrantSandbox {
  registrationId: string;
  amountCents: number;
  mandate: Omit<MandateRecord, 'createdAt'>;
}

export interface SettleCommand {
  orderId: string;
  reportDigest: string;
  meanEntailment: number;
}

/** The internal command that settles one held order, sent by the actor to itself or by the settlement sweeper. */
export function settleRequest(c: SettleCommand): BusRequest {
  return { op: principalOps.settle, requestId: `settle-${c.orderId}`, caller: null, params: {}, query: {}, body: c };
}

export interface PrincipalDeps {
  names: Names;
  clock: Clock;
  ids: IdSource;
  idempotencyRetentionMs: number;
  /** Idempotency records an actor keeps in memory; older ones are looked up in `index`. */
  hotKeysMax: number;
  index: IdempotencyIndex;
  /** A fact of this principal's by its LEDGER sequence, to replay its reply; null if it cannot be read. */
  loadFact(principalId: string, seq: number): Promise<LedgerFact | null>;
  quotes: Quotes;
}

const compareVersions = (a: string, b: string) => {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};

export function principalBehaviour(d: PrincipalDeps): ActorBehaviour<PrincipalState, LedgerFact> {
  const base = (state: PrincipalState, sandbox: boolean, balanceAfterCents = state.availableCents) => ({
    id: d.ids.uuid(),
    at: d.clock.nowIso(),
    principalId: state.principalId,
    sandbox,
    balanceAfterCents,
  });
  const record = (req: BusRequest, reply: { status: number; body: unknown }): IdempotencyRecord => ({
    key: req.idempotency!.key,
    requestHash: req.idempotency!.requestHash,
    agentId: req.caller!.agentId,
    reply,
  });
  const currentMandate = (s: PrincipalState) => s.mandates.at(-1) ?? null;
  const mandateResource = (m: MandateRecord, current: boolean) => ({ ...m, current });

  /**
   * The answer to a key used before: its stored reply replayed, or a conflict; null for a key never used. A key not
   * in memory is looked up in the index once any record has left memory. If the index cannot vouch for a miss (it
   * is behind the records that left, during a rebuild, or unreachable), the call is refused as retryable rather than
   * risk running twice.
   */
  async function replayOrConflict(state: PrincipalState, key: string, requestHash: string): Promise<BusReply | null> {
    const hot = state.idempotency.get(key);
    let used: IndexedKey | null = hot === undefined ? null : unpackHot(hot);
    if (!used && state.evictedThroughSeq > 0) {
      const cold = await d.index.lookup(state.principalId, key);
      if (!cold || (!cold.found && cold.indexedThroughSeq < state.evictedThroughSeq)) {
        return errorReply('unavailable', 'the idempotency index is catching up; retry with the same key', 1);
      }
      used = cold.found;
    }
    if (!used) return null;
    if (used.requestHash !== requestHash) {
      return errorReply('idempotency_conflict', 'this Idempotency-Key was already used with a different request');
    }
    const fact = await d.loadFact(state.principalId, used.seq);
    const reply = fact?.idempotency?.key === key ? replyOf(fact) : null;
    if (!reply) return errorReply('unavailable', 'the stored result could not be read; retry with the same key', 1);
    return { ok: true, status: reply.status, body: reply.body, replayed: true };
  }

  /** Seller operations whose state lives in the catalog or a listing actor: where to send them, with derived ids. */
  const forwarded = (req: BusRequest): { subject: string; request: BusRequest } | null => {
    const key = req.idempotency?.key;
    const caller = req.caller;
    if (!key || !caller) return null;
    const id = (what: string) => derivedId(caller.principalId, what, key);
    const catalog = d.names.serviceSubject('catalog');
    const listing = (listingId: string) => d.names.actorSubject('listing', listingId);
    switch (req.op) {
      case 'publishArtifact':
        return {
          subject: catalog,
          request: {
            ...req,
            op: catalogOps.publishArtifact,
            body: { artifactId: id('artifact'), editionId: id('edition'), request: req.body },
          },
        };
      case 'publishEdition':
        return {
          subject: catalog,
          request: {
            ...req,
            op: catalogOps.publishEdition,
            body: { artifactId: req.params.artifact_id, editionId: id('edition'), request: req.body },
          },
        };
      case 'createListing':
        return { subject: listing(id('listing')), request: { ...req, op: listingOps.create } };
      case 'repriceListing':
        return { subject: listing(req.params.listing_id!), request: { ...req, op: listingOps.reprice } };
      case 'unlistListing':
        return { subject: listing(req.params.listing_id!), request: { ...req, op: listingOps.unlist } };
      default:
        return null;
    }
  };

  const recordCall = (state: PrincipalState, req: BusRequest, reply: BusReply): Decision<LedgerFact> => {
    if (!reply.ok) return { reply };
    const fact: CallRecordedFact = {
      ...base(state, req.caller!.sandbox),
      type: 'call_recorded',
      op: req.op,
      idempotency: record(req, { status: reply.status, body: reply.body }),
    };
    return { fact, reply: okReply(reply.status, reply.body) };
  };

  /**
   * A purchase, with its refusals in this order (docs/purchases.md): listing not live or across the sandbox line,
   * formats not offered, price above max_price_cents, price above the mandate's cap, judge version below the
   * mandate's minimum or open judge errata it rejects, trust below min_trust, no live mandate, not enough credits.
   */
  async function purchase(state: PrincipalState, req: BusRequest, caller: Caller): Promise<Decision<LedgerFact>> {
    const body = req.body as { listing_id: string; formats: ('md' | 'pdf')[]; max_price_cents?: number };
    const quote = await d.quotes.listing(body.listing_id);
    const l = quote?.state;
    if (!quote || !l || l.state !== 'live' || l.sandbox !== caller.sandbox) {
      return { reply: errorReply('not_found', 'no live listing with this id') };
    }
    const missing = body.formats.filter((f) => !l.formats.includes(f));
    if (missing.length > 0) {
      return {
        reply: errorReply(
          'validation_failed',
          `this listing offers ${l.formats.join(', ')}, not ${missing.join(', ')}`,
        ),
      };
    }
    if (body.max_price_cents !== undefined && l.priceCents > body.max_price_cents) {
      return {
        reply: errorReply(
          'requote_required',
          `the live price is ${l.priceCents} cents, above max_price_cents ${body.max_price_cents}`,
        ),
      };
    }
    const m = currentMandate(state);
    const live = m && !m.revoked ? m : null;
    if (live && l.priceCents > live.perItemCapCents) {
      return {
        reply: errorReply(
          'mandate_exceeded',
          `the price ${l.priceCents} cents exceeds the mandate's per-item cap of ${live.perItemCapCents}`,
        ),
      };
    }
    const artifact = await d.quotes.artifact(l.artifactId);
    if (!artifact) return { reply: errorReply('not_found', 'the listed artifact no longer exists') };
    if (live?.minJudgeVersion && compareVersions(artifact.judgeVersion, live.minJudgeVersion) < 0) {
      return {
        reply: errorReply(
          'judge_version_rejected',
          `judged by ${artifact.judgeVersion}; the mandate requires ${live.minJudgeVersion} or later`,
        ),
      };
    }
    if (live?.rejectOpenJudgeErrata && artifact.openErrata) {
      return {
        reply: errorReply(
          'judge_version_rejected',
          `open judge errata affect judge ${artifact.judgeVersion}, and the mandate rejects them`,
        ),
      };
    }
    if (live && artifact.trustScore < live.minTrust) {
      return {
        reply: errorReply(
          'mandate_exceeded',
          `the artifact's trust ${artifact.trustScore} is below the mandate's min_trust ${live.minTrust}`,
        ),
      };
    }
    if (!live) {
      return {
        reply: errorReply('mandate_revoked', m ? "the principal's mandate is revoked" : 'the principal has no mandate'),
      };
    }
    if (state.availableCents < l.priceCents) {
      return {
        reply: errorReply(
          'insufficient_credits',
          `the price is ${l.priceCents} cents; ${state.availableCents} are available`,
        ),
      };
    }
    const orderId = purchaseOrderId(state.principalId, req.idempotency!.key);
    const reply = purchaseReply(orderId, l.priceCents, body.formats);
    // The hot path's facts are plain literals: spreading `base()` into them cost more than the rest of the decision.
    const fact: EscrowHeldFact = {
      id: d.ids.uuid(),
      at: d.clock.nowIso(),
      principalId: state.principalId,
      sandbox: caller.sandbox,
      balanceAfterCents: state.availableCents - l.priceCents,
      type: 'escrow_held',
      orderId,
      agentId: caller.agentId,
      listingId: l.id,
      artifactId: l.artifactId,
      editionId: artifact.editionId,
      sellerPrincipalId: l.sellerPrincipalId,
      priceCents: l.priceCents,
      formats: body.formats,
      floor: l.floor,
      priceSnapshotId: quote.snapshotId,
      subscriptionId: null,
      // No reply: the fact rebuilds it (replyOf).
      idempotency: { key: req.idempotency!.key, requestHash: req.idempotency!.requestHash, agentId: caller.agentId },
    };
    // The edition's report is known already (the usual case): settle right after the commit, in this mailbox.
    // Otherwise, or if this actor dies first, the settlement sweeper settles the order once the report exists.
    const followUp = artifact.report
      ? settleRequest({
          orderId,
          reportDigest: artifact.report.digest,
          meanEntailment: artifact.report.meanEntailment,
        })
      : undefined;
    return { fact, reply: okReply(reply.status, reply.body), followUp };
  }

  function settle(state: PrincipalState, c: SettleCommand): Decision<LedgerFact> {
    const order = state.held.get(c.orderId);
    // Unknown here means settled already (or never held): settling is idempotent by order id.
    if (!order) return { reply: okReply(200, { order_id: c.orderId, settled: false }) };
    const released = meetsFloor({ summary: { meanEntailment: c.meanEntailment } }, order.floor);
    const fact: LedgerFact = {
      id: d.ids.uuid(),
      at: d.clock.nowIso(),
      principalId: state.principalId,
      sandbox: order.sandbox,
      balanceAfterCents: released ? state.availableCents : state.availableCents + order.priceCents,
      type: released ? 'escrow_released' : 'escrow_refunded',
      orderId: c.orderId,
      priceCents: order.priceCents,
      listingId: order.listingId,
      artifactId: order.artifactId,
      sellerPrincipalId: order.sellerPrincipalId,
      agentId: order.agentId,
      reportDigest: c.reportDigest,
      meanEntailment: c.meanEntailment,
      floor: order.floor,
    };
    return { fact, reply: okReply(200, { order_id: c.orderId, settled: true, outcome: fact.type }) };
  }

  function mandateCommand(state: PrincipalState, req: BusRequest, caller: Caller): Decision<LedgerFact> {
    const current = currentMandate(state);
    const respond = (m: MandateRecord, fact: LedgerFact) => {
      const reply = { status: 201, body: mandateResource(m, true) };
      fact.idempotency = record(req, reply);
      return { fact, reply: okReply(reply.status, reply.body) };
    };
    if (req.op === 'createMandate') {
      const b = req.body as {
        per_item_cap_cents: number;
        min_trust?: number;
        min_judge_version?: string | null;
        reject_open_judge_errata?: boolean;
      };
      const m: MandateRecord = {
        id: derivedId(state.principalId, 'mandate', req.idempotency!.key),
        perItemCapCents: b.per_item_cap_cents,
        minTrust: b.min_trust ?? 0,
        minJudgeVersion: b.min_judge_version ?? null,
        rejectOpenJudgeErrata: b.reject_open_judge_errata ?? false,
        revoked: false,
        createdAt: d.clock.nowIso(),
      };
      return respond(m, { ...base(state, caller.sandbox), type: 'mandate_set', mandate: m });
    }
    if (!current || current.id !== req.params.mandate_id) {
      return { reply: errorReply('not_found', "no such mandate is the principal's current one") };
    }
    if (req.op === 'revokeMandate') {
      if (current.revoked) return { reply: okReply(201, mandateResource(current, true)) };
      return respond(
        { ...current, revoked: true },
        { ...base(state, caller.sandbox), type: 'mandate_revoked', mandateId: current.id },
      );
    }
    if (current.revoked)
      return { reply: errorReply('mandate_revoked', 'a revoked mandate cannot change; set a new one') };
    const b = req.body as {
      per_item_cap_cents?: number;
      min_trust?: number;
      min_judge_version?: string | null;
      reject_open_judge_errata?: boolean;
    };
    const m: MandateRecord = {
      ...current,
      ...(b.per_item_cap_cents === undefined ? {} : { perItemCapCents: b.per_item_cap_cents }),
      ...(b.min_trust === undefined ? {} : { minTrust: b.min_trust }),
      ...(b.min_judge_version === undefined ? {} : { minJudgeVersion: b.min_judge_version }),
      ...(b.reject_open_judge_errata === undefined ? {} : { rejectOpenJudgeErrata: b.reject_open_judge_errata }),
    };
    return respond(m, { ...base(state, caller.sandbox), type: 'mandate_set', mandate: m });
  }

  return {
    kind: 'principal',
    stream: d.names.streams.ledger.name,
    factSubject: (id) => d.names.ledgerSubject(id),
    initial: (principalId) => ({
      principalId,
      availableCents: 0,
      heldCents: 0,
      spentCents: 0,
      creditedCents: 0,
      held: new Map(),
      mandates: [],
      idempotency: new Map(),
      evictedThroughSeq: 0,
    }),

    apply(state, fact, seq) {
      assert.equal(fact.principalId, state.principalId, 'fact on the wrong principal subject');
      switch (fact.type) {
        case 'credited':
          assert(Number.isInteger(fact.amountCents) && fact.amountCents > 0, 'credit must be positive cents');
          state.availableCents += fact.amountCents;
          state.creditedCents += fact.amountCents;
          if (fact.mandate) state.mandates.push(fact.mandate);
          break;
        case 'escrow_held':
          assert(Number.isInteger(fact.priceCents) && fact.priceCents >= 0, 'price is whole cents');
          assert(!state.held.has(fact.orderId), 'an order is held once');
          state.availableCents -= fact.priceCents;
          state.heldCents += fact.priceCents;
          state.held.set(fact.orderId, {
            priceCents: fact.priceCents,
            floor: fact.floor,
            listingId: fact.listingId,
            artifactId: fact.artifactId,
            sellerPrincipalId: fact.sellerPrincipalId,
            agentId: fact.agentId,
            sandbox: fact.sandbox,
          });
          break;
        case 'escrow_released':
        case 'escrow_refunded': {
          const order = state.held.get(fact.orderId);
          assert(order && order.priceCents === fact.priceCents, 'only a held order settles, once');
          state.held.delete(fact.orderId);
          state.heldCents -= fact.priceCents;
          if (fact.type === 'escrow_released') state.spentCents += fact.priceCents;
          else state.availableCents += fact.priceCents;
          break;
        }
        case 'mandate_set': {
          const i = state.mandates.findIndex((m) => m.id === fact.mandate.id);
          if (i >= 0) state.mandates.splice(i, 1);
          state.mandates.push(fact.mandate);
          break;
        }
        case 'mandate_revoked': {
          const m = state.mandates.find((x) => x.id === fact.mandateId);
          assert(m, 'only a known mandate is revoked');
          m.revoked = true;
          break;
        }
        case 'call_recorded':
          break;
      }
      assert.equal(state.availableCents, fact.balanceAfterCents, 'fold and fact disagree on the balance');
      assert(state.availableCents >= 0 && state.heldCents >= 0, 'negative credits after a fact');
      assert.equal(
        state.creditedCents,
        state.availableCents + state.heldCents + state.spentCents,
        'credits in must equal available + held + spent',
      );
      const atMs = Date.parse(fact.at);
      if (fact.idempotency) {
        state.idempotency.delete(fact.idempotency.key);
        state.idempotency.set(fact.idempotency.key, hotRecord(seq, atMs, fact.idempotency.requestHash));
      }
      // Let records go from the oldest end (the map is in fact order) while there are too many or they are past
      // retention, but never one the index does not hold yet: until then memory is the only place it is known.
      const indexed = d.index.indexedThroughSeq();
      for (const [key, rec] of state.idempotency) {
        const old = unpackHot(rec);
        const over = state.idempotency.size > d.hotKeysMax || old.atMs < atMs - d.idempotencyRetentionMs;
        if (!over || old.seq > indexed) break;
        state.idempotency.delete(key);
        if (old.seq > state.evictedThroughSeq) state.evictedThroughSeq = old.seq;
      }
      return state;
    },

    async decide(state, req) {
      if (req.idempotency) {
        const earlier = await replayOrConflict(state, req.idempotency.key, req.idempotency.requestHash);
        if (earlier) return { reply: earlier };
      }
      const forward = forwarded(req);
      if (forward) {
        return {
          call: forward,
          // Record successes only: a refusal changed nothing, so running it again under the same key is harmless.
          next: (reply: BusReply) => (reply.ok ? recordCall(state, req, reply) : { reply }),
        };
      }
      const caller = req.caller;
      switch (req.op) {
        case 'getBalance':
          return { reply: okReply(200, { balance_cents: state.availableCents, currency: 'credit' }) };
        case 'getMandates': {
          const items = [...state.mandates].reverse().map((m, i) => mandateResource(m, i === 0));
          return { reply: okReply(200, { items, next_cursor: null }) };
        }
        case 'purchaseArtifact':
          return purchase(state, req, caller!);
        case 'createMandate':
        case 'changeMandate':
        case 'revokeMandate':
          return mandateCommand(state, req, caller!);
        case 'topUp': {
          if (!caller!.sandbox) {
            return {
              reply: errorReply(
                'not_found',
                'live top-ups through the payment processor are not available in this version; use a sandbox token',
              ),
            };
          }
          const amountCents = (req.body as { credits: number }).credits * 100;
          const reply = {
            status: 201,
            body: { status: 'credited', amount_cents: amountCents, sandbox: true } satisfies TopUpResultT,
          };
          const fact: CreditedFact = {
            ...base(state, true, state.availableCents + amountCents),
            type: 'credited',
            source: 'sandbox_topup',
            amountCents,
            topupId: d.ids.uuid(),
            idempotency: record(req, reply),
          };
          return { fact, reply: okReply(reply.status, reply.body) };
        }
        case principalOps.grantSandbox: {
          const g = req.body as GrantSandbox;
          const key = `sandbox-grant:${g.registrationId}`;
          const earlier = await replayOrConflict(state, key, key);
          // Answered as a first run: the sandbox service that asks is itself retrying.
          if (earlier) return { reply: earlier.ok ? okReply(earlier.status, earlier.body) : earlier };
          const mandate: MandateRecord = { ...g.mandate, createdAt: d.clock.nowIso() };
          const reply = { status: 200, body: { balance_cents: state.availableCents + g.amountCents, mandate } };
          const idempotency = { key, requestHash: key, agentId: '', reply };
          if (g.amountCents === 0) {
            return {
              fact: { ...base(state, true), type: 'mandate_set', mandate, idempotency },
              reply: okReply(200, reply.body),
            };
          }
          const fact: CreditedFact = {
            ...base(state, true, state.availableCents + g.amountCents),
            type: 'credited',
            source: 'sandbox_grant',
            amountCents: g.amountCents,
            topupId: g.registrationId,
            mandate,
            idempotency,
          };

          return { fact, reply: okReply(reply.status, reply.body) };
        }
        case principalOps.settle:
          return settle(state, req.body as SettleCommand);
        default:
          return { reply: errorReply('not_found', `the principal actor has no operation ${req.op}`) };
      }
    },

    toSnapshot: (s) => ({ ...s, held: [...s.held], idempotency: [...s.idempotency] }),
    fromSnapshot: (data) => {
      const s = data as Omit<PrincipalState, 'idempotency' | 'held'> & {
        idempotency: [string, HotRecord][];
        held: [string, HeldOrder][];
      };
      return { ...s, held: new Map(s.held), idempotency: new Map(s.idempotency) };
    },
    // 2: records carry their fact's sequence, not their reply.
    snapshotVersion: 2,
  };
}
