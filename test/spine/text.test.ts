// What text and nesting the service accepts, on every face: NUL and lone surrogates anywhere in a request, and
// values nested thousands of levels deep, get 422 validation_failed naming where, over REST and over MCP alike, and
// change nothing (balance, ledger, catalog); the ledger projection keeps serving everyone afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { artifactContent, registerSeller } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, type McpConnection, openRawSession, outcome } from '../support/mcp.ts';
import { RawConnection, rawRequest } from '../support/raw-http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
let mcp: McpConnection;

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
  mcp = await connectMcp(sys.baseUrl, seller.token);
});
after(async () => {
  await mcp.client.close();
  await sys.stop();
});

const content = artifactContent('Text', [['c1', 'Alpha beta.']], ['Alpha beta.']);
const listingId = '00000000-0000-4000-8000-000000000001';

/** An array nested `levels` deep around `inner`. */
function nested(levels: number, inner: unknown = 'md'): unknown {
  let v: unknown = inner;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

/** What must not move: the balance, the ledger as projected, and the seller's artifacts. */
async function snapshot() {
  const balance = await sys.call('GET', '/v1/balance', { token: seller.token });
  const ledger = await sys.call('GET', '/v1/ledger?limit=100', { token: seller.token });
  const [artifacts] = await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM artifacts`;
  return { balance: balance.body, ledger: ledger.body.items, artifacts: artifacts!.n };
}

function assertRefused(r: { status: number; body: any }, where: RegExp, what: string) {
  assert.equal(r.status, 422, `${what}: ${JSON.stringify(r.body)}`);
  assert.ok(isTypedError(r.body, 'validation_failed'), what);
  assert.match(r.body.message, where, what);
}

/** A top-up through both faces must still land in the projected ledger: nothing stopped the projection. */
async function projectionServes(key: string) {
  const entries = (await snapshot()).ledger.length;
  const r = await sys.call('POST', '/v1/topups', { token: seller.token, body: { credits: 1 }, key });
  assert.equal(r.status, 201);
  await eventually('the top-up in the projected ledger', async () =>
    (await snapshot()).ledger.length === entries + 1 ? true : undefined,
  );
}

describe('REST', () => {
  test('[SPINE-TEXT] NUL or a lone surrogate in a body value, a property name, a query value or a path parameter: 422 naming where', async () => {
    const before = await snapshot();
    const cases: { what: string; method: string; path: string; body?: string; where: RegExp }[] = [
      {
        what: 'NUL in a title',
        method: 'POST',
        path: '/v1/artifacts',
        body: JSON.stringify({ title: 'a\u0000b', content }),
        where: /^body\/title contains the NUL character/,
      },
      {
        what: 'a lone surrogate in a description',
        method: 'POST',
        path: '/v1/artifacts',
        body: `{"title":"t","content":${JSON.stringify(content)},"description":"x\\ud800y"}`,
        where: /^body\/description is not well-formed Unicode/,
      },
      {
        what: 'NUL in a topic',
        method: 'POST',
        path: '/v1/artifacts',
        body: JSON.stringify({ title: 't', content, topics: ['ok', '\u0000'] }),
        where: /^body\/topics\/1 contains the NUL character/,
      },
      {
        what: 'NUL in a property name',
        method: 'POST',
        path: '/v1/topups',
        body: JSON.stringify({ credits: 1, 'cre\u0000dits': 1 }),
        where: /^body has a property name that contains the NUL character/,
      },
      {
        what: 'NUL in a search filter',
        method: 'GET',
        path: '/v1/search?topic=%00',
        where: /^query\/topic contains the NUL character/,
      },
      {
        what: 'NUL in a query parameter name',
        method: 'GET',
        path: '/v1/search?to%00pic=x',
        where: /^query has a property name that contains the NUL character/,
      },
      {
        what: 'NUL in a path parameter',
        method: 'GET',
        path: '/v1/trust/principal:%00',
        where: /^path\/subject contains the NUL character/,
      },
      {
        what: 'a path parameter that is not UTF-8',
        method: 'GET',
        path: '/v1/artifacts/%ED%A0%80',
        where: /^path parameter artifact_id is not valid percent-encoded UTF-8/,
      },
      {
        what: 'a malformed percent-escape in a path parameter',
        method: 'GET',
        path: '/v1/artifacts/%E0%A4%A',
        where: /^path parameter artifact_id is not valid percent-encoded UTF-8/,
      },
    ];
    for (const c of cases) {
      const r = await sys.call(c.method, c.path, {
        token: seller.token,
        ...(c.body === undefined ? {} : { rawBody: c.body, key: `text-${c.what}` }),
      });
      assertRefused(r, c.where, c.what);
    }
    assert.deepEqual(await snapshot(), before);
  });

  test('[SPINE-TEXT] an Idempotency-Key header that is not printable ASCII gets 422 and credits nothing', async () => {
    const before = await snapshot();
    // uWS hands header bytes over as Latin-1 (so a UTF-8 "é" would arrive as "Ã©"), not as the client's text.
    for (const key of ['clé-1', 'naïve-key']) {
      const r = await sys.call('POST', '/v1/topups', {
        token: seller.token,
        body: { credits: 1 },
        headers: { 'idempotency-key': key },
      });
      assertRefused(r, /^the Idempotency-Key header must be printable ASCII/, key);
    }
    assert.deepEqual(await snapshot(), before);
  });

  test('[SPINE-TEXT] a body whose bytes are not UTF-8 gets 400 validation_failed over REST and MCP, not a guess', async () => {
    const before = await snapshot();
    const sessionId = await openRawSession(sys.baseUrl, seller.token);
    const headers = {
      authorization: `Bearer ${seller.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'idempotency-key': 'not-utf8',
    };
    // The title's "é" as one Latin-1 byte: not UTF-8.
    const body = Buffer.concat([Buffer.from('{"title":"caf'), Buffer.from([0xe9]), Buffer.from(`","content":"x"}`)]);
    const c = await RawConnection.open(sys.baseUrl);
    for (const path of ['/v1/artifacts', '/mcp']) {
      c.send(rawRequest('POST', path, { headers, contentLength: body.length }));
      c.send(body);
      const r = await c.response();
      assert.equal(r.status, 400, path);
      const error = JSON.parse(r.body.toString());
      assert.ok(isTypedError(error, 'validation_failed'), path);
      assert.equal(error.message, 'the request body is not UTF-8 text');
    }
    c.destroy();
    assert.deepEqual(await snapshot(), before);
  });

  test('[SPINE-TEXT] sandbox registration with NUL in the agent name gets 422 and registers nothing', async () => {
    const [principals] = await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM principals`;
    const r = await sys.call('POST', '/sandbox/agents', { rawBody: JSON.stringify({ name: 'bot\u0000' }) });
    assertRefused(r, /^body\/name contains the NUL character/, 'sandbox name');
    const [after] = await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM principals`;
    assert.equal(after!.n, principals!.n);
  });

  test('[SPINE-DEPTH] 4,000 levels of arrays in formats, topics or scopes get 422 before the schema is checked', async () => {
    const before = await snapshot();
    const cases: [string, string, unknown, RegExp][] = [
      ['/v1/orders', 'formats', { listing_id: listingId, formats: nested(4000) }, /^body\/formats(\/0)* is nested/],
      ['/v1/artifacts', 'topics', { title: 't', content, topics: nested(4000, 'x') }, /^body\/topics(\/0)* is nested/],
      ['/sandbox/agents', 'scopes', { scopes: nested(4000, 'purchase') }, /^body\/scopes(\/0)* is nested/],
    ];
    for (const [path, what, body, where] of cases) {
      const r = await sys.call('POST', path, { token: seller.token, body, key: `depth-${what}` });
      assertRefused(r, where, what);
      assert.match(r.body.message, /nested deeper than 32 levels$/);
    }
    // At the bound itself the schema decides (a wrong shape, not a depth problem).
    const shallow = await sys.call('POST', '/v1/orders', {
      token: seller.token,
      body: { listing_id: listingId, formats: nested(30) },
      key: 'depth-shallow',
    });
    assert.equal(shallow.status, 422);
    assert.doesNotMatch(shallow.body.message, /nested/);
    assert.deepEqual(await snapshot(), before);
    await projectionServes('text-rest-after');
  });
});

