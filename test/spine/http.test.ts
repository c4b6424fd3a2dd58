// HTTP basics over raw sockets: HEAD is the GET's head without content on every route (the same checks and
// refusals included) and leaves the connection usable; methods the routes do not serve get the typed 404 with
// Allow; methods and header counts the HTTP parser refuses close the connection or go unanswered, as
// docs/operations.md says, and the server keeps serving.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { artifactContent, publish, registerSeller } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { openRawSession } from '../support/mcp.ts';
import { RawConnection, type RawResponse, rawRequest } from '../support/raw-http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let agent: Agent;

before(async () => {
  sys = await startSystem();
  agent = await sys.register();
});
after(async () => {
  await sys.stop();
});

const bearer = () => ({ authorization: `Bearer ${agent.token}` });

/** GET then HEAD of the same request on one connection, then a GET /healthz that must parse as the next answer. */
async function getThenHead(path: string, headers: Record<string, string> = {}) {
  const c = await RawConnection.open(sys.baseUrl);
  try {
    c.send(rawRequest('GET', path, { headers }));
    const get = await c.response();
    c.send(rawRequest('HEAD', path, { headers }));
    const head = await c.response({ head: true });
    // Had the HEAD answer carried content, these bytes would be in front of the next status line.
    c.send(rawRequest('GET', '/healthz'));
    const next = await c.response();
    assert.equal(next.status, 200, `the connection serves the request after HEAD ${path}`);
    assert.equal(next.body.toString().startsWith('{"status":'), true);
    return { get, head };
  } finally {
    c.destroy();
  }
}

function assertSameHead(get: RawResponse, head: RawResponse, what: string) {
  assert.equal(head.status, get.status, what);
  for (const name of ['content-type', 'content-length', 'allow', 'www-authenticate', 'etag']) {
    assert.equal(head.headers[name], get.headers[name], `${what}: ${name}`);
  }
}

describe('HEAD', () => {
  test('[SPINE-HTTP-HEAD] HEAD answers the GET status and headers without content, and the connection goes on', async () => {
    const cases: [string, Record<string, string>, number][] = [
      ['/v1/balance', bearer(), 200],
      ['/v1/ledger?limit=2', bearer(), 200],
      ['/v1/balance', {}, 401],
      ['/v1/ledger?limit=0', bearer(), 422],
      ['/v1/nope', bearer(), 404],
      ['/v1/topups', bearer(), 404],
      ['/healthz', {}, 200],
      ['/openapi.json', {}, 200],
      ['/docs/errors', {}, 200],
      ['/schemas/offer-v1.json', {}, 200],
    ];
    for (const [path, headers, status] of cases) {
      const { get, head } = await getThenHead(path, headers);
      assert.equal(get.status, status, path);
      assertSameHead(get, head, `HEAD ${path}`);
      assert.equal(Number(head.headers['content-length']), get.body.length, `HEAD ${path}: the GET's length`);
      assert.ok(head.headers['x-request-id'], `HEAD ${path}: request id`);
    }
  });

  test('[SPINE-HTTP-HEAD] HEAD changes nothing: a HEAD on a POST-only route is the typed 404 head with Allow', async () => {
    const before = (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents;
    const c = await RawConnection.open(sys.baseUrl);
    c.send(rawRequest('HEAD', '/v1/topups', { headers: { ...bearer(), 'idempotency-key': 'head-1' } }));
    const r = await c.response({ head: true });
    c.destroy();
    assert.equal(r.status, 404);
    assert.equal(r.headers.allow, 'POST');
    assert.equal((await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents, before);
  });

  test('[SPINE-HTTP-HEAD] HEAD /mcp runs the checks of GET /mcp and answers the event-stream head alone', async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token);
    const mcp = { ...bearer(), accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId };
    const cases: [Record<string, string>, number][] = [
      [mcp, 200],
      [{ ...mcp, 'mcp-session-id': '' }, 400],
      [{ ...mcp, authorization: '' }, 401],
      [{ ...mcp, 'mcp-session-id': '00000000-0000-4000-8000-000000000000' }, 404],
    ];
    for (const [headers, status] of cases) {
      const c = await RawConnection.open(sys.baseUrl);
      c.send(rawRequest('HEAD', '/mcp', { headers }));
      const head = await c.response({ head: true });
      assert.equal(head.status, status, JSON.stringify(headers));
      if (status === 200) assert.match(head.headers['content-type'] ?? '', /^text\/event-stream/);
      else assert.equal(head.headers['content-type'], 'application/json');
      c.send(rawRequest('GET', '/healthz'));
      assert.equal((await c.response()).status, 200, 'the connection serves the request after HEAD /mcp');
      c.destroy();
    }
  });

  test('[SPINE-HTTP-HEAD] a 304 carries no content and leaves the connection usable, on GET and HEAD', async () => {
    const seller = await registerSeller(sys);
    const a = await publish(
      sys,
      seller.token,
      { title: 'Offer', content: artifactContent('Offer', [['c1', 'Alpha beta.']], ['Alpha beta.']) },
      'http-a',
    );
    const l = await sys.call('POST', '/v1/listings', {
      token: seller.token,
      body: { artifact_id: a.id, price_cents: 100, floor: 0.5, formats: ['md'] },
      key: 'http-l',
    });
    assert.equal(l.status, 201);
    const path = `/offers/${l.body.id}`;
    // The document changes once when its report lands; take the tag after that.
    const offer = await eventually('the offer to carry its report', async () => {
      const r = await sys.call('GET', path, { token: agent.token });
      return r.status === 200 && r.body.report ? r : undefined;
    });
    const etag = offer.headers.get('etag')!;
    const c = await RawConnection.open(sys.baseUrl);
    for (const method of ['GET', 'HEAD', 'GET']) {
      c.send(rawRequest(method, path, { headers: { ...bearer(), 'if-none-match': etag } }));
      const r = await c.response({ head: true });
      assert.equal(r.status, 304, method);
      assert.equal(r.headers.etag, etag);
      assert.equal(r.headers['content-length'], undefined, `${method}: no length for content that is not sent`);
    }
    c.send(rawRequest('GET', '/healthz'));
    assert.equal((await c.response()).status, 200, 'the connection serves the request after the 304s');
    c.destroy();
  });
});

