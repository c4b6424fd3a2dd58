// Handler registries: each service and actor kind registers its handlers as a record keyed by operation id, typed
// from the operation's schemas, and the record is checked against both tables when the process starts. An
// operation marked available with no handler refuses to start; a handler for an operation not dispatched there does
// too. Nothing is found missing at the first request.
import assert from 'node:assert/strict';
import type { Static, TSchema } from 'typebox';
import type { ActorKind, BusReply, BusRequest, Caller, ServiceName } from './bus.ts';
import { type InternalOperationRow, internalOperations } from './internal.ts';
import { operations, type TableOperation } from './operations.ts';

/** Where a handler runs: a stateless service, or an actor kind. */
export type Target = { to: 'service'; service: ServiceName } | { to: 'actor'; kind: ActorKind };

type AnyOperation = TableOperation | InternalOperationRow;

/** Every operation, table and internal, dispatched to `T`. */
export type OperationsOf<T extends Target> = Extract<AnyOperation, { dispatch: T }>;

type StaticOr<S, Default> = S extends TSchema ? Static<S> : Default;

/**
 * A request as its handler sees it: `op`, `caller`, `params`, `query` and `body` typed from the operation's row.
 * The caller is present for operations that need a token (the gateway verified it) and internal commands that carry
 * the caller they act for; null otherwise, and null on a signed-link route called with a link instead of a token.
 */
export type OpRequest<Op> = Omit<BusRequest, 'op' | 'caller' | 'params' | 'query' | 'body'> & {
  op: Op extends { id: infer Id } ? Id : never;
  caller: Op extends { scope: null } | { caller: false }
    ? null
    : Op extends { signedLink: true }
      ? Caller | null
      : Caller;
  params: (Op extends { params: infer P } ? StaticOr<P, unknown> : unknown) & Record<string, string>;
  query: (Op extends { query: infer Q } ? StaticOr<Q, unknown> : unknown) & Record<string, unknown>;
  body: Op extends { body: infer B } ? StaticOr<B, null> : null;
};

/** The request type of one operation by id. */
export type RequestOf<Id extends AnyOperation['id']> = OpRequest<Extract<AnyOperation, { id: Id }>>;

/** The reply body an internal operation's caller reads. */
export type ReplyOf<Id extends InternalOperationRow['id']> = StaticOr<
  Extract<InternalOperationRow, { id: Id }>['reply'],
  unknown
>;

/** The body an operation's ok reply holds: its row's `reply` schema for an internal operation that has one. */
export type ReplyBodyOf<Op> = Op extends { reply: infer R } ? StaticOr<R, unknown> : unknown;

/**
 * A record with a handler for every available operation of `T` (and, optionally, for operations specified but
 * not built yet). `H` maps an operation's request type (and the body its reply holds) to its handler's type.
 */
export type HandlerRecord<T extends Target, H extends { req: unknown; reply: unknown; fn: unknown }> = {
  [Op in Extract<OperationsOf<T>, { available: true }> as Op['id']]: HandlerFn<H, OpRequest<Op>, ReplyBodyOf<Op>>;
} & {
  [Op in Extract<OperationsOf<T>, { available: false }> as Op['id']]?: HandlerFn<H, OpRequest<Op>, ReplyBodyOf<Op>>;
};
type HandlerFn<H extends { req: unknown; reply: unknown; fn: unknown }, R, P> = (H & { req: R; reply: P })['fn'];

/** A service handler: the typed request in, one reply out (always exactly one), its body typed from the row. */
export interface ServiceHandler {
  req: unknown;
  reply: unknown;
  fn: (req: this['req']) => Promise<BusReply<this['reply']>>;
}
export type ServiceHandlers<S extends ServiceName> = HandlerRecord<{ to: 'service'; service: S }, ServiceHandler>;

function sameTarget(a: AnyOperation['dispatch'], b: Target): boolean {
  if (a.to !== b.to) return false;
  return a.to === 'service' ? b.to === 'service' && a.service === b.service : b.to === 'actor' && a.kind === b.kind;
}

const callerRequired = new Set(
  [...operations, ...internalOperations]
    // A signed-link route's request may come without a caller: its service checks the link instead.
    .filter((op) => ('scope' in op ? op.scope !== null && !('signedLink' in op && op.signedLink) : op.caller))
    .map((op) => op.id),
);

/** Whether an operation's handler acts for a caller, so a request without one is refused before it runs. */
export function requiresCaller(id: string): boolean {
  return (callerRequired as Set<string>).has(id);
}

/** Boot-time check of a registry against both tables. */
export function assertHandlers(
  target: Target,
  handlers: object,
  what: string,
  table: readonly { id: string; dispatch: AnyOperation['dispatch'] | { to: string }; available: boolean }[] = [
    ...operations,
    ...internalOperations,
  ],
): void {
  const ops = table.filter((op) => sameTarget(op.dispatch as AnyOperation['dispatch'], target));
  const record = handlers as Record<string, unknown>;
  for (const op of ops) {
    if (op.available) assert.equal(typeof record[op.id], 'function', `${what}: no handler for ${op.id}`);
  }
  for (const id of Object.keys(record)) {
    assert(
      ops.some((op) => op.id === id),
      `${what}: ${id} is not an operation dispatched to ${what}`,
    );
  }
}
