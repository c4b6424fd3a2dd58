// Subscriptions over real HTTP and the MCP SDK client, with the scheduler's clock in the test's hand: living
// listings billed in cycles (each an escrowed order, settled), failed cycles that pause, resuming, cancelling by
// either side, unlisting and repricing, refusals that change nothing, and two schedulers that never run a cycle twice.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Clock } from '../../actors/index.ts';
import pino from 'pino';
import { principalFactsOf } from '../../actors/index.ts';
import { startRoles } from '../../cli/roles.ts';
import { openPool, rebuildProjection } from '../../storage/index.ts';
import { registerSeller, registerWithScopes, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome } from '../support/mcp.ts';
import {
  type Agent,
  eventually,
  ledgerFacts,
  projectionsCaughtUp,
  startSystem,
  type TestSystem,
} from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

/** The clock of the principal actors and the scheduler: real time plus however far the test has moved it. */
let offsetMs = 0;
const clock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  nowIso: () => new Date(Date.now() + offsetMs).toISOString(),
};
const hour = 3600;
/** Move billing time one interval (an hour) on. */
const nextInterval = () => {
  offsetMs += hour * 1000;
};

let sys: TestSystem;
let seller: Agent;
const buyerScopes = ['read:artifact', 'read:trust', 'purchase', 'manage:mandate'];

before(async () => {
  sys = await startSystem({ ASSAY_SUBSCRIPTION_POLL_MS: '20' }, undefined, undefined, { clock });
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

const buyer = () => registerWithScopes(sys, buyerScopes);

let listings = 0;
/** A living listing (billed hourly) whose report has landed and meets its floor. */
async function livingListing(price: number, o: { good?: boolean; interval?: number } = {}) {
  const key = `living-${++listings}`;
  const plain = await verifiedListing(sys, seller.token, key, { price, good: o.good ?? true });
  // verifiedListing lists without billing; a living listing of the same artifact is a second listing.
  const l = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: {
      artifact_id: plain.artifactId,
      price_cents: price,
      floor: 0.7,
      formats: ['md'],
      billing: { interval_seconds: o.interval ?? hour },
    },
    key: `${key}-living`,
  });
  assert.equal(l.status, 201, JSON.stringify(l.body));
  return { listingId: l.body.id as string, plainListingId: plain.listingId, artifactId: plain.artifactId };
}

const subscribe = (a: Agent, listingId: string, key: string) =>
  sys.call('POST', '/v1/subscriptions', { token: a.token, body: { listing_id: listingId }, key });
const cancel = (a: Agent, id: string, key: string) =>
  sys.call('POST', `/v1/subscriptions/${id}/cancel`, { token: a.token, body: {}, key });
const subscriptions = async (a: Agent, role = 'buyer') =>
  (await sys.call('GET', `/v1/subscriptions?role=${role}&limit=100`, { token: a.token })).body.items as any[];
const subscription = async (a: Agent, id: string) => (await subscriptions(a)).find((s) => s.id === id);
const balance = async (a: Agent) =>
  (await sys.call('GET', '/v1/balance', { token: a.token })).body.balance_cents as number;
const orders = async (a: Agent) =>
  (await sys.call('GET', '/v1/orders?limit=200', { token: a.token })).body.items as any[];
const events = async (a: Agent) =>
  (await sys.call('GET', '/v1/events?limit=200', { token: a.token })).body.items as any[];

/** Wait until the buyer's view of the subscription shows `cycles` cycles run. */
const cyclesRun = (a: Agent, id: string, cycles: number) =>
  eventually(`cycle ${cycles} of ${id}`, async () => {
    const s = await subscription(a, id);
    return s && s.cycles >= cycles ? s : undefined;
  });

