// The in-flight limit against clients that stop half way, over raw sockets against real systems: an abandoned upload
// gives its slot back when its client goes away, a body that drips is cut off by the read timeout, and neither
// holds up a graceful stop.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isTypedError } from '../support/http.ts';
import { RawConnection, rawRequest } from '../support/raw-http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

const inflightMax = 2;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function system(overrides: Record<string, string>): Promise<{ sys: TestSystem; agent: Agent }> {
  const sys = await startSystem({ ASSAY_INFLIGHT_MAX: String(inflightMax), ...overrides });
  cleanups.push(() => sys.stop());
  return { sys, agent: await sys.register() };
}

/** Headers of a top-up (REST) or a tools/call (MCP) announcing `length` bytes, and the first few of them. */
function upload(agent: Agent, kind: 'rest' | 'mcp', length = 1000): string {
  const headers: Record<string, string> = {
    authorization: `Bearer ${agent.token}`,
    'content-type': 'application/json',
    'idempotency-key': `upload-${Math.random()}`,
  };
  if (kind === 'mcp') headers.accept = 'application/json, text/event-stream';
  return rawRequest('POST', kind === 'rest' ? '/v1/topups' : '/mcp', {
    headers,
    contentLength: length,
    body: '{"credits"',
  });
}

const balance = async (sys: TestSystem, agent: Agent) => sys.call('GET', '/v1/balance', { token: agent.token });

/** Wait until the uploads hold every slot; then a normal call is refused as at capacity. */
async function atCapacity(sys: TestSystem, agent: Agent): Promise<void> {
  // A call racing the uploads could take a slot first, so wait on the gateway's own count (in this process).
  await eventually('the uploads to hold every slot', async () =>
    sys.running!.gateway!.inflight === inflightMax ? true : undefined,
  );
  const r = await balance(sys, agent);
  assert.equal(r.status, 503);
  assert.match(r.body.message, /at capacity/);
}

describe('abandoned uploads', () => {
  let sys: TestSystem;
  let agent: Agent;
  before(async () => {
    // A read timeout far beyond the test: only the clients going away can give the slots back.
    ({ sys, agent } = await system({ ASSAY_BODY_READ_TIMEOUT_MS: '600000', ASSAY_SHUTDOWN_GRACE_MS: '20000' }));
  });

  test('[SPINE-HTTP-ADMISSION] after more abandoned uploads than ASSAY_INFLIGHT_MAX, normal calls still succeed', async () => {
    const before = (await balance(sys, agent)).body.balance_cents;
    for (const kinds of [
      ['rest', 'rest'],
      ['rest', 'mcp'],
    ] as const) {
      const uploads = await Promise.all(kinds.map(() => RawConnection.open(sys.baseUrl)));
      for (const [i, c] of uploads.entries()) c.send(upload(agent, kinds[i]!));
      await atCapacity(sys, agent);
      for (const c of uploads) c.destroy();
      const r = await eventually('the slots to come back', async () => {
        const reply = await balance(sys, agent);
        return reply.status === 200 ? reply : undefined;
      });
      assert.equal(r.body.balance_cents, before, 'nothing was credited');
    }
  });

  test('[SPINE-HTTP-ADMISSION] a graceful stop is not held up by abandoned uploads', async () => {
    const uploads = await Promise.all([1, 2].map(() => RawConnection.open(sys.baseUrl)));
    for (const c of uploads) c.send(upload(agent, 'rest'));
    await atCapacity(sys, agent);
    for (const c of uploads) c.destroy();
    const started = Date.now();
    await sys.running!.gateway!.close();
    const elapsedMs = Date.now() - started;
    // The grace period is 20 s; a stop that waited for the lost slots would take all of it.
    assert.ok(elapsedMs < 5000, `the gateway stopped after ${elapsedMs} ms`);
  });
});

describe('bodies that do not arrive', () => {
  const timeoutMs = 1000;
  let sys: TestSystem;
  let agent: Agent;
  before(async () => {
    ({ sys, agent } = await system({ ASSAY_BODY_READ_TIMEOUT_MS: String(timeoutMs) }));
  });

  test('[SPINE-HTTP-BODY-TIMEOUT] a dripping or stalled body gets 400 at the read timeout, is disconnected, and frees its slot', async () => {
    const before = (await balance(sys, agent)).body.balance_cents;
    // One REST body that drips a byte every 100 ms, and one MCP body that never starts.
    const drip = await RawConnection.open(sys.baseUrl);
    const stall = await RawConnection.open(sys.baseUrl);
    const startedMs = Date.now();
    drip.send(upload(agent, 'rest'));
    stall.send(upload(agent, 'mcp').replace(/\{"credits"$/, ''));
    const dripping = setInterval(() => drip.send(' '), 100);
    try {
      await atCapacity(sys, agent);
      for (const c of [drip, stall]) {
        const r = await c.response({ timeoutMs: timeoutMs + 5000 });
        const elapsedMs = Date.now() - startedMs;
        assert.equal(r.status, 400);
        const body = JSON.parse(r.body.toString());
        assert.ok(isTypedError(body, 'validation_failed'));
        assert.equal(body.message, `the request body did not arrive within ${timeoutMs} ms`);
        // Not before the timeout, and about when it says (a loaded machine may add a little).
        assert.ok(elapsedMs >= timeoutMs - 50, `answered after ${elapsedMs} ms`);
        assert.ok(elapsedMs < timeoutMs + 3000, `answered after ${elapsedMs} ms`);
        await c.closed;
      }
    } finally {
      clearInterval(dripping);
    }
    // The slots were given back before the answers went out.
    const r = await balance(sys, agent);
    assert.equal(r.status, 200);
    assert.equal(r.body.balance_cents, before, 'nothing was credited');
  });
});
