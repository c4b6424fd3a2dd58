// The same cases through REST and through MCP, compared outcome by outcome: the status the pipeline decided (the
// HTTP status over REST, `_meta["assay/status"]` over MCP) and the body (the REST body, the tool's structured
// content). Both faces run one pipeline, so they must agree to the byte, refusals included.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isTypedError } from '../support/http.ts';
import { connectMcp, type McpConnection, outcome } from '../support/mcp.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let agent: Agent;
let mcp: McpConnection;

before(async () => {
  sys = await startSystem();
  agent = await sys.register();
  mcp = await connectMcp(sys.baseUrl, agent.token);
});
after(async () => {
  await mcp.client.close();
  await sys.stop();
});

interface Outcome {
  status: number;
  body: unknown;
  replayed: boolean;
}

async function viaRest(
  method: 'GET' | 'POST',
  path: string,
  o: { token?: string; body?: unknown; key?: string } = {},
): Promise<Outcome> {
  const r = await sys.call(method, path, { token: o.token ?? agent.token, body: o.body, key: o.key });
  return { status: r.status, body: r.body, replayed: r.headers.get('idempotent-replayed') === 'true' };
}

async function viaMcp(name: string, args: Record<string, unknown>, connection = mcp): Promise<Outcome> {
  const { status, body, replayed } = outcome(await connection.client.callTool({ name, arguments: args }));
  return { status, body, replayed };
}

const balance = async () => (await viaRest('GET', '/v1/balance')).body as { balance_cents: number };

