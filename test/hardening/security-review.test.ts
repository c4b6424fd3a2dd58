// The doors a security review found open (issue 40), each tried the way it was picked: a header written from a
// sign-in `next`, a revoked OAuth token presented without its prefix, a token exchanged from a revoked one, bodies
// nested deep enough to break what walks them, user-named keys that reach a prototype, client addresses a client
// writes itself, an unbounded device endpoint, and `localhost` as a redirect host. Every request goes over a real
// socket to a real system; the browser case runs in Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { forwardedClientAddress } from '../../gateway/http/client-address.ts';
import { HttpListener } from '../../gateway/http/listener.ts';
import { splitArguments } from '../../gateway/mcp/tools.ts';
import { operations } from '../../contracts/index.ts';
import { Admission } from '../../gateway/http/admission.ts';
import { safeNext } from '../../gateway/web/http.ts';
import { launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { contextCall } from '../support/context-api.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, openRawSession, rawMcp } from '../support/mcp.ts';
import {
  accountWithClient,
  approvedTokens,
  discover,
  insecure,
  issueInitialAccessToken,
  loopbackRedirectUri,
  oauth,
  signUp,
  tokenError,
  WebJar,
} from '../support/oauth.ts';
import { RawConnection, rawRequest } from '../support/raw-http.ts';
import { syncCall } from '../support/sync.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
const password = 'correct horse battery staple';

before(async () => {
  sys = await startSystem();
  as = await discover(sys.baseUrl);
});
after(async () => {
  await sys.stop();
});

/** The JWT inside an access token: what a holder gets by dropping the `asyo_` prefix. */
const bare = (accessToken: string) => accessToken.replace(/^asyo_/, '');

/** One raw request and its raw response head, so headers a client library would refuse or merge are seen as sent. */
async function rawExchange(request: string): Promise<{ status: number; head: string }> {
  const c = await RawConnection.open(sys.baseUrl);
  try {
    c.send(request);
    const res = await c.response({ timeoutMs: 10_000 });
    const head = Object.entries(res.headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    return { status: res.status, head };
  } finally {
    c.destroy();
  }
}

test('[SEC-HEADER-INJECTION] a sign-in `next` with CR and LF cannot add headers: the redirect stays on the site', async () => {
  const jar = await signUp(sys.baseUrl, 'injected@example.com', password);
  const cookie = jar.header();
  for (const next of [
    '/%0D%0ASet-Cookie:%20injected=1%0D%0AX-Injected:%20yes',
    '/account%0D%0AX-Injected:%20yes',
    '/%0ASet-Cookie:%20injected=1',
    '/%09/evil.example',
  ]) {
    const r = await rawExchange(rawRequest('GET', `/signin?next=${next}`, { headers: { cookie } }));
    assert.equal(r.status, 303, r.head);
    assert.doesNotMatch(r.head, /x-injected|injected=1/i, `next=${next} wrote a header:\n${r.head}`);
    assert.match(r.head, new RegExp(`^location: ${sys.config.webUrl}/account$`, 'm'), r.head);
  }
  // The form's `next` after signing in goes through the same rule.
  const form = new WebJar(sys.baseUrl);
  const posted = await form.post('/signin', {
    email: 'injected@example.com',
    password,
    next: '/account\r\nX-Injected: yes\r\nSet-Cookie: injected=1',
  });
  assert.equal(posted.status, 303);
  assert.equal(posted.headers.get('location'), `${sys.config.webUrl}/account`);
  assert.equal(posted.headers.get('x-injected'), null);
  // Re-serialised, and never another origin.
  assert.equal(safeNext('/a b?c=d#e'), '/a%20b?c=d#e');
  for (const next of ['//evil.example/', '/\\evil.example', 'https://evil.example/', '/\u0000x', 'account']) {
    assert.equal(safeNext(next), '/account', next);
  }
});

test('[SEC-HEADER-INJECTION] in Chromium, a crafted sign-in link plants no cookie and lands on the account page', async (t) => {
  const browser = await launchBrowser();
  if (!browser) return t.skip('chromium is not installed');
  try {
    const { context } = await loopbackContext(browser);
    const page = await context.newPage();
    await signUp(sys.baseUrl, 'victim@example.com', password);
    await signInToAccount(page, sys.config.webUrl, 'victim@example.com', password);
    const before = (await context.cookies()).find((c) => c.name === 'assay_session')!.value;
    await page.goto(
      `${sys.config.webUrl}/signin?next=/%0D%0ASet-Cookie:%20assay_session=attacker%0D%0AX-Injected:%20yes`,
    );
    assert.equal(new URL(page.url()).pathname, '/account');
    const cookies = await context.cookies();
    assert.equal(cookies.find((c) => c.name === 'assay_session')!.value, before, 'the session cookie is still ours');
    assert.equal(
      cookies.some((c) => c.value === 'attacker'),
      false,
    );
    await screenshot(page, 'security-signin-next-injection');
  } finally {
    await browser.close();
  }
});

test('[SEC-HEADER-WRITER] the one header writer refuses a value or name with a control character: 500, nothing injected', async () => {
  const bad: Record<string, Record<string, string | string[]>> = {
    '/value-crlf': { 'x-note': 'fine\r\nset-cookie: planted=1' },
    '/value-lf': { location: '/ok\nx-injected: yes' },
    '/list-value': { 'set-cookie': ['a=1', 'b=2\r\nx-injected: yes'] },
    '/name': { 'x-bad name': 'value' },
    '/ok': { 'x-note': 'fine' },
  };
  const refused: string[] = [];
  const listener = new HttpListener({
    host: '127.0.0.1',
    port: 0,
    bodyBytesMax: 1024,
    bodyReadTimeoutMs: 1000,
    bodyDiscardBytesMax: 1024,
    admission: new Admission(10),
    refusal: () => ({ status: 400, headers: null, contentType: null, body: '' }),
    unsafeHeader: (err) => refused.push(err.headerName),
    serve: (x, req) => x.send(200, bad[req.getUrl()] ?? null, 'text/plain', 'written'),
  });
  const port = await listener.listen();
  try {
    for (const path of Object.keys(bad)) {
      const c = await RawConnection.open(`http://127.0.0.1:${port}`);
      c.send(rawRequest('GET', path));
      const res = await c.response();
      c.destroy();
      if (path === '/ok') {
        assert.equal(res.status, 200);
        assert.equal(res.headers['x-note'], 'fine');
        continue;
      }
      assert.equal(res.status, 500, path);
      assert.equal(res.body.toString(), 'internal error');
      assert.equal(res.headers['x-injected'], undefined, path);
      assert.equal(res.headers['set-cookie'], undefined, path);
    }
    assert.deepEqual(refused, ['x-note', 'location', 'set-cookie', 'x-bad name']);
  } finally {
    listener.close();
  }
});

test('[SEC-TOKEN-KIND] a revoked OAuth token is refused with or without its prefix, on /v1, MCP, the context API and sync', async () => {
  const { jar, client } = await accountWithClient(as, sys.baseUrl, 'prefix@example.com');
  const tokens = await approvedTokens(as, jar, client, { scope: 'read:artifact purchase read:context sync' });
  const jwt = bare(tokens.access_token);
  const surfaces = async (token: string) => ({
    v1: (await sys.call('GET', '/v1/balance', { token })).status,
    mcp: (await rawMcp(sys.baseUrl, { token, body: { jsonrpc: '2.0', id: 1, method: 'ping' } })).status,
    context: (await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/contexts`, 'GET', { bearer: token }))
      .status,
    sync: (await syncCall(sys, 'GET', 'revisions?locator=laptop/notes', { token })).status,
  });
  // Live, the bare form is the same token (the prefix is how it is handed out, not what it is).
  assert.equal((await sys.call('GET', '/v1/balance', { token: jwt })).status, 200);
  // RFC 7009 with the refresh token ends the grant.
  const revoke = await fetch(as.revocation_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: tokens.refresh_token!, client_id: client.client_id }),
  });
  assert.equal(revoke.status, 200);
  for (const token of [tokens.access_token, jwt]) {
    const seen = await surfaces(token);
    assert.deepEqual(
      seen,
      { v1: 401, mcp: 401, context: 401, sync: 401 },
      `${token.slice(0, 8)}…: ${JSON.stringify(seen)}`,
    );
  }
  const refused = await sys.call('GET', '/v1/balance', { token: jwt });
  assert.ok(isTypedError(refused.body, 'unauthorized'));
});

test('[SEC-TOKEN-KIND] RFC 7009 revocation of the bare JWT revokes the token, and a prefixed sandbox token is refused', async () => {
  const { jar, client } = await accountWithClient(as, sys.baseUrl, 'bare-revoke@example.com');
  const tokens = await approvedTokens(as, jar, client, { scope: 'read:artifact' });
  const revoke = await fetch(as.revocation_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: bare(tokens.access_token), client_id: client.client_id }),
  });
  assert.equal(revoke.status, 200);
  for (const token of [tokens.access_token, bare(tokens.access_token)]) {
    assert.equal((await sys.call('GET', '/v1/balance', { token })).status, 401);
  }
  // A token that names no grant is never an OAuth token, whatever text is put in front of it.
  const sandbox = await sys.register();
  assert.equal((await sys.call('GET', '/v1/balance', { token: sandbox.token })).status, 200);
  assert.equal((await sys.call('GET', '/v1/balance', { token: `asyo_${sandbox.token}` })).status, 401);
});

test('[SEC-EXCHANGE-REVOKE] revoking an access token revokes the tokens exchanged from it, and theirs', async () => {
  const { jar, client } = await accountWithClient(as, sys.baseUrl, 'exchange@example.com');
  const parent = await approvedTokens(as, jar, client, { scope: 'read:artifact purchase' });
  const exchange = async (subject: string) => {
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      'urn:ietf:params:oauth:grant-type:token-exchange',
      { subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', subject_token: subject },
      insecure,
    );
    return (await oauth.processGenericTokenEndpointResponse(as, client, res)).access_token;
  };
  const child = await exchange(parent.access_token);
  const grandchild = await exchange(child);
  const sibling = (await approvedTokens(as, jar, client, { scope: 'read:artifact' })).access_token;
  for (const token of [parent.access_token, child, grandchild, sibling]) {
    assert.equal((await sys.call('GET', '/v1/balance', { token })).status, 200);
  }
  const revoke = await fetch(as.revocation_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: parent.access_token, client_id: client.client_id }),
  });
  assert.equal(revoke.status, 200);
  for (const token of [parent.access_token, child, grandchild]) {
    assert.equal((await sys.call('GET', '/v1/balance', { token })).status, 401);
  }
  assert.equal((await sys.call('GET', '/v1/balance', { token: sibling })).status, 200, 'another grant is untouched');
  assert.equal(await tokenError(exchange(child)), 'invalid_grant', 'a revoked child cannot be exchanged either');
});

/** An array nested `depth` levels deep, as JSON text. */
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

test('[SEC-BAD-INPUT-DEPTH] bodies nested 40,000 deep are refused as bad input on every face, and change nothing', async () => {
  const jar = await signUp(sys.baseUrl, 'deep@example.com', password);
  const clientsBefore = (await sys.sql`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n;
  const initial = await issueInitialAccessToken(jar);
  const register = await fetch(`${sys.baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${initial}` },
    body: `{"client_name":"deep","redirect_uris":${deep(40_000)}}`,
  });
  assert.equal(register.status, 400);
  assert.equal((await register.json()).error, 'invalid_client_metadata');
  assert.equal((await sys.sql`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n, clientsBefore);

  const agent = await sys.register();
  const order = await fetch(`${sys.baseUrl}/v1/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'idempotency-key': 'deep', 'content-type': 'application/json' },
    body: `{"listing_id":"x","formats":${deep(40_000)}}`,
  });
  assert.ok(order.status === 400 || order.status === 422, String(order.status));
  assert.ok(isTypedError(await order.json(), 'validation_failed'));

  // Over MCP the same depth in a tool's arguments is the tool's refusal, as its REST twin's, and buys nothing.
  const session = await openRawSession(sys.baseUrl, agent.token);
  const mcp = await rawMcp(sys.baseUrl, {
    token: agent.token,
    sessionId: session,
    protocolVersion: '2025-06-18',
    rawBody: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"top_up","arguments":{"credits":${deep(40_000)},"idempotency_key":"deep"}}}`,
  });
  assert.equal(mcp.status, 200);
  assert.equal(mcp.body.result.isError, true);
  assert.equal(mcp.body.result._meta['assay/status'], 422);
  assert.match(mcp.body.result.content[0].text, /validation_failed/);
  assert.equal((await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents, agent.balanceCents);

  const key = await (async () => {
    const r = await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/api-keys`, 'POST', {
      jar,
      body: { name: 'deep' },
    });
    return r.body.data.key as string;
  })();
  const context = await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/contexts`, 'POST', {
    bearer: key,
    raw: `{"name":"deep","content":${deep(40_000)}}`,
  });
  assert.equal(context.status, 400);
  assert.match(context.body.message, /nested deeper/);
  const list = await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/contexts`, 'GET', { bearer: key });
  assert.equal(list.body.meta.total, 0);
});

