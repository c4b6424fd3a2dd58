// Webhooks go only to public HTTPS endpoints, to the very address that was checked, with bounded time and bytes.
//
// Safety: no test here may open a connection outside 127.0.0.0/8 or ::1, even when the sender is wrong. Refusals are
// tested on the classifiers, or through postJson with a stubbed resolver and a `request` that fails if called; real
// sockets go only to a loopback receiver. As a last line, net.Socket#connect is guarded for this file: a connection
// to anything but loopback throws before it is made and fails the test that tried it.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import net from 'node:net';
import { after, afterEach, before, test } from 'node:test';
import {
  addressKind,
  addressNotPublic,
  hostNotPublic,
  postJson,
  type ResolvedAddress,
  resolveTarget,
  type OutboundOptions,
  urlProblem,
} from '../../actors/shared/outbound-fetch.ts';
import { retryDelayMs, webhookRetriesMax } from '../../actors/webhooks/delivery.ts';
import { selfSignedCertificate } from '../support/webhook-receiver.ts';

const isLoopback = (host: string) => host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';

const forbiddenConnects: string[] = [];
const realConnect = net.Socket.prototype.connect;
function guardedConnect(this: net.Socket, ...args: any[]) {
  const first = args[0];
  const host: string | undefined =
    typeof first === 'object' && first !== null ? (first.path ? 'localhost' : first.host) : args[1];
  if (!isLoopback(host ?? 'localhost')) {
    forbiddenConnects.push(String(host));
    throw new Error(`test guard: refused a connection to ${host}`);
  }
  return (realConnect as (...a: any[]) => net.Socket).apply(this, args);
}
net.Socket.prototype.connect = guardedConnect as typeof realConnect; // restored in after()

/** A `request` that records where it was asked to connect and passes loopback targets to the real https.request. */
function loopbackRequest() {
  const calls: { host: string; servername: string | undefined }[] = [];
  const request = ((options: any, ...rest: any[]) => {
    calls.push({ host: options.host, servername: options.servername });
    assert.ok(isLoopback(options.host), `the sender asked to connect to ${options.host}`);
    return (httpsRequest as any)(options, ...rest);
  }) as typeof httpsRequest;
  return { calls, request };
}

/** A `request` that must never be called: it records the call and throws. */
function forbiddenRequest() {
  const calls: unknown[] = [];
  const request = ((...args: unknown[]) => {
    calls.push(args);
    throw new Error('request must not be called');
  }) as typeof httpsRequest;
  return { calls, request };
}

/** A resolver that answers from a script, one answer per call (the last answer repeats), and counts its calls. */
function scriptedResolver(...answers: (string | string[])[]) {
  const calls: string[] = [];
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    const answer = answers[Math.min(calls.length, answers.length - 1)]!;
    calls.push(host);
    return (Array.isArray(answer) ? answer : [answer]).map((address) => ({
      address,
      family: net.isIP(address) === 6 ? 6 : 4,
    }));
  };
  return { calls, resolve };
}

const bracketed = (address: string) => (net.isIPv6(address) ? `[${address}]` : address);