describe('MCP', () => {
  const call = async (name: string, args: Record<string, unknown>) =>
    outcome(await mcp.client.callTool({ name, arguments: args }));

  test('[SPINE-TEXT] NUL or a lone surrogate in a tool argument or idempotency_key: isError 422 naming where', async () => {
    const before = await snapshot();
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['top_up', { credits: 1, idempotency_key: 'a\u0000b' }, /^the Idempotency-Key contains the NUL character/],
      ['top_up', { credits: 1, idempotency_key: 'a\ud800' }, /^the Idempotency-Key is not well-formed Unicode/],
      ['top_up', { credits: 1, 'cre\u0000dits': 1, idempotency_key: 'k' }, /^body has a property name that/],
      ['publish_artifact', { title: 'a\u0000', content, idempotency_key: 'k2' }, /^body\/title contains the NUL/],
      ['search_artifacts', { topic: '\u0000' }, /^query\/topic contains the NUL character/],
      ['get_trust', { subject: 'principal:\ud800' }, /^path\/subject is not well-formed Unicode/],
    ];
    for (const [name, args, where] of cases) {
      const r = await call(name, args);
      assert.equal(r.isError, true, name);
      assertRefused(r, where, `${name} ${JSON.stringify(args)}`);
    }
    assert.deepEqual(await snapshot(), before);
    await projectionServes('text-mcp-after');
  });

  test('[SPINE-DEPTH] 4,000 levels of arrays in a tool argument: isError 422, nothing changed', async () => {
    const before = await snapshot();
    const cases: [string, Record<string, unknown>][] = [
      ['purchase_artifact', { listing_id: listingId, formats: nested(4000), idempotency_key: 'd1' }],
      ['publish_artifact', { title: 't', content, topics: nested(4000, 'x'), idempotency_key: 'd2' }],
      ['search_artifacts', { topic: nested(4000, 'x') }],
    ];
    for (const [name, args] of cases) {
      const r = await call(name, args);
      assert.equal(r.isError, true, name);
      assertRefused(r, /nested deeper than 32 levels$/, name);
    }
    assert.deepEqual(await snapshot(), before);
  });
});
