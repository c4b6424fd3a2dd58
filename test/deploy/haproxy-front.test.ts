// deploy/haproxy.cfg run by the real HAProxy in front of a real gateway on loopback. The shipped file is made
// runnable by textual substitution only (loopback binds, servers at the test's gateway, no Docker DNS, a stats
// socket to read the health checks), and every rule, check, option, timeout and tune line of it is kept, so what is
// tested is the shipped front: what uWS would close at once, leave unanswered for about 10 s or misread gets a prompt
// 4xx from HAProxy, ordinary requests reach the gateway, and a client's own X-Forwarded-For never becomes its address.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../support/env.ts';
import { RawConnection, type RawResponse, rawRequest } from '../support/raw-http.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

const root = new URL('../../', import.meta.url).pathname;
const shipped = readFileSync(join(root, 'deploy/haproxy.cfg'), 'utf8');
const haproxyPath = '/usr/sbin/haproxy';
const installed = existsSync(haproxyPath);
if (!installed && process.env.CI === 'true') throw new Error('CI installs haproxy (.ci/run); it is missing');

/** A bound on waiting for an answer, so a request left unanswered fails the test instead of hanging it. */
const answerWithinMs = 5000;
/** What the gateway routes (gateway/http/exchange.ts knows TRACE and CONNECT too, but no route serves them). */
const allowedMethods = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

interface Ports {
  agent: number;
  contextApi: number;
  health: number;
  gateway: number;
  gatewayContextApi: number;
  statsSocket: string;
}

/** The lines of a configuration that decide what HAProxy does with a request, trimmed, in order. */
const ruleLines = (cfg: string) =>
  cfg
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^(http-request|http-check|option|timeout|tune\.\S+|monitor|monitor-uri|balance|mode) /.test(l));

/** deploy/haproxy.cfg on loopback: each substitution must match, and no rule of the shipped file may change. */
function runnableConfig(p: Ports): string {
  const substitutions: [RegExp, string][] = [
    [/^global\n/m, `global\n  stats socket ${p.statsSocket} level user\n`],
    [/^ {2}bind :8080$/m, `  bind 127.0.0.1:${p.agent}`],
    [/^ {2}bind :8081$/m, `  bind 127.0.0.1:${p.contextApi}`],
    [/^ {2}bind :8404$/m, `  bind 127.0.0.1:${p.health}`],
    // Docker's DNS and the gateways found by name exist only inside compose's network.
    [/^resolvers docker\n(?: {2}.*\n)+/m, ''],
    [/ init-addr last,libc,none resolvers docker /, ' '],
    [/ gateway-(\d):8081 port 8080$/gm, ` 127.0.0.1:${p.gatewayContextApi} port ${p.gateway}`],
    [/ gateway-(\d):8080$/gm, ` 127.0.0.1:${p.gateway}`],
  ];
  let cfg = shipped;
  for (const [pattern, replacement] of substitutions) {
    assert.match(cfg, pattern, `deploy/haproxy.cfg still has ${pattern}`);
    cfg = cfg.replace(pattern, replacement);
  }
  assert.doesNotMatch(cfg, /gateway-\d:|resolvers|bind :/, 'nothing left pointing into compose');
  assert.deepEqual(ruleLines(cfg), ruleLines(shipped), 'every rule of the shipped file is kept');
  return cfg;
}

/** HAProxy's view of its servers: `backend/server` and the status of its last health check (L7OK, L7TOUT, ...). */
function checkStatuses(statsSocket: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    let csv = '';
    const s = connect(statsSocket, () => s.end('show stat\n'));
    s.on('data', (d) => {
      csv += d;
    });
    s.on('error', reject);
    s.on('close', () => {
      const [head, ...rows] = csv.replace(/^# /, '').trim().split('\n');
      const column = (name: string) => head!.split(',').indexOf(name);
      const out: Record<string, string> = {};
      for (const row of rows.map((r) => r.split(','))) {
        if (row[column('svname')] === 'FRONTEND' || row[column('svname')] === 'BACKEND') continue;
        out[`${row[column('pxname')]}/${row[column('svname')]}`] = row[column('check_status')]!;
      }
      resolve(out);
    });
  });
}

