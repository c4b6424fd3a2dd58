// Typed asks across the bus: an internal operation's request built with the body its row declares, and its reply
// read as the body its row's `reply` schema declares. The handler side is typed from the same row
// (contracts/handlers.ts: a handler of an operation with a reply schema must answer that body), so what one process
// sends and the other reads are checked by the compiler against one definition. This file is where a received reply
// is given its type; nothing else casts a reply.
import type { BusReply, BusRequest, Caller, Names } from './bus.ts';
import type { ReplyOf, RequestOf } from './handlers.ts';
import { type InternalOpId, type InternalOperationRow, internalOperations } from './internal.ts';

/** A refusal as it came back: assignable to a reply of any body, so a handler can pass it on as its own answer. */
export type Refusal = Extract<BusReply<never>, { ok: false }>;

/** What an ask comes back with: the typed body of an ok reply, or the refusal. */
export type Answer<Id extends InternalOpId> =
  | { ok: true; status: number; body: ReplyOf<Id> }
  | { ok: false; reply: Refusal };

/** An internal command or query (contracts/internal.ts), its body typed from its row. */
export function internalRequest<Id extends InternalOpId>(
  op: Id,
  body: RequestOf<Id>['body'],
  o: { requestId?: string; caller?: Caller | null } = {},
): BusRequest & { op: Id } {
  return { op, requestId: o.requestId ?? op, caller: o.caller ?? null, params: {}, query: {}, body };
}

/**
 * A reply read as the reply of operation `op`. The handler that sent it was typed to answer that body (its record is
 * checked against the same row), so the body is given the row's type here rather than re-validated on every call.
 */
export function answerOf<Id extends InternalOpId>(_op: Id, reply: BusReply): Answer<Id> {
  if (!reply.ok) return { ok: false, reply };
  return { ok: true, status: reply.status, body: reply.body as ReplyOf<Id> };
}

const rowsById = new Map<string, InternalOperationRow>(internalOperations.map((r) => [r.id, r]));

/** The subject an internal operation is sent to: its service's, or the actor's (by `actorId`) for an actor kind. */
export function subjectOf(names: Names, op: InternalOpId, actorId?: string): string {
  const row = rowsById.get(op);
  if (!row) throw new Error(`no internal operation ${op}`);
  const d = row.dispatch;
  if (d.to === 'service') return names.serviceSubject(d.service);
  if (actorId === undefined) throw new Error(`${op} is sent to a ${d.kind} actor: name its id`);
  return names.actorSubject(d.kind, actorId);
}
