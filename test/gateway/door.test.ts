// The one front door (docs/architecture.md, The front door): every face's routes are rows of one shape compiled into
// one router per listener, nothing is handed to a face by its path before that router, and whatever no row serves,
// or the HTTP layer refuses, is answered in the dialect of the path space it falls in.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Kvm } from '@nats-io/kv';
import pino from 'pino';
import { wireGateway } from '../../cli/roles.ts';
import { okfExportPath, operations } from '../../contracts/index.ts';
import { contextRoutes } from '../../gateway/context/routes.ts';
import { type Gateway, webRoutes } from '../../gateway/index.ts';
import { syncRoutePath, syncRoutes } from '../../gateway/sync/routes.ts';
import { isTypedError } from '../support/http.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

const bodyBytesMax = 1024;
let sys: TestSystem;
let gateway: Gateway;
let base: string;
let api: string;

/** A gateway wired to the test system, on the ports its configuration names (not yet listening). */
async function gatewayOnSystemPorts(): Promise<Gateway> {
  const kvm = new Kvm(sys.nc);
  return wireGateway({
    config: sys.config,
    names: sys.names,
    nc: sys.nc,
    log: pino({ level: 'silent' }),
    buckets: {
      mcpSessions: {
        anyReplica: await kvm.open(sys.names.buckets.mcpSessions, { allow_direct: true }),
        leader: await kvm.open(sys.names.buckets.mcpSessions),
      },
      health: await kvm.open(sys.names.buckets.health),
      revoked: await kvm.open(sys.names.buckets.revoked),
    },
  });
}

before(async () => {
  sys = await startSystem({ ASSAY_BODY_BYTES_MAX: String(bodyBytesMax) }, ['actors', 'workers']);
  gateway = await gatewayOnSystemPorts();
  await gateway.listen();
  base = `http://127.0.0.1:${gateway.port}`;
  api = `http://127.0.0.1:${gateway.apiPort}`;
});
after(async () => {
  await gateway?.close(0);
  await sys?.stop();
});

const keyOf = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

test('[SPINE-ONE-DOOR] one router per listener holds every face: operations, web routes, the context-file API, the export and sync; {api_url} only the context-file API', () => {
  const served = new Set(gateway.routeRows.web.map(keyOf));
  const operationKeys = new Set(operations.map(keyOf));
  const expected = [
    ...operations.map(keyOf),
    // A page on an operation's own path (the landing page on `/`) is served from the operation's row.
    ...webRoutes(sys.config)
      .map(keyOf)
      .filter((k) => !operationKeys.has(k)),
    ...contextRoutes.map((r) => `${r.method} /api/v1${r.path}`),
    'GET /api/v1/openapi.json',
    `GET ${okfExportPath}`,
    ...syncRoutes.map((r) => `${r.method} ${syncRoutePath(r)}`),
    // The x402 rail's, when a facilitator is configured.
    ...gateway.routeRows.web.filter((r) => r.face === 'x402').map(keyOf),
  ];
  assert.deepEqual(
    expected.filter((k) => !served.has(k)),
    [],
    'routes the door does not hold',
  );
  assert.equal(gateway.routeRows.web.length, expected.length, 'rows the door holds that no face declares');
  assert.deepEqual(
    gateway.routeRows.api.map(keyOf).sort(),
    [...contextRoutes.map((r) => `${r.method} /v1${r.path}`), 'GET /v1/openapi.json'].sort(),
  );
});

test('[SPINE-ONE-DOOR] every row says how it authenticates and carries schemas for its params, query, body and answers', () => {
  for (const row of [...gateway.routeRows.web, ...gateway.routeRows.api]) {
    const key = `${keyOf(row)} (${row.face})`;
    assert.ok(row.auth.length > 0, `${key}: auth`);
    assert.equal(typeof row.schemas.params, 'object', `${key}: params schema`);
    assert.equal(typeof row.schemas.query, 'object', `${key}: query schema`);
    assert.ok(row.schemas.body !== undefined, `${key}: body (null when it reads none)`);
    assert.ok(Object.keys(row.schemas.responses).length > 0, `${key}: answers`);
    assert.ok(row.scope === null || row.auth.some((a) => a !== 'none'), `${key}: a scope needs a credential`);
    if (row.dispatch.kind === 'operation') assert.equal(row.face, 'agent', key);
  }
});

test('[SPINE-ONE-DOOR] the server hands no request to a face by its path: every path goes through the router first', () => {
  const server = readFileSync(new URL('../../gateway/server.ts', import.meta.url), 'utf8');
  for (const prefixTest of ['.startsWith(', 'path ===', '=== path', 'okfExportPath']) {
    assert.ok(!server.includes(prefixTest), `gateway/server.ts matches paths itself (${prefixTest})`);
  }
});

