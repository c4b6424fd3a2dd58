// An initial access token registers one client and is then spent (docs/oauth.md, Registration): a second
// registration with it is refused as RFC 7591 and RFC 6750 word it, registrations racing with one token register one
// client, and the page that shows a new token shows it once, with a copy button, and issues nothing on a reload.
// The same deployment has no payment processor: its account page offers no card, in Chromium too.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser, loopbackContext, screenshot } from '../support/browser.ts';
import { discover, issueInitialAccessToken, loopbackRedirectUri, type oauth, signUp } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let browser: Browser | null;

before(async () => {
  sys = await startSystem();
  as = await discover(sys.baseUrl);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await sys?.stop();
});

const metadata = { client_name: 'Once', redirect_uris: [loopbackRedirectUri] };

const register = (token: string, body: unknown = metadata) =>
  fetch(as.registration_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });

const clientCount = async () => (await sys.sql`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n as number;

test('[OAUTH-IAT-ONCE] an initial access token registers one client; the second registration with it gets 401 invalid_token', async () => {
  const jar = await signUp(sys.baseUrl, 'once@example.com');
  const iat = await issueInitialAccessToken(jar);
  // Metadata the server refuses spends nothing.
  const bad = await register(iat, { redirect_uris: ['http://example.com/cb'] });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error, 'invalid_redirect_uri');
  const first = await register(iat);
  assert.equal(first.status, 201);
  const before = await clientCount();
  const second = await register(iat, { ...metadata, client_name: 'Twice' });
  assert.equal(second.status, 401);
  assert.equal((await second.json()).error, 'invalid_token');
  assert.match(second.headers.get('www-authenticate') ?? '', /Bearer error="invalid_token"/);
  assert.equal(await clientCount(), before, 'no second client');
  // The account page no longer offers the spent token; the client it registered is listed.
  const account = await (await jar.get('/account')).text();
  assert.match(account, /You have no unused initial access tokens/);
  assert.match(account, /Once/);
});

test('[OAUTH-IAT-RACE] eight registrations racing with one initial access token register exactly one client', async () => {
  const jar = await signUp(sys.baseUrl, 'race@example.com');
  const iat = await issueInitialAccessToken(jar);
  const before = await clientCount();
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) => register(iat, { ...metadata, client_name: `racer-${i}` })),
  );
  const statuses = answers.map((r) => r.status).sort();
  assert.deepEqual(statuses, [201, 401, 401, 401, 401, 401, 401, 401]);
  for (const r of answers.filter((a) => a.status === 401)) assert.equal((await r.json()).error, 'invalid_token');
  assert.equal(await clientCount(), before + 1);
});

test('[OAUTH-IAT-PAGE] in Chromium the new token is shown once with a copy button, and a reload issues nothing and shows it no more', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const { context, refused } = await loopbackContext(browser, {
    viewport: { width: 1280, height: 900 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  try {
    const page = await context.newPage();
    const scriptErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') scriptErrors.push(m.text());
    });
    // Signed up over HTTP (its password hash can outlast a click's timeout on a loaded machine), then the browser
    // carries that session: the pages under test are the token's.
    const jar = await signUp(sys.baseUrl, 'page@example.com');
    await context.addCookies(
      [...jar.cookies].map(([name, value]) => ({ name, value, url: sys.baseUrl, httpOnly: true })),
    );
    await page.goto(`${sys.baseUrl}/account`);
    const issued = async () =>
      (await sys.sql`SELECT count(*)::int AS n FROM oauth_initial_access_tokens`)[0]!.n as number;
    const before = await issued();
    await page.getByRole('button', { name: /issue an initial access token/i }).click();
    // Post, redirect, get: the browser is on the page that shows it, not on the form's answer.
    await page.waitForURL(`${sys.baseUrl}/account/initial-access-tokens/new`);
    const token = /asyi_[A-Za-z0-9_-]{43}/.exec(await page.content())?.[0];
    assert.ok(token, 'the page shows the new token');
    const copy = page.getByRole('button', { name: 'Copy the token' });
    await copy.waitFor({ state: 'visible' });
    await screenshot(page, 'oauth-new-initial-access-token');
    await copy.click();
    await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), token);
    assert.equal(await issued(), before + 1);

    await page.reload();
    assert.equal(page.url(), `${sys.baseUrl}/account/initial-access-tokens/new`);
    const again = await page.content();
    assert.doesNotMatch(again, /asyi_/, 'a reload does not show the token again');
    assert.match(again, /does not show it again/);
    await screenshot(page, 'oauth-new-initial-access-token-reloaded');
    assert.equal(await issued(), before + 1, 'a reload issues nothing');
    // The token still works, once.
    assert.equal((await register(token)).status, 201);
    assert.deepEqual(scriptErrors, [], 'the copy script runs under the Content-Security-Policy');
    assert.deepEqual(refused, []);
  } finally {
    await context.close();
  }
});

test('[MONEY-NO-PROCESSOR] in Chromium the account page of a deployment without a payment processor offers no card', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const { context } = await loopbackContext(browser, { viewport: { width: 1280, height: 900 } });
  try {
    const jar = await signUp(sys.baseUrl, 'no-card@example.com');
    await context.addCookies(
      [...jar.cookies].map(([name, value]) => ({ name, value, url: sys.baseUrl, httpOnly: true })),
    );
    const page = await context.newPage();
    await page.goto(`${sys.baseUrl}/account#money`);
    const money = page.locator('#money');
    await money.getByText('Card payments are not configured on this deployment').waitFor();
    assert.equal(await page.getByRole('button', { name: /save a card|replace the card/i }).count(), 0);
    await money.scrollIntoViewIfNeeded();
    await screenshot(page, 'money-no-processor');
  } finally {
    await context.close();
  }
});
