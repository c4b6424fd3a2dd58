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

test('[OAUTH-LIVE-PRINCIPAL] [JUDGE-QUALITY-MANDATE] [MONEY-NO-PROCESSOR] OAuth tokens are live: the sandbox line holds both ways, and purchases need a mandate (with its judge filter from the account page), then credits', async () => {
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

  // The account page's judge filter (JUDGE-QUALITY-MANDATE): a specificity above what the built-in judge measured is
  // refused before the money is looked at, and the page shows what was set.
  const strict = await buyer.jar.post('/account/mandate', {
    per_item_cap_cents: '1000',
    min_trust: '0',
    min_judge_version: '',
    min_judge_specificity: '0.99',
    idempotency_key: 'mandate-2',
  });
  assert.equal(strict.status, 303, await strict.text());
  const mandates = await sys.call('GET', '/v1/mandates', { token: buyer.token });
  assert.equal(mandates.body.items[0].minJudgeSpecificity, 0.99);
  const page = await (await buyer.jar.get('/account')).text();
  assert.match(page, /id="min-judge-specificity"[^>]*value="0\.99"/);
  const unmeasured = await buy(buyer.token, live.listingId, 'third');
  assert.equal(unmeasured.status, 403);
  assert.ok(isTypedError(unmeasured.body, 'judge_version_rejected'), JSON.stringify(unmeasured.body));

  // [MONEY-NO-PROCESSOR] This deployment has no payment processor: a configuration, not an outage. A live top-up
  // says the deployment takes no card payments, not to retry, and credits nothing; the account page offers no card.
  const topUp = await sys.call('POST', '/v1/topups', { token: buyer.token, body: { credits: 5 }, key: 'top-up' });
  assert.equal(topUp.status, 403);
  assert.ok(isTypedError(topUp.body, 'payments_not_configured'), JSON.stringify(topUp.body));
  assert.equal(topUp.body.retryable, false);
  assert.equal(topUp.body.remediation, 'ask_the_operator');
  assert.equal(topUp.headers.get('retry-after'), null);
  assert.match(topUp.body.message, /takes no card payments/);
  const money = await (await buyer.jar.get('/account')).text();
  assert.doesNotMatch(money, /Save a card/);
  assert.match(money, /Card payments are not configured on this deployment/);

  const balance = await sys.call('GET', '/v1/balance', { token: buyer.token });
  assert.deepEqual(balance.body, { balance_cents: 0, currency: 'credit' });
  const orders = await sys.call('GET', '/v1/orders', { token: buyer.token });
  assert.deepEqual(orders.body.items, [], 'no refusal left an order behind');
});
