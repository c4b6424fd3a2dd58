// Settlement's second path: an order bought while its edition's report is still pending is settled by the sweeper
// once the report lands (the actor could not settle it at purchase time). And the sweeper, which wakes every
// second for the life of the process, does not accumulate listeners on its stop signal.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { runSettlementSweeper, systemClock } from '../../actors/index.ts';
import { artifactContent, registerSeller, reportDigestOf, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

test('[BUY-SETTLE-LATE] an order whose report lands after the purchase is held, then settled by the sweeper', async () => {
  const buyer = await sys.register();
  const { artifactId, listingId } = await verifiedListing(sys, seller.token, 'late', { price: 300, good: true });
  // Hold verification back: with no active report key the verifier cannot sign, and retries.
  const [key] = await sys.sql<{ kid: string }[]>`
    UPDATE signing_keys SET retired_at = now() WHERE purpose = 'report' AND retired_at IS NULL RETURNING kid`;
  try {
    const content = artifactContent('late', [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.']);
    const published = await sys.call('POST', `/v1/artifacts/${artifactId}/editions`, {
      token: seller.token,
      body: { content: `${content}\n` },
      key: 'late-2',
    });
    assert.equal(published.status, 201, JSON.stringify(published.body));
    const edition = published.body;
    assert.equal(edition.currentEdition.reportDigest, null);
    const bought = await sys.call('POST', '/v1/orders', {
      token: buyer.token,
      body: { listing_id: listingId, formats: ['md'] },
      key: 'late-buy',
    });
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    const orderId = bought.body.order_id;
    const order = async () =>
      (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items.find((o: any) => o.id === orderId);
    // Bought at the new edition, which has no report: nothing to settle with, so the order is held.
    const row = await eventually('the order to be projected', async () => {
      const [r] = await sys.sql`SELECT edition_id, state FROM orders WHERE id = ${orderId}`;
      return r;
    });
    assert.deepEqual({ ...row }, { edition_id: edition.currentEdition.id, state: 'held' });
    assert.equal((await order())?.state, 'held');
    const balance = (await sys.call('GET', '/v1/balance', { token: buyer.token })).body.balance_cents;
    assert.equal(balance, buyer.balanceCents - 300);
    // A held order has no compliance bundle yet: retry later.
    const bundle = await sys.call('GET', `/v1/orders/${orderId}/compliance-bundle`, { token: buyer.token });
    assert.equal(bundle.status, 503);
    assert.ok(isTypedError(bundle.body, 'unavailable'));
    assert.equal(bundle.headers.get('retry-after'), '2');
  } finally {
    await sys.sql`UPDATE signing_keys SET retired_at = NULL WHERE kid = ${key!.kid}`;
  }
  await reportDigestOf(sys, seller.token, artifactId);
  const settled = await eventually('the sweeper to settle the order', async () => {
    const items = (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items;
    return items[0]?.state === 'released' ? items[0] : undefined;
  });
  assert.equal(settled.escrowCents, 300);
  const bundle = await sys.call('GET', `/v1/orders/${settled.id}/compliance-bundle`, { token: buyer.token });
  assert.equal(bundle.status, 200);
  assert.equal(bundle.body.body.outcome.kind, 'cleared_escrow');
  const events = (await sys.call('GET', '/v1/events?type=order.state_changed', { token: buyer.token })).body.items;
  assert.deepEqual(
    events.map((e: any) => e.data.state),
    ['held', 'released'],
  );
});

test('[SPINE-NO-LISTENER-LEAK] hundreds of sweeps leave no listener behind on the stop signal', async () => {
  const stop = new AbortController();
  const deps = {
    nc: sys.nc,
    sql: sys.sql,
    names: sys.names,
    log: pino({ level: 'silent' }),
    clock: systemClock,
    timeoutMs: 1000,
    reportWaitMs: 86_400_000,
  };
  const running = runSettlementSweeper(deps, stop.signal, 1);
  await sleep(600);
  const listeners = getEventListeners(stop.signal, 'abort').length;
  stop.abort();
  await running;
  assert.ok(listeners <= 1, `${listeners} abort listeners after hundreds of sweeps`);
});
