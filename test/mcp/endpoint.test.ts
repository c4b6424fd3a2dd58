// The HTTP face of the MCP endpoint with raw requests, for everything a conforming client never does: missing and
// bad tokens, foreign origins, wrong session headers, other principals' sessions, oversized bodies, and the limits.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { scopes } from '../../contracts/index.ts';
import { isTypedError } from '../support/http.ts';
import { initializeMessage, openRawSession, rawMcp, rawToolCall } from '../support/mcp.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let agent: Agent;
const sessionsMax = 3;

before(async () => {
  sys = await startSystem({
    ASSAY_BODY_BYTES_MAX: '4096',
    ASSAY_MCP_ALLOWED_ORIGINS: 'https://app.example.com',
    ASSAY_MCP_SESSIONS_PER_PRINCIPAL_MAX: String(sessionsMax),
    ASSAY_MCP_SSE_STREAMS_MAX: '2',
  });
  agent = await sys.register();
});
after(async () => {
  await sys.stop();
});

const listTools = { jsonrpc: '2.0', id: 3, method: 'tools/list' };

describe('authentication', () => {
  test('[MCP-AUTH] no token, a malformed, a forged or an expired token: 401 typed error with WWW-Authenticate', async () => {
    const [head, payload, sig] = agent.token.split('.');
    const expired = await mintToken(sys.config, { ttlSeconds: 60, issuedAtMs: Date.now() - 3_600_000 });
    const cases: [string, string | undefined, boolean][] = [
      ['none', undefined, false],
      ['not a JWT', 'not-a-jwt', true],
      ['bad signature', `${head}.${payload}.${sig!.slice(0, -4)}AAAA`, true],
      ['expired', expired, true],
    ];
    for (const [name, token, invalid] of cases) {
      for (const [method, path] of [
        ['POST', '/mcp'],
        ['POST', '/'],
        ['GET', '/mcp'],
        ['DELETE', '/mcp'],
      ]) {
        const r = await rawMcp(sys.baseUrl, {
          method,
          path,
          ...(token ? { token } : {}),
          ...(method === 'POST' ? { body: initializeMessage(LATEST_PROTOCOL_VERSION) } : {}),
        });
        const what = `${name}: ${method} ${path}`;
        assert.equal(r.status, 401, what);
        assert.ok(isTypedError(r.body, 'unauthorized'), `${what}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.remediation, 'authenticate');
        assert.equal(r.body.jsonrpc, undefined, 'not a JSON-RPC envelope');
        const challenge = r.headers.get('www-authenticate') ?? '';
        assert.ok(
          challenge.startsWith(`Bearer resource_metadata="${sys.baseUrl}/.well-known/oauth-protected-resource"`),
          challenge,
        );
        assert.equal(challenge.includes('error="invalid_token"'), invalid, what);
      }
    }
  });

  test('[MCP-AUTH] a token whose scopes open no tool gets 403 forbidden with an insufficient_scope challenge', async () => {
    // An empty scope list opens nothing, nor does a scope no tool asks for.
    for (const scopes of [[], ['offline_access']]) {
      const token = await mintToken(sys.config, { scopes });
      const r = await rawMcp(sys.baseUrl, { token, body: initializeMessage(LATEST_PROTOCOL_VERSION) });
      assert.equal(r.status, 403, JSON.stringify(scopes));
      assert.ok(isTypedError(r.body, 'forbidden'));
      const challenge = r.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /error="insufficient_scope"/);
      assert.match(challenge, /scope="[^"]*purchase[^"]*"/);
      assert.match(challenge, /resource_metadata="/);
    }
  });

  test('[MCP-RESOURCE-METADATA] the protected-resource metadata names the base URL, header bearer tokens and the scopes', async () => {
    const r = await sys.call('GET', '/.well-known/oauth-protected-resource');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      resource: sys.baseUrl,
      authorization_servers: [sys.baseUrl],
      bearer_methods_supported: ['header'],
      scopes_supported: [...scopes],

      resource_name: 'Assay agent API',
    });
  });
});

describe('origin', () => {
  test('[MCP-ORIGIN] a foreign Origin is refused with 403 and the typed error, before authentication', async () => {
    for (const origin of ['http://evil.example', 'null', 'https://app.example.com.evil.example']) {
      for (const token of [agent.token, undefined]) {
        const r = await rawMcp(sys.baseUrl, {
          ...(token ? { token } : {}),
          headers: { origin },
          body: initializeMessage(LATEST_PROTOCOL_VERSION),
        });
        assert.equal(r.status, 403, origin);
        assert.ok(isTypedError(r.body, 'forbidden'), JSON.stringify(r.body));
        assert.equal(r.headers.get('mcp-session-id'), null);
      }
    }
  });

  test('[MCP-ORIGIN] the base URL origin, a listed origin and no Origin at all are served', async () => {
    const cases: Record<string, string>[] = [
      { origin: new URL(sys.baseUrl).origin },
      { origin: 'https://app.example.com' },
      {},
    ];
    for (const headers of cases) {
      const r = await rawMcp(sys.baseUrl, { token: agent.token, headers, body: initializeMessage('2025-06-18') });
      assert.equal(r.status, 200, JSON.stringify(headers));
      assert.ok(r.headers.get('mcp-session-id'));
      await rawMcp(sys.baseUrl, {
        method: 'DELETE',
        token: agent.token,
        headers,
        sessionId: r.headers.get('mcp-session-id')!,
      });
    }
  });
});

describe('sessions', () => {
  test('[MCP-SESSIONS] without Mcp-Session-Id: 400; an unknown id: 404; both typed', async () => {
    const none = await rawMcp(sys.baseUrl, { token: agent.token, body: listTools });
    assert.equal(none.status, 400);
    assert.ok(isTypedError(none.body, 'validation_failed'));
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-session', 'x'.repeat(500)]) {
      const unknown = await rawMcp(sys.baseUrl, { token: agent.token, sessionId: id, body: listTools });
      assert.equal(unknown.status, 404, id.slice(0, 20));
      assert.ok(isTypedError(unknown.body, 'not_found'));
      assert.ok(unknown.body.message.length < 300, 'a long header is not echoed whole');
    }
  });

  test("[MCP-SESSIONS] another principal's token on a session gets 404; the owner keeps using it", async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token);
    const other = await sys.register();
    for (const method of ['POST', 'GET', 'DELETE']) {
      const r = await rawMcp(sys.baseUrl, {
        method,
        token: other.token,
        sessionId,
        ...(method === 'POST' ? { body: listTools } : {}),
      });
      assert.equal(r.status, 404, method);
      assert.ok(isTypedError(r.body, 'not_found'));
    }
    const owner = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' });
    assert.equal(owner.status, 200);
    assert.equal(owner.body.result.structuredContent.currency, 'credit');
    // Another agent of the same principal may use it: sessions are bound to the principal.
    const sibling = await mintToken(sys.config, { principalId: agent.principalId });
    const r = await rawToolCall(sys.baseUrl, { token: sibling, sessionId, name: 'get_balance' });
    assert.equal(r.status, 200);
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
  });

  test('[MCP-SESSIONS] an MCP-Protocol-Version other than the negotiated one gets 400; none at all is accepted', async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token, '2025-06-18');
    for (const version of ['2025-11-25', '1999-01-01']) {
      const r = await rawMcp(sys.baseUrl, { token: agent.token, sessionId, protocolVersion: version, body: listTools });
      assert.equal(r.status, 400, version);
      assert.ok(isTypedError(r.body, 'validation_failed'));
    }
    const bare = await rawMcp(sys.baseUrl, { token: agent.token, sessionId, body: listTools });
    assert.equal(bare.status, 200);
    assert.ok(bare.body.result.tools.length > 0);
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
  });

  test('[MCP-SESSIONS] DELETE ends the session: every later request on it gets 404', async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token);
    const end = await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
    assert.equal(end.status, 200);
    for (const method of ['POST', 'GET', 'DELETE']) {
      const r = await rawMcp(sys.baseUrl, {
        method,
        token: agent.token,
        sessionId,
        ...(method === 'POST' ? { body: listTools } : {}),
      });
      assert.equal(r.status, 404, method);
      assert.ok(isTypedError(r.body, 'not_found'));
    }
  });
});

describe('Streamable HTTP negotiation', () => {
  test("[MCP-ENDPOINT] Accept, Content-Type and malformed JSON-RPC are refused in the transport's JSON-RPC form", async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token);
    const cases: [string, Parameters<typeof rawMcp>[1], number, number][] = [
      ['no text/event-stream in Accept', { headers: { accept: 'application/json' }, body: listTools }, 406, -32000],
      ['a text body', { headers: { 'content-type': 'text/plain' }, body: listTools }, 415, -32000],
      ['not a JSON-RPC message', { body: { hello: 'world' } }, 400, -32700],
      ['a batch over 100', { body: Array.from({ length: 101 }, () => ({ jsonrpc: '2.0', method: 'n' })) }, 400, -32600],
    ];
    for (const [name, o, status, code] of cases) {
      const r = await rawMcp(sys.baseUrl, { token: agent.token, sessionId, ...o });
      assert.equal(r.status, status, name);
      assert.deepEqual(r.body, { jsonrpc: '2.0', error: { code, message: r.body.error.message }, id: null }, name);
    }
    const initInBatch = await rawMcp(sys.baseUrl, {
      token: agent.token,
      body: [initializeMessage('2025-06-18'), listTools],
    });
    assert.equal(initInBatch.status, 400);
    assert.equal(initInBatch.body.error.code, -32600);
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
  });

  test('[MCP-ENDPOINT] a batch is answered with an array in request order; notifications alone get 202', async () => {
    const sessionId = await openRawSession(sys.baseUrl, agent.token, '2025-03-26');
    const batch = await rawMcp(sys.baseUrl, {
      token: agent.token,
      sessionId,
      body: [
        { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'get_balance', arguments: {} } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
      ],
    });
    assert.equal(batch.status, 200);
    assert.deepEqual(
      batch.body.map((m: { id: string }) => m.id),
      ['b', 'a'],
    );
    assert.equal(batch.body[0].result.structuredContent.currency, 'credit');
    assert.deepEqual(batch.body[1].result, {});
    const note = await rawMcp(sys.baseUrl, {
      token: agent.token,
      sessionId,
      body: [{ jsonrpc: '2.0', method: 'notifications/initialized' }],
    });
    assert.equal(note.status, 202);
    assert.equal(note.body, null);
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
  });
});

describe('protocol versions', () => {
  test('[MCP-VERSIONS] a 2025-06-18 client and a newest-revision client each get their revision and are served', async () => {
    for (const version of ['2025-06-18', LATEST_PROTOCOL_VERSION, '2025-03-26']) {
      const init = await rawMcp(sys.baseUrl, { token: agent.token, body: initializeMessage(version) });
      assert.equal(init.status, 200);
      assert.equal(init.body.result.protocolVersion, version);
      assert.deepEqual(init.body.result.capabilities, {
        tools: { listChanged: false },
        resources: { subscribe: true, listChanged: false },
      });
      const sessionId = init.headers.get('mcp-session-id')!;
      const r = await rawToolCall(sys.baseUrl, {
        token: agent.token,
        sessionId,
        name: 'get_balance',
        protocolVersion: version,
      });
      assert.equal(r.status, 200, version);
      assert.deepEqual(Object.keys(r.body.result.structuredContent).sort(), ['balance_cents', 'currency']);
      await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId, protocolVersion: version });
    }
  });

  test('[MCP-VERSIONS] an unknown requested revision is answered with the newest one, and the session keeps it', async () => {
    const init = await rawMcp(sys.baseUrl, { token: agent.token, body: initializeMessage('2030-01-01') });
    assert.equal(init.status, 200);
    assert.equal(init.body.result.protocolVersion, LATEST_PROTOCOL_VERSION);
    const sessionId = init.headers.get('mcp-session-id')!;
    const r = await rawMcp(sys.baseUrl, {
      token: agent.token,
      sessionId,
      protocolVersion: LATEST_PROTOCOL_VERSION,
      body: listTools,
    });
    assert.equal(r.status, 200);
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
  });
});

describe('limits', () => {
  test('[MCP-LIMITS] a body over the limit gets 413, malformed JSON 400, both the typed error', async () => {
    const large = await rawMcp(sys.baseUrl, {
      token: agent.token,
      rawBody: JSON.stringify({ ...initializeMessage('2025-06-18'), pad: 'x'.repeat(5000) }),
    });
    assert.equal(large.status, 413);
    assert.ok(isTypedError(large.body, 'validation_failed'));
    const malformed = await rawMcp(sys.baseUrl, { token: agent.token, rawBody: '{"jsonrpc": "2.0",' });
    assert.equal(malformed.status, 400);
    assert.ok(isTypedError(malformed.body, 'validation_failed'));
  });

  test('[MCP-LIMITS] a principal holds at most ASSAY_MCP_SESSIONS_PER_PRINCIPAL_MAX sessions: 429 beyond', async () => {
    const owner = await sys.register();
    const ids: string[] = [];
    for (let i = 0; i < sessionsMax; i++) ids.push(await openRawSession(sys.baseUrl, owner.token));
    const refused = await rawMcp(sys.baseUrl, { token: owner.token, body: initializeMessage('2025-06-18') });
    assert.equal(refused.status, 429);
    assert.ok(isTypedError(refused.body, 'rate_limited'));
    assert.equal(refused.headers.get('mcp-session-id'), null);
    assert.ok(refused.headers.get('retry-after'));
    // Other principals are not affected, and ending one session makes room.
    assert.ok(await openRawSession(sys.baseUrl, agent.token));
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: owner.token, sessionId: ids[0]! });
    assert.ok(await openRawSession(sys.baseUrl, owner.token));
  });
});

describe('event stream', () => {
  async function openStream(token: string, sessionId: string) {
    const controller = new AbortController();
    const res = await fetch(`${sys.baseUrl}/mcp`, {
      headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, accept: 'text/event-stream' },
      signal: controller.signal,
    });
    return { res, controller };
  }

  /** Read the stream until it ends; resolves with everything it carried. */
  async function untilEnd(res: Response): Promise<string> {
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) text += decoder.decode(chunk as Uint8Array);
    return text;
  }

  test('[MCP-ENDPOINT] GET /mcp opens the event stream of a session; DELETE of the session ends it', async () => {
    const agent = await sys.register();
    const sessionId = await openRawSession(sys.baseUrl, agent.token);
    const { res } = await openStream(agent.token, sessionId);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const ended = untilEnd(res);
    const end = await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId });
    assert.equal(end.status, 200);
    assert.match(await ended, /^: stream open/);
  });

  test('[MCP-LIMITS] event streams per gateway are bounded (503 beyond); a second GET of a session replaces its first', async () => {
    const agent = await sys.register();
    const a = await openRawSession(sys.baseUrl, agent.token);
    const b = await openRawSession(sys.baseUrl, agent.token);
    const other = await sys.register();
    const c = await openRawSession(sys.baseUrl, other.token);
    const first = await openStream(agent.token, a);
    const firstEnded = untilEnd(first.res);
    const second = await openStream(agent.token, b);
    assert.equal(second.res.status, 200);
    const refused = await openStream(other.token, c);
    assert.equal(refused.res.status, 503);
    assert.ok(isTypedError(await refused.res.json(), 'unavailable'));
    const again = await openStream(agent.token, a);
    assert.equal(again.res.status, 200, 'the same session takes its own slot over');
    await firstEnded;
    for (const s of [again, second]) s.controller.abort();
    for (const [token, id] of [
      [agent.token, a],
      [agent.token, b],
      [other.token, c],
    ] as const) {
      await rawMcp(sys.baseUrl, { method: 'DELETE', token, sessionId: id });
    }
  });
});
