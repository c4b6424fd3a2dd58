// The OAuth 2.1 server driven by a conforming client (oauth4webapi) from metadata discovery, with a person in
// headless Chromium: sign-up and sign-in, the consent screen, the device verification page and the account page.
// Every token the flows yield is used on the agent API (GET /v1/balance) and on MCP (tools/call).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, loopbackContext, screenshot } from '../support/browser.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp } from '../support/mcp.ts';
import {
  accessTokenClaims,
  allGrants,
  authorizationRequest,
  discover,
  insecure,
  loopbackRedirectUri,
  oauth,
  redeemCode,
  registerClient,
  tokenError,
} from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let browser: Browser | null;
let context: BrowserContext;
let page: Page;
const email = 'ada@example.com';
const password = 'correct horse battery staple';
/** The client's loopback redirect URI; the browser's request to it is intercepted (no listener needed). */
const redirectUri = loopbackRedirectUri;
let client: oauth.Client;

before(async () => {
  sys = await startSystem();
  as = await discover(sys.baseUrl);
  browser = await launchBrowser();
  if (!browser) return;
  ({ context } = await loopbackContext(browser, { viewport: { width: 1280, height: 800 } }));
  page = await context.newPage();
});
after(async () => {
  await browser?.close();
  await sys.stop();
});

async function balanceWith(token: string) {
  return sys.call('GET', '/v1/balance', { token });
}

async function mcpBalance(token: string) {
  const mcp = await connectMcp(sys.baseUrl, token);
  try {
    return await mcp.client.callTool({ name: 'get_balance', arguments: {} });
  } finally {
    await mcp.client.close();
  }
}

/** Both faces accept the token: REST and an MCP tools/call. */
async function assertTokenWorks(token: string, what: string) {
  const rest = await balanceWith(token);
  assert.equal(rest.status, 200, `${what} on REST: ${JSON.stringify(rest.body)}`);
  assert.equal(rest.body.balance_cents, 0, 'a new live principal has no credits until a live top-up lands');
  const tool = await mcpBalance(token);
  assert.notEqual(tool.isError, true, `${what} on MCP: ${JSON.stringify(tool)}`);
}

/** The callback the browser is sent to after the consent screen. */
async function consentCallback(action: () => Promise<unknown>): Promise<URL> {
  let resolveUrl!: (u: URL) => void;
  const arrived = new Promise<URL>((resolve) => {
    resolveUrl = resolve;
  });
  await context.route(`${redirectUri}**`, async (route) => {
    resolveUrl(new URL(route.request().url()));
    await route.fulfill({ status: 200, contentType: 'text/plain', body: 'the client got its answer' });
  });
  await action();
  const url = await arrived;
  // The route saw the request; wait until the page has landed there too, or the next navigation races it.
  await page.waitForURL((u) => u.href.startsWith(redirectUri));
  await context.unroute(`${redirectUri}**`);
  return url;
}