describe('the shipped HAProxy front (deploy/haproxy.cfg)', {
  skip: installed ? false : 'haproxy is not installed (CI installs it)',
}, () => {
  let sys: TestSystem;
  let haproxy: ChildProcess;
  let haproxyExited: Promise<unknown>;
  let haproxyOutput = '';
  let dir: string;
  let ports: Ports;
  const fronts = () => [
    { name: 'agent', port: ports.agent },
    { name: 'context_api', port: ports.contextApi },
  ];

  before(async () => {
    // The gateway takes the client address from X-Forwarded-For, as compose.yaml sets it.
    sys = await startSystem({ ASSAY_TRUST_PROXY: 'true' });
    dir = mkdtempSync(join(tmpdir(), 'assay-haproxy-'));
    ports = {
      agent: await freePort(),
      contextApi: await freePort(),
      health: await freePort(),
      gateway: sys.config.port,
      gatewayContextApi: sys.config.apiPort,
      statsSocket: join(dir, 'stats.sock'),
    };
    const cfgPath = join(dir, 'haproxy.cfg');
    writeFileSync(cfgPath, runnableConfig(ports));
    haproxy = spawn(haproxyPath, ['-db', '-f', cfgPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxyExited = new Promise((resolve) => haproxy.on('exit', resolve));
    haproxy.stdout!.on('data', (d) => {
      haproxyOutput += d;
    });
    haproxy.stderr!.on('data', (d) => {
      haproxyOutput += d;
    });
    await eventually('HAProxy to listen', async () => {
      if (haproxy.exitCode !== null) throw new Error(`haproxy exited ${haproxy.exitCode}:\n${haproxyOutput}`);
      return (await checkStatuses(ports.statsSocket).catch(() => undefined)) ? true : undefined;
    });
  });

  after(async () => {
    if (haproxy && haproxy.exitCode === null) {
      haproxy.kill('SIGTERM');
      await haproxyExited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    await sys?.stop();
  });

  /** The answer to `bytes` sent on `port`; fails if none arrives within `answerWithinMs`. */
  async function answer(port: number, bytes: string): Promise<RawResponse> {
    const c = await RawConnection.open(`http://127.0.0.1:${port}`);
    try {
      c.send(bytes);
      return await c.response({ timeoutMs: answerWithinMs });
    } finally {
      c.destroy();
    }
  }

  /** A 4xx answered by HAProxy itself: the gateway stamps every answer of its own with X-Request-Id. */
  async function refused(port: number, bytes: string, status: number, what: string): Promise<RawResponse> {
    const r = await answer(port, bytes).catch((err: Error) => assert.fail(`${what}: ${err.message}`));
    assert.equal(r.status, status, what);
    assert.equal(r.headers['x-request-id'], undefined, `${what}: answered by HAProxy, not the gateway`);
    return r;
  }

  /** A request of exactly `lines` header lines, Host among them. */
  const withHeaderLines = (lines: number) => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < lines - 1; i++) headers[`x-filler-${i}`] = 'v';
    return rawRequest('GET', '/healthz', { headers });
  };

  test('[DEPLOY-HAPROXY-PASSES] its health checks of the gateway pass, and GET, a POST with a body and HTTP/2 reach the gateway on both frontends', async () => {
    const statuses = await eventually('every health check to pass', async () => {
      const s = await checkStatuses(ports.statsSocket);
      return Object.values(s).every((status) => status === 'L7OK') ? s : undefined;
    }).catch((err: Error) => assert.fail(`${err.message}\n${haproxyOutput}`));
    assert.deepEqual(Object.keys(statuses).sort(), [
      'gateways/gateway-1',
      'gateways/gateway-2',
      'gateways_context_api/gateway-1',
      'gateways_context_api/gateway-2',
    ]);

    const healthz = await answer(ports.agent, rawRequest('GET', '/healthz'));
    assert.equal(healthz.status, 200);
    assert.equal(JSON.parse(healthz.body.toString()).status, 'ok');
    const registered = await answer(
      ports.agent,
      rawRequest('POST', '/sandbox/agents', { headers: { 'content-type': 'application/json' }, body: '{}' }),
    );
    assert.equal(registered.status, 201, registered.body.toString());
    assert.ok(JSON.parse(registered.body.toString()).token, 'a sandbox token, from the gateway');

    const document = await answer(ports.contextApi, rawRequest('GET', '/v1/openapi.json'));
    assert.equal(document.status, 200);
    assert.equal(JSON.parse(document.body.toString()).openapi, '3.1.0');
    const unauthenticated = await answer(
      ports.contextApi,
      rawRequest('POST', '/v1/contexts', { headers: { 'content-type': 'application/json' }, body: '{"name":"a"}' }),
    );
    assert.equal(unauthenticated.status, 401, unauthenticated.body.toString());
    assert.ok(unauthenticated.headers['x-request-id'], 'answered by the gateway');

    // HTTP/2 (prior knowledge) has no Host line and an absolute target inside HAProxy; it must not be refused.
    for (const [port, path] of [
      [ports.agent, '/healthz'],
      [ports.contextApi, '/v1/openapi.json'],
    ] as const) {
      const session = http2Connect(`http://127.0.0.1:${port}`);
      try {
        const status = await new Promise<number>((resolve, reject) => {
          const stream = session.request({ ':path': path });
          stream.on('response', (h) => resolve(Number(h[':status'])));
          stream.on('error', reject);
          stream.resume();
        });
        assert.equal(status, 200, `HTTP/2 GET ${path}`);
      } finally {
        session.close();
      }
    }
  });

  test('[DEPLOY-HAPROXY-REFUSES] a method the gateway does not route gets a prompt 405 with Allow, on both frontends', async () => {
    for (const { name, port } of fronts()) {
      for (const [method, target] of [
        ['FOO', '/healthz'],
        ['PROPFIND', '/healthz'],
        ['SEARCH', '/healthz'],
        ['get', '/healthz'],
        ['TRACE', '/healthz'],
        ['CONNECT', 'assay.test:443'],
      ]) {
        const r = await refused(port, rawRequest(method!, target!), 405, `${name}: ${method}`);
        assert.equal(r.headers.allow, allowedMethods, `${name}: ${method}`);
      }
      // The seven are passed on: the gateway answers OPTIONS itself (no route serves it).
      const options = await answer(port, rawRequest('OPTIONS', name === 'agent' ? '/healthz' : '/v1/openapi.json'));
      assert.notEqual(options.status, 405, `${name}: OPTIONS`);
      assert.ok(options.headers['x-request-id'], `${name}: OPTIONS answered by the gateway`);
    }
  });

  test('[DEPLOY-HAPROXY-REFUSES] 48 or more header lines get a prompt 400; 47, with the X-Forwarded-For HAProxy adds, are served', async () => {
    for (const { name, port } of fronts()) {
      await refused(port, withHeaderLines(48), 400, `${name}: 48 header lines`);
      await refused(port, withHeaderLines(60), 400, `${name}: 60 header lines`);
    }
    // 47 from the client and HAProxy's X-Forwarded-For make the 48 uWS still serves.
    const served = await answer(ports.agent, withHeaderLines(47));
    assert.equal(served.status, 200);
    assert.ok(served.headers['x-request-id'], 'answered by the gateway');
  });

  test('[DEPLOY-HAPROXY-REFUSES] two different Content-Length headers get a prompt 400, never the first one used', async () => {
    const post = (lengths: string[]) =>
      [
        'POST /sandbox/agents HTTP/1.1',
        'host: assay.test',
        'content-type: application/json',
        ...lengths.map((l) => `content-length: ${l}`),
        '',
        '{}',
      ].join('\r\n');
    for (const { name, port } of fronts()) {
      await refused(port, post(['2', '5']), 400, `${name}: Content-Length 2 and 5`);
      await refused(port, post(['2, 5']), 400, `${name}: Content-Length "2, 5"`);
    }
  });

  test('[DEPLOY-HAPROXY-REFUSES] HTTP/1.0, a target that is not a path, no Host or two, and control characters in a header get a prompt 4xx', async () => {
    for (const { name, port } of fronts()) {
      const r = await refused(port, 'GET /healthz HTTP/1.0\r\nhost: assay.test\r\n\r\n', 426, `${name}: HTTP/1.0`);
      assert.equal(r.headers.upgrade, 'HTTP/1.1');
      await refused(port, 'OPTIONS * HTTP/1.1\r\nhost: assay.test\r\n\r\n', 400, `${name}: OPTIONS *`);
      await refused(
        port,
        'GET http://assay.test/healthz HTTP/1.1\r\nhost: assay.test\r\n\r\n',
        400,
        `${name}: full URL`,
      );
      await refused(port, 'GET /healthz HTTP/1.1\r\n\r\n', 400, `${name}: no Host`);
      await refused(port, 'GET /healthz HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n', 400, `${name}: two Hosts`);
      for (const control of ['\x00', '\x01', '\x1f', '\x7f']) {
        const bytes = rawRequest('GET', '/healthz', { headers: { 'x-note': `a${control}b` } });
        await refused(port, bytes, 400, `${name}: 0x${control.charCodeAt(0).toString(16)} in a header value`);
      }
    }
    // A tab and bytes above 0x7F are allowed in a value.
    const tab = await answer(ports.agent, rawRequest('GET', '/healthz', { headers: { 'x-note': 'a\tb\xe9' } }));
    assert.equal(tab.status, 200);
  });

  test('[DEPLOY-HAPROXY-FORWARDED] the X-Forwarded-For a client sends never becomes its address: the gateway counts the one HAProxy appended', async () => {
    const forged = '203.0.113.7';
    // The client on 127.0.0.3, HAProxy reaching the gateway from 127.0.0.1: the three addresses differ.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: ports.agent,
          localAddress: '127.0.0.3',
          method: 'POST',
          path: '/sandbox/agents',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': forged },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    assert.equal(status, 201);
    // Sandbox registrations are counted per client address (actors/sandbox/service.ts).
    const buckets = (await sys.sql<{ bucket: string }[]>`SELECT bucket FROM rate_windows`).map((r) => r.bucket);
    assert.ok(buckets.includes('sandbox:127.0.0.3'), `counted for the client's address: ${buckets.join(', ')}`);
    assert.ok(!buckets.some((b) => b.includes(forged)), `never for the address it sent: ${buckets.join(', ')}`);
  });
});