async function fetchText(url: string, init: RequestInit = {}) {
  const r = await fetch(url, { redirect: 'manual', ...init });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

test('[SPINE-DOOR-DIALECTS] a path or method no row serves is answered in the dialect of its path space', async () => {
  // The agent API: the typed error object, 404 with Allow.
  const agentMiss = await fetchText(`${base}/v1/nope`);
  assert.equal(agentMiss.status, 404);
  assert.ok(isTypedError(JSON.parse(agentMiss.text), 'not_found'));
  const agentMethod = await fetchText(`${base}/v1/balance`, { method: 'DELETE' });
  assert.equal(agentMethod.status, 404);
  assert.equal(agentMethod.headers.get('allow'), 'GET, HEAD');
  // The OAuth endpoints: RFC 6749 bodies, 405 with Allow for another method.
  const tokenGet = await fetchText(`${base}/oauth/token`);
  assert.equal(tokenGet.status, 405);
  assert.equal(tokenGet.headers.get('allow'), 'POST');
  assert.deepEqual(Object.keys(JSON.parse(tokenGet.text)).sort(), ['error', 'error_description']);
  assert.equal(JSON.parse(tokenGet.text).error, 'invalid_request');
  const oauthMiss = await fetchText(`${base}/oauth/nope`);
  assert.equal(oauthMiss.status, 404);
  assert.equal(JSON.parse(oauthMiss.text).error, 'invalid_request');
  // The pages: HTML.
  const pageMiss = await fetchText(`${base}/account/nope`);
  assert.equal(pageMiss.status, 404);
  assert.match(pageMiss.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(pageMiss.text, /<h1>No such page<\/h1>/);
  const pageMethod = await fetchText(`${base}/signin`, { method: 'PUT' });
  assert.equal(pageMethod.status, 405);
  assert.equal(pageMethod.headers.get('allow'), 'GET, HEAD, POST');
  assert.match(pageMethod.headers.get('content-type') ?? '', /^text\/html/);
  assert.ok(pageMethod.headers.get('content-security-policy'), 'a page carries the pages’ headers');
  // The context-file API: after authentication, as its routes are; on both base forms.
  for (const url of [`${base}/api/v1/nope`, `${api}/v1/nope`]) {
    const r = await fetchText(url);
    assert.equal(r.status, 401, url);
    assert.deepEqual(Object.keys(JSON.parse(r.text)).sort(), ['error', 'message'], url);
  }
  const outside = await fetchText(`${api}/nope`);
  assert.equal(outside.status, 404);
  assert.equal(JSON.parse(outside.text).message, 'the context-file API is served under /v1');
  // Device sync and the export: `{error, message}` 404s.
  const syncMiss = await fetchText(`${base}/api/sync/nope`);
  assert.equal(syncMiss.status, 404);
  assert.equal(JSON.parse(syncMiss.text).error, 'not_found');
  const exportPost = await fetchText(`${base}${okfExportPath}`, { method: 'POST' });
  assert.equal(exportPost.status, 404);
  assert.equal(exportPost.headers.get('allow'), 'GET, HEAD');
  assert.deepEqual(Object.keys(JSON.parse(exportPost.text)), ['error', 'message']);
});

test('[SPINE-DOOR-DIALECTS] a body over the limit is refused in the words of the route it was sent to', async () => {
  const big = 'x'.repeat(bodyBytesMax + 1);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const agent = await fetchText(`${base}/v1/topups`, { method: 'POST', body: big });
  assert.equal(agent.status, 413);
  assert.ok(isTypedError(JSON.parse(agent.text), 'validation_failed'));
  const oauth = await fetchText(`${base}/oauth/token`, { method: 'POST', body: big, headers: form });
  assert.equal(oauth.status, 413);
  assert.equal(JSON.parse(oauth.text).error, 'invalid_request');
  const page = await fetchText(`${base}/signin`, { method: 'POST', body: big, headers: form });
  assert.equal(page.status, 413);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const context = await fetchText(`${api}/v1/contexts`, { method: 'POST', body: big });
  assert.equal(context.status, 400);
  assert.equal(JSON.parse(context.text).error, 'bad_request');
});

test("[SPINE-DOOR-PORT] a second gateway told a port in use fails to start, instead of silently sharing the first one's connections", async () => {
  const second = await gatewayOnSystemPorts();
  try {
    await assert.rejects(second.listen(), /cannot listen on 127\.0\.0\.1:\d+ \(in use\?\)/);
  } finally {
    await second.close(0);
  }
  // Every new connection still reaches the first gateway.
  for (let i = 0; i < 8; i++) {
    const r = await fetch(`${base}/healthz`, { headers: { connection: 'close' } });
    assert.equal(r.status, 200);
  }
});
