// The changelog and the deprecation policy, served and linked; and a deprecated operation end to end. No operation
// of the shipped table is deprecated, so this suite runs a real gateway over a real socket whose table is the
// shipped one with three rows marked: GET /v1/balance deprecated (sunset far ahead), GET /v1/payouts past its
// sunset, and the errors page deprecated with no replacement (a page the gateway serves itself).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Kvm } from '@nats-io/kv';
import { Validator } from '@seriousme/openapi-schema-validator';
import pino from 'pino';
import { wireGateway } from '../../cli/roles.ts';
import {
  assertOperationTable,
  deprecationNoticeDays,
  type Operation,
  type OperationDeprecation,
  operations,
} from '../../contracts/index.ts';
import { deprecationHeaders, type Gateway } from '../../gateway/index.ts';
import { isTypedError } from '../support/http.ts';
import { openRawSession, rawMcp, rawToolCall } from '../support/mcp.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';

const docs = new URL('../../docs/', import.meta.url);
const changelogFile = readFileSync(new URL('CHANGELOG.md', docs), 'utf8');
const policyFile = readFileSync(new URL('deprecation.md', docs), 'utf8');

const marked: Record<string, OperationDeprecation> = {
  getBalance: { since: '2026-12-01', sunset: '2099-01-01', replacement: 'getLedger' },
  getPayouts: { since: '2025-01-01', sunset: '2025-07-01', replacement: 'getLedger' },
  errorsPage: { since: '2026-12-01', sunset: '2099-01-01' },
};
const table: Operation[] = operations.map((op) => (marked[op.id] ? { ...op, deprecated: marked[op.id] } : op));

let sys: TestSystem;
let gateway: Gateway;
let agent: Agent;
const policyUrl = () => `${sys.baseUrl}/docs/deprecation`;
const link = () => `<${policyUrl()}>; rel="deprecation"; type="text/markdown"`;
const balanceHeaders = () => ({
  deprecation: '@1796083200',
  sunset: 'Thu, 01 Jan 2099 00:00:00 GMT',
  link: link(),
});
const payoutsHeaders = () => ({
  deprecation: '@1735689600',
  sunset: 'Tue, 01 Jul 2025 00:00:00 GMT',
  link: link(),
});
const payoutsGone =
  'GET /v1/payouts was removed on 2025-07-01 (deprecated since 2025-01-01); use GET /v1/ledger (tool get_ledger) instead';

const deprecationOf = (h: Headers) => ({
  deprecation: h.get('deprecation'),
  sunset: h.get('sunset'),
  link: h.get('link'),
});
const none = { deprecation: null, sunset: null, link: null };

before(async () => {
  sys = await startSystem({}, ['actors', 'workers']);
  const kvm = new Kvm(sys.nc);
  const sessions = await kvm.open(sys.names.buckets.mcpSessions, { allow_direct: true });
  gateway = wireGateway({
    config: sys.config,
    names: sys.names,
    nc: sys.nc,
    log: pino({ level: 'silent' }),
    buckets: {
      mcpSessions: { anyReplica: sessions, leader: await kvm.open(sys.names.buckets.mcpSessions) },
      health: await kvm.open(sys.names.buckets.health),
      revoked: await kvm.open(sys.names.buckets.revoked),
    },
    operations: table,
  });
  await gateway.listen();
  agent = await sys.register();
});
after(async () => {
  await gateway.close(0);
  await sys.stop();
});

