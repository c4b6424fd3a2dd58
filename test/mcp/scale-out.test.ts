// Two gateway processes behind one public URL (as behind a load balancer), one namespace and database: an MCP session
// opened through one serves calls through the other, survives the first one's exit, and ends everywhere at once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome, rawMcp } from '../support/mcp.ts';
import { type ExtraGateway, startExtraGateway } from '../support/processes.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let agent: Agent;
const gateways: ExtraGateway[] = [];

before(async () => {
  sys = await startSystem();
  agent = await sys.register();
  for (let i = 0; i < 2; i++) {
    // Same ASSAY_BASE_URL (the public URL tokens are issued for), own listening port.
    gateways.push(await startExtraGateway(sys.env));
  }
});
after(async () => {
  for (const g of gateways) g.p.child.kill('SIGKILL');
  await sys.stop();
});

const balance = async () => (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents as number;

test('[MCP-SCALE-OUT] a session opened on gateway 1 serves tool calls on gateway 2, replays included, and ends on both', async () => {
  const [g1, g2] = gateways as [(typeof gateways)[0], (typeof gateways)[0]];
  const one = await connectMcp(g1.url, agent.token);
  const sessionId = one.transport.sessionId!;
  const two = await connectMcp(g2.url, agent.token, { sessionId, protocolVersion: one.transport.protocolVersion! });
  assert.equal(two.transport.sessionId, sessionId, 'no new initialize on gateway 2');

  const before = await balance();
  const first = outcome(
    await two.client.callTool({ name: 'top_up', arguments: { credits: 4, idempotency_key: 'so-1' } }),
  );
  const again = outcome(
    await one.client.callTool({ name: 'top_up', arguments: { credits: 4, idempotency_key: 'so-1' } }),
  );
  assert.equal(first.status, 201);
  assert.deepEqual(again, { ...first, replayed: true });
  assert.equal(await balance(), before + 400);
  const listed = await two.client.listTools();
  assert.ok(listed.tools.some((t) => t.name === 'get_ledger'));

  // The event stream of the session, held by gateway 1, while the session is ended through gateway 2.
  const stream = await fetch(`${g1.url}/mcp`, {
    headers: { authorization: `Bearer ${agent.token}`, 'mcp-session-id': sessionId, accept: 'text/event-stream' },
  });
  assert.equal(stream.status, 200);
  const streamEnded = (async () => {
    for await (const _ of stream.body!) {
      // drain until gateway 1 notices the session is gone and ends the stream
    }
    return true;
  })();
  const ended = await rawMcp(g2.url, { method: 'DELETE', token: agent.token, sessionId });
  assert.equal(ended.status, 200);
  await assert.rejects(
    () => one.client.callTool({ name: 'get_balance', arguments: {} }),
    (err: unknown) => err instanceof StreamableHTTPError && err.code === 404,
  );
  const onTwo = await rawMcp(g2.url, {
    token: agent.token,
    sessionId,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  assert.equal(onTwo.status, 404);
  assert.ok(isTypedError(onTwo.body, 'not_found'));
  assert.equal(
    await eventually(
      'gateway 1 ends the stream of the ended session',
      async () => (await streamEnded) || undefined,
      20_000,
    ),
    true,
  );
  await one.client.close();
  await two.client.close();
});

test('[MCP-SCALE-OUT] a session outlives the gateway process that opened it', async () => {
  const [g1, g2] = gateways as [(typeof gateways)[0], (typeof gateways)[0]];
  const one = await connectMcp(g1.url, agent.token);
  const sessionId = one.transport.sessionId!;
  await one.client.close();
  g1.p.child.kill('SIGTERM');
  assert.equal(await g1.p.exited, 0);
  const two = await connectMcp(g2.url, agent.token, { sessionId });
  const r = await two.client.callTool({ name: 'get_balance', arguments: {} });
  assert.equal((r.structuredContent as any).balance_cents, await balance());
  await two.transport.terminateSession();
  await two.client.close();
});
