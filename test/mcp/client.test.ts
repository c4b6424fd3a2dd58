// The acceptance path with the MCP SDK's own client over real HTTP: initialize, tools/list against the operation
// table, top_up twice with one key, get_balance, get_ledger, a refusal, DELETE, and the ended session refused.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import { mcpIdempotencyKeyArgument, operations } from '../../contracts/index.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome, rawMcp, rawToolCall } from '../support/mcp.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let agent: Agent;

before(async () => {
  sys = await startSystem();
  agent = await sys.register();
});
after(async () => {
  await sys.stop();
});

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema));
const balance = async () => (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents as number;

test('[MCP-TOOLS] tools/list through the SDK client is the table: names, input, output schemas and hints', async () => {
  const { client } = await connectMcp(sys.baseUrl, agent.token);
  // Exactly the built rows with a tool name, each input schema made of the row's own schemas.
  const { tools } = await client.listTools();
  const rows = operations.filter((op) => op.tool !== null && op.available);
  assert.deepEqual(
    tools.map((t) => t.name),
    rows.map((op) => op.tool),
  );
  assert.ok(
    ['top_up', 'get_balance', 'get_ledger'].every((n) => tools.some((t) => t.name === n)),
    'the spine tools are listed',
  );
  for (const op of rows) {
    const tool = tools.find((t) => t.name === op.tool)!;
    const expected: Record<string, unknown> = {
      ...plain(op.params).properties,
      ...plain(op.query).properties,
      ...(op.body ? plain(op.body).properties : {}),
    };
    const properties = { ...tool.inputSchema.properties } as Record<string, any>;
    if (op.mutating) {
      assert.equal(properties[mcpIdempotencyKeyArgument].type, 'string');
      assert.equal(properties[mcpIdempotencyKeyArgument].maxLength, 200);
      assert.ok(tool.inputSchema.required?.includes(mcpIdempotencyKeyArgument), `${op.tool} requires the key`);
      delete properties[mcpIdempotencyKeyArgument];
    }
    assert.deepEqual(properties, expected, `${op.tool} input schema`);
    const required = [
      ...(plain(op.params).required ?? []),
      ...(plain(op.query).required ?? []),
      ...(op.body ? (plain(op.body).required ?? []) : []),
    ];
    assert.deepEqual(
      (tool.inputSchema.required ?? []).filter((n) => n !== mcpIdempotencyKeyArgument),
      required,
    );
    assert.deepEqual((tool.outputSchema as any)?.anyOf?.[0], plain(op.output), `${op.tool} output schema`);
    assert.equal(tool.annotations?.readOnlyHint, !op.mutating);
  }
  await client.close();
});

test('[MCP-ENDPOINT] the SDK client: initialize, top up twice with one key, balance, ledger, a refusal, DELETE, then 404', async () => {
  const { client, transport } = await connectMcp(sys.baseUrl, agent.token);
  assert.match(transport.sessionId ?? '', /^[0-9a-f-]{36}$/, 'initialize returned an Mcp-Session-Id');
  assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
  assert.equal(client.getServerVersion()?.name, 'assay');
  assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: false });
  // Listing first makes the client check every structured result against the tool's output schema from here on.
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'top_up'));

  // top_up twice with one key: credited once, the second answer is the replay of the first.
  const before = await balance();
  const first = await client.callTool({ name: 'top_up', arguments: { credits: 5, idempotency_key: 'sdk-1' } });
  const second = await client.callTool({ name: 'top_up', arguments: { credits: 5, idempotency_key: 'sdk-1' } });
  assert.deepEqual(first.structuredContent, { status: 'credited', amount_cents: 500, sandbox: true });
  assert.deepEqual(JSON.parse((first.content as any)[0].text), first.structuredContent, 'the text block is the JSON');
  assert.equal(first.isError, undefined);
  assert.equal(outcome(first).status, 201);
  assert.deepEqual(second.structuredContent, first.structuredContent);
  assert.equal(outcome(second).replayed, true);
  assert.equal(await balance(), before + 500, 'credited once');

  const balanceResult = await client.callTool({ name: 'get_balance', arguments: {} });
  assert.deepEqual(balanceResult.structuredContent, { balance_cents: before + 500, currency: 'credit' });

  const ledger = await client.callTool({ name: 'get_ledger', arguments: { limit: 2 } });
  const page = ledger.structuredContent as { items: any[]; next_cursor: string | null };
  assert.equal(page.items.length, 2);
  assert.equal(page.items[0].type, 'topup_credited');
  assert.equal(page.items[0].amount_cents, 500);
  assert.equal(page.items[1].type, 'sandbox_grant');

  // A refusal is a tool result with isError and the typed error object, not a protocol error.
  const conflict = await client.callTool({ name: 'top_up', arguments: { credits: 6, idempotency_key: 'sdk-1' } });
  assert.equal(conflict.isError, true);
  assert.ok(isTypedError(conflict.structuredContent, 'idempotency_conflict'), JSON.stringify(conflict));
  assert.deepEqual(JSON.parse((conflict.content as any)[0].text), conflict.structuredContent);
  assert.equal(outcome(conflict).status, 422);

  // DELETE ends the session; the same session id is then refused with 404 (the SDK resumes it on a new transport).
  const sessionId = transport.sessionId!;
  await transport.terminateSession();
  await client.close();
  const resumed = await connectMcp(sys.baseUrl, agent.token, { sessionId });
  await assert.rejects(
    () => resumed.client.callTool({ name: 'get_balance', arguments: {} }),
    (err: unknown) => err instanceof StreamableHTTPError && err.code === 404 && /not_found/.test(err.message),
  );
  await resumed.client.close();
  const raw = await rawMcp(sys.baseUrl, {
    token: agent.token,
    sessionId,
    body: { jsonrpc: '2.0', id: 9, method: 'tools/list' },
  });
  assert.equal(raw.status, 404);
  assert.ok(isTypedError(raw.body, 'not_found'));
});

