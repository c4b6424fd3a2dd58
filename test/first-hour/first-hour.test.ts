// A person's first hour (issue 43), in headless Chromium against real services: the landing page at `/` (while MCP
// clients and API callers keep the endpoint's answers there), test mode inside the account (sandbox agent tokens,
// test credits, orders and events beside the live ones), approvals and orders named by what they are, webhooks
// managed on the account page with a signed test event to a loopback HTTPS receiver, and the whole hour as one test.
// Screenshots go to test-artifacts/first-hour-*.png.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { artifactsDir, launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { verifiedListing, waitForCorpus } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { accountWithClient, approvedTokens, discover, signUp, type WebJar } from '../support/oauth.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';
import { selfSignedCertificate, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const corpusSize = 3;
const password = 'correct horse battery staple';
let sys: TestSystem;
let receiver: WebhookReceiver;
let browser: Browser | null = null;

before(async () => {
  const cert = selfSignedCertificate();
  receiver = await startWebhookReceiver(cert);
  sys = await startSystem({
    ASSAY_SANDBOX_CORPUS_ARTIFACTS: String(corpusSize),
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
    ASSAY_WEBHOOK_CA_FILE: cert.certFile,
    ASSAY_WEBHOOK_RETRY_BASE_MS: '50',
    ASSAY_WEBHOOK_POLL_MS: '20',
  });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await sys?.stop();
  await receiver?.close();
});

/** A new Chromium page that may load nothing but loopback; `refused` lists anything else it tried. */
async function newPage(width = 1280): Promise<{ page: Page; refused: string[]; close: () => Promise<void> }> {
  const { context, refused } = await loopbackContext(browser!, { viewport: { width, height: 900 } });
  const page = await context.newPage();
  return { page, refused, close: () => context.close() };
}

/** A sandbox listing of the corpus whose report meets its floor (so a purchase of it settles by release). */
async function corpusListingThatMeetsItsFloor(): Promise<{ id: string; title: string; formats: string[] }> {
  await waitForCorpus(sys, corpusSize);
  const [row] = await sys.sql<{ id: string; title: string; formats: string[] }[]>`
    SELECT l.id, a.title, l.formats FROM listings l JOIN artifacts a ON a.id = l.artifact_id
    WHERE l.sandbox AND l.state = 'live' AND a.current_mean_entailment >= l.floor
    ORDER BY l.price_cents LIMIT 1`;
  assert.ok(row, 'the corpus has a listing whose report meets its floor');
  return row;
}

/** `text` as a regular expression that matches it literally (corpus titles hold parentheses). */
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What a receiver does with a Standard Webhooks delivery: check its signature with the webhook's secret. */
function standardSignatureValid(secret: string, headers: Record<string, string>, body: string): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key)
    .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`)
    .digest('base64');
  return (headers['webhook-signature'] ?? '').split(' ').includes(`v1,${expected}`);
}

test('[FIRST-HOUR-LANDING] a browser at / gets the landing page; MCP clients and API callers keep the endpoint’s answers', async (t) => {
  // Without a browser's Accept, `/` is the MCP endpoint exactly as before: a typed 401 without a token.
  const plain = await fetch(`${sys.baseUrl}/`);
  assert.equal(plain.status, 401);
  assert.ok(isTypedError(await plain.json(), 'unauthorized'));
  const stream = await fetch(`${sys.baseUrl}/`, { headers: { accept: 'text/event-stream' } });
  assert.equal(stream.status, 401);
  assert.ok(isTypedError(await stream.json(), 'unauthorized'));
  const post = await fetch(`${sys.baseUrl}/`, {
    method: 'POST',
    headers: { accept: 'text/html, application/json', 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(post.status, 401, 'a POST is the MCP endpoint whatever it accepts');
  // A browser's navigation asks for HTML and gets the page, marked as varying by Accept.
  const asBrowser = await fetch(`${sys.baseUrl}/`, {
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
  });
  assert.equal(asBrowser.status, 200);
  assert.match(asBrowser.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(asBrowser.headers.get('vary'), 'Accept');
  assert.match(await asBrowser.text(), /curl -s -X POST http:\/\/127\.0\.0\.1:\d+\/sandbox\/agents/);
  const guide = await fetch(`${sys.baseUrl}/docs/webhooks`);
  assert.equal(guide.status, 200);
  assert.match(guide.headers.get('content-type') ?? '', /^text\/markdown/);
  assert.match(await guide.text(), /webhook\.test/);
  assert.equal((await fetch(`${sys.baseUrl}/docs/no-such-guide`)).status, 404);

  if (!browser) return t.skip('chromium is not installed');
  const { page, refused, close } = await newPage();
  try {
    await page.goto(`${sys.baseUrl}/`);
    await page.getByRole('heading', { level: 1, name: 'Verified artifacts for AI agents' }).waitFor();
    await page.getByRole('link', { name: 'Create an account' }).waitFor();
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
    await page.getByText(`curl -s -X POST ${sys.baseUrl}/sandbox/agents`).waitFor();
    await page.getByText(`${sys.baseUrl}/mcp`).first().waitFor();
    await screenshot(page, 'first-hour-landing');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'first-hour-landing-narrow');
    await page.setViewportSize({ width: 1280, height: 900 });

    // The sandbox line works as written: it answers a token with test credits.
    const sandbox = await fetch(`${sys.baseUrl}/sandbox/agents`, { method: 'POST' });
    assert.equal(sandbox.status, 201);
    assert.equal((await sandbox.json()).sandbox, true);

    await page.getByRole('link', { name: 'API reference' }).click();
    await page.getByRole('heading', { level: 1, name: 'API reference' }).waitFor();
    const purchase = page.getByRole('row', { name: /POST \/v1\/orders/ });
    await purchase.getByText('purchase_artifact').waitFor();
    await screenshot(page, 'first-hour-api-reference');
    await page.goto(`${sys.baseUrl}/docs`);
    await page.getByRole('heading', { level: 1, name: 'Documentation' }).waitFor();
    await page.getByRole('link', { name: /Webhooks: events, signatures/ }).waitFor();
    await screenshot(page, 'first-hour-docs');
    assert.deepEqual(refused, [], 'the pages load nothing from elsewhere');
  } finally {
    await close();
  }
});

test('[FIRST-HOUR-TEST-MODE] the account page issues sandbox agent tokens of the account’s own sandbox; its test credits, orders and events show beside the live ones, marked, and never mix', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const email = 'test-mode@example.com';
  const jar = await signUp(sys.baseUrl, email, password);
  const listing = await corpusListingThatMeetsItsFloor();
  const { page, refused, close } = await newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, password);
    // The first lines say how to start, and link the docs and the API reference.
    const start = page.getByRole('region', { name: 'Start here' });
    await start.getByRole('link', { name: 'issue a sandbox agent token', exact: true }).waitFor();
    await start.getByText(`${sys.baseUrl}/mcp`).waitFor();
    assert.equal(await start.getByRole('link', { name: 'the API reference' }).getAttribute('href'), '/docs/api');
    assert.equal(await start.getByRole('link', { name: 'the guides' }).getAttribute('href'), '/docs');
    const testMode = page.locator('#test-mode');
    await testMode.getByText('You have no sandbox agents yet.').waitFor();

    const issue = async (name: string) => {
      await testMode.getByLabel('Name of a new sandbox agent').fill(name);
      await testMode.getByRole('button', { name: 'Issue a sandbox agent token' }).click();
      const panel = page.getByRole('region', { name: new RegExp(`Sandbox agent token for “${name}”`) });
      return (await panel.locator('code.secret').textContent())!.trim();
    };
    const token = await issue('scout agent');
    await screenshot(page, 'first-hour-test-mode-token');
    const second = await issue('second agent');

    // Both tokens act for one sandbox principal of this account, which holds the one grant of test credits.
    const balance = await sys.call('GET', '/v1/balance', { token });
    assert.equal(balance.status, 200);
    assert.equal(balance.body.balance_cents, sys.config.sandboxGrantCents);
    assert.equal(
      (await sys.call('GET', '/v1/balance', { token: second })).body.balance_cents,
      sys.config.sandboxGrantCents,
    );
    const [link] = await sys.sql<{ sandbox_principal_id: string }[]>`
      SELECT s.sandbox_principal_id FROM account_sandboxes s JOIN accounts a USING (principal_id) WHERE a.email = ${email}`;
    assert.ok(link, 'the sandbox is tied to the account');

    const bought = await sys.call('POST', '/v1/orders', {
      token,
      key: 'test-mode-buy',
      body: { listing_id: listing.id, formats: [listing.formats[0]] },
    });
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    const orderId = bought.body.order_id ?? bought.body.order?.id ?? bought.body.id;
    await eventually('the test order settled', async () => {
      const orders = (await sys.call('GET', '/v1/orders', { token })).body.items as any[];
      return orders.find((o) => o.state === 'released') ?? undefined;
    });

    await page.goto(`${sys.baseUrl}/account#test-mode`);
    const agents = page.getByRole('table', { name: /your sandbox agents/i });
    await agents.getByRole('rowheader', { name: 'scout agent' }).waitFor();
    await agents.getByRole('rowheader', { name: 'second agent' }).waitFor();
    const testOrders = page.getByRole('table', { name: /test orders/i });
    const row = testOrders.getByRole('row', { name: new RegExp(escapeRegExp(listing.title)) });
    await row.getByText('Settled: paid to the seller').waitFor();
    await row.getByText('scout agent').waitFor();
    await row.getByText(/report meets the floor/).waitFor();
    if (typeof orderId === 'string') await row.getByText(orderId).waitFor();
    assert.match((await testOrders.locator('caption').textContent()) ?? '', /Test/);
    const testEvents = page.getByRole('table', { name: /test events/i });
    await testEvents.getByText('order.state_changed').first().waitFor();
    // The live side has none of it: no live orders, and the live credits are untouched.
    await page.getByText('No live orders yet.').waitFor();
    const money = page.locator('#money');
    await money.getByText('$0.00 (0 cents)').waitFor();
    const spent = (await sys.call('GET', '/v1/balance', { token })).body.balance_cents as number;
    assert.ok(spent < sys.config.sandboxGrantCents, 'the test purchase spent test credits');
    await testMode.getByText(`$${(spent / 100).toFixed(2)} (${spent} cents)`).waitFor();
    await screenshot(page, 'first-hour-test-mode');
    await testMode.screenshot({ path: `${artifactsDir}first-hour-test-mode-section.png` });
    await page.locator('#orders').screenshot({ path: `${artifactsDir}first-hour-orders-section.png` });
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'first-hour-test-mode-narrow');

    // The account export names the sandbox agents and the sandbox principal they act for; never a token.
    const exported = await (await jar.get('/api/account/export')).text();
    const doc = JSON.parse(exported);
    assert.deepEqual(doc.test_mode_agents.map((a: any) => a.name).sort(), ['scout agent', 'second agent']);
    assert.ok(doc.test_mode_agents.every((a: any) => a.sandbox_principal_id === link.sandbox_principal_id));
    assert.ok(!exported.includes(token) && !exported.includes(second), 'no token in the export');
    // The same form sent again (a reload re-posts it) gets a token for the agent it made, not a second agent.
    const form = /name="agent_id" value="([0-9a-f-]{36})"/.exec(await (await jar.get('/account')).text())![1]!;
    const secretOf = async (r: Response) => /<code class="secret">([^<]+)<\/code>/.exec(await r.text())![1]!;
    const once = await jar.post('/account/test-mode/agents', { agent_id: form, name: 'reloaded agent' });
    const twice = await jar.post('/account/test-mode/agents', { agent_id: form, name: 'reloaded agent' });
    assert.equal(once.status, 200);
    assert.equal(twice.status, 200);
    for (const t of [await secretOf(once), await secretOf(twice)]) {
      const claims = JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString());
      assert.equal(claims.agent_id, form);
      assert.equal(claims.principal_id, link.sandbox_principal_id);
    }
    const [agentRows] = await sys.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM agents WHERE principal_id = ${link.sandbox_principal_id}`;
    assert.equal(agentRows!.n, 3, 'scout, second and one reloaded agent');
    // A form that is not the page's (another CSRF token) makes nothing.
    const forged = await jar.post('/account/test-mode/agents', {
      csrf: 'f'.repeat(43),
      agent_id: crypto.randomUUID(),
      name: 'forged agent',
    });
    assert.equal(forged.status, 403);
    const [afterForged] = await sys.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM agents WHERE principal_id = ${link.sandbox_principal_id}`;
    assert.equal(afterForged!.n, 3, 'a forged form makes no agent');

    // Another person sees none of this account's test mode, and cannot take its agent by posting its id.
    const other = await signUp(sys.baseUrl, 'test-mode-other@example.com', password);
    const theirs = await (await other.get('/account')).text();
    assert.ok(theirs.includes('You have no sandbox agents yet.'));
    assert.ok(!theirs.includes('scout agent') && !theirs.includes(listing.title));
    const taken = await other.post('/account/test-mode/agents', { agent_id: form, name: 'thief' });
    assert.equal(taken.status, 404);
    assert.ok(!(await taken.text()).includes('class="secret"'), 'no token for another account’s agent');
    assert.deepEqual(refused, []);
  } finally {
    await close();
  }
});