test('[SEC-BAD-INPUT-KEYS] names that reach a prototype (constructor, toString, __proto__) are ordinary unknown names', async () => {
  const { client } = await accountWithClient(as, sys.baseUrl, 'proto@example.com');
  for (const grantType of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const res = await fetch(as.token_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: grantType, client_id: client.client_id }),
    });
    assert.equal(res.status, 400, grantType);
    assert.equal((await res.json()).error, 'unsupported_grant_type', grantType);
  }
  // A form field named like a prototype member is a field, not a repeat of one.
  const res = await fetch(as.token_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `constructor=1&toString=2&grant_type=refresh_token&client_id=${client.client_id}&refresh_token=asyr_x`,
  });
  assert.equal((await res.json()).error, 'invalid_grant');
  // A notice code that is no notice shows none; a cookie named __proto__ is just a cookie.
  const jar = await signUp(sys.baseUrl, 'proto-page@example.com', password);
  for (const done of ['constructor', '__proto__', 'toString']) {
    const page = await jar.get(`/account?done=${done}`);
    assert.equal(page.status, 200, done);
    assert.doesNotMatch(await page.text(), /native code|\[object/);
  }
  const withCookie = await fetch(`${sys.config.webUrl}/account`, {
    headers: { cookie: `__proto__=x; constructor=y; ${jar.header()}` },
    redirect: 'manual',
  });
  assert.equal(withCookie.status, 200);
  // MCP arguments named __proto__ stay an argument of that name (never the arguments' prototype), which the
  // pipeline refuses as REST refuses an unknown field; the SDK's own schema check may drop it before, but nothing
  // it holds is ever read.
  const topUp = operations.find((o) => o.id === 'topUp')!;
  const split = splitArguments(topUp, JSON.parse('{"credits": 1, "__proto__": {"credits": 99}}'));
  assert.equal(split.body.kind, 'value');
  const args = split.body.kind === 'value' ? (split.body.value as object) : {};
  assert.ok(Object.hasOwn(args, '__proto__'));
  assert.equal(Object.getPrototypeOf(args), Object.prototype);
  const agent = await sys.register();
  const rest = await sys.call('POST', '/v1/topups', {
    token: agent.token,
    key: 'proto',
    rawBody: '{"credits": 1, "__proto__": {"credits": 99}}',
  });
  assert.equal(rest.status, 422);
  assert.ok(isTypedError(rest.body, 'validation_failed'));
  const { client: mcp } = await connectMcp(sys.baseUrl, agent.token);
  try {
    await mcp.callTool({
      name: 'top_up',
      arguments: JSON.parse('{"credits": 1, "idempotency_key": "proto-mcp", "__proto__": {"credits": 99}}'),
    });
  } finally {
    await mcp.close();
  }
  const balance = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.ok(balance.body.balance_cents <= agent.balanceCents + 100, 'at most the one credit asked for');
});

