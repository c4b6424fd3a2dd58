// NATS going away under the MCP endpoint: the session store is on NATS, so requests get the typed 503 (retryable)
// rather than hanging or failing as unknown sessions, and the sessions are all there again when NATS is back.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { isTypedError } from '../support/http.ts';
import { openRawSession, rawMcp, rawToolCall } from '../support/mcp.ts';
import { startNatsServer } from '../support/processes.ts';
import { eventually, startSystem } from '../support/system.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

test('[MCP-OUTAGE] with NATS stopped tools/call, GET and DELETE get 503 unavailable; the session serves again after', async () => {
  const nats = await startNatsServer();
  cleanups.push(() => nats.cleanup());
  const sys = await startSystem({ NATS_URL: nats.url, ASSAY_REQUEST_TIMEOUT_MS: '2000' });
  cleanups.push(() => sys.stop());
  const agent = await sys.register();
  const sessionId = await openRawSession(sys.baseUrl, agent.token);
  assert.equal((await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' })).status, 200);

  await nats.stop();
  const during = [
    await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' }),
    await rawMcp(sys.baseUrl, { method: 'GET', token: agent.token, sessionId }),
    await rawMcp(sys.baseUrl, { method: 'DELETE', token: agent.token, sessionId }),
  ];
  for (const r of during) {
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.ok(isTypedError(r.body, 'unavailable'));
    assert.equal(r.body.retryable, true);
    assert.equal(r.headers.get('retry-after'), '1');
  }

  await nats.start();
  const r = await eventually(
    'the session to serve again',
    async () => {
      const reply = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' });
      return reply.status === 200 ? reply : undefined;
    },
    30_000,
  );
  assert.equal(r.body.result.structuredContent.balance_cents, agent.balanceCents);
});
