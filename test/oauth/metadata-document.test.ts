// MCP clients without a registration step (issue 44.1; MCP authorization 2025-11-25, client ID metadata documents):
// the client_id is the https URL of a JSON document, served here by a loopback HTTPS server with a certificate made
// for the run (trusted through ASSAY_WEBHOOK_CA_FILE, the outbound rule's test-mode setting). The MCP SDK's own
// client runs the flow against /mcp, from the 401 and its resource_metadata to a tool call, with a person approving
// in headless Chromium; the refusals are checked over plain HTTP.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, loopbackContext, screenshot } from '../support/browser.ts';
import {
  accessTokenClaims,
  issueInitialAccessToken,
  loopbackRedirectUri,
  signUp,
  type WebJar,
} from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';
import { selfSignedCertificate } from '../support/webhook-receiver.ts';

/** Documents by path, each with the Cache-Control it is served with; every request is counted. */
const documents = new Map<string, { body: string; cacheControl?: string }>();
const fetched: string[] = [];
let documentServer: Server;
let documentOrigin: string;
let sys: TestSystem;
let browser: Browser | null;
let context: BrowserContext;
let page: Page;
let jar: WebJar;
const email = 'mcp-user@example.com';
const password = 'correct horse battery staple';

function serve(path: string, document: unknown, cacheControl?: string): string {
  documents.set(path, { body: typeof document === 'string' ? document : JSON.stringify(document), cacheControl });
  return `${documentOrigin}${path}`;
}

const metadataOf = (url: string, more: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: 'Inspector of Things',
  redirect_uris: [loopbackRedirectUri],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  ...more,
});

before(async () => {
  const cert = selfSignedCertificate();
  documentServer = createServer({ cert: cert.certPem, key: (await import('node:fs')).readFileSync(cert.keyFile) });
  documentServer.on('request', (req, res) => {
    const path = new URL(req.url ?? '/', 'https://localhost').pathname;
    fetched.push(path);
    const doc = documents.get(path);
    if (!doc) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(doc.cacheControl === undefined ? {} : { 'cache-control': doc.cacheControl }),
    });
    res.end(doc.body);
  });
  await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
  documentOrigin = `https://localhost:${(documentServer.address() as AddressInfo).port}`;
  sys = await startSystem({ ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true', ASSAY_WEBHOOK_CA_FILE: cert.certFile });
  jar = await signUp(sys.baseUrl, email, password);
  browser = await launchBrowser();
  if (!browser) return;
  ({ context } = await loopbackContext(browser, { viewport: { width: 1280, height: 900 } }));
  page = await context.newPage();
});
after(async () => {
  await browser?.close();
  await sys?.stop();
  documentServer?.close();
});

/** An authorization request of a metadata-document client, as a signed-in person's browser sends it (no redirect). */
async function authorize(clientId: string, params: Record<string, string> = {}) {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: loopbackRedirectUri,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    state: 'st',
    ...params,
  });
  const res = await jar.get(`/oauth/authorize?${q}`);
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

test('[OAUTH-CIMD-METADATA] the authorization server metadata says client ID metadata documents are supported', async () => {
  const r = await sys.call('GET', '/.well-known/oauth-authorization-server');
  assert.equal(r.status, 200);
  assert.equal(r.body.client_id_metadata_document_supported, true);
});