describe('refusals and successes agree', () => {
  const topUpBodies: [string, unknown][] = [
    ['credits 0', { credits: 0 }],
    ['credits 1.5', { credits: 1.5 }],
    ['credits a string', { credits: '3' }],
    ['an extra property', { credits: 1, extra: true }],
    ['no credits', {}],
  ];
  for (const [name, body] of topUpBodies) {
    test(`[MCP-PARITY] top_up with ${name}: 422 validation_failed with the same message`, async () => {
      const before = await balance();
      const rest = await viaRest('POST', '/v1/topups', { body, key: `p-invalid-rest-${name}` });
      const tool = await viaMcp('top_up', { ...(body as object), idempotency_key: `p-invalid-mcp-${name}` });
      assert.equal(rest.status, 422);
      assert.ok(isTypedError(rest.body, 'validation_failed'));
      assert.deepEqual(tool, rest);
      assert.deepEqual(await balance(), before);
    });
  }

  test('[MCP-PARITY] a missing key and a 201-character key are refused alike', async () => {
    const missingRest = await viaRest('POST', '/v1/topups', { body: { credits: 1 } });
    const missingMcp = await viaMcp('top_up', { credits: 1 });
    assert.equal(missingRest.status, 422);
    assert.deepEqual(missingMcp, missingRest);
    const long = 'x'.repeat(201);
    const longRest = await viaRest('POST', '/v1/topups', { body: { credits: 1 }, key: long });
    const longMcp = await viaMcp('top_up', { credits: 1, idempotency_key: long });
    assert.equal(longRest.status, 422);
    assert.deepEqual(longMcp, longRest);
  });

  test('[MCP-PARITY] a bad query (limit 0, an unknown parameter) gets the same 422', async () => {
    for (const [query, args] of [
      ['limit=0', { limit: 0 }],
      ['color=red', { color: 'red' }],
    ] as const) {
      const rest = await viaRest('GET', `/v1/ledger?${query}`);
      const tool = await viaMcp('get_ledger', args);
      assert.equal(rest.status, 422, query);
      assert.ok(isTypedError(rest.body, 'validation_failed'));
      assert.deepEqual(tool, rest, query);
    }
  });

  test('[MCP-PARITY] successes: same status and body for top_up, get_balance and get_ledger', async () => {
    const rest = await viaRest('POST', '/v1/topups', { body: { credits: 2 }, key: 'p-ok-rest' });
    const tool = await viaMcp('top_up', { credits: 2, idempotency_key: 'p-ok-mcp' });
    assert.equal(rest.status, 201);
    assert.deepEqual(tool, rest);
    assert.deepEqual(await viaMcp('get_balance', {}), await viaRest('GET', '/v1/balance'));
    const restLedger = await viaRest('GET', '/v1/ledger?limit=2');
    assert.deepEqual(await viaMcp('get_ledger', { limit: 2 }), restLedger);
    const cursor = (restLedger.body as { next_cursor: string }).next_cursor;
    assert.ok(cursor);
    assert.deepEqual(
      await viaMcp('get_ledger', { limit: 2, cursor }),
      await viaRest('GET', `/v1/ledger?limit=2&cursor=${encodeURIComponent(cursor)}`),
    );
  });

  test('[MCP-PARITY] replay and idempotency_conflict: same statuses and bodies on each face', async () => {
    const first = await viaRest('POST', '/v1/topups', { body: { credits: 3 }, key: 'p-rest-replay' });
    const replay = await viaRest('POST', '/v1/topups', { body: { credits: 3 }, key: 'p-rest-replay' });
    const conflict = await viaRest('POST', '/v1/topups', { body: { credits: 4 }, key: 'p-rest-replay' });
    const toolFirst = await viaMcp('top_up', { credits: 3, idempotency_key: 'p-mcp-replay' });
    const toolReplay = await viaMcp('top_up', { credits: 3, idempotency_key: 'p-mcp-replay' });
    const toolConflict = await viaMcp('top_up', { credits: 4, idempotency_key: 'p-mcp-replay' });
    assert.deepEqual([first.status, replay.status, conflict.status], [201, 201, 422]);
    assert.deepEqual([first.replayed, replay.replayed], [false, true]);
    assert.ok(isTypedError(conflict.body, 'idempotency_conflict'));
    assert.deepEqual([toolFirst, toolReplay, toolConflict], [first, replay, conflict]);
  });

  test('[MCP-PARITY] a token without the scope: the same 403 forbidden, and scope beats validation on both', async () => {
    const token = await mintToken(sys.config, { principalId: agent.principalId, scopes: ['read:artifact'] });
    const narrow = await connectMcp(sys.baseUrl, token);
    const rest = await viaRest('POST', '/v1/topups', { token, body: { credits: 'many' }, key: 'p-scope' });
    const tool = await viaMcp('top_up', { credits: 'many', idempotency_key: 'p-scope' }, narrow);
    assert.equal(rest.status, 403);
    assert.ok(isTypedError(rest.body, 'forbidden'));
    assert.deepEqual(tool, rest);
    await narrow.client.close();
  });
});

describe('one idempotency record for both faces', () => {
  test('[MCP-IDEM-SHARED] a key used over REST replays over MCP, and the other way round; credited once each', async () => {
    const before = (await balance()).balance_cents;
    const rest = await viaRest('POST', '/v1/topups', { body: { credits: 6 }, key: 'shared-rest-first' });
    const tool = await viaMcp('top_up', { credits: 6, idempotency_key: 'shared-rest-first' });
    assert.equal(rest.status, 201);
    assert.deepEqual(tool, { ...rest, replayed: true });

    const toolFirst = await viaMcp('top_up', { credits: 8, idempotency_key: 'shared-mcp-first' });
    const restAfter = await viaRest('POST', '/v1/topups', { body: { credits: 8 }, key: 'shared-mcp-first' });
    assert.equal(toolFirst.status, 201);
    assert.deepEqual(restAfter, { ...toolFirst, replayed: true });

    const crossConflict = await viaMcp('top_up', { credits: 7, idempotency_key: 'shared-rest-first' });
    assert.equal(crossConflict.status, 422);
    assert.ok(isTypedError(crossConflict.body, 'idempotency_conflict'));
    assert.equal((await balance()).balance_cents, before + 600 + 800);
  });
});