test('[SEC-LOOPBACK-REDIRECT] redirect URIs on http take literal loopback addresses only, never the name localhost', async () => {
  const jar = await signUp(sys.baseUrl, 'loopback@example.com', password);
  const attempt = async (redirectUri: string) =>
    fetch(`${sys.baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await issueInitialAccessToken(jar)}` },
      body: JSON.stringify({ client_name: 'native', redirect_uris: [redirectUri] }),
    });
  const byName = await attempt('http://localhost:7/callback');
  assert.equal(byName.status, 400);
  assert.equal((await byName.json()).error, 'invalid_redirect_uri');
  for (const uri of [loopbackRedirectUri, 'http://[::1]:7/callback']) {
    assert.equal((await attempt(uri)).status, 201, uri);
  }
});

test('[SEC-CLIENT-ADDRESS] behind N trusted proxies the client is the Nth X-Forwarded-For entry from the right', () => {
  // Strings only: no address here is ever connected to.
  assert.equal(forwardedClientAddress(['198.51.100.1', '203.0.113.7'], 1), '203.0.113.7');
  assert.equal(forwardedClientAddress(['spoofed', '198.51.100.1', '203.0.113.7'], 2), '198.51.100.1');
  assert.equal(forwardedClientAddress(['203.0.113.7'], 2), null, 'fewer entries than proxies: not through them');
  assert.equal(forwardedClientAddress([], 1), null);
  assert.equal(forwardedClientAddress(['203.0.113.7'], 0), null);
});