test('[MCP-RESULTS] a tool the token lacks the scope for is an isError result with forbidden', async () => {
  const token = await mintToken(sys.config, { principalId: agent.principalId, scopes: ['read:artifact'] });
  const { client } = await connectMcp(sys.baseUrl, token);
  const before = await balance();
  const r = await client.callTool({ name: 'top_up', arguments: { credits: 1, idempotency_key: 'scope-1' } });
  assert.equal(r.isError, true);
  assert.ok(isTypedError(r.structuredContent, 'forbidden'));
  assert.equal((r.structuredContent as any).remediation, 'request_scope');
  assert.equal(outcome(r).status, 403);
  const allowed = await client.callTool({ name: 'get_balance', arguments: {} });
  assert.equal(allowed.isError, undefined);
  assert.equal(await balance(), before);
  await client.close();
});

test('[MCP-ENDPOINT] the root URL serves the same endpoint as /mcp (POST, GET and DELETE)', async () => {
  const { client, transport } = await connectMcp(sys.baseUrl, agent.token, { path: '/' });
  const sessionId = transport.sessionId!;
  assert.ok(sessionId);
  const r = await client.callTool({ name: 'get_balance', arguments: {} });
  assert.equal((r.structuredContent as any).currency, 'credit');
  // GET opens the session's event stream: 200, text/event-stream, and the stream's first bytes.
  const stop = new AbortController();
  const stream = await fetch(`${sys.baseUrl}/`, {
    headers: {
      accept: 'text/event-stream',
      authorization: `Bearer ${agent.token}`,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': transport.protocolVersion ?? '2025-06-18',
    },
    signal: stop.signal,
  });
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
  const first = await stream.body!.getReader().read();
  assert.match(new TextDecoder().decode(first.value), /^: stream open/);
  stop.abort();
  // DELETE ends the session: 200, and the session is gone for the next request.
  const ended = await rawMcp(sys.baseUrl, { method: 'DELETE', path: '/', token: agent.token, sessionId });
  assert.equal(ended.status, 200);
  const after = await rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' });
  assert.equal(after.status, 404);
  await client.close();
});

test('[MCP-RESULTS] an unknown tool and malformed arguments are JSON-RPC protocol errors', async () => {
  const { client } = await connectMcp(sys.baseUrl, agent.token);
  await assert.rejects(
    () => client.callTool({ name: 'redeliver_event', arguments: {} }),

    (err: any) => err.code === -32602 && /Unknown tool/.test(err.message),
    'a row without an MCP twin is not a tool',
  );
  await assert.rejects(
    () =>
      client.request(
        { method: 'tools/call', params: { name: 'get_balance', arguments: 'x' as unknown as Record<string, unknown> } },
        CallToolResultSchema,
      ),
    // The SDK rejects a non-object `arguments` while parsing the request, before any tool code runs; it reports
    // that as -32603 rather than -32602. Either way it is a JSON-RPC error, not a tool result.
    (err: unknown) => err instanceof McpError && [-32602, -32603].includes(err.code),
  );
  await client.close();
});
