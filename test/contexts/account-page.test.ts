// API keys of the context-file API on the account page: issued there (shown once), listed without the key, revoked
// there, driven in headless Chromium against real services, with each key tried on {api_url}/v1 over real HTTP.
import assert from 'node:assert/strict';
import { contextCall } from '../support/context-api.ts';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { signUp, type WebJar } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let browser: Browser | null = null;
const password = 'correct horse battery staple';

before(async () => {
  sys = await startSystem();
});
after(async () => {
  await browser?.close();
  await sys?.stop();
});

/** `GET {api_url}/v1/contexts` with a bearer key: its status and JSON body. */
async function listWith(key: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${sys.config.apiUrl}/v1/contexts`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

/** The signed-in person's keys as the API route lists them (revoked ones too). */
async function keysOf(jar: WebJar): Promise<any[]> {
  const res = await fetch(`${sys.config.webUrl}/api/v1/api-keys`, { headers: { cookie: jar.header() } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { data: any[] }).data;
}

const keyPattern = /asyk_[A-Za-z0-9_-]{43}/;

test('[CONTEXT-KEYS-PAGE] a person issues a key on the account page, sees it once, uses it on {api_url}/v1, and revokes it there', async (t) => {
  browser = await launchBrowser();
  if (!browser) return t.skip('chromium is not installed');
  const email = 'keys@example.com';
  const jar = await signUp(sys.baseUrl, email, password);
  const { context, refused } = await loopbackContext(browser, { viewport: { width: 1280, height: 900 } });
  const page: Page = await context.newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, password);
    const section = page.locator('#api-keys');
    await section.getByText('You have no API keys.').waitFor();

    await page.getByLabel('Name of a new key').fill('build server');
    await page.getByRole('button', { name: 'Issue an API key' }).click();
    const panel = page.getByRole('region', { name: /your new api key/i });
    await panel.getByText(/it will not be shown again/i).waitFor();
    const key = (await panel.locator('code.secret').textContent())?.trim() ?? '';
    assert.match(key, new RegExp(`^${keyPattern.source}$`));
    await page
      .getByRole('status')
      .getByText(/API key issued/)
      .waitFor();
    await screenshot(page, 'context-keys-issued');

    const used = await listWith(key);
    assert.equal(used.status, 200, JSON.stringify(used.body));
    assert.deepEqual(used.body.contexts, []);

    // Shown once: the page loaded again has the key's name, its last four characters and its use, not the key.
    await page.goto(`${sys.baseUrl}/account#api-keys`);
    assert.ok(!(await page.content()).includes(key), 'the key is not on the page again');
    assert.ok(!(await (await jar.get('/account')).text()).includes(key));
    assert.equal(await page.getByRole('region', { name: /your new api key/i }).count(), 0);
    const table = page.getByRole('table', { name: /your api keys/i });
    const row = table.getByRole('row', { name: /build server/ });
    assert.equal(await table.locator('tbody tr').count(), 1);
    await row.getByText(`…${key.slice(-4)}`).waitFor();
    assert.equal(await row.locator('td time').count(), 2, 'issued and last used are both times');
    await screenshot(page, 'context-keys-listed');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'context-keys-listed-narrow');
    await page.setViewportSize({ width: 1280, height: 900 });

    await row.getByRole('button', { name: /revoke the key build server/i }).click();
    await page.waitForURL(/\/account\?done=revoke_api_key/);
    await page
      .getByRole('status')
      .getByText(/API key revoked/)
      .waitFor();
    await section.getByText('You have no API keys.').waitFor();
    await screenshot(page, 'context-keys-revoked');

    const gone = await listWith(key);
    assert.equal(gone.status, 401);
    assert.deepEqual(Object.keys(gone.body).sort(), ['error', 'message']);
    assert.equal(gone.body.error, 'unauthorized');
    assert.deepEqual(refused, [], 'the page loads nothing from elsewhere');
  } finally {
    await context.close();
  }
});

test('[CONTEXT-KEYS-PAGE] the page and the API route manage the same keys; a foreign form, an empty name or another person’s key change nothing', async () => {
  const jar = await signUp(sys.baseUrl, 'keys-http@example.com', password);
  const other = await signUp(sys.baseUrl, 'keys-other@example.com', password);

  // A name is text on the page, never markup; the key is in the answer to the form only.
  const issued = await jar.post('/account/api-keys', { name: '<b>ci</b> & co' });
  assert.equal(issued.status, 200);
  const html = await issued.text();
  const key = keyPattern.exec(html)?.[0] ?? '';
  assert.ok(key, 'the new key is on the answer');
  assert.ok(html.includes('&lt;b&gt;ci&lt;/b&gt; &amp; co') && !html.includes('<b>ci</b>'));
  assert.equal(issued.headers.get('cache-control'), 'no-store');
  const [listed] = await keysOf(jar);
  assert.equal(listed.name, '<b>ci</b> & co');
  assert.equal(listed.hint, key.slice(-4));

  // A key the API route issued is listed on the page, and revoked there.
  const byApi = await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/api-keys`, 'POST', {
    jar,
    body: { name: 'from the API' },
  });
  assert.equal(byApi.status, 201);
  const apiKey = byApi.body.data as { id: string; key: string };
  const page = await (await jar.get('/account')).text();
  assert.ok(page.includes('from the API') && page.includes(`/account/api-keys/${apiKey.id}/revoke`));
  assert.ok(!page.includes(apiKey.key));

  // Refused: a forged CSRF token, another origin, an empty or too long name. Nothing is issued.
  const count = (await keysOf(jar)).length;
  assert.equal((await jar.post('/account/api-keys', { name: 'x', csrf: 'forged' })).status, 403);
  assert.equal((await jar.post('/account/api-keys', { name: 'x' }, { origin: 'https://evil.example' })).status, 403);
  const empty = await jar.post('/account/api-keys', { name: '   ' });
  assert.equal(empty.status, 400);
  assert.match(await empty.text(), /role="alert"><p>Give the key a name of 1 to 100 characters/);
  assert.equal((await jar.post('/account/api-keys', { name: 'x'.repeat(101) })).status, 400);
  assert.equal((await keysOf(jar)).length, count);

  // Another person cannot revoke it (404, and it still works), nor with a forged form.
  assert.equal((await other.post(`/account/api-keys/${apiKey.id}/revoke`, {})).status, 404);
  assert.equal((await jar.post(`/account/api-keys/${apiKey.id}/revoke`, { csrf: 'forged' })).status, 403);
  assert.equal((await jar.post('/account/api-keys/not-a-uuid/revoke', {})).status, 404);
  assert.equal((await listWith(apiKey.key)).status, 200);
  assert.ok(!(await (await other.get('/account')).text()).includes('from the API'));

  const revoked = await jar.post(`/account/api-keys/${apiKey.id}/revoke`, {});
  assert.equal(revoked.status, 303);
  assert.equal(revoked.headers.get('location'), `${sys.config.webUrl}/account?done=revoke_api_key`);
  assert.equal((await listWith(apiKey.key)).status, 401);
  assert.equal((await listWith(key)).status, 200, 'the other key works on');
});