test('[OAUTH-CODE-FLOW] sign-up, an initial access token, registration, then code + PKCE approved in Chromium after a real sign-in', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  // Sign-up and the account page, as a person does it.
  await page.goto(`${sys.baseUrl}/signup`);
  await screenshot(page, 'oauth-signup');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: /create|sign up/i }).click();
  await page.waitForURL(`${sys.baseUrl}/account`);
  await page.getByRole('button', { name: /issue an initial access token/i }).click();
  const initialAccessToken = /asyi_[A-Za-z0-9_-]{43}/.exec(await page.content())?.[0];
  assert.ok(initialAccessToken, 'the account page shows the new initial access token once');

  client = await registerClient(as, initialAccessToken, {
    client_name: 'Research agent',
    redirect_uris: [redirectUri],
    grant_types: allGrants,
  });
  assert.match(client.client_id, /^[0-9a-f-]{36}$/);
  assert.equal(client.token_endpoint_auth_method, 'none');

  // Signed out, the authorization request sends the person to sign in, then back to the consent screen.
  await page.getByRole('button', { name: /sign out/i }).click();
  await page.waitForURL(/\/signin/);
  const request = await authorizationRequest(as, client, redirectUri, { scope: 'read:artifact purchase' });
  await page.goto(request.url.toString());
  await page.waitForURL(/\/signin\?next=/);
  await screenshot(page, 'oauth-signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.waitForURL(/\/oauth\/authorize/);
  assert.match(await page.content(), /Research agent/);
  await screenshot(page, 'oauth-consent');
  const callback = await consentCallback(() => page.getByRole('button', { name: /allow|approve/i }).click());
  assert.equal(callback.searchParams.get('iss'), sys.baseUrl, 'RFC 9207: the issuer comes with the code');
  assert.match(callback.searchParams.get('code') ?? '', /^asyc_/);

  const tokens = await redeemCode(as, client, callback, request);
  assert.match(tokens.access_token, /^asyo_/);
  assert.match(tokens.refresh_token ?? '', /^asyr_/);
  assert.equal(tokens.scope, 'read:artifact purchase');
  assert.equal(tokens.token_type, 'bearer');
  const claims = accessTokenClaims(tokens.access_token);
  assert.equal(claims.aud, sys.baseUrl);
  assert.equal(claims.client_id, client.client_id);
  assert.equal(claims.agent_id, client.client_id, 'the client is the agent of the tokens');
  assert.equal(claims.sandbox, false);
  await assertTokenWorks(tokens.access_token, 'the code grant token');

  // Refresh rotates; the rotated-out refresh token presented again revokes the whole family.
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
  );
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
  await assertTokenWorks(refreshed.access_token, 'the refreshed token');
  const reuse = await tokenError(
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    ),
  );
  assert.equal(reuse, 'invalid_grant');
  assert.equal((await balanceWith(refreshed.access_token)).status, 401, 'the family is revoked');
  const afterReuse = await tokenError(
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure),
    ),
  );
  assert.equal(afterReuse, 'invalid_grant', 'the newest refresh token of the family is dead too');
});

test('[OAUTH-EXCHANGE] token exchange narrows scopes or moves the audience to MCP only, with an act claim; never wider', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const request = await authorizationRequest(as, client, redirectUri);
  await page.goto(request.url.toString());
  const callback = await consentCallback(() => page.getByRole('button', { name: /allow|approve/i }).click());
  const full = await redeemCode(as, client, callback, request);
  const exchange = (params: Record<string, string>) =>
    oauth
      .genericTokenEndpointRequest(
        as,
        client,
        oauth.None(),
        'urn:ietf:params:oauth:grant-type:token-exchange',
        {
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          ...params,
        },
        insecure,
      )
      .then((res) => oauth.processGenericTokenEndpointResponse(as, client, res));

  const narrow = await exchange({ subject_token: full.access_token, scope: 'read:artifact' });
  assert.equal(narrow.scope, 'read:artifact');
  assert.equal(narrow.refresh_token, undefined);
  const claims = accessTokenClaims(narrow.access_token);
  assert.deepEqual(claims.act, { sub: client.client_id });
  assert.equal((await sys.call('GET', '/v1/search', { token: narrow.access_token })).status, 200);
  const orders = await sys.call('GET', '/v1/orders', { token: narrow.access_token });
  assert.equal(orders.status, 403, 'the purchase scope was exchanged away');
  assert.ok(isTypedError(orders.body, 'forbidden'));

  assert.equal(
    await tokenError(exchange({ subject_token: narrow.access_token, scope: 'read:artifact purchase' })),
    'invalid_scope',
  );

  const mcpOnly = await exchange({ subject_token: full.access_token, resource: `${sys.baseUrl}/mcp` });
  assert.equal((await balanceWith(mcpOnly.access_token)).status, 401, 'an MCP-only token is refused on REST');
  const tool = await mcpBalance(mcpOnly.access_token);
  assert.notEqual(tool.isError, true, JSON.stringify(tool));
  assert.equal(
    await tokenError(exchange({ subject_token: mcpOnly.access_token, resource: sys.baseUrl })),
    'invalid_target',
    'an MCP-only token cannot be widened to the whole API',
  );
});

