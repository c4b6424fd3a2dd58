// Webhooks on the account page: a webhook disabled by failed deliveries is shown with its reason and a notice at the
// top, re-enabled and paused there, driven in headless Chromium against real services and a loopback HTTPS receiver,
// with each change checked on {api_url}/v1/webhooks over real HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { signUp, type WebJar } from '../support/oauth.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';
import { selfSignedCertificate, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

let sys: TestSystem;
let receiver: WebhookReceiver;
let browser: Browser | null = null;
const password = 'correct horse battery staple';

const api = (path: string, method: string, o?: ContextRequest) =>
  contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, method, o);

before(async () => {
  const cert = selfSignedCertificate();
  receiver = await startWebhookReceiver(cert);
  sys = await startSystem({
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
    ASSAY_WEBHOOK_CA_FILE: cert.certFile,
    ASSAY_WEBHOOK_RETRY_BASE_MS: '50',
    ASSAY_WEBHOOK_POLL_MS: '20',
    ASSAY_WEBHOOK_DISABLE_AFTER_EVENTS: '1',
  });
});
after(async () => {
  await browser?.close();
  await sys?.stop();
  await receiver?.close();
});

/** A fresh account with an API key and a webhook on `path`, which answers 500 to everything. */
async function accountWithFailingWebhook(
  email: string,
  path: string,
): Promise<{ jar: WebJar; key: string; id: string }> {
  const jar = await signUp(sys.baseUrl, email, password);
  const key = await issueApiKey(sys.config.webUrl, jar);
  receiver.script(path, { statuses: [500] });
  const r = await api('/webhooks', 'POST', {
    bearer: key,
    body: { name: `hook ${path}`, url: receiver.url(path), events: ['context.created'] },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { jar, key, id: r.body.data.id };
}

/** Make an event, and wait until its failed deliveries disable the webhook (one failed event is enough here). */
async function failUntilDisabled(key: string, id: string): Promise<any> {
  const made = await api('/contexts', 'POST', { bearer: key, body: { name: 'an event', content: 'c' } });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  return eventually(
    'the webhook disabled',
    async () => {
      const view = (await api(`/webhooks/${id}`, 'GET', { bearer: key })).body.data;
      return view.is_active ? undefined : view;
    },
    30_000,
  );
}

const viewOf = async (key: string, id: string) => (await api(`/webhooks/${id}`, 'GET', { bearer: key })).body.data;

test('[WEBHOOK-PAGE] a webhook disabled by failed deliveries is on the account page with its reason and a notice; Re-enable and Pause there change it', async (t) => {
  browser = await launchBrowser();
  if (!browser) return t.skip('chromium is not installed');
  const email = 'webhooks-page@example.com';
  const { key, id } = await accountWithFailingWebhook(email, '/page-down');
  const disabled = await failUntilDisabled(key, id);
  assert.match(disabled.disabled_reason, /failed every attempt/);

  const { context, refused } = await loopbackContext(browser, { viewport: { width: 1280, height: 900 } });
  const page: Page = await context.newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, password);

    // The notice near the top links to the section.
    const notice = page.locator('#webhooks-disabled-notice');
    await notice.getByText('A webhook was disabled because its deliveries kept failing').waitFor();
    assert.equal(await notice.getByRole('link').getAttribute('href'), '#webhooks');

    const table = page.getByRole('table', { name: /your webhooks/i });
    const row = table.getByRole('row', { name: /hook \/page-down/ });
    await row.getByRole('rowheader', { name: 'hook /page-down' }).waitFor();
    await row.getByText(receiver.url('/page-down')).waitFor();
    await row.getByText('context.created').waitFor();
    await row.getByText('Disabled', { exact: true }).waitFor();
    // The reason is a row of its own under its webhook's, saying which webhook it is about.
    const reason = table.locator('tbody tr').nth(1);
    assert.equal(await table.locator('tbody tr').count(), 2);
    await reason.getByText('hook /page-down was disabled:').waitFor();
    await reason.getByText(disabled.disabled_reason).waitFor();
    assert.equal(await row.locator('td time').count(), 1, 'its registration time');
    assert.equal(await row.getByRole('button', { name: /pause/i }).count(), 0);
    // The same webhooks are on the context-file API, named on the page.
    await page.getByText(`${sys.config.apiUrl}/v1/webhooks`, { exact: true }).waitFor();
    await screenshot(page, 'webhooks-disabled');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'webhooks-disabled-narrow');
    await page.setViewportSize({ width: 1280, height: 900 });

    await row.getByRole('button', { name: 'Re-enable the webhook hook /page-down' }).click();
    await page.waitForURL(/\/account\?done=enable_webhook/);
    await page
      .getByRole('status')
      .getByText(/Webhook re-enabled/)
      .waitFor();
    await row.getByText('Active', { exact: true }).waitFor();
    assert.equal(await page.locator('#webhooks-disabled-notice').count(), 0, 'no notice once it is re-enabled');
    assert.equal(await table.locator('tbody tr').count(), 1, 'no reason row once it is re-enabled');
    const enabled = await viewOf(key, id);
    assert.equal(enabled.is_active, true);
    assert.equal(enabled.disabled_reason, null);
    await screenshot(page, 'webhooks-enabled');

    await row.getByRole('button', { name: 'Pause the webhook hook /page-down' }).click();
    await page.waitForURL(/\/account\?done=pause_webhook/);
    await page
      .getByRole('status')
      .getByText(/Webhook paused/)
      .waitFor();
    await row.getByText('Paused', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Re-enable the webhook hook /page-down' }).waitFor();
    assert.equal(await page.locator('#webhooks-disabled-notice').count(), 0, 'a pause is not a failure');
    const paused = await viewOf(key, id);
    assert.equal(paused.is_active, false);
    assert.equal(paused.disabled_reason, null);
    await screenshot(page, 'webhooks-paused');
    assert.deepEqual(refused, [], 'the page loads nothing from elsewhere');
  } finally {
    await context.close();
  }
});

