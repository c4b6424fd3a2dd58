// Handler registries are checked against the operation tables when a process starts: every available operation
// dispatched to a service or actor kind has a handler there, and no handler serves an operation dispatched
// elsewhere. The real registries pass; each way of breaking one is refused with a message naming the operation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  authService,
  catalogService,
  listingBehaviour,
  principalBehaviour,
  sandboxService,
} from '../../actors/index.ts';
import { assertHandlers, internalOperations, names, operations } from '../../contracts/index.ts';

// Registries are checked, not run: deps a service reads while it builds its handlers, and nothing else.
const deps = { config: {}, clock: { nowMs: () => 0, nowIso: () => new Date(0).toISOString() } } as never;
const registries = [
  [{ to: 'service', service: 'catalog' }, catalogService(deps)],
  [{ to: 'service', service: 'auth' }, authService(deps)],
  [{ to: 'service', service: 'sandbox' }, sandboxService(deps)],
  [{ to: 'actor', kind: 'principal' }, principalBehaviour({ names: names('unit') } as never).handlers],
  [{ to: 'actor', kind: 'listing' }, listingBehaviour({ names: names('unit') } as never).handlers],
] as const;

test('[SPINE-HANDLERS] every service and actor registry covers exactly its available operations', () => {
  for (const [target, handlers] of registries) assert.doesNotThrow(() => assertHandlers(target, handlers, 'registry'));
});

test('[SPINE-HANDLERS] a missing handler, a stray one, or an operation made available without one refuses to start', () => {
  const catalog = { to: 'service', service: 'catalog' } as const;
  const { getOffer: _, ...missing } = catalogService(deps);
  assert.throws(() => assertHandlers(catalog, missing, 'the catalog service'), /no handler for getOffer/);
  const stray = { ...catalogService(deps), getBalance: async () => ({ ok: true, status: 200, body: null }) };
  assert.throws(() => assertHandlers(catalog, stray, 'the catalog service'), /getBalance is not an operation/);
  const principal = { to: 'actor', kind: 'principal' } as const;
  // An available operation routed to the principal actor, whose handler is missing.
  const { redeliverEvent: _r, ...handlers } = principalBehaviour({ names: names('unit') } as never).handlers;
  assert.throws(
    () => assertHandlers(principal, handlers, 'the principal actor', [...operations, ...internalOperations]),
    /no handler for redeliverEvent/,
  );
});