test('[OAUTH-CIMD-MCP] the MCP SDK client connects to /mcp with a metadata document: 401, discovery, consent in Chromium, tokens, a tool call', async (t) => {
  if (!browser) return t.skip('chromium is not installed');
  const clientId = serve('/mcp-client.json', metadataOf(`${documentOrigin}/mcp-client.json`), 'max-age=60');
  // The person signs in first, as they would be in their browser already.
  await page.goto(`${sys.baseUrl}/signin?next=/account`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.waitForURL(`${sys.baseUrl}/account`);

  let authorizationUrl: URL | null = null;
  let saved: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string } = {};
  const provider: OAuthClientProvider = {
    clientMetadataUrl: clientId,
    get redirectUrl() {
      return loopbackRedirectUri;
    },
    get clientMetadata(): OAuthClientMetadata {
      return { client_name: 'Inspector of Things', redirect_uris: [loopbackRedirectUri] };
    },
    clientInformation: () => saved.client,
    saveClientInformation: (c) => {
      saved = { ...saved, client: c };
    },
    tokens: () => saved.tokens,
    saveTokens: (tokens) => {
      saved = { ...saved, tokens };
    },
    redirectToAuthorization: (url) => {
      authorizationUrl = url;
    },
    saveCodeVerifier: (verifier) => {
      saved = { ...saved, verifier };
    },
    codeVerifier: () => saved.verifier ?? '',
  };
  const mcpUrl = new URL(`${sys.baseUrl}/mcp`);
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  const client = new Client({ name: 'cimd-test', version: '1.0.0' });
  client.onerror = () => {};
  // No token: /mcp answers 401 with its resource_metadata, the SDK discovers the server and sends the person on.
  await assert.rejects(client.connect(first), /Unauthorized/);
  assert.ok(authorizationUrl, 'the SDK sent the person to the authorization endpoint');
  const asked = new URL(authorizationUrl as URL);
  assert.equal(asked.searchParams.get('client_id'), clientId, 'the client_id is the document URL, unregistered');

  let resolveCallback!: (u: URL) => void;
  const callback = new Promise<URL>((resolve) => {
    resolveCallback = resolve;
  });
  await context.route(`${loopbackRedirectUri}**`, async (route) => {
    resolveCallback(new URL(route.request().url()));
    await route.fulfill({ status: 200, contentType: 'text/plain', body: 'the client got its answer' });
  });
  await page.goto(asked.toString());
  const consent = await page.content();
  assert.match(consent, /Inspector of Things/, 'the consent screen names the client by its document');
  assert.match(consent, new RegExp(`localhost:${new URL(documentOrigin).port}`), "it shows the document's host");
  assert.match(consent, /not registered by your account/);
  await screenshot(page, 'oauth-cimd-consent');
  await page.getByRole('button', { name: /allow/i }).click();
  const code = (await callback).searchParams.get('code');
  assert.match(code ?? '', /^asyc_/);
  await context.unroute(`${loopbackRedirectUri}**`);

  await first.finishAuth(code!);
  const tokens = saved.tokens!;
  assert.match(tokens.access_token, /^asyo_/);
  assert.match(tokens.refresh_token ?? '', /^asyr_/, 'a public client with refresh_token in its document gets one');
  const claims = accessTokenClaims(tokens.access_token);
  assert.equal(claims.client_id, clientId, 'the token names the client as it named itself');
  assert.equal(claims.aud, asked.searchParams.get('resource'), 'RFC 8707: the resource the SDK found and asked for');

  const connected = new Client({ name: 'cimd-test', version: '1.0.0' });
  connected.onerror = () => {};
  await connected.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  try {
    const balance = await connected.callTool({ name: 'get_balance', arguments: {} });
    assert.notEqual(balance.isError, true, JSON.stringify(balance));
  } finally {
    await connected.close();
  }
  // The grant is the person's, listed on the account page under the document's name, and revocable there.
  const account = await (await jar.get('/account')).text();
  assert.match(account, /Inspector of Things/);
});

test('[OAUTH-CIMD-REDIRECT] a redirect URI the document does not list is refused on a page; nothing is redirected', async () => {
  const clientId = serve('/redirects.json', metadataOf(`${documentOrigin}/redirects.json`));
  const r = await authorize(clientId, { redirect_uri: 'http://127.0.0.1:9/elsewhere' });
  assert.equal(r.status, 400);
  assert.equal(r.location, null, 'never a redirect to an address the document does not name');
  assert.match(r.text, /Wrong return address/);
  const ok = await authorize(clientId);
  assert.equal(ok.status, 200, 'the listed redirect URI gets the consent screen');
  assert.match(ok.text, /Described by its document at/);
});

test('[OAUTH-CIMD-CLIENT-ID] a document whose client_id is not its own URL is refused', async () => {
  const clientId = serve('/impostor.json', metadataOf(`${documentOrigin}/someone-else.json`));
  const r = await authorize(clientId);
  assert.equal(r.status, 400);
  assert.equal(r.location, null);
  assert.match(r.text, /Unusable application/);
  assert.match(r.text, /client_id in the metadata document is not the URL it was fetched from/);
});

