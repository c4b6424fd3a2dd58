// Daily quotas on real services, with the principal actors' clock in the test's hand: concurrent purchases never pass
// the Pro plan's daily spend by a cent, the refusals are 429 quota_exhausted with the reset time, and the next UTC day
// starts from zero.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Clock } from '../../actors/index.ts';
import { plans, utcDay } from '../../contracts/index.ts';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, runCli, startSystem, type TestSystem } from '../support/system.ts';

let offsetMs = 0;
const clock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  nowIso: () => new Date(Date.now() + offsetMs).toISOString(),
};

let sys: TestSystem;
let buyer: Agent;
let listingId: string;
const price = 45_000;
const spendPerDay = plans.pro.quotas.spendCentsPerDay!;
const fits = Math.floor(spendPerDay / price);

before(async () => {
  sys = await startSystem({}, undefined, undefined, { clock });
  const seller = await registerSeller(sys);
  ({ listingId } = await verifiedListing(sys, seller.token, 'quota', { price, good: true }));
  buyer = await sys.register();
  const set = await runCli(sys, ['plan', 'set', buyer.principalId, 'pro']);
  assert.equal(set.code, 0, set.stderr);
  // Credits well beyond the quota, so only the quota can refuse.
  const topUp = await sys.call('POST', '/v1/topups', { token: buyer.token, body: { credits: 30_000 }, key: 'funds' });
  assert.equal(topUp.status, 201);
});
after(async () => {
  await sys?.stop();
});

test('[FLEET-QUOTA] concurrent purchases never pass the daily spend quota by one cent; the refusals say when it resets', async () => {
  const before = await sys.call('GET', '/v1/balance', { token: buyer.token });
  const attempts = fits + 15;
  const results = await Promise.all(
    Array.from({ length: attempts }, (_, i) =>
      sys.call('POST', '/v1/orders', {
        token: buyer.token,
        body: { listing_id: listingId, formats: ['md'] },
        key: `q-${i}`,
      }),
    ),
  );
  const bought = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status === 429);
  assert.equal(bought.length, fits, `${fits} purchases of ${price} fit in ${spendPerDay} cents`);
  assert.equal(refused.length, attempts - fits);
  const resetsAt = new Date(utcDay(clock.nowMs()).endMs).toISOString();
  for (const r of refused) {
    assert.ok(isTypedError(r.body, 'quota_exhausted'));
    assert.equal(r.body.remediation, 'wait_or_upgrade_tier');
    assert.equal(r.body.retryable, true);
    assert.ok(r.body.message.includes(`the quota resets at ${resetsAt}`), r.body.message);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  }
  // Exactly the bought orders' prices left the available credits: a refused purchase took nothing.
  const afterBalance = await sys.call('GET', '/v1/balance', { token: buyer.token });
  assert.equal(before.body.balance_cents - afterBalance.body.balance_cents, fits * price);
  assert.ok(fits * price <= spendPerDay);
});

test('[FLEET-QUOTA] the next UTC day starts the quota from zero', async () => {
  const refusedToday = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats: ['md'] },
    key: 'today-again',
  });
  assert.equal(refusedToday.status, 429);
  offsetMs += utcDay(clock.nowMs()).endMs - clock.nowMs() + 1_000;
  const tomorrow = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats: ['md'] },
    key: 'tomorrow',
  });
  assert.equal(tomorrow.status, 201, JSON.stringify(tomorrow.body));
});