/** Wait, if need be, so the next attempts fall in one fixed one-minute window of the rate limits. */
async function startOfWindow(spareMs: number): Promise<void> {
  const leftMs = 60_000 - (Date.now() % 60_000);
  if (leftMs < spareMs) await sleep(leftMs + 100);
}

test('[SEC-PER-ADDRESS-LIMITS] per-address limits hold behind a proxy, sign-up is bounded for all addresses, device codes per client', async () => {
  const limited = await startSystem({
    ASSAY_TRUST_PROXY: 'true',
    ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE: '3',
    ASSAY_SIGNUPS_PER_MINUTE: '5',
    ASSAY_DEVICE_CODES_PER_CLIENT_PER_MINUTE: '4',
    ASSAY_PASSWORD_SCRYPT_LOG_N: '10',
  });
  try {
    const via = (address: string, spoofed: string) => ({ 'x-forwarded-for': `${spoofed}, ${address}` });
    let attempt = 0;
    const signIn = (headers: Record<string, string>) =>
      new WebJar(limited.baseUrl).post(
        '/signin',
        { email: `nobody-${attempt++}@example.com`, password: 'wrong', next: '/' },
        headers,
      );
    await startOfWindow(20_000);
    // What the client writes to the left changes every time; the address the proxy appended does not.
    for (let i = 0; i < 3; i++) assert.equal((await signIn(via('203.0.113.7', `10.0.0.${i}`))).status, 401);
    assert.equal((await signIn(via('203.0.113.7', '10.0.0.99'))).status, 429);
    assert.equal((await signIn(via('203.0.113.8', '10.0.0.99'))).status, 401, 'another client is not held back');

    // Sign-up: five a minute in all, from as many addresses as anyone likes.
    await startOfWindow(20_000);
    const signUpFrom = (i: number) =>
      new WebJar(limited.baseUrl).post(
        '/signup',
        { email: `someone-${i}@example.com`, password, next: '/account' },
        via(`198.51.100.${i}`, 'x'),
      );
    for (let i = 0; i < 5; i++) assert.equal((await signUpFrom(i)).status, 303, `sign-up ${i}`);
    const sixth = await signUpFrom(5);
    assert.equal(sixth.status, 429);
    assert.equal((await limited.sql`SELECT count(*)::int AS n FROM accounts`)[0]!.n, 5);

    // Device codes: four a minute per client, three per address.
    const limitedAs = await discover(limited.baseUrl);
    const owner = new WebJar(limited.baseUrl);
    await startOfWindow(20_000);
    const initial = await (async () => {
      const r = await owner.post(
        '/signin',
        { email: 'someone-0@example.com', password, next: '/account' },
        via('192.0.2.1', 'x'),
      );
      assert.equal(r.status, 303);
      return issueInitialAccessToken(owner);
    })();
    const cli = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        limitedAs,
        { grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] },
        { initialAccessToken: initial, ...insecure },
      ),
    );
    const deviceCode = (address: string) =>
      fetch(limitedAs.device_authorization_endpoint!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...via(address, 'x') },
        body: new URLSearchParams({ client_id: cli.client_id }),
      });
    const before = (await limited.sql`SELECT count(*)::int AS n FROM oauth_device_codes`)[0]!.n;
    for (let i = 0; i < 3; i++) assert.equal((await deviceCode('192.0.2.10')).status, 200);
    const perAddress = await deviceCode('192.0.2.10');
    assert.equal(perAddress.status, 429);
    assert.equal((await perAddress.json()).error, 'slow_down');
    assert.ok(Number(perAddress.headers.get('retry-after')) > 0);
    assert.equal((await deviceCode('192.0.2.11')).status, 200, 'the client has one left');
    assert.equal((await deviceCode('192.0.2.12')).status, 429, 'the client used its four');
    assert.equal((await limited.sql`SELECT count(*)::int AS n FROM oauth_device_codes`)[0]!.n, before + 4);
  } finally {
    await limited.stop();
  }
});