/** Escrow facts per (subscription, cycle) on the LEDGER stream: what proves a cycle billed at most once. */
async function cycleFacts() {
  const counts = new Map<string, number>();
  for (const { fact } of await ledgerFacts(sys)) {
    if (fact.type !== 'escrow_held' || !fact.subscription) continue;
    const k = `${fact.subscription.id}#${fact.subscription.cycle}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

test('[SUBS-CYCLES] a living listing bills in cycles: each an order with subscriptionId, settled; the balance moves by exactly the released cycles', async () => {
  const price = 700;
  const { listingId } = await livingListing(price);
  const b = await buyer();
  const start = await balance(b);
  const s = await subscribe(b, listingId, 'sub-1');
  assert.equal(s.status, 201, JSON.stringify(s.body));
  assert.equal(s.body.state, 'active');
  assert.equal(s.body.listingId, listingId);
  assert.equal(s.body.buyerPrincipalId, b.principalId);
  assert.equal(s.body.sellerPrincipalId, seller.principalId);
  assert.equal(s.body.role, 'buyer');
  assert.deepEqual(s.body.billing, { intervalSeconds: hour, priceCents: price });
  assert.equal(s.body.consecutiveFailures, 0);
  const id = s.body.id as string;

  // The first cycle runs at subscribe time; later ones when the scheduler's clock says they are due.
  const first = await cyclesRun(b, id, 1);
  assert.equal(first.lastCycle.outcome, 'held');
  assert.equal(first.lastCycle.number, 1);
  assert.equal(Date.parse(first.nextCycleAt) - Date.parse(s.body.nextCycleAt), hour * 1000);
  // Not due yet: nothing more happens however long the scheduler polls.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await subscription(b, id)).cycles, 1);
  nextInterval();
  await cyclesRun(b, id, 2);
  nextInterval();
  const third = await cyclesRun(b, id, 3);
  assert.equal(third.consecutiveFailures, 0);

  const cycleOrders = await eventually('three settled cycle orders', async () => {
    const o = (await orders(b)).filter((x) => x.subscriptionId === id);
    return o.length === 3 && o.every((x) => x.state === 'released') ? o : undefined;
  });
  assert.ok(cycleOrders.some((o) => o.id === third.lastCycle.orderId));
  assert.ok(cycleOrders.every((o) => o.escrowCents === price && o.listingId === listingId));
  assert.equal(await balance(b), start - 3 * price);

  // Subscribing again to an active subscription answers it as it is: no second subscription, no extra cycle.
  const again = await subscribe(b, listingId, 'sub-1-again');
  assert.equal(again.status, 201);
  assert.equal(again.body.id, id);
  assert.equal(again.body.cycles, 3);
  // A replay of the first call answers what it answered then.
  const replay = await subscribe(b, listingId, 'sub-1');
  assert.deepEqual(replay.body, s.body);
  assert.equal((await subscriptions(b)).length, 1);
  for (const [, n] of await cycleFacts()) assert.equal(n, 1);

  // Events: the subscription started (for the buyer and for the seller), and every cycle order changed state.
  const mine = await events(b);
  const started = mine.filter((e) => e.type === 'subscription.state_changed' && e.data.subscription_id === id);
  assert.deepEqual(
    started.map((e) => e.data.state),
    ['active'],
  );
  const orderEvents = mine.filter((e) => e.type === 'order.state_changed' && e.data.subscription_id === id);
  assert.equal(orderEvents.filter((e) => e.data.state === 'released').length, 3);
  const sellerEvents = await eventually('the seller sees the subscription start', async () => {
    const e = (await events(seller)).filter(
      (x) => x.type === 'subscription.state_changed' && x.data.subscription_id === id,
    );
    return e.length > 0 ? e : undefined;
  });
  assert.equal(sellerEvents[0].data.buyer_principal_id, b.principalId);

  // The seller sees subscriptions to its listings with role=seller; its own list as buyer is empty of them.
  const asSeller = (await subscriptions(seller, 'seller')).find((x) => x.id === id);
  assert.equal(asSeller.role, 'seller');
  assert.equal(asSeller.cycles, 3);
  assert.equal(
    (await subscriptions(seller)).find((x) => x.id === id),
    undefined,
  );
});

test('[SUBS-PAUSE] three failed cycles pause it without billing; subscribing again resumes it and the next success resets the count', async () => {
  const price = 500;
  const { listingId } = await livingListing(price);
  const b = await buyer();
  const s = await subscribe(b, listingId, 'pause-1');
  assert.equal(s.status, 201);
  const id = s.body.id as string;
  await cyclesRun(b, id, 1);
  const afterFirst = await balance(b);
  const mandate = (await sys.call('GET', '/v1/mandates', { token: b.token })).body.items[0];
  const revoked = await sys.call('POST', `/v1/mandates/${mandate.id}/revoke`, { token: b.token, body: {}, key: 'rv' });
  assert.equal(revoked.status, 201);

  for (let n = 2; n <= 4; n++) {
    nextInterval();
    const now = await cyclesRun(b, id, n);
    assert.equal(now.lastCycle.outcome, 'failed');
    assert.equal(now.lastCycle.errorCode, 'mandate_revoked');
    assert.equal(now.lastCycle.orderId, null);
    assert.equal(now.consecutiveFailures, n - 1);
    assert.equal(now.state, n === 4 ? 'paused' : 'active');
  }
  const paused = await subscription(b, id);
  assert.equal(paused.nextCycleAt, null);
  // Paused: no cycle however much time passes.
  nextInterval();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await subscription(b, id)).cycles, 4);
  assert.equal(await balance(b), afterFirst);
  assert.equal((await orders(b)).filter((o) => o.subscriptionId === id).length, 1);
  const failedEvents = (await events(b)).filter((e) => e.type === 'subscription.cycle_failed');
  assert.deepEqual(
    failedEvents.map((e) => [e.data.cycle, e.data.error_code]),
    [
      [2, 'mandate_revoked'],
      [3, 'mandate_revoked'],
      [4, 'mandate_revoked'],
    ],
  );

  // While the mandate stays revoked, subscribing again is refused by the first cycle's rule and resumes nothing.
  const refused = await subscribe(b, listingId, 'pause-2');
  assert.equal(refused.status, 403);
  assert.ok(isTypedError(refused.body, 'mandate_revoked'));
  assert.equal((await subscription(b, id)).state, 'paused');

  const m = await sys.call('POST', '/v1/mandates', { token: b.token, body: { per_item_cap_cents: 10_000 }, key: 'm2' });
  assert.equal(m.status, 201);
  const resumed = await subscribe(b, listingId, 'pause-3');
  assert.equal(resumed.status, 201);
  assert.equal(resumed.body.id, id);
  assert.equal(resumed.body.state, 'active');
  assert.equal(resumed.body.consecutiveFailures, 0);
  const fifth = await cyclesRun(b, id, 5);
  assert.equal(fifth.lastCycle.outcome, 'held');
  assert.equal(fifth.consecutiveFailures, 0);
  await eventually('the resumed cycle settles', async () =>
    (await balance(b)) === afterFirst - price ? true : undefined,
  );
});

test('[SUBS-CANCEL] the buyer and the seller can cancel (terminal; twice answers the same record); anyone else gets 404', async () => {
  const { listingId } = await livingListing(300);
  const b1 = await buyer();
  const b2 = await buyer();
  const stranger = await buyer();
  const one = (await subscribe(b1, listingId, 'c-1')).body;
  const two = (await subscribe(b2, listingId, 'c-2')).body;
  await cyclesRun(b1, one.id, 1);
  await cyclesRun(b2, two.id, 1);

  const byBuyer = await cancel(b1, one.id, 'cancel-1');
  assert.equal(byBuyer.status, 201);
  assert.equal(byBuyer.body.state, 'canceled');
  assert.equal(byBuyer.body.canceledBy, 'buyer');
  assert.equal(byBuyer.body.nextCycleAt, null);
  const twice = await cancel(b1, one.id, 'cancel-1b');
  assert.equal(twice.status, 201);
  assert.deepEqual({ ...twice.body }, { ...byBuyer.body });

  // The seller's cancel is found through the projection, so it waits until the subscription is projected.
  const bySeller = await eventually('the seller cancels', async () => {
    const r = await cancel(seller, two.id, 'cancel-2');
    return r.status === 201 ? r : undefined;
  });
  assert.equal(bySeller.body.canceledBy, 'seller');
  assert.equal(bySeller.body.role, 'seller');
  assert.equal((await subscription(b2, two.id)).state, 'canceled');

  const third = await cancel(stranger, two.id, 'cancel-3');
  assert.equal(third.status, 404);
  assert.ok(isTypedError(third.body, 'not_found'));
  const unknown = await cancel(b1, '00000000-0000-4000-8000-000000000000', 'cancel-4');
  assert.equal(unknown.status, 404);

  // No cycle after a cancel; a canceled subscription is never reused: subscribing again makes a new one.
  nextInterval();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await subscription(b1, one.id)).cycles, 1);
  assert.equal((await subscription(b2, two.id)).cycles, 1);
  const fresh = await subscribe(b1, listingId, 'c-1-new');
  assert.equal(fresh.status, 201);
  assert.notEqual(fresh.body.id, one.id);
  const states = (await subscriptions(b1)).map((s) => s.state).sort();
  assert.deepEqual(states, ['active', 'canceled']);
});

test('[SUBS-LISTING-CHANGES] unlisting cancels its subscriptions; a reprice applies from the next cycle, and one above the cap fails it', async () => {
  const { listingId } = await livingListing(400);
  const b = await buyer();
  const id = (await subscribe(b, listingId, 'lc-1')).body.id as string;
  await cyclesRun(b, id, 1);
  const cap = (await sys.call('GET', '/v1/mandates', { token: b.token })).body.items[0].perItemCapCents as number;

  const cheaper = await sys.call('POST', `/v1/listings/${listingId}/reprice`, {
    token: seller.token,
    body: { price_cents: 450 },
    key: 'lc-reprice-1',
  });
  assert.equal(cheaper.status, 201, JSON.stringify(cheaper.body));
  // The record shows the listing's live price once the reprice is projected.
  await eventually('the new price in the record', async () =>
    (await subscription(b, id)).billing.priceCents === 450 ? true : undefined,
  );
  nextInterval();
  await cyclesRun(b, id, 2);
  const cycleTwo = await eventually('cycle 2 order', async () =>
    (await orders(b)).find((o) => o.subscriptionId === id && o.escrowCents === 450),
  );
  assert.ok(cycleTwo);

  const dear = await sys.call('POST', `/v1/listings/${listingId}/reprice`, {
    token: seller.token,
    body: { price_cents: cap + 1 },
    key: 'lc-reprice-2',
  });
  assert.equal(dear.status, 201);
  nextInterval();
  const failed = await cyclesRun(b, id, 3);
  assert.equal(failed.lastCycle.outcome, 'failed');
  assert.equal(failed.lastCycle.errorCode, 'mandate_exceeded');

  const unlisted = await sys.call('POST', `/v1/listings/${listingId}/unlist`, {
    token: seller.token,
    body: {},
    key: 'lc-unlist',
  });
  assert.equal(unlisted.status, 201);
  const canceled = await eventually('the subscription is canceled', async () => {
    const s = await subscription(b, id);
    return s.state === 'canceled' ? s : undefined;
  });
  assert.equal(canceled.canceledBy, 'listing_unlisted');
  // A canceled subscription runs no more cycles.
  nextInterval();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await subscription(b, id)).cycles, 3);
});

describe('[SUBS-REFUSALS] refusals are typed and change nothing', () => {
  let b: Agent;
  let living: Awaited<ReturnType<typeof livingListing>>;
  let initial: { balance: number; subscriptions: any[]; orders: any[]; events: any[] };

  before(async () => {
    b = await buyer();
    living = await livingListing(200);
    await projectionsCaughtUp(sys);
    initial = {
      balance: await balance(b),
      subscriptions: await subscriptions(b),
      orders: await orders(b),
      events: await events(b),
    };
  });

  test('a listing that is not living is 422 validation_failed, saying why', async () => {
    const r = await subscribe(b, living.plainListingId, 'ref-1');
    assert.equal(r.status, 422);
    assert.ok(isTypedError(r.body, 'validation_failed'));
    assert.match(r.body.message, /not a living artifact/);
  });

  test('an unknown or unlisted listing, or one across the sandbox line, is 404', async () => {
    const unknown = await subscribe(b, '00000000-0000-4000-8000-000000000000', 'ref-2');
    assert.equal(unknown.status, 404);
    const gone = await livingListing(200);
    await sys.call('POST', `/v1/listings/${gone.listingId}/unlist`, {
      token: seller.token,
      body: {},
      key: 'ref-unlist',
    });
    const unlisted = await subscribe(b, gone.listingId, 'ref-3');
    assert.equal(unlisted.status, 404);
    assert.ok(isTypedError(unlisted.body, 'not_found'));
    const live = await mintToken(sys.config, { scopes: buyerScopes, sandbox: false });
    const across = await sys.call('POST', '/v1/subscriptions', {
      token: live,
      body: { listing_id: living.listingId },
      key: 'ref-4',
    });
    assert.equal(across.status, 404);
    assert.ok(isTypedError(across.body, 'not_found'));
  });

  test('bad bodies, extra properties, a missing key and a bad cancel body are 422', async () => {
    const extra = await sys.call('POST', '/v1/subscriptions', {
      token: b.token,
      body: { listing_id: living.listingId, interval_seconds: 5 },
      key: 'ref-5',
    });
    assert.equal(extra.status, 422);
    const missing = await sys.call('POST', '/v1/subscriptions', { token: b.token, body: {}, key: 'ref-6' });
    assert.equal(missing.status, 422);
    const notUuid = await sys.call('POST', '/v1/subscriptions', {
      token: b.token,
      body: { listing_id: 'x' },
      key: 'ref-7',
    });
    assert.equal(notUuid.status, 422);
    const noKey = await sys.call('POST', '/v1/subscriptions', {
      token: b.token,
      body: { listing_id: living.listingId },
    });
    assert.equal(noKey.status, 422);
    const badCancel = await sys.call('POST', '/v1/subscriptions/00000000-0000-4000-8000-000000000000/cancel', {
      token: b.token,
      body: { reason: 'x' },
      key: 'ref-8',
    });
    assert.equal(badCancel.status, 422);
    for (const r of [extra, missing, notUuid, noKey, badCancel]) assert.ok(isTypedError(r.body, 'validation_failed'));
  });

  test('a first cycle the mandate refuses (price above the per-item cap) creates nothing', async () => {
    const cap = (await sys.call('GET', '/v1/mandates', { token: b.token })).body.items[0].perItemCapCents as number;
    const dear = await livingListing(cap + 1);
    const r = await subscribe(b, dear.listingId, 'ref-9');
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'mandate_exceeded'));
  });

  test('nothing changed', async () => {
    // Read once the projections hold every fact the refusals could have appended.
    await projectionsCaughtUp(sys);
    assert.equal(await balance(b), initial.balance);
    assert.deepEqual(await subscriptions(b), initial.subscriptions);
    assert.deepEqual(await orders(b), initial.orders);
    assert.deepEqual(await events(b), initial.events);
  });
});

test('[SUBS-MCP] the MCP tools give the outcomes the REST routes give', async () => {
  const { listingId, plainListingId } = await livingListing(250);
  const b = await buyer();
  const { client } = await connectMcp(sys.baseUrl, b.token);
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    for (const t of ['subscribe_listing', 'get_subscriptions', 'cancel_subscription']) assert.ok(tools.includes(t), t);
    const sub = outcome(
      await client.callTool({
        name: 'subscribe_listing',
        arguments: { listing_id: listingId, idempotency_key: 'mcp-1' },
      }),
    );
    assert.equal(sub.status, 201);
    assert.equal(sub.body.state, 'active');
    const notLiving = outcome(
      await client.callTool({
        name: 'subscribe_listing',
        arguments: { listing_id: plainListingId, idempotency_key: 'mcp-2' },
      }),
    );
    assert.equal(notLiving.status, 422);
    assert.equal(notLiving.body.code, 'validation_failed');
    await cyclesRun(b, sub.body.id, 1);
    const list = outcome(await client.callTool({ name: 'get_subscriptions', arguments: {} }));
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.items, await subscriptions(b));
    const stranger = await buyer();
    const { client: other } = await connectMcp(sys.baseUrl, stranger.token);
    const foreign = outcome(
      await other.callTool({
        name: 'cancel_subscription',
        arguments: { subscription_id: sub.body.id, idempotency_key: 'mcp-3' },
      }),
    );
    assert.equal(foreign.status, 404);
    await other.close();
    const canceled = outcome(
      await client.callTool({
        name: 'cancel_subscription',
        arguments: { subscription_id: sub.body.id, idempotency_key: 'mcp-4' },
      }),
    );
    assert.equal(canceled.status, 201);
    assert.equal(canceled.body.state, 'canceled');
    assert.equal(canceled.body.canceledBy, 'buyer');
  } finally {
    await client.close();
  }
});

test('[SUBS-TWO-SCHEDULERS] two workers running the scheduler never run a cycle twice', async () => {
  // A second set of workers in this process: its own scheduler, claiming from the same table with the same clock.
  const second = await startRoles(sys.config, ['workers'], undefined, { clock });
  try {
    const { listingId } = await livingListing(100);
    const buyers = await Promise.all(Array.from({ length: 20 }, () => buyer()));
    const ids = await Promise.all(
      buyers.map(async (b, i) => {
        const r = await subscribe(b, listingId, `two-${i}`);
        assert.equal(r.status, 201);
        return r.body.id as string;
      }),
    );
    for (let round = 2; round <= 4; round++) {
      nextInterval();
      await Promise.all(buyers.map((b, i) => cyclesRun(b, ids[i]!, round)));
    }
    const counts = await cycleFacts();
    for (const id of ids) {
      for (let n = 1; n <= 4; n++) assert.equal(counts.get(`${id}#${n}`), 1, `cycle ${n} of ${id} billed once`);
    }
    for (const b of buyers) {
      await eventually('four cycles settled', async () =>
        (await balance(b)) === b.balanceCents - 4 * 100 ? true : undefined,
      );
    }
  } finally {
    await second.stop();
  }
});