describe('methods', () => {
  test('[SPINE-HTTP-METHODS] OPTIONS, TRACE and CONNECT get the typed 404, with Allow on a path that exists', async () => {
    for (const method of ['OPTIONS', 'TRACE', 'CONNECT', 'PUT', 'PATCH', 'DELETE']) {
      const c = await RawConnection.open(sys.baseUrl);
      c.send(rawRequest(method, '/v1/balance', { headers: bearer() }));
      const known = await c.response();
      assert.equal(known.status, 404, method);
      assert.ok(isTypedError(JSON.parse(known.body.toString()), 'not_found'), method);
      assert.equal(known.headers.allow, 'GET, HEAD', method);
      c.send(rawRequest(method, '/v1/nope', { headers: bearer() }));
      const unknown = await c.response();
      assert.equal(unknown.status, 404, method);
      assert.equal(unknown.headers.allow, undefined, method);
      c.destroy();
    }
    const mcp = await sys.call('OPTIONS', '/mcp');
    assert.equal(mcp.status, 404);
    assert.equal(mcp.headers.get('allow'), 'POST, GET, HEAD, DELETE');
  });

  test('[SPINE-HTTP-METHODS] a method the HTTP parser does not know closes the connection at once; others are served', async () => {
    for (const method of ['FOO', 'PROPFIND', 'SEARCH', 'get']) {
      const c = await RawConnection.open(sys.baseUrl);
      c.send(rawRequest(method, '/v1/balance', { headers: bearer() }));
      const closedAfterMs = await c.closed;
      // The parser's idle timeout would take about 10 s; "at once" leaves room for a loaded machine.
      assert.ok(closedAfterMs < 2000, `${method}: closed after ${closedAfterMs} ms`);
      assert.equal(c.unread.length, 0, `${method}: no answer`);
      const r = await sys.call('GET', '/v1/balance', { token: agent.token });
      assert.equal(r.status, 200, `served after ${method}`);
    }
  });
});

describe('header lines', () => {
  const withLines = (n: number) => {
    const headers: Record<string, string> = bearer();
    // Host and authorization are two of the n lines.
    for (let i = 0; Object.keys(headers).length + 1 < n; i++) headers[`x-filler-${i}`] = 'v';
    return rawRequest('GET', '/v1/balance', { headers });
  };

  test('[SPINE-HTTP-LIMITS] a request with 48 header lines is served; with 49 it gets no answer and others are served', async () => {
    const ok = await RawConnection.open(sys.baseUrl);
    ok.send(withLines(48));
    assert.equal((await ok.response()).status, 200);
    ok.destroy();
    const over = await RawConnection.open(sys.baseUrl);
    over.send(withLines(49));
    // The documented limit of the HTTP layer: uWS never hands the request over (docs/operations.md).
    await assert.rejects(over.response({ timeoutMs: 1000 }), /no complete response/);
    assert.equal((await sys.call('GET', '/v1/balance', { token: agent.token })).status, 200);
    over.destroy();
  });
});
