// What the OAuth server refuses, each with the standard error and nothing issued: PKCE missing or plain, a wrong
// verifier, a redirect URI that was not registered, a code used twice or too late, an unknown client, registration
// without (or with a wrong) initial access token, a decision without its screen token. And the sign-in page: a rate
// limit, and one answer for an unknown email and a wrong password.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  accountWithClient,
  approvedTokens,
  approveOverHttp,
  authorizationRequest,
  discover,
  insecure,
  issueInitialAccessToken,
  loopbackRedirectUri,
  oauth,
  redeemCode,
  registerClient,
  signUp,
  tokenError,
  WebJar,
} from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let jar: WebJar;
let client: oauth.Client;
const redirectUri = loopbackRedirectUri;

before(async () => {
  sys = await startSystem({ ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE: '5' });
  as = await discover(sys.baseUrl);
  ({ jar, client } = await accountWithClient(as, sys.baseUrl, 'grace@example.com', { client_name: 'Refused' }));
});
after(async () => {
  await sys.stop();
});

/** What the server holds: refusals must not add a grant, a code or a token. */
async function issued() {
  const [row] = await sys.sql<{ grants: number; codes: number; tokens: number; refresh: number }[]>`
    SELECT (SELECT count(*)::int FROM oauth_grants) AS grants, (SELECT count(*)::int FROM oauth_codes) AS codes,
           (SELECT count(*)::int FROM oauth_access_tokens) AS tokens,
           (SELECT count(*)::int FROM oauth_refresh_tokens) AS refresh`;
  return row!;
}

test('[OAUTH-REFUSE-AUTHORIZE] PKCE missing or plain, a wrong response type or scope, and an unknown client or redirect URI', async () => {
  const before = await issued();
  const request = await authorizationRequest(as, client, redirectUri);
  const redirectedError = async (change: (u: URL) => void) => {
    const url = new URL(request.url);
    change(url);
    const res = await jar.get(`${url.pathname}${url.search}`);
    assert.equal(res.status, 303, await res.text());
    const back = new URL(res.headers.get('location')!);
    assert.equal(`${back.origin}${back.pathname}`, redirectUri);
    assert.equal(back.searchParams.get('state'), request.state);
    assert.equal(back.searchParams.get('iss'), sys.baseUrl);
    return back.searchParams.get('error');
  };
  assert.equal(await redirectedError((u) => u.searchParams.delete('code_challenge')), 'invalid_request');
  assert.equal(
    await redirectedError((u) => {
      u.searchParams.set('code_challenge_method', 'plain');
      u.searchParams.set('code_challenge', request.verifier);
    }),
    'invalid_request',
  );
  assert.equal(await redirectedError((u) => u.searchParams.delete('code_challenge_method')), 'invalid_request');
  assert.equal(await redirectedError((u) => u.searchParams.set('response_type', 'token')), 'unsupported_response_type');
  assert.equal(await redirectedError((u) => u.searchParams.set('scope', 'read:artifact admin')), 'invalid_scope');
  assert.equal(
    await redirectedError((u) => u.searchParams.set('resource', 'https://elsewhere.example/')),
    'invalid_target',
  );

  // Never redirected: an unknown client, and a redirect URI the client did not register (shown on a page).
  for (const change of [
    (u: URL) => u.searchParams.set('client_id', '6f1d2c3b-4a59-4e8d-9c7b-1a2b3c4d5e6f'),
    (u: URL) => u.searchParams.set('redirect_uri', 'https://attacker.example/callback'),
    (u: URL) => u.searchParams.set('redirect_uri', `${redirectUri}/other`),
  ]) {
    const url = new URL(request.url);
    change(url);
    const res = await jar.get(`${url.pathname}${url.search}`);
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  }
  // A parameter sent twice is refused too (RFC 6749 3.1).
  const twice = await jar.get(`${request.url.pathname}${request.url.search}&scope=purchase&scope=read:artifact`);
  assert.equal(twice.status, 400);
  assert.deepEqual(await issued(), before);
});

test('[OAUTH-REFUSE-CODE] a wrong verifier, a second use (which revokes what the first issued) and an expired code', async () => {
  // A wrong verifier: invalid_grant, and the code is spent.
  let request = await authorizationRequest(as, client, redirectUri);
  let callback = await approveOverHttp(jar, request);
  const other = oauth.generateRandomCodeVerifier();
  assert.equal(await tokenError(redeemCode(as, client, callback, request, other)), 'invalid_grant');
  assert.equal(await tokenError(redeemCode(as, client, callback, request)), 'invalid_grant');

  // Used twice: the second use fails and the tokens of the first stop working.
  request = await authorizationRequest(as, client, redirectUri);
  callback = await approveOverHttp(jar, request);
  const first = await redeemCode(as, client, callback, request);
  assert.equal((await sys.call('GET', '/v1/balance', { token: first.access_token })).status, 200);
  assert.equal(await tokenError(redeemCode(as, client, callback, request)), 'invalid_grant');
  assert.equal((await sys.call('GET', '/v1/balance', { token: first.access_token })).status, 401);
  const refresh = await tokenError(
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure),
    ),
  );
  assert.equal(refresh, 'invalid_grant');

  // Past its 60 seconds (moved there in the database, rather than waiting).
  request = await authorizationRequest(as, client, redirectUri);
  callback = await approveOverHttp(jar, request);
  await sys.sql`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`;
  const before = await issued();
  assert.equal(await tokenError(redeemCode(as, client, callback, request)), 'invalid_grant');
  assert.equal((await issued()).tokens, before.tokens);

  // The person says no: access_denied, and no code.
  request = await authorizationRequest(as, client, redirectUri);
  const denied = await approveOverHttp(jar, request, 'deny');
  assert.equal(denied.searchParams.get('error'), 'access_denied');
  assert.equal(denied.searchParams.get('code'), null);
});

