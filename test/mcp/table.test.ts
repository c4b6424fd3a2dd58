// Tools come from the operation table: the boot-time check refuses rows that cannot become a sound tool, and a row
// that becomes available becomes a tool with no other change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Type from 'typebox';
import { assertOperationTable, type Operation, operations } from '../../contracts/index.ts';
import { toolsFromTable } from '../../gateway/index.ts';

const byId = (id: string): Operation => operations.find((op) => op.id === id)!;
const withRow = (id: string, change: Partial<Operation>) =>
  operations.map((op) => (op.id === id ? { ...op, ...change } : op));

test('[MCP-TABLE] the table as shipped passes the boot check', () => {
  assert.doesNotThrow(() => assertOperationTable(operations));
});

test('[MCP-TABLE] rows that cannot become sound tools fail the boot check', () => {
  const cases: [string, Operation[], RegExp][] = [
    ['a non-object output', withRow('getBalance', { output: Type.String() }), /output must be an object/],
    [
      'a body property named like a query parameter',
      withRow('getLedger', {
        method: 'POST',
        mutating: true,
        body: Type.Object({ limit: Type.Integer() }),
      }),
      /limit appears twice/,
    ],
    [
      'a body property named idempotency_key',
      withRow('topUp', { body: Type.Object({ idempotency_key: Type.String() }) }),
      /idempotency_key appears twice \(or is reserved\)/,
    ],
    ['a tool on a public row', withRow('healthz', { tool: 'health' }), /tools are twins of \/v1 operations/],
    ['a bad tool name', withRow('getBalance', { tool: 'get balance' }), /bad tool name/],
    ['a duplicate tool name', withRow('getLedger', { tool: 'get_balance' }), /duplicate tool/],
    [
      'the MCP endpoint elsewhere',
      withRow('mcpMessage', { path: '/v1/mcp', audience: 'public' }),
      /the MCP endpoint is \/mcp/,
    ],
  ];
  for (const [name, table, message] of cases) assert.throws(() => assertOperationTable(table), message, name);
});

test('[MCP-TABLE] [MCP-TOOLS] a row that becomes available becomes a tool, its schemas merged from the row', () => {
  // The subscription rows as they were before they were built, then as shipped.
  const earlier = operations.map((op) =>
    ['subscribeListing', 'getSubscriptions'].includes(op.id) ? { ...op, available: false } : op,
  );
  const before = toolsFromTable(earlier).map((t) => t.definition.name);
  assert.ok(!before.includes('subscribe_listing'));
  assert.ok(!before.includes('get_subscriptions'));
  const tools = toolsFromTable(operations);
  const subscribe = tools.find((t) => t.definition.name === 'subscribe_listing')!;
  assert.deepEqual(Object.keys(subscribe.definition.inputSchema.properties ?? {}).sort(), [
    'idempotency_key',
    'listing_id',
  ]);
  assert.deepEqual(subscribe.definition.inputSchema.required, ['listing_id', 'idempotency_key']);
  assert.equal(subscribe.definition.annotations?.readOnlyHint, false);
  const list = tools.find((t) => t.definition.name === 'get_subscriptions')!;
  assert.deepEqual(Object.keys(list.definition.inputSchema.properties ?? {}).sort(), ['cursor', 'limit', 'role']);
  const bundle = tools.find((t) => t.definition.name === 'get_compliance_bundle')!;
  assert.deepEqual(bundle.definition.inputSchema.required, ['order_id'], 'a path parameter is a required argument');
  assert.deepEqual(
    (bundle.definition.inputSchema.properties as any).order_id,
    JSON.parse(JSON.stringify(byId('getComplianceBundle').params.properties.order_id)),
  );
  const cancel = toolsFromTable(operations.map((op) => ({ ...op, available: true }))).find(
    (t) => t.definition.name === 'cancel_subscription',
  )!;
  assert.equal(cancel.definition.annotations?.destructiveHint, true);
  // Rows without a tool name (the event routes) never become tools, available or not.
  assert.equal(
    toolsFromTable(operations.map((op) => ({ ...op, available: true }))).length,
    operations.filter((op) => op.tool !== null).length,
  );
});