test('[OAUTH-DEVICE] the device grant: pending, slow_down, then tokens once the person approves on the verification page', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const started = await oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope: 'read:artifact purchase' }, insecure),
  );
  assert.match(started.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  assert.equal(started.verification_uri, `${sys.baseUrl}/device`);
  const poll = () =>
    oauth
      .deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, insecure)
      .then((res) => oauth.processDeviceCodeResponse(as, client, res));
  assert.equal(await tokenError(poll()), 'authorization_pending');
  assert.equal(await tokenError(poll()), 'slow_down', 'polling faster than the interval');

  await page.goto(started.verification_uri);
  await page.getByLabel(/code/i).fill(started.user_code.toLowerCase().replace('-', ' '));
  await screenshot(page, 'oauth-device-entry');
  await page.getByRole('button', { name: /continue|next|submit/i }).click();
  assert.match(await page.content(), /Research agent/);
  await screenshot(page, 'oauth-device-confirm');
  await page.getByRole('button', { name: /allow|approve/i }).click();
  await page.getByRole('heading', { name: /connected/i }).waitFor();

  // The client keeps polling at its (grown) interval until the tokens come.
  let tokens: oauth.TokenEndpointResponse | null = null;
  for (let i = 0; i < 5 && !tokens; i++) {
    await sleep((started.interval ?? 5) * 1000 + 5000 * (i === 0 ? 1 : 0));
    try {
      tokens = await poll();
    } catch (err) {
      if (!(err instanceof oauth.ResponseBodyError) || !['authorization_pending', 'slow_down'].includes(err.error)) {
        throw err;
      }
    }
  }
  assert.ok(tokens, 'tokens after approval');
  await assertTokenWorks(tokens.access_token, 'the device grant token');
  assert.equal(await tokenError(poll()), 'invalid_grant', 'a device code yields tokens once');
});

test('[OAUTH-ACCOUNT-PAGE] the account page lists grants and live tokens, and its revoke button stops them', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const request = await authorizationRequest(as, client, redirectUri, { scope: 'read:artifact' });
  await page.goto(request.url.toString());
  const callback = await consentCallback(() => page.getByRole('button', { name: /allow|approve/i }).click());
  const first = await redeemCode(as, client, callback, request);
  // A refresh gives the same grant a second access token; the first stays live until its expiry or a revocation.
  const second = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure),
  );
  const firstJti: string = accessTokenClaims(first.access_token).jti;
  const secondJti: string = accessTokenClaims(second.access_token).jti;
  const grantId: string = accessTokenClaims(first.access_token).gid;
  assert.notEqual(firstJti, secondJti);
  assert.equal(accessTokenClaims(second.access_token).gid, grantId, 'a refresh stays in its grant');
  for (const token of [first.access_token, second.access_token]) {
    assert.equal((await sys.call('GET', '/v1/search', { token })).status, 200);
  }

  await page.goto(`${sys.baseUrl}/account`);
  await screenshot(page, 'oauth-account');
  const grant = page.locator('li.item', { has: page.locator(`form[action$="/account/grants/${grantId}/revoke"]`) });
  const liveTokens = async () => (await grant.locator('ul.tokens code').allTextContents()).sort();
  assert.deepEqual(await liveTokens(), [firstJti, secondJti].sort(), 'the grant lists both live access tokens');

  // Revoking one token from the page stops that token only.
  await grant.locator(`form[action$="/account/tokens/${firstJti}/revoke"]`).getByRole('button').click();
  await page.waitForURL(/\/account\?done=revoke_token/);
  assert.equal((await sys.call('GET', '/v1/search', { token: first.access_token })).status, 401, 'the revoked token');
  assert.equal((await sys.call('GET', '/v1/search', { token: second.access_token })).status, 200, 'its sibling');
  assert.deepEqual(await liveTokens(), [secondJti], 'the revoked token leaves the list');

  // Revoking the grant stops every token it gave, and its refresh token.
  await grant.locator(`form[action$="/account/grants/${grantId}/revoke"]`).getByRole('button').click();
  await page.waitForURL(/\/account\?done=revoke_grant/);
  assert.equal((await sys.call('GET', '/v1/search', { token: second.access_token })).status, 401);
  const refused = await tokenError(
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), second.refresh_token!, insecure),
    ),
  );
  assert.equal(refused, 'invalid_grant');
  assert.equal(
    await page.locator(`form[action$="/account/grants/${grantId}/revoke"]`).count(),
    0,
    'the revoked grant leaves the page',
  );
});