test('[OAUTH-REFUSE-TOKEN] an unknown client, an unknown grant type and missing parameters at the token endpoint', async () => {
  const post = (form: Record<string, string>, type = 'application/x-www-form-urlencoded') =>
    fetch(`${sys.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': type },
      body: type.includes('json') ? JSON.stringify(form) : new URLSearchParams(form),
    });
  const unknown = await post({ grant_type: 'refresh_token', refresh_token: 'asyr_x', client_id: 'nobody' });
  assert.equal(unknown.status, 401);
  assert.equal((await unknown.json()).error, 'invalid_client');
  const grant = await post({ grant_type: 'password', client_id: client.client_id, username: 'a', password: 'b' });
  assert.equal((await grant.json()).error, 'unsupported_grant_type');
  const missing = await post({ grant_type: 'authorization_code', client_id: client.client_id });
  assert.equal((await missing.json()).error, 'invalid_request');
  const json = await post({ grant_type: 'refresh_token' }, 'application/json');
  assert.equal(json.status, 400);
  assert.equal((await json.json()).error, 'invalid_request');
  assert.equal(unknown.headers.get('cache-control'), 'no-store');
});

test('[OAUTH-REFUSE-REGISTER] registration without or with a wrong initial access token, or with bad metadata, registers nothing', async () => {
  const count = async () => (await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n;
  const before = await count();
  const register = (token: string | null, body: unknown) =>
    fetch(`${sys.baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const metadata = { redirect_uris: [redirectUri] };
  for (const token of [null, 'asyi_not-a-real-token-at-all-000000000000000000', 'not even prefixed']) {
    const r = await register(token, metadata);
    assert.equal(r.status, 401);
    assert.equal((await r.json()).error, 'invalid_token');
    assert.match(r.headers.get('www-authenticate') ?? '', /Bearer/);
  }
  const iat = await issueInitialAccessToken(jar);
  const refused: [unknown, string][] = [
    [{ redirect_uris: ['http://example.com/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://example.com/cb#frag'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    [{ redirect_uris: [redirectUri], grant_types: ['implicit'] }, 'invalid_client_metadata'],
    [{ redirect_uris: [redirectUri], grant_types: ['password'] }, 'invalid_client_metadata'],
    [{ redirect_uris: [redirectUri], scope: 'read:artifact admin' }, 'invalid_client_metadata'],
    [{ redirect_uris: [redirectUri], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
  ];
  for (const [body, error] of refused) {
    const r = await register(iat, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal((await r.json()).error, error, JSON.stringify(body));
  }
  assert.equal(await count(), before);
  // A revoked initial access token is refused like an unknown one.
  const page = await (await jar.get('/account')).text();
  const id = /initial-access-tokens\/([0-9a-f-]{36})\/revoke/.exec(page)?.[1];
  assert.ok(id);
  await jar.post(`/account/initial-access-tokens/${id}/revoke`, {});
  const revoked = await register(iat, metadata);
  assert.equal(revoked.status, 401);
});

test('[OAUTH-REFUSE-DECISION] a decision without the screen token, from another origin or without the CSRF token approves nothing', async () => {
  const before = await issued();
  const request = await authorizationRequest(as, client, redirectUri);
  const html = await (await jar.get(`${request.url.pathname}${request.url.search}`)).text();
  const screenToken = /name="screen_token" value="([^"]+)"/.exec(html)![1]!;
  // A cross-site form: the browser sends the session cookie (Lax does not on cross-site POSTs, but assume it did),
  // yet the page cannot know the screen token or the CSRF token, and its Origin is not ours.
  const attempts: [Record<string, string>, Record<string, string>][] = [
    [{ decision: 'approve' }, {}],
    [{ decision: 'approve', screen_token: screenToken }, { origin: 'https://attacker.example' }],
    [{ decision: 'approve', screen_token: screenToken, csrf: 'forged' }, {}],
    [{ decision: 'approve', screen_token: 'eyJhbGciOiJFUzI1NiJ9.e30.forged' }, {}],
  ];
  for (const [form, headers] of attempts) {
    const res = await fetch(`${sys.baseUrl}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header(), ...headers },
      body: new URLSearchParams({ csrf: jar.csrf, ...form }),
    });
    assert.ok([400, 403].includes(res.status), `${JSON.stringify(form)} ${JSON.stringify(headers)}: ${res.status}`);
    assert.equal(res.headers.get('location'), null);
  }
  // Another person's session with this screen token: not theirs to approve.
  const other = await signUp(sys.baseUrl, 'mallory@example.com');
  const foreign = await other.post('/oauth/authorize/decision', { decision: 'approve', screen_token: screenToken });
  assert.equal(foreign.headers.get('location'), null);
  assert.deepEqual(await issued(), before);
});

test('[OAUTH-SIGNIN] an unknown email and a wrong password get the same answer; attempts past the limit wait', async () => {
  // The limit counts in fixed one-minute windows: start with time to spare, so the attempts share one window.
  const leftMs = 60_000 - (Date.now() % 60_000);
  if (leftMs < 15_000) await sleep(leftMs + 100);
  const attempt = (email: string, password: string) =>
    new WebJar(sys.baseUrl).post('/signin', { email, password, next: '/account' });
  const unknown = await attempt('nobody@example.com', 'whatever password');
  const wrong = await attempt('grace@example.com', 'not the password');
  assert.equal(unknown.status, 401);
  assert.equal(wrong.status, 401);
  const message = (html: string) =>
    /role="alert"[^>]*>([\s\S]*?)<\//
      .exec(html)?.[1]
      ?.replace(/<[^>]+>/g, '')
      .trim();
  const [a, b] = [message(await unknown.text()), message(await wrong.text())];
  assert.ok(a);
  assert.equal(a, b);
  // The limit is 5 a minute per address (this test system): three more pass, the sixth waits.
  for (let i = 0; i < 3; i++) assert.equal((await attempt('grace@example.com', 'still wrong')).status, 401);
  const limited = await attempt('grace@example.com', 'correct horse battery staple');
  assert.equal(limited.status, 429, 'even the right password waits once the limit is reached');
  assert.equal(
    limited.headers.getSetCookie().some((c) => c.startsWith('assay_session=')),
    false,
  );
});

test("[OAUTH-EXCHANGE] a revoked access token cannot be exchanged, and the acting client's registration bounds the scopes", async () => {
  const exchange = (by: oauth.Client, subject: string, scope?: string) =>
    tokenError(
      oauth
        .genericTokenEndpointRequest(
          as,
          by,
          oauth.None(),
          'urn:ietf:params:oauth:grant-type:token-exchange',
          {
            subject_token: subject,
            subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
            ...(scope ? { scope } : {}),
          },
          insecure,
        )
        .then((res) => oauth.processGenericTokenEndpointResponse(as, by, res)),
    );
  const full = await approvedTokens(as, jar, client);

  // A client of the same person that registered only read:artifact acts with at most that.
  const reader = await registerClient(as, await issueInitialAccessToken(jar), {
    client_name: 'Reader',
    grant_types: ['urn:ietf:params:oauth:grant-type:token-exchange'],
    scope: 'read:artifact',
  });
  const res = await oauth.genericTokenEndpointRequest(
    as,
    reader,
    oauth.None(),
    'urn:ietf:params:oauth:grant-type:token-exchange',
    { subject_token: full.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' },
    insecure,
  );
  const narrowed = await oauth.processGenericTokenEndpointResponse(as, reader, res);
  assert.equal(narrowed.scope, 'read:artifact');
  assert.equal(await exchange(reader, full.access_token, 'read:artifact purchase'), 'invalid_scope');

  // Revoked (RFC 7009): the token is dead, and so is every exchange of it.
  await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, oauth.None(), full.access_token, insecure),
  );
  const before = await issued();
  assert.equal(await exchange(client, full.access_token), 'invalid_grant');
  assert.equal(await exchange(reader, full.access_token), 'invalid_grant');
  assert.deepEqual(await issued(), before);
});

test("[OAUTH-DEVICE] another client's device code is unknown to it, and polling it neither spends nor slows the real one", async () => {
  const other = await registerClient(as, await issueInitialAccessToken(jar), {
    client_name: 'Other device',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
  });
  const started = await oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(as, client, oauth.None(), {}, insecure),
  );
  const poll = (by: oauth.Client) =>
    tokenError(
      oauth
        .deviceCodeGrantRequest(as, by, oauth.None(), started.device_code, insecure)
        .then((res) => oauth.processDeviceCodeResponse(as, by, res)),
    );
  assert.equal(await poll(other), 'invalid_grant');
  assert.equal(await poll(client), 'authorization_pending', 'not slow_down: the other client did not count');
  const [row] = await sys.sql<{ interval_seconds: number; used_at: Date | null }[]>`
    SELECT interval_seconds, used_at FROM oauth_device_codes WHERE user_code = ${started.user_code}`;
  assert.deepEqual(row, { interval_seconds: 5, used_at: null });
});
