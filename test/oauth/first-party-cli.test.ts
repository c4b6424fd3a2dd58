// The command-line client is a first-party client (issue 44.2): every deployment knows it from start-up, so
// `assay login` with no initial access token starts the device flow at once. The CLI runs as a real subprocess; the
// person approves the code on the verification page in headless Chromium, which links back to the account.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { firstPartyCliClientId } from '../../cli/sync/commands.ts';
import { firstPartyClients } from '../../contracts/index.ts';
import { launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { accessTokenClaims, signUp } from '../support/oauth.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';
import { assayArgs } from '../support/assay-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'assay-first-party-'));
const email = 'cli-user@example.com';
const password = 'correct horse battery staple';
let sys: TestSystem;
let browser: Browser | null;
let page: Page;

before(async () => {
  sys = await startSystem();
  await signUp(sys.baseUrl, email, password);
  browser = await launchBrowser();
  if (browser) page = await (await loopbackContext(browser)).context.newPage();
  else if (process.env.CI === 'true') throw new Error('chromium is missing: CI installs it in .ci/run');
});
after(async () => {
  await browser?.close();
  await sys?.stop();
  rmSync(work, { recursive: true, force: true });
});

test('[OAUTH-CLI-ID] the CLI and the server name the same first-party client', () => {
  assert.equal(firstPartyCliClientId, firstPartyClients.cli.clientId);
});

test('[OAUTH-CLI-FIRST-PARTY] `assay login` with no token prints a device code at once and completes once it is approved in Chromium', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const configDir = join(work, 'config');
  const child = spawn(process.execPath, [...assayArgs(), 'login', '--server', sys.baseUrl], {
    cwd: root,
    env: { ...process.env, ASSAY_CONFIG_DIR: configDir, ASSAY_INITIAL_ACCESS_TOKEN: '', LOG_LEVEL: 'error' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const url = await eventually(
    'the verification URL',
    async () => /(http\S+\/device\?user_code=[A-Z-]+)/.exec(out)?.[1],
    30_000,
  );
  const code = /enter the code\s+(\S+)/.exec(out)?.[1];
  assert.ok(code, out);
  assert.doesNotMatch(out, /initial access token/, 'no registration step is asked for');
  assert.doesNotMatch(out, /Press Enter/, 'off a terminal there is no offer to open a browser');

  await signInToAccount(page, sys.baseUrl, email, password);
  await page.goto(url);
  const shown = await page.content();
  assert.match(shown, new RegExp(code));
  assert.match(shown, /Assay command-line client/);
  assert.match(shown, /not registered by your account/);
  assert.match(shown, /Upload folders from your devices/, 'the page says in words what the CLI may do');
  await screenshot(page, 'oauth-first-party-cli-confirm');
  await page.getByRole('button', { name: /allow/i }).click();
  await page.getByRole('heading', { name: /connected/i }).waitFor();
  await screenshot(page, 'oauth-first-party-cli-connected');
  await page.getByRole('link', { name: /back to your account/i }).click();
  await page.waitForURL(`${sys.baseUrl}/account#grants`);
  assert.match(await page.content(), /Assay command-line client/, 'the account lists the CLI among its grants');

  assert.equal(await exited, 0, err);
  assert.match(out, /Logged in/);
  const stored = JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8'));
  const login = Object.values(stored.servers ?? stored)[0] as Record<string, any>;
  assert.equal(login.client_id, firstPartyClients.cli.clientId);
  const claims = accessTokenClaims(login.access_token);
  assert.equal(claims.scope, 'sync', 'the scopes the CLI needs, no more');
  assert.equal(claims.client_id, firstPartyClients.cli.clientId);
});