test('[WEBHOOK-PAGE] a foreign form or another person’s webhook id changes nothing; a person without webhooks sees none and no notice', async () => {
  const { jar, key, id } = await accountWithFailingWebhook('webhooks-owner@example.com', '/owner-down');
  await failUntilDisabled(key, id);
  const other = await signUp(sys.baseUrl, 'webhooks-other@example.com', password);

  const theirs = await (await other.get('/account')).text();
  assert.ok(theirs.includes('You have no webhooks.'));
  assert.ok(!theirs.includes('webhooks-disabled-notice') && !theirs.includes('/owner-down'));

  const refusedNotFound = await other.post(`/account/webhooks/${id}/enable`, {});
  assert.equal(refusedNotFound.status, 404);
  assert.match(await refusedNotFound.text(), /role="alert"><p>That is not there any more/);
  assert.equal((await other.post('/account/webhooks/not-a-uuid/pause', {})).status, 404);
  assert.equal((await jar.post(`/account/webhooks/${id}/enable`, { csrf: 'forged' })).status, 403);
  assert.equal((await jar.post(`/account/webhooks/${id}/enable`, {}, { origin: 'https://evil.example' })).status, 403);
  assert.equal((await viewOf(key, id)).is_active, false, 'still disabled');

  const enabled = await jar.post(`/account/webhooks/${id}/enable`, {});
  assert.equal(enabled.status, 303);
  assert.equal(enabled.headers.get('location'), `${sys.config.webUrl}/account?done=enable_webhook`);
  assert.equal((await viewOf(key, id)).is_active, true);
  assert.equal((await other.post(`/account/webhooks/${id}/pause`, {})).status, 404);
  assert.equal((await viewOf(key, id)).is_active, true, 'still active');
});
