// The principal's mandate: the spending and quality policy that binds all its agents (per-item cap, minimum trust,
// floor and judge filters, the price above which a purchase waits for approval). Setting one replaces the current one; changing one writes the changed record; revoking stops every
// purchase until a new mandate is set. Earlier mandates stay in the principal's history.
import {
  errorReply,
  type LedgerFact,
  type MandateRecord,
  okReply,
  pageLimits,
  type RequestOf,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { derivedId } from '../shared/ids.ts';
import { badCursor, decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { currentMandate, type PrincipalState } from './state.ts';
import { keyOf, recordOf } from './idempotency.ts';

const mandateResource = (m: MandateRecord, current: boolean) => ({ ...m, current });

type MandateChange = { type: 'mandate_set'; mandate: MandateRecord } | { type: 'mandate_revoked'; mandateId: string };
type MandateCommand = RequestOf<'createMandate' | 'changeMandate' | 'revokeMandate'>;

/** A mandate command's outcome: the fact (with its idempotency record) and the mandate `m` as the reply. */
function answered(
  d: PrincipalDeps,
  state: PrincipalState,
  req: MandateCommand,
  m: MandateRecord,
  change: MandateChange,
): Decision<LedgerFact> {
  const reply = { status: 201, body: mandateResource(m, true) };
  const base = factBase(d, state.principalId, req.caller.sandbox, state.availableCents);
  const idempotency = recordOf(req, req.caller.agentId, reply);
  const fact: LedgerFact = { ...base, ...change, idempotency };
  return { fact, reply: okReply(reply.status, reply.body) };
}

export function createMandate(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'createMandate'>,
): Decision<LedgerFact> {
  const b = req.body;
  const m: MandateRecord = {
    id: derivedId(state.principalId, 'mandate', keyOf(req).key),
    perItemCapCents: b.per_item_cap_cents,
    minTrust: b.min_trust ?? 0,
    minFloor: b.min_floor ?? 0,
    minJudgeVersion: b.min_judge_version ?? null,
    minJudgeSpecificity: b.min_judge_specificity ?? null,
    rejectOpenJudgeErrata: b.reject_open_judge_errata ?? false,
    approvalAboveCents: b.approval_above_cents ?? null,
    revoked: false,
    createdAt: d.clock.nowIso(),
  };
  return answered(d, state, req, m, { type: 'mandate_set', mandate: m });
}

/** Decide on the principal's current mandate, if the path names it (any other is not found). */
function onCurrent(
  state: PrincipalState,
  mandateId: string,
  decide: (current: MandateRecord) => Decision<LedgerFact>,
): Decision<LedgerFact> {
  const current = currentMandate(state);
  if (!current || current.id !== mandateId) {
    return { reply: errorReply('not_found', "no such mandate is the principal's current one") };
  }
  return decide(current);
}

export function changeMandate(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'changeMandate'>) {
  return onCurrent(state, req.params.mandate_id, (current) => {
    if (current.revoked) {
      return { reply: errorReply('mandate_revoked', 'a revoked mandate cannot change; set a new one') };
    }
    const b = req.body;
    const m: MandateRecord = {
      ...current,
      perItemCapCents: b.per_item_cap_cents ?? current.perItemCapCents,
      minTrust: b.min_trust ?? current.minTrust,
      minFloor: b.min_floor ?? current.minFloor ?? 0,
      minJudgeVersion: b.min_judge_version === undefined ? current.minJudgeVersion : b.min_judge_version,
      minJudgeSpecificity:
        b.min_judge_specificity === undefined ? (current.minJudgeSpecificity ?? null) : b.min_judge_specificity,
      rejectOpenJudgeErrata: b.reject_open_judge_errata ?? current.rejectOpenJudgeErrata,
      approvalAboveCents:
        b.approval_above_cents === undefined ? (current.approvalAboveCents ?? null) : b.approval_above_cents,
    };
    return answered(d, state, req, m, { type: 'mandate_set', mandate: m });
  });
}

export function revokeMandate(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'revokeMandate'>) {
  return onCurrent(state, req.params.mandate_id, (current) => {
    if (current.revoked) return { reply: okReply(201, mandateResource(current, true)) };
    const m = { ...current, revoked: true };
    return answered(d, state, req, m, { type: 'mandate_revoked', mandateId: current.id });
  });
}

/** The principal's mandates, the current one first, paged by position. */
export function getMandates(state: PrincipalState, req: RequestOf<'getMandates'>): Decision<LedgerFact> {
  let offset = 0;
  if (req.query.cursor !== undefined) {
    const o = decodeNumberCursor('mandates', req.query.cursor);
    if (o === null) return { reply: badCursor('mandates') };
    offset = o;
  }
  const limit = req.query.limit ?? pageLimits.default;
  const newestFirst = [...state.mandates].reverse();
  const items = newestFirst.slice(offset, offset + limit).map((m) => mandateResource(m, m === newestFirst[0]));
  const more = offset + limit < newestFirst.length;
  return { reply: okReply(200, { items, next_cursor: more ? encodeCursor('mandates', offset + limit) : null }) };
}
