// Daily quotas on real services, with the principal actors' clock in the test's hand: concurrent purchases never pass
// the Pro plan's daily spend by a cent (and may reach it exactly), the refusals are 429 quota_exhausted with the reset
// time, and the next UTC day starts from zero. The plan's numbers, the day's end and the count that fits are written
// out here from docs/fleet.md, not read from contracts/plans.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Clock } from '../../actors/index.ts';
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
/** Pro's spend per UTC day (docs/fleet.md, the plans' table): $10,000. */
const spendPerDay = 1_000_000;
const price = 50_000;
/** 20 purchases of $500 are exactly $10,000: the quota lets the last cent be spent, and not one more. */
const fits = 20;
const dayMs = 86_400_000;
/**
 * The UTC day the purchases happen on: today, or tomorrow once today is past 22:00 UTC, so the clock only moves
 * forward. The principal actors' clock is set to 22:30 UTC on it: an hour and a half before the quota resets.
 */
const nowMs = Date.now();
const todayStartMs = Date.UTC(
  new Date(nowMs).getUTCFullYear(),
  new Date(nowMs).getUTCMonth(),
  new Date(nowMs).getUTCDate(),
);
const dayStartMs = nowMs < todayStartMs + 22 * 3_600_000 ? todayStartMs : todayStartMs + dayMs;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const quotaDay = dayOf(dayStartMs);
const nextDay = dayOf(dayStartMs + dayMs);
/** Set the actors' clock to this instant (it runs on from there). */
const setClock = (iso: string) => {
  offsetMs = Date.parse(iso) - Date.now();
};

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
  setClock(`${quotaDay}T22:30:00.000Z`);
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
  const resetsAt = `${nextDay}T00:00:00.000Z`;
  for (const r of refused) {
    assert.ok(isTypedError(r.body, 'quota_exhausted'));
    assert.equal(r.body.remediation, 'wait_or_upgrade_tier');
    assert.equal(r.body.retryable, true);
    assert.ok(r.body.message.includes(`the quota resets at ${resetsAt}`), r.body.message);
    // Until UTC midnight: about an hour and a half from 22:30 (the test's own time has run on a little).
    const retryAfterS = Number(r.headers.get('retry-after'));
    assert.ok(retryAfterS > 3600 && retryAfterS <= 5400, `Retry-After ${retryAfterS}`);
  }
  // Exactly the bought orders' prices left the available credits: a refused purchase took nothing.
  const afterBalance = await sys.call('GET', '/v1/balance', { token: buyer.token });
  assert.equal(before.body.balance_cents - afterBalance.body.balance_cents, spendPerDay);
});

test('[FLEET-QUOTA] the next UTC day starts the quota from zero', async () => {
  const refusedToday = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats: ['md'] },
    key: 'today-again',
  });
  assert.equal(refusedToday.status, 429);
  // An hour later it is still the same UTC day: still refused.
  setClock(`${quotaDay}T23:30:00.000Z`);
  const laterToday = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats: ['md'] },
    key: 'later-today',
  });
  assert.equal(laterToday.status, 429, JSON.stringify(laterToday.body));
  assert.ok(laterToday.body.message.includes(`the quota resets at ${nextDay}T00:00:00.000Z`), laterToday.body.message);
  setClock(`${nextDay}T00:00:01.000Z`);
  const tomorrow = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats: ['md'] },
    key: 'tomorrow',
  });
  assert.equal(tomorrow.status, 201, JSON.stringify(tomorrow.body));
});
