// The MCP Inspector's CLI (a devDependency, pinned; its own MCP client, not the SDK build the other suites use)
// talks to the endpoint headless: it lists the tools and calls one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { operations } from '../../contracts/index.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';

const run = promisify(execFile);
const inspector = new URL('../../node_modules/.bin/inspector', import.meta.url).pathname;

let sys: TestSystem;
let agent: Agent;

before(async () => {
  sys = await startSystem();
  agent = await sys.register();
});
after(async () => {
  await sys.stop();
});

async function inspect(...args: string[]): Promise<any> {
  const { stdout } = await run(
    inspector,
    ['--cli', `${sys.baseUrl}/mcp`, ...args, '--header', `Authorization: Bearer ${agent.token}`],
    { timeout: 60_000, maxBuffer: 1 << 22 },
  );
  return JSON.parse(stdout);
}

test('[MCP-INSPECTOR] inspector --cli --method tools/list lists exactly the tools of the table', async () => {
  const listed = await inspect('--method', 'tools/list');
  assert.deepEqual(
    listed.tools.map((t: { name: string }) => t.name),
    operations.filter((op) => op.tool !== null && op.available).map((op) => op.tool),
  );
});

test('[MCP-INSPECTOR] inspector --cli --method tools/call tops up once per key', async () => {
  const before = (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents;
  const args = ['--method', 'tools/call', '--tool-name', 'top_up', '--tool-arg', 'credits=2'];
  const first = await inspect(...args, '--tool-arg', 'idempotency_key=inspector-1');
  const again = await inspect(...args, '--tool-arg', 'idempotency_key=inspector-1');
  assert.deepEqual(first.structuredContent, { status: 'credited', amount_cents: 200, sandbox: true });
  assert.deepEqual(again.structuredContent, first.structuredContent);
  const after = (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents;
  assert.equal(after, before + 200);
});