test('[SEC-CONTENT-LENGTH] two different Content-Length headers are refused with 400 and the connection closed', async () => {
  const agent = await sys.register();
  const body = '{"credits": 1}';
  const c = await RawConnection.open(sys.baseUrl);
  try {
    c.send(
      `POST /v1/topups HTTP/1.1\r\nhost: assay.test\r\nauthorization: Bearer ${agent.token}\r\n` +
        `idempotency-key: two-lengths\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
        `content-length: 3\r\n\r\n${body}`,
    );
    const res = await c.response();
    assert.equal(res.status, 400);
    assert.ok(isTypedError(JSON.parse(res.body.toString()), 'validation_failed'));
    await c.closed;
  } finally {
    c.destroy();
  }
  // The same value twice is one length, as RFC 9112 allows.
  const same = await RawConnection.open(sys.baseUrl);
  try {
    same.send(
      `POST /v1/topups HTTP/1.1\r\nhost: assay.test\r\nauthorization: Bearer ${agent.token}\r\n` +
        `idempotency-key: one-length\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
        `content-length: ${body.length}\r\n\r\n${body}`,
    );
    assert.equal((await same.response()).status, 201);
  } finally {
    same.destroy();
  }
  const balance = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.equal(balance.body.balance_cents, agent.balanceCents + 100, 'only the request with one length topped up');
});