test('[VERS-CHANGELOG] /docs/changelog and /docs/deprecation serve docs/CHANGELOG.md and docs/deprecation.md as they are', async () => {
  for (const [path, file] of [
    ['/docs/changelog', changelogFile],
    ['/docs/deprecation', policyFile],
  ] as const) {
    const r = await sys.call('GET', path);
    assert.equal(r.status, 200, path);
    assert.equal(r.headers.get('content-type'), 'text/markdown; charset=utf-8', path);
    assert.equal(r.body, file, path);
    const head = await fetch(`${sys.baseUrl}${path}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(file)), path);
  }
});

test("[VERS-CHANGELOG] the changelog holds the spec's 1.0.0, 0.9.0 and 0.5.0 under ours, newest first; the policy states the notice period", () => {
  const versions = changelogFile
    .split('\n')
    .filter((l) => l.startsWith('## '))
    .map((l) => l.slice(3));
  assert.deepEqual(versions, ['[Unreleased]', '[1.0.0] - 2026-10-11', '[0.9.0] - 2026-10-11', '[0.5.0] - 2026-07-18']);
  const section = (v: string) => changelogFile.split(`## [${v}]`)[1]!.split('\n## ')[0]!;
  const spec: Record<string, string[]> = {
    '1.0.0': [
      'OpenAPI document at `/openapi.json`',
      'refused with `judge_version_rejected`',
      'Public report-keys route',
      'including authentication failures (previously a JSON-RPC\n  envelope)',
    ],
    '0.9.0': ['Orders, subscriptions, top-ups, balance, ledger, payouts', 'the OAuth device grant'],
    '0.5.0': ['Event outbox with list and redeliver, signed webhooks', 'PKCE and token exchange'],
  };
  for (const [v, phrases] of Object.entries(spec)) {
    for (const phrase of phrases) assert.ok(section(v).includes(phrase), `${v}: ${phrase}`);
  }
  for (const ours of [
    'min_floor',
    'floor_not_met',
    'rate_limited',
    'quota_exhausted',
    'pending_approval',
    '/v1/events',
  ]) {
    assert.ok(section('Unreleased').includes(ours), ours);
  }
  assert.ok(policyFile.includes(`At least ${deprecationNoticeDays} days pass between the Deprecation date`));
});

test('[VERS-CHANGELOG] /openapi.json links the changelog and the deprecation policy, and both links answer', async () => {
  const doc = (await sys.call('GET', '/openapi.json')).body;
  assert.deepEqual(doc.externalDocs, {
    description: 'Changelog (Keep a Changelog, Markdown)',
    url: `${sys.baseUrl}/docs/changelog`,
  });
  assert.equal(doc.info['x-changelog'], `${sys.baseUrl}/docs/changelog`);
  assert.equal(doc.info['x-deprecation-policy'], policyUrl());
  assert.match(doc.info.description, /Changes by version: \/docs\/changelog\. Deprecation policy: \/docs\/deprecation/);
  for (const url of [doc.externalDocs.url, doc.info['x-deprecation-policy']]) {
    assert.equal((await fetch(url)).status, 200, url);
  }
  for (const path of ['/docs/changelog', '/docs/deprecation']) {
    const o = doc.paths[path].get;
    assert.deepEqual(Object.keys(o.responses['200'].content), ['text/markdown']);
    assert.deepEqual(o.security, []);
  }
});

test('[VERS-DEPRECATION] every response of a deprecated operation carries Deprecation, Sunset and Link; others carry none', async () => {
  const ok = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.currency, 'credit');
  assert.deepEqual(deprecationOf(ok.headers), balanceHeaders());
  const unauthorized = await sys.call('GET', '/v1/balance');
  assert.equal(unauthorized.status, 401);
  assert.ok(isTypedError(unauthorized.body, 'unauthorized'));
  assert.deepEqual(deprecationOf(unauthorized.headers), balanceHeaders());
  const head = await fetch(`${sys.baseUrl}/v1/balance`, {
    method: 'HEAD',
    headers: { authorization: `Bearer ${agent.token}` },
  });
  assert.equal(head.status, 200);
  assert.deepEqual(deprecationOf(head.headers), balanceHeaders());
  // A page the gateway serves itself, deprecated without a replacement.
  const page = await sys.call('GET', '/docs/errors');
  assert.equal(page.status, 200);
  assert.deepEqual(deprecationOf(page.headers), { ...balanceHeaders() });

  const ledger = await sys.call('GET', '/v1/ledger', { token: agent.token });
  assert.equal(ledger.status, 200);
  assert.deepEqual(deprecationOf(ledger.headers), none);
  assert.deepEqual(deprecationOf((await sys.call('GET', '/v1/ledger')).headers), none);
  for (const path of ['/healthz', '/openapi.json', '/docs/changelog', '/docs/deprecation', '/no/such/route']) {
    assert.deepEqual(deprecationOf((await sys.call('GET', path)).headers), none, path);
  }
});

test('[VERS-DEPRECATION] over MCP the tool says it is deprecated and each result carries the same values in _meta', async () => {
  const sessionId = await openRawSession(sys.baseUrl, agent.token);
  const list = await rawMcp(sys.baseUrl, {
    token: agent.token,
    sessionId,
    protocolVersion: '2025-06-18',
    body: { jsonrpc: '2.0', id: 3, method: 'tools/list' },
  });
  const tools = new Map<string, any>(list.body.result.tools.map((t: any) => [t.name, t]));
  assert.match(
    tools.get('get_balance').description,
    /Deprecated since 2026-12-01; from 2099-01-01 it answers not_found\. Use get_ledger instead\.$/,
  );
  assert.doesNotMatch(tools.get('get_ledger').description, /Deprecated/);
  const balance = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' });
  assert.equal(balance.status, 200);
  const result = balance.body.result;
  assert.equal(result.isError, undefined);
  assert.equal(result.structuredContent.currency, 'credit');
  assert.equal(result._meta['assay/status'], 200);
  assert.equal(result._meta['assay/deprecation'], balanceHeaders().deprecation);
  assert.equal(result._meta['assay/sunset'], balanceHeaders().sunset);
  assert.equal(result._meta['assay/deprecation_policy'], policyUrl());
  // An error result of the deprecated tool carries them too.
  const refused = await rawToolCall(sys.baseUrl, {
    token: agent.token,
    sessionId,
    name: 'get_balance',
    args: { unknown: 1 },
  });
  assert.equal(refused.body.result.isError, true);
  assert.equal(refused.body.result._meta['assay/deprecation'], balanceHeaders().deprecation);
  const ledger = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_ledger' });
  assert.equal(ledger.body.result._meta['assay/status'], 200);
  assert.deepEqual(
    Object.keys(ledger.body.result._meta).filter((k) => k.includes('deprecation') || k.includes('sunset')),
    [],
  );
});

test('[VERS-DEPRECATION] /openapi.json marks the operation deprecated with its dates and replacement, and stays valid OpenAPI 3.1', async () => {
  const doc = (await sys.call('GET', '/openapi.json')).body;
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  const balance = doc.paths['/v1/balance'].get;
  assert.equal(balance.deprecated, true);
  assert.equal(balance['x-deprecated-since'], '2026-12-01');
  assert.equal(balance['x-sunset'], '2099-01-01');
  assert.equal(balance['x-replacement'], 'getLedger');
  assert.equal(
    balance.description,
    'Deprecated since 2026-12-01; from 2099-01-01 (the Sunset date) it answers 404 not_found. Use GET /v1/ledger (getLedger) instead. See /docs/deprecation.',
  );
  for (const [status, response] of Object.entries<any>(balance.responses)) {
    assert.deepEqual(Object.keys(response.headers ?? {}), ['Deprecation', 'Sunset', 'Link'], status);
  }
  assert.equal(doc.paths['/docs/errors'].get['x-replacement'], undefined);
  const ledger = doc.paths['/v1/ledger'].get;
  for (const field of ['deprecated', 'x-deprecated-since', 'x-sunset', 'x-replacement', 'description']) {
    assert.equal(ledger[field], undefined, field);
  }
});

test('[VERS-DEPRECATION] the header values follow from the row alone', () => {
  assert.deepEqual(deprecationHeaders({ since: '2026-12-01', sunset: '2027-08-01' }, 'https://api.example'), {
    deprecation: '@1796083200',
    sunset: 'Sun, 01 Aug 2027 00:00:00 GMT',
    link: '<https://api.example/docs/deprecation>; rel="deprecation"; type="text/markdown"',
  });
});

test('[VERS-DEPRECATION] the boot check holds the notice period and refuses unreal dates and unserved replacements', () => {
  const withMark = (id: string, d: OperationDeprecation) =>
    operations.map((op): Operation => (op.id === id ? { ...op, deprecated: d } : op));
  assert.doesNotThrow(() => assertOperationTable(table));
  assert.equal(deprecationNoticeDays, 180);
  // 2026-12-01 + 180 days is 2027-05-30.
  assert.doesNotThrow(() =>
    assertOperationTable(withMark('getBalance', { since: '2026-12-01', sunset: '2027-05-30' })),
  );
  const cases: [string, Operation[], RegExp][] = [
    [
      '179 days',
      withMark('getBalance', { since: '2026-12-01', sunset: '2027-05-29' }),
      /sunset 2027-05-29 is 179 days after 2026-12-01; the policy gives at least 180/,
    ],
    [
      'sunset before since',
      withMark('getBalance', { since: '2027-01-01', sunset: '2026-01-01' }),
      /the policy gives at least 180/,
    ],
    ['not a day', withMark('getBalance', { since: '2026-02-30', sunset: '2027-01-01' }), /not a day of the calendar/],
    ['not an ISO date', withMark('getBalance', { since: '1 Dec 2026', sunset: '2099-01-01' }), /not an ISO date/],
    [
      'unknown replacement',
      withMark('getBalance', { since: '2026-12-01', sunset: '2099-01-01', replacement: 'getBalances' }),
      /replacement getBalances is not an operation/,
    ],
    [
      'itself',
      withMark('getBalance', { since: '2026-12-01', sunset: '2099-01-01', replacement: 'getBalance' }),
      /does not replace itself/,
    ],
    [
      'a replacement being retired',
      table.map((op) =>
        op.id === 'getLedger' ? { ...op, deprecated: { since: '2026-12-01', sunset: '2099-01-01' } } : op,
      ),
      /replacement getLedger must be served/,
    ],
    [
      'an unavailable replacement',
      // Every row is built today, so one is taken out of service for the case.
      withMark('getBalance', { since: '2026-12-01', sunset: '2099-01-01', replacement: 'redeliverEvent' }).map((op) =>
        op.id === 'redeliverEvent' ? { ...op, available: false } : op,
      ),
      /replacement redeliverEvent must be served/,
    ],
    ['the MCP endpoint', withMark('mcpMessage', { since: '2026-12-01', sunset: '2099-01-01' }), /MCP endpoint/],
  ];
  for (const [name, t, message] of cases) assert.throws(() => assertOperationTable(t), message, name);
});

test('[VERS-SUNSET] past its Sunset date the route answers 404 not_found naming its replacement, with or without a token', async () => {
  for (const token of [undefined, agent.token]) {
    const r = await sys.call('GET', '/v1/payouts', { token });
    assert.equal(r.status, 404);
    assert.ok(isTypedError(r.body, 'not_found'), JSON.stringify(r.body));
    assert.equal(r.body.message, payoutsGone);
    assert.deepEqual(deprecationOf(r.headers), payoutsHeaders());
  }
  // Its replacement serves.
  assert.equal((await sys.call('GET', '/v1/ledger', { token: agent.token })).status, 200);
});

test('[VERS-SUNSET] over MCP its tool answers an isError not_found naming the replacement', async () => {
  const sessionId = await openRawSession(sys.baseUrl, agent.token);
  const r = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_payouts' });
  assert.equal(r.status, 200);
  const result = r.body.result;
  assert.equal(result.isError, true);
  assert.ok(isTypedError(result.structuredContent, 'not_found'));
  assert.equal(result.structuredContent.message, payoutsGone);
  assert.equal(result._meta['assay/status'], 404);
  assert.equal(result._meta['assay/sunset'], payoutsHeaders().sunset);
});