test('[FIRST-HOUR-NAMES] approvals, recent decisions and orders name the artifact, the listing’s price and floor, the report’s verdict and the agent', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const as = await discover(sys.baseUrl);
  const email = 'names@example.com';
  const { jar, client } = await accountWithClient(as, sys.baseUrl, email, { client_name: 'Shopping Agent' });
  const agentToken = (await approvedTokens(as, jar, client, { scope: 'read:artifact purchase' })).access_token;
  // A live seller's listing, so the live agent may buy it: floor 0.7, its report meets it.
  const sellerAccount = await accountWithClient(as, sys.baseUrl, 'names-seller@example.com');
  const sellerToken = (
    await approvedTokens(as, sellerAccount.jar, sellerAccount.client, {
      scope: 'read:artifact read:trust purchase publish',
    })
  ).access_token;
  const live = await verifiedListing(sys, sellerToken, 'named-thing', { price: 400, good: true });
  await setMandate(jar, { per_item_cap_cents: '10000', approval_above_cents: '100' });
  const waiting = async (key: string) => {
    const r = await sys.call('POST', '/v1/orders', {
      token: agentToken,
      key,
      body: { listing_id: live.listingId, formats: ['md'] },
    });
    assert.ok(isTypedError(r.body, 'pending_approval'), JSON.stringify(r.body));
    return r.body.approval_id as string;
  };
  const toDecline = await waiting('names-decline');
  await waiting('names-keep');

  const { page, close } = await newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, password);
    const section = page.locator('#approvals');
    const first = section.locator('li.item').first();
    await first.getByRole('heading', { name: 'A named-thing for $4.00' }).waitFor();
    await first.getByText(/\$4\.00, floor 0\.70; report meets the floor \(score \d\.\d\d\)/).waitFor();
    await first.getByText('Shopping Agent').waitFor();
    assert.equal(await section.getByText(live.listingId).count(), 0, 'no listing id where a name is known');
    await screenshot(page, 'first-hour-names-approvals');
    await page.locator(`form[action$="/account/approvals/${toDecline}/decline"] button`).click();
    await page.getByText(/purchase declined/i).waitFor();
    const decided = section.getByRole('listitem').filter({ hasText: 'declined' });
    await decided.getByText('A named-thing').waitFor();
    await decided.getByText('Shopping Agent').waitFor();
    await screenshot(page, 'first-hour-names-decisions');
  } finally {
    await close();
  }
});