// Refused in production and in test mode alike, each with a word its classification must contain.
const refusedRanges: [string, RegExp, string[]][] = [
  ['private (RFC 1918)', /private/, ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.254', '192.168.1.1']],
  ['cloud metadata', /link-local.*metadata|unique-local.*metadata/, ['169.254.169.254', 'fd00:ec2::254']],
  ['link-local', /link-local/, ['169.254.0.1', '169.254.255.254', 'fe80::1', 'febf::1', 'fe80::1%eth0']],
  ['carrier-grade NAT', /carrier-grade NAT/, ['100.64.0.1', '100.127.255.254']],
  ['multicast', /multicast/, ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff05::1:3']],
  ['unspecified', /unspecified/, ['0.0.0.0', '0.1.2.3', '::']],
  ['broadcast', /broadcast/, ['255.255.255.255']],
  ['reserved', /reserved|benchmarking|special-purpose/, ['240.0.0.1', '192.0.0.8', '198.18.0.1', '192.88.99.1']],
  ['documentation', /reserved/, ['192.0.2.1', '198.51.100.7', '203.0.113.9', '2001:db8::1', '3fff::1']],
  ['IPv6 unique-local', /unique-local/, ['fc00::1', 'fd12:3456:789a::1']],
  ['IPv6 site-local', /site-local/, ['fec0::1']],
  [
    'IPv4-mapped IPv6, naming the embedded address',
    /IPv4-mapped/,
    ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:192.168.1.1', '::ffff:8.8.8.8'],
  ],
  ['IPv4-translated IPv6', /IPv4-translated/, ['::ffff:0:a00:1', '::ffff:0:7f00:1']],
  ['NAT64', /NAT64/, ['64:ff9b::a00:1', '64:ff9b::7f00:1', '64:ff9b:1::1']],
  ['6to4', /6to4/, ['2002:c0a8:101::1', '2002:7f00:1::', '2002:a9fe:a9fe::']],
  ['Teredo', /Teredo/, ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1']],
  ['IPv6 outside 2000::/3 (IPv4-compatible and unassigned)', /2000::\/3/, ['::7f00:1', '::a00:1', '4000::1']],
  ['other special-purpose IPv6', /special-purpose/, ['100::1', '5f00::1']],
];
const loopbackAddresses = ['127.0.0.1', '127.1.2.3', '127.255.255.254', '::1'];
const publicAddresses = ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2001:4860:4860::8888'];

afterEach(() => {
  assert.deepEqual(forbiddenConnects.splice(0), [], 'connections attempted outside loopback');
});

// The loopback receiver: a real HTTPS server on 127.0.0.1 with a self-signed certificate made for this run.
let dir = '';
let certPem = '';
let server: Server;
let port = 0;
const hits = new Map<string, number>();
let lastRequest: { headers: Record<string, unknown>; body: string } | null = null;
const hitsOf = (path: string) => hits.get(path) ?? 0;

before(async () => {
  const cert = selfSignedCertificate();
  dir = cert.dir;
  certPem = cert.certPem;
  server = createServer({ key: readFileSync(cert.keyFile), cert: certPem }, (req, res) => {
    const path = req.url ?? '';
    hits.set(path, hitsOf(path) + 1);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      lastRequest = { headers: req.headers, body };
      if (path === '/ok') res.end('received');
      else if (path === '/fail') res.writeHead(500).end('broken');
      else if (path === '/nul') res.end('a\u0000b');
      else if (path === '/redirect') res.writeHead(302, { location: `https://localhost:${port}/ok` }).end();
      else if (path === '/slow')
        return; // never answers; the sender's timeout ends it
      else if (path === '/huge') {
        // An endless body of two-byte characters: only the sender's cap can end the attempt.
        const chunk = Buffer.from('é'.repeat(32 * 1024));
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        pump();
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
  net.Socket.prototype.connect = realConnect;
});

function liveOptions(over: Partial<OutboundOptions> = {}): OutboundOptions {
  return {
    allowLoopback: true,
    extraCa: certPem,
    timeoutMs: 5000,
    responseBytesMax: 4096,
    resolve: scriptedResolver('127.0.0.1').resolve,
    request: loopbackRequest().request,
    ...over,
  };
}

for (const [label, mentions, addresses] of refusedRanges) {
  test(`[WEBHOOK-SSRF] ${label} addresses are refused, in production and in test mode`, () => {
    for (const address of addresses) {
      for (const allowLoopback of [false, true]) {
        const kind = addressKind(address, { allowLoopback });
        assert.ok(kind !== null, `${address} allowed (allowLoopback ${allowLoopback})`);
        assert.match(kind, mentions, address);
        if (address.includes('%')) continue; // URLs cannot carry an IPv6 zone
        assert.equal(urlProblem(`https://${bracketed(address)}/hook`, { allowLoopback }), addressNotPublic, address);
      }
    }
  });
}

test('[WEBHOOK-SSRF] embedded IPv4 forms are classified by the form, naming the address they carry and its kind', () => {
  const o = { allowLoopback: true };
  assert.match(addressKind('::ffff:10.0.0.1', o)!, /of 10\.0\.0\.1, which is a private address/);
  assert.match(addressKind('::ffff:127.0.0.1', o)!, /of 127\.0\.0\.1, which is a loopback address/);
  assert.match(addressKind('::ffff:169.254.169.254', o)!, /of 169\.254\.169\.254, which is a link-local.*metadata/);
  assert.match(addressKind('64:ff9b::a00:1', o)!, /NAT64 address of 10\.0\.0\.1, which is a private/);
  assert.match(addressKind('2002:a9fe:a9fe::', o)!, /6to4 address of 169\.254\.169\.254, which is a link-local/);
  assert.match(addressKind('::ffff:8.8.8.8', o)!, /IPv4-mapped IPv6 address of 8\.8\.8\.8$/);
});

test('[WEBHOOK-SSRF] public addresses are allowed (classified only, never connected to)', () => {
  for (const address of publicAddresses) {
    for (const allowLoopback of [false, true]) {
      assert.equal(addressKind(address, { allowLoopback }), null, address);
      assert.equal(urlProblem(`https://${bracketed(address)}:8443/hook?x=1`, { allowLoopback }), null, address);
    }
  }
});

test('[WEBHOOK-SSRF] loopback is refused unless test mode allows it, and test mode allows nothing else', () => {
  for (const address of loopbackAddresses) {
    assert.match(addressKind(address, { allowLoopback: false })!, /loopback/, address);
    assert.equal(urlProblem(`https://${bracketed(address)}/`, { allowLoopback: false }), addressNotPublic, address);
    assert.equal(addressKind(address, { allowLoopback: true }), null, address);
    assert.equal(urlProblem(`https://${bracketed(address)}/`, { allowLoopback: true }), null, address);
  }
  // Spellings the URL parser turns into 127.0.0.1 are the same address.
  for (const url of ['https://2130706433/', 'https://0x7f.1/']) {
    assert.equal(urlProblem(url, { allowLoopback: false }), addressNotPublic, url);
    assert.equal(urlProblem(url, { allowLoopback: true }), null, url);
  }
});

test('[WEBHOOK-SSRF] urlProblem refuses what is not an https URL to a host', () => {
  const o = { allowLoopback: false };
  const cases: [string, RegExp][] = [
    ['http://example.com/hook', /must use https, not http$/],
    ['ftp://example.com/hook', /must use https, not ftp$/],
    ['HTTP://example.com/hook', /must use https/],
    ['https://user:secret@example.com/hook', /user name or password/],
    ['https://user@example.com/hook', /user name or password/],
    ['https://:secret@example.com/hook', /user name or password/],
    ['https://', /not a valid absolute URL/],
    ['https://:443/hook', /not a valid absolute URL/],
    ['https://?x', /not a valid absolute URL/],
    ['//example.com/hook', /not a valid absolute URL/],
    ['example.com/hook', /not a valid absolute URL/],
    ['', /not a valid absolute URL/],
    ['https://example.com:0/hook', /port 0/],
    ['https://[fe80::1%25eth0]/hook', /not a valid absolute URL/],
  ];
  for (const [url, problem] of cases) assert.match(urlProblem(url, o) ?? 'allowed', problem, url);
  for (const url of ['https://example.com/hook', 'https://hooks.example.com:8443/a/b?c=d', 'https://example.com./']) {
    assert.equal(urlProblem(url, o), null, url);
  }
  assert.equal(addressKind('example.com', o), 'not an IP address');
  assert.equal(addressKind('', o), 'not an IP address');
});

const resolveOptions = (over: Partial<OutboundOptions> = {}): OutboundOptions => ({
  allowLoopback: false,
  timeoutMs: 1000,
  responseBytesMax: 4096,
  request: forbiddenRequest().request,
  ...over,
});

test('[WEBHOOK-SSRF] resolveTarget refuses a host when any of its addresses is refused', async () => {
  for (const answer of [
    ['93.184.215.14', '10.0.0.1'],
    ['10.0.0.1', '93.184.215.14'],
    ['93.184.215.14', 'fe80::1'],
    ['2606:4700:4700::1111', '169.254.169.254'],
  ]) {
    const r = await resolveTarget('https://hooks.example.com/x', resolveOptions(scriptedResolver(answer)));
    assert.deepEqual(r, { ok: false, problem: hostNotPublic }, answer.join(', '));
  }
  const good = await resolveTarget(
    'https://hooks.example.com/x',
    resolveOptions(scriptedResolver(['93.184.215.14', '2606:4700:4700::1111'])),
  );
  assert.deepEqual(good, { ok: true, address: '93.184.215.14', family: 4 });
});

test('[WEBHOOK-SSRF] every check resolves again: an answer that turns private is refused the next time', async () => {
  const publicThenPrivate = scriptedResolver('93.184.215.14', '10.0.0.1');
  const o = resolveOptions(publicThenPrivate);
  assert.deepEqual(await resolveTarget('https://hooks.example.com/x', o), {
    ok: true,
    address: '93.184.215.14',
    family: 4,
  });
  assert.deepEqual(await resolveTarget('https://hooks.example.com/x', o), { ok: false, problem: hostNotPublic });
  assert.equal(publicThenPrivate.calls.length, 2);

  const loopbackThenPrivate = scriptedResolver('127.0.0.1', '10.0.0.1');
  const testMode = resolveOptions({ ...loopbackThenPrivate, allowLoopback: true });
  assert.equal((await resolveTarget('https://localhost:8443/x', testMode)).ok, true);
  assert.equal((await resolveTarget('https://localhost:8443/x', testMode)).ok, false);
});

test('[WEBHOOK-SSRF] resolveTarget: IP literals need no lookup; failed and empty lookups are refused', async () => {
  const never = scriptedResolver('10.0.0.1');
  assert.deepEqual(await resolveTarget('https://93.184.215.14/x', resolveOptions(never)), {
    ok: true,
    address: '93.184.215.14',
    family: 4,
  });
  assert.deepEqual(await resolveTarget('https://[2606:4700:4700::1111]:8443/x', resolveOptions(never)), {
    ok: true,
    address: '2606:4700:4700::1111',
    family: 6,
  });
  assert.equal((await resolveTarget('https://10.0.0.1/x', resolveOptions(never))).ok, false);
  assert.equal((await resolveTarget('http://hooks.example.com/x', resolveOptions(never))).ok, false);
  assert.equal(never.calls.length, 0);

  const notFound = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
  };
  assert.deepEqual(await resolveTarget('https://nowhere.invalid/x', resolveOptions({ resolve: notFound })), {
    ok: false,
    problem: hostNotPublic,
  });
  assert.deepEqual(await resolveTarget('https://empty.example/x', resolveOptions({ resolve: async () => [] })), {
    ok: false,
    problem: hostNotPublic,
  });
});

test('[SEC-WEBHOOK-URL-OPAQUE] a refusal and a delivery attempt read the same whatever the resolver answered: no address, no range, no hint whether the name exists', async () => {
  // What the owner can read: the registration refusal (resolveTarget's problem) and a delivery attempt's error. Every
  // refused answer, a lookup that fails, and an empty one must give the same words, or the words tell the answer.
  const answers: ((host: string) => Promise<ResolvedAddress[]>)[] = [
    ...refusedRanges.flatMap(([, , addresses]) => addresses).map((a) => scriptedResolver(a).resolve),
    ...loopbackAddresses.map((a) => scriptedResolver(a).resolve),
    scriptedResolver(['93.184.215.14', '10.0.0.1']).resolve,
    async () => [],
    ...['ENOTFOUND', 'ENODATA', 'ESERVFAIL', 'ETIMEOUT', 'EREFUSED'].map((code) => async () => {
      throw Object.assign(new Error(`getaddrinfo ${code} db.corp.internal`), { code });
    }),
  ];
  const problems = new Set<string>();
  const errors = new Set<string>();
  for (const resolve of answers) {
    const forbidden = forbiddenRequest();
    const r = await resolveTarget(
      'https://db.corp.internal/x',
      resolveOptions({ resolve, request: forbidden.request }),
    );
    assert.equal(r.ok, false);
    problems.add((r as { problem: string }).problem);
    const attempt = await postJson(
      'https://db.corp.internal/x',
      '{}',
      {},
      resolveOptions({ resolve, request: forbidden.request }),
    );
    errors.add(attempt.error!);
    assert.equal(forbidden.calls.length, 0);
  }
  assert.deepEqual([...problems], [hostNotPublic]);
  assert.deepEqual([...errors], [hostNotPublic]);
  assert.doesNotMatch(hostNotPublic, /db\.corp|\d+\.\d+|::|private|loopback|link-local|metadata/);
  // An address typed into the URL: the same words whatever its range.
  const literals = new Set(
    ['https://10.0.0.1/', 'https://127.0.0.1/', 'https://169.254.169.254/', 'https://[fd00:ec2::254]/'].map((url) =>
      urlProblem(url, { allowLoopback: false }),
    ),
  );
  assert.deepEqual([...literals], [addressNotPublic]);
});

test('[SEC-WEBHOOK-URL-OPAQUE] a failed connection to a checked address does not name the address the host resolved to', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const a = await postJson(`https://localhost:${closedPort}/ok`, '{}', {}, liveOptions());
  assert.equal(a.ok, false);
  assert.match(a.error!, /ECONNREFUSED/);
  assert.doesNotMatch(a.error!, /127\.0\.0\.1/);
});

test('[WEBHOOK-SEND] postJson connects to nothing when the target is refused', async () => {
  const metadata = forbiddenRequest();
  const attempt = await postJson(
    'https://hooks.example.com/x',
    '{}',
    {},
    resolveOptions({ ...scriptedResolver('169.254.169.254'), request: metadata.request }),
  );
  assert.equal(attempt.ok, false);
  assert.equal(attempt.status, null);
  assert.equal(attempt.responseSnippet, null);
  assert.equal(attempt.error, hostNotPublic);
  assert.equal(metadata.calls.length, 0, 'request was called');

  const targets: [string, string | null][] = [
    ['https://hooks.example.com/x', '10.0.0.1'],
    ['https://hooks.example.com/x', 'fd00:ec2::254'],
    ['https://hooks.example.com/x', '::ffff:127.0.0.1'],
    ['https://localhost/x', '127.0.0.1'], // loopback outside test mode
    ['https://169.254.169.254/latest/meta-data/', null],
    ['https://[fd00:ec2::254]/latest/meta-data/', null],
    ['https://[::ffff:a9fe:a9fe]/', null],
    ['https://100.100.100.200/', null],
    ['http://93.184.215.14/x', null],
  ];
  for (const [url, answer] of targets) {
    const forbidden = forbiddenRequest();
    const resolver = scriptedResolver(answer ?? '10.0.0.1');
    const a = await postJson(url, '{}', {}, resolveOptions({ resolve: resolver.resolve, request: forbidden.request }));
    assert.equal(a.ok, false, url);
    assert.ok(a.error, url);
    assert.equal(forbidden.calls.length, 0, `request was called for ${url}`);
    if (answer === null) assert.equal(resolver.calls.length, 0, `${url} needs no lookup`);
  }
});

test('[WEBHOOK-SEND] the whole attempt is bounded, including a lookup that never answers', async () => {
  const forbidden = forbiddenRequest();
  const started = performance.now();
  const a = await postJson(
    'https://hooks.example.com/x',
    '{}',
    {},
    resolveOptions({ timeoutMs: 200, resolve: () => new Promise(() => {}), request: forbidden.request }),
  );
  assert.deepEqual({ ok: a.ok, status: a.status, error: a.error }, { ok: false, status: null, error: 'timeout' });
  assert.ok(performance.now() - started < 1500);
  assert.equal(forbidden.calls.length, 0);
});

test('[WEBHOOK-SEND] a 2xx is ok, and the receiver gets the body and headers on the URL host', async () => {
  const recorder = loopbackRequest();
  const body = JSON.stringify({ type: 'order.delivered', id: 'evt_1' });
  const a = await postJson(
    `https://localhost:${port}/ok`,
    body,
    { 'x-webhook-signature': 'abc', 'user-agent': 'Assay-Webhooks' },
    liveOptions({ request: recorder.request }),
  );
  assert.deepEqual(
    { ok: a.ok, status: a.status, error: a.error, snippet: a.responseSnippet },
    { ok: true, status: 200, error: null, snippet: 'received' },
  );
  assert.ok(a.durationMs >= 0 && a.durationMs < 5000);
  assert.deepEqual(recorder.calls, [{ host: '127.0.0.1', servername: 'localhost' }]);
  assert.equal(lastRequest?.body, body);
  assert.equal(lastRequest?.headers['host'], `localhost:${port}`);
  assert.equal(lastRequest?.headers['content-type'], 'application/json');
  assert.equal(lastRequest?.headers['content-length'], String(Buffer.byteLength(body)));
  assert.equal(lastRequest?.headers['x-webhook-signature'], 'abc');
});

test('[WEBHOOK-SEND] the response snippet holds no NUL, which a store could not keep', async () => {
  const a = await postJson(`https://localhost:${port}/nul`, '{}', {}, liveOptions());
  assert.equal(a.ok, true);
  assert.equal(a.responseSnippet, 'ab');
});

test('[WEBHOOK-SEND] a 500 is not ok', async () => {
  const a = await postJson(`https://localhost:${port}/fail`, '{}', {}, liveOptions());
  assert.deepEqual(
    { ok: a.ok, status: a.status, error: a.error, snippet: a.responseSnippet },
    { ok: false, status: 500, error: null, snippet: 'broken' },
  );
});

test('[WEBHOOK-SEND] a redirect is not followed and is not ok', async () => {
  const before = { redirect: hitsOf('/redirect'), ok: hitsOf('/ok') };
  const a = await postJson(`https://localhost:${port}/redirect`, '{}', {}, liveOptions());
  assert.equal(a.ok, false);
  assert.equal(a.status, 302);
  assert.match(a.error!, /redirect \(302\), which is not followed/);
  assert.equal(hitsOf('/redirect'), before.redirect + 1);
  assert.equal(hitsOf('/ok'), before.ok, 'the Location was requested');
});

test('[WEBHOOK-SEND] a receiver that does not answer in time fails with timeout', async () => {
  const started = performance.now();
  const a = await postJson(`https://localhost:${port}/slow`, '{}', {}, liveOptions({ timeoutMs: 300 }));
  const wallMs = performance.now() - started;
  assert.deepEqual({ ok: a.ok, status: a.status, error: a.error }, { ok: false, status: null, error: 'timeout' });
  assert.ok(a.durationMs >= 290 && a.durationMs < 1500, `durationMs ${a.durationMs}`);
  assert.ok(wallMs < 1500, `took ${wallMs} ms`);
});

test('[WEBHOOK-SEND] an endless response body is cut at the cap without splitting a character', async () => {
  const a = await postJson(`https://localhost:${port}/huge`, '{}', {}, liveOptions({ responseBytesMax: 4095 }));
  assert.equal(a.ok, true);
  assert.equal(a.status, 200);
  assert.ok(a.durationMs < 2000, `durationMs ${a.durationMs}`);
  const snippet = a.responseSnippet!;
  assert.ok(Buffer.byteLength(snippet) <= 4095);
  assert.equal(snippet, 'é'.repeat(2047), 'the half character at the cap is dropped, not mangled');
});

test('[WEBHOOK-SEND] a refused connection is an attempt with an error, not a throw', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const a = await postJson(`https://localhost:${closedPort}/ok`, '{}', {}, liveOptions());
  assert.deepEqual(
    { ok: a.ok, status: a.status, snippet: a.responseSnippet },
    { ok: false, status: null, snippet: null },
  );
  assert.match(a.error!, /ECONNREFUSED/);

  const throwing = (() => {
    throw new Error('boom');
  }) as unknown as typeof httpsRequest;
  const b = await postJson(`https://localhost:${port}/ok`, '{}', {}, liveOptions({ request: throwing }));
  assert.deepEqual({ ok: b.ok, error: b.error }, { ok: false, error: 'boom' });
  const c = await postJson(`https://localhost:${port}/ok`, '{}', { 'x-bad': 'a\r\nb' }, liveOptions());
  assert.equal(c.ok, false);
  assert.match(c.error!, /x-bad/);
});

test('[WEBHOOK-SEND] the connection goes to the checked address: one lookup, no second chance to rebind', async () => {
  const rebinding = scriptedResolver('127.0.0.1', '10.0.0.1');
  const recorder = loopbackRequest();
  const before = hitsOf('/ok');
  const a = await postJson(
    `https://localhost:${port}/ok`,
    '{}',
    {},
    liveOptions({ resolve: rebinding.resolve, request: recorder.request }),
  );
  assert.equal(a.ok, true, a.error ?? '');
  assert.deepEqual(rebinding.calls, ['localhost']);
  assert.deepEqual(recorder.calls, [{ host: '127.0.0.1', servername: 'localhost' }]);
  assert.equal(hitsOf('/ok'), before + 1);

  // An IP-literal URL is not looked up at all; its certificate must carry the IP.
  const never = scriptedResolver('10.0.0.1');
  const literal = await postJson(`https://127.0.0.1:${port}/ok`, '{}', {}, liveOptions({ resolve: never.resolve }));
  assert.equal(literal.ok, true, literal.error ?? '');
  assert.equal(never.calls.length, 0);
});

test("[WEBHOOK-SEND] the certificate is verified against the URL's host name, not the address", async () => {
  const before = hitsOf('/ok');
  const otherName = await postJson(`https://receiver.example:${port}/ok`, '{}', {}, liveOptions());
  assert.equal(otherName.ok, false);
  assert.match(otherName.error!, /receiver\.example/);
  const untrusted = await postJson(`https://localhost:${port}/ok`, '{}', {}, liveOptions({ extraCa: undefined }));
  assert.equal(untrusted.ok, false);
  assert.match(untrusted.error!, /self-signed certificate/);
  assert.equal(hitsOf('/ok'), before, 'a request went through over an unverified connection');
});

test('[WEBHOOK-RETRY] each planned retry waits longer than the one before, whatever the jitter draws: base, 2 base, 4 base, ... within 20%', () => {
  const baseMs = 1_000;
  for (let n = 1; n <= webhookRetriesMax; n++) {
    const nominal = baseMs * 2 ** (n - 1);
    const shortest = retryDelayMs(baseMs, n, () => 0);
    const longest = retryDelayMs(baseMs, n, () => 0.999_999);
    assert.equal(shortest, nominal * 0.8, `retry ${n} at least 80% of ${nominal}`);
    assert.ok(
      longest <= nominal * 1.2 && longest > nominal * 1.19,
      `retry ${n} at most 120% of ${nominal}: ${longest}`,
    );
    if (n > 1) {
      const previousLongest = retryDelayMs(baseMs, n - 1, () => 0.999_999);
      assert.ok(
        shortest > previousLongest,
        `retry ${n}'s shortest wait ${shortest} > retry ${n - 1}'s longest ${previousLongest}`,
      );
    }
  }
});
