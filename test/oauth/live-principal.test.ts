// A live principal's OAuth tokens on the agent API: they stand on the live side of the sandbox line (a live seller's
// listing is invisible to sandbox tokens and the other way round), and a live purchase answers what DECISIONS.md
// says: `mandate_revoked` ("the principal has no mandate") until the person sets a mandate on the account page, then
// `insufficient_credits` until a live top-up lands (test/money). Nothing is held in escrow by any of these refusals.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { accountWithClient, approvedTokens, discover, type oauth, type WebJar } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;

before(async () => {
  sys = await startSystem({ ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0' });
  as = await discover(sys.baseUrl);
});
after(async () => {
  await sys.stop();
});

/** A person with an account, one registered agent, and that agent's access token for `scope`. */
async function liveAgent(email: string, scope: string): Promise<{ jar: WebJar; token: string }> {
  const { jar, client } = await accountWithClient(as, sys.baseUrl, email);
  return { jar, token: (await approvedTokens(as, jar, client, { scope })).access_token };
}

const buy = (token: string, listingId: string, key: string) =>
  sys.call('POST', '/v1/orders', { token, key, body: { listing_id: listingId, formats: ['md'] } });

test('[OAUTH-LIVE-PRINCIPAL] OAuth tokens are live: the sandbox line holds both ways, and purchases need a mandate, then credits', async () => {
  const seller = await liveAgent('seller@example.com', 'read:artifact read:trust purchase publish');
  const buyer = await liveAgent('buyer@example.com', 'read:artifact purchase');
  const sandboxSeller = await registerSeller(sys);
  const sandboxBuyer = await sys.register();

  const live = await verifiedListing(sys, seller.token, 'live', { price: 700, good: true });
  const sandbox = await verifiedListing(sys, sandboxSeller.token, 'sandbox', { price: 700, good: true });

  // Search shows each side only its own artifacts.
  const artifactIds = async (token: string) =>
    ((await sys.call('GET', '/v1/search', { token })).body.items as { artifact: { id: string } }[]).map(
      (i) => i.artifact.id,
    );
  assert.deepEqual(await artifactIds(buyer.token), [live.artifactId]);
  assert.deepEqual(await artifactIds(sandboxBuyer.token), [sandbox.artifactId]);

  // Across the line a listing is not found, whichever side asks.
  const crossLive = await buy(sandboxBuyer.token, live.listingId, 'cross-1');
  assert.equal(crossLive.status, 404);
  assert.ok(isTypedError(crossLive.body, 'not_found'));
  const crossSandbox = await buy(buyer.token, sandbox.listingId, 'cross-2');
  assert.equal(crossSandbox.status, 404);
  assert.ok(isTypedError(crossSandbox.body, 'not_found'));

  // A new live principal has no mandate: its agents cannot buy anything.
  const noMandate = await buy(buyer.token, live.listingId, 'first');
  assert.equal(noMandate.status, 403);
  assert.ok(isTypedError(noMandate.body, 'mandate_revoked'));
  assert.match(noMandate.body.message, /has no mandate/);

  // The person sets one on the account page; now the purchase gets as far as the money, and there is none.
  const saved = await buyer.jar.post('/account/mandate', {
    per_item_cap_cents: '1000',
    min_trust: '0',
    min_judge_version: '',
    idempotency_key: 'mandate-1',
  });
  assert.equal(saved.status, 303, await saved.text());
  assert.match(saved.headers.get('location') ?? '', /\/account\?done=mandate$/);
  const broke = await buy(buyer.token, live.listingId, 'second');
  assert.equal(broke.status, 409);
  assert.ok(isTypedError(broke.body, 'insufficient_credits'));

  // This deployment has no payment processor: a live top-up says so (503), and credits nothing.
  const topUp = await sys.call('POST', '/v1/topups', { token: buyer.token, body: { credits: 5 }, key: 'top-up' });
  assert.equal(topUp.status, 503);
  assert.ok(isTypedError(topUp.body, 'unavailable'));
  assert.match(topUp.body.message, /payment processor.*not configured/);

  const balance = await sys.call('GET', '/v1/balance', { token: buyer.token });
  assert.deepEqual(balance.body, { balance_cents: 0, currency: 'credit' });
  const orders = await sys.call('GET', '/v1/orders', { token: buyer.token });
  assert.deepEqual(orders.body.items, [], 'no refusal left an order behind');
});