/** Set the mandate through the account page's form over HTTP. */
async function setMandate(jar: WebJar, fields: Record<string, string>): Promise<void> {
  const r = await jar.post('/account/mandate', { idempotency_key: crypto.randomUUID(), ...fields });
  assert.equal(r.status, 303, await r.text());
}

test('[FIRST-HOUR-WEBHOOKS] on the account page a person adds a webhook, sends it a signed test event, sees the delivery, rotates its secret, pauses and deletes it', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const email = 'webhook-owner@example.com';
  const jar = await signUp(sys.baseUrl, email, password);
  receiver.script('/managed', { statuses: [204] });
  const { page, refused, close } = await newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, password);
    const section = page.locator('#webhooks');
    await section.getByText(/loopback URLs such as/).waitFor();
    // A URL the rule refuses is named, and the form keeps what was typed.
    await section.getByLabel('Name', { exact: true }).fill('orders hook');
    await section.getByLabel('Endpoint URL').fill('http://127.0.0.1:1/plain-http');
    await section.getByLabel('order.state_changed').check();
    await section.getByRole('button', { name: 'Add the webhook' }).click();
    await page
      .getByRole('alert')
      .getByText(/That webhook was not added: url:/)
      .waitFor();
    assert.equal(await section.getByLabel('Name', { exact: true }).inputValue(), 'orders hook');
    assert.equal(await section.getByLabel('order.state_changed').isChecked(), true);
    await section.getByText('You have no webhooks.').waitFor();
    await screenshot(page, 'first-hour-webhook-refused');

    await section.getByLabel('Endpoint URL').fill(receiver.url('/managed'));
    await section.getByRole('button', { name: 'Add the webhook' }).click();
    const panel = page.getByRole('region', { name: /signing secret of your new webhook “orders hook”/ });
    const secret = (await panel.locator('code.secret').textContent())!.trim();
    assert.match(secret, /^whsec_/);
    await screenshot(page, 'first-hour-webhook-added');
    // A second webhook that takes webhook.test events itself: a test of the first is not sent to it.
    await section.getByLabel('Name', { exact: true }).fill('bystander');
    await section.getByLabel('Endpoint URL').fill(receiver.url('/bystander'));
    await section.getByLabel('webhook.test').check();
    await section.getByRole('button', { name: 'Add the webhook' }).click();
    await page.getByRole('region', { name: /signing secret of your new webhook “bystander”/ }).waitFor();

    // Send a test event: post, redirect, get; the receiver gets a signed webhook.test.
    await page.getByRole('button', { name: 'Send a test event to orders hook' }).click();
    await page.waitForURL(/\/account\?done=test_webhook/);
    await page
      .getByRole('status')
      .getByText(/Test event sent/)
      .waitFor();
    const got = await eventually('the test event delivered', async () => receiver.at('/managed')[0], 20_000);
    const body = JSON.parse(got.body);
    // Deliveries of one event to its webhooks are claimed in one pass: by the time the test's own arrived, one to
    // the bystander would be on its way too (each webhook has its own lane); give it a poll or two more.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(receiver.at('/bystander').length, 0, 'a test event goes to the webhook it tests alone');
    assert.equal(body.type, 'webhook.test');
    assert.equal(body.data.webhook.name, 'orders hook');
    assert.ok(standardSignatureValid(secret, got.headers, got.body), 'signed with the secret shown once');
    assert.equal(
      got.headers['x-webhook-signature'],
      createHmac('sha256', secret).update(got.body).digest('hex'),
      'and with the spec’s X-Webhook-Signature',
    );
    // Its delivery shows under the webhook: event, outcome, attempt, response code, time.
    const deliveries = page.getByRole('table', { name: /recent deliveries to orders hook/i });
    await eventually('the delivery listed', async () => {
      await page.reload();
      return (await deliveries.count()) > 0 ? true : undefined;
    });
    const delivered = deliveries.getByRole('row', { name: /webhook\.test/ });
    await delivered.getByText('Delivered').waitFor();
    await delivered.getByText('204', { exact: true }).waitFor();
    await delivered.locator('time').waitFor();
    await screenshot(page, 'first-hour-webhook-delivered');
    await section.screenshot({ path: `${artifactsDir}first-hour-webhook-section.png` });

    // Rotate: a new secret, shown once, and the next test event is signed with both.
    await page.getByRole('button', { name: 'Rotate the secret of orders hook' }).click();
    const rotated = page.getByRole('region', { name: /new signing secret of “orders hook”/ });
    const newSecret = (await rotated.locator('code.secret').textContent())!.trim();
    assert.notEqual(newSecret, secret);
    await screenshot(page, 'first-hour-webhook-rotated');
    await page.goto(`${sys.baseUrl}/account#webhooks`);
    await page.getByRole('button', { name: 'Send a test event to orders hook' }).click();
    await page.waitForURL(/done=test_webhook/);
    const second = await eventually('the second test event', async () => receiver.at('/managed')[1], 20_000);
    assert.ok(standardSignatureValid(newSecret, second.headers, second.body));
    assert.ok(standardSignatureValid(secret, second.headers, second.body), 'the previous secret signs beside it');

    // Pause: no test button for a paused webhook, and a forged post is refused with words.
    await page.getByRole('button', { name: 'Pause the webhook orders hook' }).click();
    await page.waitForURL(/done=pause_webhook/);
    assert.equal(await page.getByRole('button', { name: 'Send a test event to orders hook' }).count(), 0);
    const id = (await jar.get('/account').then((r) => r.text())).match(
      /\/account\/webhooks\/([0-9a-f-]{36})\/enable/,
    )?.[1];
    assert.ok(id);
    const paused = await jar.post(`/account/webhooks/${id}/test`, {});
    assert.equal(paused.status, 409);
    assert.match(await paused.text(), /paused or disabled/);
    // A forged form (another CSRF token) neither adds nor tests one; another person's post changes nothing.
    const forged = await jar.post('/account/webhooks', {
      csrf: 'f'.repeat(43),
      name: 'forged hook',
      url: receiver.url('/forged'),
      events: 'order.state_changed',
    });
    assert.equal(forged.status, 403);
    assert.ok(!(await (await jar.get('/account')).text()).includes('forged hook'));
    const other = await signUp(sys.baseUrl, 'webhook-stranger@example.com', password);
    assert.equal((await other.post(`/account/webhooks/${id}/delete`, {})).status, 404);
    assert.equal((await other.post(`/account/webhooks/${id}/test`, {})).status, 404);

    await page.getByRole('button', { name: 'Delete the webhook orders hook' }).click();
    await page.waitForURL(/done=delete_webhook/);
    await page
      .getByRole('status')
      .getByText(/Webhook deleted/)
      .waitFor();
    const list = page.getByRole('table', { name: /your webhooks/i });
    await list.getByRole('rowheader', { name: 'bystander' }).waitFor();
    assert.equal(await list.getByRole('rowheader', { name: 'orders hook' }).count(), 0);
    await screenshot(page, 'first-hour-webhook-deleted');
    assert.deepEqual(refused, []);
  } finally {
    await close();
  }
});