test('[SUBS-REBUILD] the subscriptions table is a projection: a rebuild by replay gives identical rows', async () => {
  // Every record the earlier tests made, once the projection holds every fact (claim columns are not projected).
  const rows = () => sys.sql`
    SELECT id, buyer_principal_id, seller_principal_id, listing_id, agent_id, sandbox, state, interval_seconds, cycle,
           consecutive_failures, next_cycle_at, last_cycle, canceled_by, created_at, updated_at, last_seq
    FROM subscriptions ORDER BY id`;
  const before = await eventually('the projection to hold every fact', async () => {
    const [checkpoint] = await sys.sql<{ last: number }[]>`
      SELECT last_seq AS last FROM projection_checkpoints WHERE name LIKE 'principal_facts:%'`;
    const facts = await ledgerFacts(sys);
    return checkpoint && checkpoint.last >= facts.at(-1)!.seq ? await rows() : undefined;
  });
  assert.ok(before.length >= 20);
  await sys.sql`UPDATE subscriptions SET state = 'active', cycle = 0 WHERE id = ${before[0]!.id}`;
  await sys.sql`DELETE FROM subscriptions WHERE id = ${before[1]!.id}`;
  const sql = openPool(sys.config.databaseUrl, 2);
  try {
    await rebuildProjection(sys.nc, sql, principalFactsOf(sys.names, sys.config), { log: pino({ level: 'silent' }) });
  } finally {
    await sql.end({ timeout: 1 });
  }
  const after = await rows();
  // Later facts (settlements still landing) may move last_seq of a row on; compare the records.
  const strip = (r: any[]) => r.map(({ last_seq: _, ...rest }) => ({ ...rest }));
  assert.deepEqual(strip(after), strip(before));
});
