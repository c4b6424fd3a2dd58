// The principal actor: owns one principal's credits. Its state is a fold of the facts on `<ns>.ledger.<id>`:
// available and held credits, and the idempotency records of the principal's mutating calls.
import assert from 'node:assert/strict';
import {
  type BusReply,
  type BusRequest,
  type CallRecordedFact,
  type CreditedFact,
  errorReply,
  type IdempotencyRecord,
  type LedgerFact,
  type Names,
  okReply,
  type TopUpResultT,
} from '../../contracts/index.ts';
import { catalogOps } from '../catalog/service.ts';
import { listingOps } from '../listing/listing.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { ActorBehaviour, Decision } from '../runtime/host.ts';
import { derivedId } from '../shared/ids.ts';

interface StoredReply {
  requestHash: string;
  reply: { status: number; body: unknown };
  atMs: number;
}

export interface PrincipalState {
  principalId: string;
  availableCents: number;
  heldCents: number;
  /** Everything ever credited (top-ups and grants), in cents. */
  creditedCents: number;
  /** Idempotency records by key, oldest first (facts arrive in time order), pruned after the retention window. */
  idempotency: Map<string, StoredReply>;
}

/** Internal command sent by the sandbox service at registration. */
export const grantSandboxCreditsOp = 'sandbox.grant';
export interface GrantSandboxCredits {
  registrationId: string;
  amountCents: number;
}

export interface PrincipalDeps {
  names: Names;
  clock: Clock;
  ids: IdSource;
  idempotencyRetentionMs: number;
}

export function principalBehaviour(d: PrincipalDeps): ActorBehaviour<PrincipalState, LedgerFact> {
  const replayOrConflict = (state: PrincipalState, req: BusRequest): BusReply | null => {
    if (!req.idempotency) return null;
    const stored = state.idempotency.get(req.idempotency.key);
    if (!stored) return null;
    if (stored.requestHash !== req.idempotency.requestHash) {
      return errorReply('idempotency_conflict', 'this Idempotency-Key was already used with a different request');
    }
    return { ok: true, status: stored.reply.status, body: stored.reply.body, replayed: true };
  };

  const credit = (
    state: PrincipalState,
    source: CreditedFact['source'],
    amountCents: number,
    idempotency: Omit<IdempotencyRecord, 'reply'>,
    sandbox: boolean,
    reply: { status: number; body: unknown },
  ): Decision<LedgerFact> => {
    const fact: CreditedFact = {
      type: 'credited',
      id: d.ids.uuid(),
      at: d.clock.nowIso(),
      principalId: state.principalId,
      sandbox,
      source,
      amountCents,
      topupId: d.ids.uuid(),
      balanceAfterCents: state.availableCents + amountCents,
      idempotency: { ...idempotency, reply },
    };
    return { fact, reply: okReply(reply.status, reply.body) };
  };

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
      type: 'call_recorded',
      id: d.ids.uuid(),
      at: d.clock.nowIso(),
      principalId: state.principalId,
      sandbox: req.caller!.sandbox,
      balanceAfterCents: state.availableCents,
      op: req.op,
      idempotency: {
        key: req.idempotency!.key,
        requestHash: req.idempotency!.requestHash,
        agentId: req.caller!.agentId,
        reply: { status: reply.status, body: reply.body },
      },
    };
    return { fact, reply: okReply(reply.status, reply.body) };
  };

  return {
    kind: 'principal',
    stream: d.names.streams.ledger.name,
    factSubject: (id) => d.names.ledgerSubject(id),
    initial: (principalId) => ({
      principalId,
      availableCents: 0,
      heldCents: 0,
      creditedCents: 0,
      idempotency: new Map(),
    }),

    apply(state, fact) {
      assert.equal(fact.principalId, state.principalId, 'fact on the wrong principal subject');
      switch (fact.type) {
        case 'credited':
          assert(Number.isInteger(fact.amountCents) && fact.amountCents > 0, 'credit must be positive cents');
          state.availableCents += fact.amountCents;
          state.creditedCents += fact.amountCents;
          break;
        case 'call_recorded':
          break;
      }
      assert.equal(state.availableCents, fact.balanceAfterCents, 'fold and fact disagree on the balance');
      assert(state.availableCents >= 0 && state.heldCents >= 0, 'negative credits after a fact');
      const atMs = Date.parse(fact.at);
      if (fact.idempotency) {
        const { key, requestHash, reply } = fact.idempotency;
        state.idempotency.delete(key);
        state.idempotency.set(key, { requestHash, reply, atMs });
      }
      // Prune from the oldest end; the map is in fact order, so this stops at the first fresh record.
      for (const [key, rec] of state.idempotency) {
        if (rec.atMs >= atMs - d.idempotencyRetentionMs) break;
        state.idempotency.delete(key);
      }
      return state;
    },

    decide(state, req) {
      const earlier = replayOrConflict(state, req);
      if (earlier) return { reply: earlier };
      const forward = forwarded(req);
      if (forward) {
        return {
          call: forward,
          // Record successes only: a refusal changed nothing, so running it again under the same key is harmless.
          next: (reply: BusReply) => (reply.ok ? recordCall(state, req, reply) : { reply }),
        };
      }
      switch (req.op) {
        case 'getBalance':
          return { reply: okReply(200, { balance_cents: state.availableCents, currency: 'credit' }) };
        case 'topUp': {
          const caller = req.caller!;
          if (!caller.sandbox) {
            return {
              reply: errorReply(
                'not_found',
                'live top-ups through the payment processor are not available in this version; use a sandbox token',
              ),
            };
          }
          const amountCents = (req.body as { credits: number }).credits * 100;
          const body: TopUpResultT = { status: 'credited', amount_cents: amountCents, sandbox: true };
          return credit(
            state,
            'sandbox_topup',
            amountCents,
            { key: req.idempotency!.key, requestHash: req.idempotency!.requestHash, agentId: caller.agentId },
            true,
            { status: 201, body },
          );
        }
        case grantSandboxCreditsOp: {
          const g = req.body as GrantSandboxCredits;
          const key = `sandbox-grant:${g.registrationId}`;
          const stored = state.idempotency.get(key);
          if (stored) return { reply: okReply(stored.reply.status, stored.reply.body) };
          if (g.amountCents === 0) return { reply: okReply(200, { balance_cents: state.availableCents }) };
          return credit(state, 'sandbox_grant', g.amountCents, { key, requestHash: key, agentId: '' }, true, {
            status: 200,
            body: { balance_cents: state.availableCents + g.amountCents },
          });
        }
        default:
          return { reply: errorReply('not_found', `the principal actor has no operation ${req.op}`) };
      }
    },

    toSnapshot: (s) => ({ ...s, idempotency: [...s.idempotency] }),
    fromSnapshot: (data) => {
      const s = data as Omit<PrincipalState, 'idempotency'> & { idempotency: [string, StoredReply][] };
      return { ...s, idempotency: new Map(s.idempotency) };
    },
  };
}
