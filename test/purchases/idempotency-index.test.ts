// Idempotency past the keys a principal actor keeps in memory: with ASSAY_IDEMPOTENCY_HOT_KEYS at 2, a buyer's older
// keys leave the actor once the principal-facts projection has indexed them, and a retry of one is answered from
// PostgreSQL through the ledger service (seen on the bus), with the same order, no second charge.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
before(async () => {
  sys = await startSystem({ ASSAY_IDEMPOTENCY_HOT_KEYS: '2' });
});
after(async () => {
  await sys.stop();
});

test('[BUY-IDEM-COLD] an old purchase key replays its order from the index, a changed body conflicts, a new key buys once', async () => {
  const seller = await registerSeller(sys);
  const l = await verifiedListing(sys, seller.token, 'cold', { price: 250, good: true });
  const b: Agent = await sys.register();
  const body = { listing_id: l.listingId, formats: ['md'] };
  const buy = (key: string, b2: object = body) => sys.call('POST', '/v1/orders', { token: b.token, body: b2, key });
  const orderCount = async () => (await sys.call('GET', '/v1/orders?limit=50', { token: b.token })).body.items.length;

  /** Resolves once the actor host has sent `n` more idempotency lookups to the ledger service. */
  const lookupsSeen = (n: number) =>
    new Promise<void>((resolve) => {
      let seen = 0;
      const sub = sys.nc.subscribe(sys.names.serviceSubject('ledger'), {
        callback: (_err, m) => {
          if (m.json<{ op: string }>().op !== 'idempotency.lookup' || ++seen < n) return;
          sub.unsubscribe();
          resolve();
        },
      });
    });
  const first: Record<string, string> = {};
  for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) {
    const r = await buy(key);
    assert.equal(r.status, 201);
    first[key] = r.body.order_id;
  }
  // Reading the orders waits for the projection. The actor host hears the index's checkpoint when it asks the
  // ledger service (every second): once it has asked twice since, the answer to the first has been heard, and the
  // next fact lets the indexed records go.
  assert.equal(await orderCount(), 5);
  await lookupsSeen(2);
  assert.equal((await buy('k6')).status, 201);

  const lookups: string[] = [];
  const watch = sys.nc.subscribe(sys.names.serviceSubject('ledger'), {
    callback: (_err, m) => {
      const req = m.json<{ op: string; body: { keys?: [string, string][] } }>();
      if (req.op === 'idempotency.lookup') for (const [p, k] of req.body.keys ?? []) lookups.push(`${p} ${k}`);
    },
  });
  try {
    const replay = await buy('k1');
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.order_id, first.k1);
    assert.equal(replay.body.escrow_cents, 250);
    assert.ok(lookups.includes(`${b.principalId} k1`), 'the actor asked the index for a key it no longer holds');

    const other = await buy('k2', { ...body, max_price_cents: 250 });
    assert.equal(other.status, 422);
    assert.ok(isTypedError(other.body, 'idempotency_conflict'));

    assert.equal((await buy('k7')).status, 201);
  } finally {
    watch.unsubscribe();
  }
  // Seven orders, each charged once: the replay and the conflict bought nothing.
  assert.equal(await orderCount(), 7);
  const balance = (await sys.call('GET', '/v1/balance', { token: b.token })).body.balance_cents;
  assert.equal(balance, b.balanceCents - 7 * 250);
});