test('[FIRST-HOUR] from / to sign-up, a sandbox agent token from the account page, a settled sandbox purchase and a signed test webhook at a loopback HTTPS receiver', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const listing = await corpusListingThatMeetsItsFloor();
  receiver.script('/first-hour', { statuses: [200] });
  const { page, refused, close } = await newPage();
  try {
    // The landing page, then sign-up.
    await page.goto(`${sys.baseUrl}/`);
    await screenshot(page, 'first-hour-1-landing');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Email').fill('first-hour@example.com');
    await page.getByLabel('Password').fill(password);
    await screenshot(page, 'first-hour-2-signup');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByRole('region', { name: 'Start here' }).waitFor();
    await screenshot(page, 'first-hour-3-account');

    // A sandbox agent token from the account page.
    await page.getByRole('link', { name: 'issue a sandbox agent token', exact: true }).click();
    await page.getByLabel('Name of a new sandbox agent').fill('first agent');
    await page.getByRole('button', { name: 'Issue a sandbox agent token' }).click();
    const token = (await page.locator('#test-mode code.secret').textContent())!.trim();
    await screenshot(page, 'first-hour-4-token');

    // The agent searches the sandbox catalog and buys; the order settles.
    const search = await sys.call('GET', '/v1/search?limit=50', { token });
    assert.equal(search.status, 200);
    assert.ok(
      search.body.items.some((i: any) => i.liveListingIds.includes(listing.id)),
      'the listing is in the sandbox catalog the agent sees',
    );
    const bought = await sys.call('POST', '/v1/orders', {
      token,
      key: 'first-purchase',
      body: { listing_id: listing.id, formats: [listing.formats[0]] },
    });
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    await eventually('the purchase settled', async () => {
      const orders = (await sys.call('GET', '/v1/orders', { token })).body.items as any[];
      return orders.some((o) => o.state === 'released') ? true : undefined;
    });
    await page.goto(`${sys.baseUrl}/account#orders`);
    await page
      .getByRole('table', { name: /test orders/i })
      .getByRole('row', { name: new RegExp(escapeRegExp(listing.title)) })
      .getByText('Settled: paid to the seller')
      .waitFor();
    await screenshot(page, 'first-hour-5-settled');

    // A webhook to a loopback HTTPS receiver, and its test event, signed.
    await page.getByLabel('Name', { exact: true }).fill('my receiver');
    await page.getByLabel('Endpoint URL').fill(receiver.url('/first-hour'));
    await page.getByLabel('order.state_changed').check();
    await page.getByRole('button', { name: 'Add the webhook' }).click();
    const secret = (await page.locator('.panel code.secret').textContent())!.trim();
    await page.getByRole('button', { name: 'Send a test event to my receiver' }).click();
    await page.waitForURL(/done=test_webhook/);
    const got = await eventually('the test webhook received', async () => receiver.at('/first-hour')[0], 20_000);
    assert.equal(JSON.parse(got.body).type, 'webhook.test');
    assert.ok(standardSignatureValid(secret, got.headers, got.body));
    await eventually('the delivery on the page', async () => {
      await page.reload();
      return (await page.getByRole('table', { name: /recent deliveries to my receiver/i }).count()) > 0
        ? true
        : undefined;
    });
    await screenshot(page, 'first-hour-6-webhook');
    assert.deepEqual(refused, []);
  } finally {
    await close();
  }
});
