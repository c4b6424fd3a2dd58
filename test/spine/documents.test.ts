// Generated faces of the operation table: routing (every agent route answers the typed error without a token),
// the OpenAPI 3.1 document and the errors page, checked against each other and against the tables.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { errorCodes, errorTable, operations, pipelineErrors } from '../../contracts/index.ts';
import { isTypedError } from '../support/http.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
before(async () => {
  sys = await startSystem();
});
after(async () => {
  await sys.stop();
});

const concrete = (path: string) =>
  path
    .replace('{digest}', `sha256:${'a'.repeat(64)}`)
    .replace('{subject}', 'agent:00000000-0000-4000-8000-000000000000')
    .replace(/\{[a-z_]+\}/g, '00000000-0000-4000-8000-000000000000');

const agentRoutes = operations.filter((op) => op.audience === 'agent');

const specAgentRoutes = [
  'GET /v1/search',
  'GET /v1/reports/{digest}',
  'GET /v1/trust/{subject}',
  'GET /v1/errata',
  'POST /v1/orders',
  'GET /v1/orders',
  'GET /v1/orders/{order_id}/compliance-bundle',
  'POST /v1/subscriptions',
  'GET /v1/subscriptions',
  'POST /v1/subscriptions/{subscription_id}/cancel',
  'POST /v1/topups',
  'GET /v1/balance',
  'GET /v1/ledger',
  'GET /v1/payouts',
  'GET /v1/events',
  'POST /v1/events/{id}/redeliver',
];

test('[SPINE-TYPED-ERRORS] the table holds all 16 agent routes of the spec', () => {
  const routes = new Set(agentRoutes.map((op) => `${op.method} ${op.path}`));
  for (const r of specAgentRoutes) assert.ok(routes.has(r), r);
});

for (const op of agentRoutes) {
  test(`[SPINE-TYPED-ERRORS] ${op.method} ${op.path} answers 401 with the typed error object without a token`, async () => {
    const r = await sys.call(op.method, concrete(op.path), op.body ? { body: {}, key: 'k' } : {});
    assert.equal(r.status, 401);
    assert.ok(isTypedError(r.body, 'unauthorized'), JSON.stringify(r.body));
    assert.equal(r.body.remediation, 'authenticate');
    assert.equal(r.body.retryable, false);
    assert.ok(r.body.docs_url.startsWith(`${sys.baseUrl}/docs/errors#`));
  });
}

test('[SPINE-OPENAPI] /openapi.json passes an independent OpenAPI 3.1 validator', async () => {
  const r = await sys.call('GET', '/openapi.json');
  assert.equal(r.status, 200);
  const result = await new Validator().validate(r.body);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(r.body.openapi, '3.1.0');
  assert.equal(r.body.info.version, '1.0.0');
  const { bearer, oauth2 } = r.body.components.securitySchemes;
  assert.deepEqual([bearer.type, bearer.scheme, bearer.bearerFormat], ['http', 'bearer', 'JWT']);
  // The OAuth scheme names this server's own endpoints and every scope it grants, as its metadata does.
  const metadata = (await sys.call('GET', '/.well-known/oauth-authorization-server')).body;
  const flow = oauth2.flows.authorizationCode;
  assert.equal(flow.authorizationUrl, metadata.authorization_endpoint);
  assert.equal(flow.tokenUrl, metadata.token_endpoint);
  assert.deepEqual(Object.keys(flow.scopes).sort(), [...metadata.scopes_supported].sort());
});