test('[OAUTH-CIMD-HTTPS] a client_id URL that is not https is refused without a fetch', async () => {
  const before = fetched.length;
  const url = `http://localhost:${new URL(documentOrigin).port}/plain.json`;
  serve('/plain.json', metadataOf(url));
  const r = await authorize(url);
  assert.equal(r.status, 400);
  assert.match(r.text, /must be an https URL/);
  assert.equal(fetched.length, before, 'nothing was fetched');
});

test('[OAUTH-CIMD-DOCUMENT] a document that is too large, not JSON, or asks for a secret is refused in words', async () => {
  const big = serve(
    '/big.json',
    metadataOf(`${documentOrigin}/big.json`, { client_name: 'x'.repeat(100), logo: 'y'.repeat(6000) }),
  );
  assert.match((await authorize(big)).text, /larger than 5120 bytes/);
  const notJson = serve('/not-json.json', '<html>hello</html>');
  assert.match((await authorize(notJson)).text, /not JSON/);
  const secret = serve(
    '/secret.json',
    metadataOf(`${documentOrigin}/secret.json`, { token_endpoint_auth_method: 'client_secret_basic' }),
  );
  assert.match(
    (await authorize(secret)).text,
    /token_endpoint_auth_method must be &quot;none&quot;|token_endpoint_auth_method must be "none"/,
  );
  const missing = `${documentOrigin}/missing.json`;
  assert.match((await authorize(missing)).text, /answered HTTP 404/);
});

test('[OAUTH-CIMD-CACHE] a document is kept as long as its Cache-Control says, and fetched again after no-store', async () => {
  const kept = serve('/kept.json', metadataOf(`${documentOrigin}/kept.json`), 'public, max-age=600');
  const count = (path: string) => fetched.filter((p) => p === path).length;
  assert.equal((await authorize(kept)).status, 200);
  assert.equal((await authorize(kept)).status, 200);
  assert.equal(count('/kept.json'), 1, 'max-age=600: one fetch serves both requests');
  const fresh = serve('/fresh.json', metadataOf(`${documentOrigin}/fresh.json`), 'no-store');
  assert.equal((await authorize(fresh)).status, 200);
  assert.equal((await authorize(fresh)).status, 200);
  assert.equal(count('/fresh.json'), 2, 'no-store: each request fetches it');
});

test('[OAUTH-WHO-AUTHORIZES] a registered client is its account’s alone to authorize; a document client is anyone’s', async () => {
  const owner = await signUp(sys.baseUrl, 'owner@example.com', password);
  const iat = await issueInitialAccessToken(owner);
  const registered = await sys.call('POST', '/oauth/register', {
    headers: { authorization: `Bearer ${iat}` },
    body: { client_name: 'Owned agent', redirect_uris: [loopbackRedirectUri] },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const foreign = await authorize(registered.body.client_id);
  assert.equal(foreign.status, 400, 'another account cannot authorize it');
  assert.equal(foreign.location, null);
  assert.match(foreign.text, /registered by another account/);
  const document = serve('/anyone.json', metadataOf(`${documentOrigin}/anyone.json`));
  assert.equal((await authorize(document)).status, 200, 'a metadata-document client is not any account’s');
});

test('[OAUTH-CIMD-STORED-ON-CONSENT] naming a document writes nothing until a signed-in person is asked', async () => {
  const url = serve('/stored.json', metadataOf(`${documentOrigin}/stored.json`));
  const rows = async () =>
    (await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients WHERE metadata_url = ${url}`)[0]!.n;
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: url,
    redirect_uri: loopbackRedirectUri,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });
  const anonymous = await fetch(`${sys.baseUrl}/oauth/authorize?${q}`, { redirect: 'manual' });
  assert.equal(anonymous.status, 303);
  assert.match(anonymous.headers.get('location') ?? '', /\/signin\?next=/);
  assert.equal(await rows(), 0, 'a request nobody signed in to see stores no client');
  assert.equal((await authorize(url)).status, 200);
  assert.equal((await authorize(url)).status, 200);
  assert.equal(await rows(), 1, 'the consent screen stores it once, and again updates the same row');
});