test('[SPINE-OPENAPI] the document lists every available operation of the table, and only those', async () => {
  const doc = (await sys.call('GET', '/openapi.json')).body;
  const listed = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, o] of Object.entries<any>(item)) listed.add(`${method.toUpperCase()} ${path} ${o.operationId}`);
  }
  const expected = new Set(operations.filter((op) => op.available).map((op) => `${op.method} ${op.path} ${op.id}`));
  // Besides the table: the OAuth server's endpoints, each of the metadata's endpoints (with its method) once.
  const oauthPaths = [...listed].filter((l) => !expected.has(l)).map((l) => l.split(' ').slice(0, 2).join(' '));
  const metadata = (await sys.call('GET', '/.well-known/oauth-authorization-server')).body;
  const endpoints = ['registration', 'token', 'revocation', 'device_authorization'].map(
    (e) => `POST ${new URL(metadata[`${e}_endpoint`]).pathname}`,
  );
  assert.deepEqual(
    oauthPaths.sort(),
    [
      ...endpoints,
      `GET ${new URL(metadata.authorization_endpoint).pathname}`,
      'POST /oauth/authorize/decision',
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/oauth-protected-resource/mcp',
    ].sort(),
  );
  for (const op of operations.filter((o) => o.available && o.scope)) {
    const o = doc.paths[op.path][op.method.toLowerCase()];
    assert.deepEqual(o.security, [{ bearer: [] }, { oauth2: [op.scope] }]);
    if (op.tool) assert.equal(o['x-mcp-tool'], op.tool);
    if (op.mutating)
      assert.ok(o.parameters.some((p: any) => p.in === 'header' && p.name === 'Idempotency-Key' && p.required));
    for (const code of pipelineErrors(op)) {
      const response = o.responses[String(errorTable[code].status)];
      assert.ok(response, `${op.id} documents ${code}`);
      assert.equal(response.content['application/json'].schema.$ref, '#/components/schemas/Error');
    }
  }
});

test("[SPINE-ERROR-REGISTRY] the spec's 15 codes and ours; the errors page anchors each; the OpenAPI Error schema enumerates each", async () => {
  const specCodes = [
    'requote_required',
    'insufficient_credits',
    'mandate_exceeded',
    'mandate_revoked',
    'floor_not_met',
    'quota_exhausted',
    'judge_version_rejected',
    'idempotency_conflict',
    'not_found',
    'unauthorized',
    'forbidden',
    'rate_limited',
    'validation_failed',
    'pending_approval',
    'unavailable',
  ];
  // Codes we added where the spec is silent (docs/purchases.md: Delivery; docs/money.md: live top-ups); a code is
  // never renamed or removed.
  const ourCodes = [
    'order_refunded',
    'payments_not_configured',
    'payment_method_required',
    'card_declined',
    'card_authentication_required',
  ];
  assert.deepEqual([...errorCodes].sort(), [...specCodes, ...ourCodes].sort());
  const allowed = new Set([400, 401, 403, 404, 409, 413, 422, 429, 503]);
  for (const code of errorCodes) assert.ok(allowed.has(errorTable[code].status), code);
  const fixed: Record<string, [number, string, boolean]> = {
    requote_required: [409, 'requote', true],
    mandate_exceeded: [403, 'request_mandate_increase', false],
    judge_version_rejected: [403, 'relax_judge_filter', false],
    idempotency_conflict: [422, 'use_a_new_idempotency_key', false],
    not_found: [404, 'check_the_id', false],
    unauthorized: [401, 'authenticate', false],
    validation_failed: [422, 'fix_the_request_body', false],
  };
  for (const [code, [status, remediation, retryable]] of Object.entries(fixed)) {
    const e = errorTable[code as keyof typeof errorTable];
    assert.deepEqual([e.status, e.remediation, e.retryable], [status, remediation, retryable], code);
  }
  const page = await sys.call('GET', '/docs/errors');
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  const anchors = [...String(page.body).matchAll(/<section id="([a-z_]+)">/g)].map((m) => m[1]);
  assert.deepEqual(anchors.sort(), [...errorCodes].sort());
  const doc = (await sys.call('GET', '/openapi.json')).body;
  const enumerated = doc.components.schemas.Error.properties.code.anyOf.map((s: any) => s.const);
  assert.deepEqual(enumerated.sort(), [...errorCodes].sort());
});

test('[SPINE-TYPED-ERRORS] /healthz answers without authentication', async () => {
  const r = await sys.call('GET', '/healthz');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok', nats: true, alerts: [] });
});
