// Rate limits and plans on real services: the Free plan's buckets refuse a burst with 429 rate_limited and
// Retry-After over REST and MCP, two gateway processes spend from one bucket, every agent response says what is
// left, and the operator command moves a principal to another plan.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerWithScopes } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome } from '../support/mcp.ts';
import { type ExtraGateway, startExtraGateway } from '../support/processes.ts';
import { type Agent, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let second: ExtraGateway;

// One agent's buckets, written out from docs/fleet.md (not read from contracts/plans.ts): each agent gets half of its
// principal's burst and rate, at least one token.
/** Free top-ups: the principal's 5 at 0.1 a second, so an agent's 2, one more every 20 s: a burst's outcome is exact. */
const topupBurst = 2;
/** Free reads: the principal's 60, so an agent's 30. */
const readBurst = 30;
/** Pro top-ups: the principal's 20, so an agent's 10. */
const proTopupBurst = 10;

before(async () => {
  sys = await startSystem({ ASSAY_DEFAULT_PLAN: 'free', ASSAY_SANDBOX_PLAN: 'free' });
  second = await startExtraGateway(sys.env);
});
after(async () => {
  second?.p.child.kill('SIGKILL');
  await sys?.stop();
});

const topUp = (agent: Agent, key: string, baseUrl = sys.baseUrl) =>
  fetch(`${baseUrl}/v1/topups`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ credits: 1 }),
  }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));

test('[FLEET-RATE] a burst of top-ups beyond the bucket gets 429 rate_limited with Retry-After, and changes nothing', async () => {
  const agent = await sys.register();
  const burst = await Promise.all(Array.from({ length: topupBurst + 4 }, (_, i) => topUp(agent, `burst-${i}`)));
  const ok = burst.filter((r) => r.status === 201);
  const refused = burst.filter((r) => r.status === 429);
  assert.equal(ok.length, topupBurst, 'exactly the bucket goes through');
  assert.equal(refused.length, 4);
  for (const r of refused) {
    assert.ok(isTypedError(r.body, 'rate_limited'));
    assert.equal(r.body.retryable, true);
    assert.equal(r.body.remediation, 'back_off_and_retry');
    const retryAfter = Number(r.headers.get('retry-after'));
    // One token every 20 s under Free: a client that waits this long can succeed, and not much longer is needed.
    assert.ok(retryAfter >= 1 && retryAfter <= 20, `Retry-After ${retryAfter}`);
    assert.equal(r.headers.get('x-ratelimit-remaining'), '0');
  }
  for (const r of burst) assert.equal(r.headers.get('x-ratelimit-limit'), String(topupBurst));
  // Refused top-ups credited nothing.
  const balance = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.equal(balance.body.balance_cents, agent.balanceCents + 100 * topupBurst);
});

test('[FLEET-RATE] every agent response carries X-RateLimit-Limit, -Remaining and -Reset, counting down', async () => {
  const agent = await sys.register();
  const seen: number[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await sys.call('GET', '/v1/balance', { token: agent.token });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-ratelimit-limit'), String(readBurst));
    assert.ok(Number(r.headers.get('x-ratelimit-reset')) >= 0);
    seen.push(Number(r.headers.get('x-ratelimit-remaining')));
  }
  assert.ok(seen[0]! < readBurst && seen[0]! >= readBurst - 2, `first remaining ${seen[0]}`);
  assert.ok(seen[3]! < seen[0]!, `remaining counts down: ${seen.join(', ')}`);
  // Refusals after the limiter carry them too (a validation error here).
  const bad = await sys.call('GET', '/v1/orders?limit=0', { token: agent.token });
  assert.equal(bad.status, 422);
  assert.equal(bad.headers.get('x-ratelimit-limit'), String(readBurst));
});

test('[FLEET-RATE] the limit is checked after scope and before validation, as the error table orders them', async () => {
  const agent = await sys.register();
  for (let i = 0; i < topupBurst; i++) assert.equal((await topUp(agent, `order-${i}`)).status, 201);
  // Bucket empty: a malformed top-up is refused for the rate, not its body, and a missing key likewise.
  const malformed = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 'many' }, key: 'bad' });
  assert.equal(malformed.status, 429);
  const noKey = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 1 } });
  assert.equal(noKey.status, 429);
  // Without the scope, forbidden wins and spends nothing; without a token, unauthorized.
  const reader = await registerWithScopes(sys, ['read:artifact']);
  const forbidden = await sys.call('POST', '/v1/topups', { token: reader.token, body: { credits: 1 }, key: 'f' });
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.headers.get('x-ratelimit-limit'), null);
  assert.equal((await sys.call('POST', '/v1/topups', { body: { credits: 1 }, key: 'u' })).status, 401);
});

test('[FLEET-RATE] two gateway processes spend from one bucket', async () => {
  const agent = await sys.register();
  const a1 = await topUp(agent, 'two-1', sys.baseUrl);
  const b1 = await topUp(agent, 'two-2', second.url);
  assert.deepEqual([a1.status, b1.status], [201, 201]);
  // The bucket held two: neither gateway has any left, whichever is asked.
  const a2 = await topUp(agent, 'two-3', sys.baseUrl);
  const b2 = await topUp(agent, 'two-4', second.url);
  assert.deepEqual([a2.status, b2.status], [429, 429]);
  assert.ok(isTypedError(b2.body, 'rate_limited'));
});

test('[FLEET-RATE] over MCP a tool call beyond the bucket is a rate_limited result, with the headers on the HTTP response', async () => {
  const agent = await sys.register();
  const responses: Headers[] = [];
  const recording: typeof fetch = async (input, init) => {
    const r = await fetch(input, init);
    responses.push(r.headers);
    return r;
  };
  const { client } = await connectMcp(sys.baseUrl, agent.token, { fetch: recording });
  try {
    const results = [];
    for (let i = 0; i < topupBurst + 1; i++) {
      results.push(
        outcome(await client.callTool({ name: 'top_up', arguments: { credits: 1, idempotency_key: `m-${i}` } })),
      );
    }
    assert.deepEqual(
      results.map((r) => r.status),
      [...Array.from({ length: topupBurst }, () => 201), 429],
    );
    const last = results.at(-1)!;
    assert.ok(last.isError && isTypedError(last.body, 'rate_limited'));
    const raw = await client.callTool({ name: 'top_up', arguments: { credits: 1, idempotency_key: 'm-again' } });
    assert.ok(Number(raw._meta?.['assay/retry_after_s']) >= 1);
    const limit = raw._meta?.['assay/rate_limit'] as { limit: number; remaining: number } | undefined;
    assert.deepEqual(limit && [limit.limit, limit.remaining], [topupBurst, 0]);
    const toolPosts = responses.filter((h) => h.get('x-ratelimit-limit') !== null);
    assert.ok(toolPosts.length >= topupBurst + 2, 'each tools/call response carries the headers');
    assert.ok(toolPosts.some((h) => h.get('retry-after') !== null));
  } finally {
    await client.close();
  }
});

test('[FLEET-PLAN] the operator command moves a principal to another plan, and its buckets follow', async () => {
  const agent = await sys.register();
  const shown = await runCli(sys, ['plan', 'show', agent.principalId]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /on the free plan \(the default\): 100 purchases and 10000 cents a day/);
  const set = await runCli(sys, ['plan', 'set', agent.principalId, 'pro']);
  assert.equal(set.code, 0, set.stderr);
  assert.match(set.stdout, /on the pro plan: 10000 purchases and 1000000 cents a day/);
  // Pro's top-up bucket is larger than Free's: more than Free's burst goes through now. A gateway may still hold a
  // Free batch of at most one token, so the first answer can show the old limit; the rest show Pro's.
  const results = [];
  for (let i = 0; i < topupBurst + 3; i++) results.push(await topUp(agent, `pro-${i}`));
  assert.ok(results.every((r) => r.status === 201));
  assert.equal(results.at(-1)!.headers.get('x-ratelimit-limit'), String(proTopupBurst));
  const again = await runCli(sys, ['plan', 'show', agent.principalId]);
  assert.match(again.stdout, /on the pro plan:/);
  const unknown = await runCli(sys, ['plan', 'set', '00000000-0000-4000-8000-000000000000', 'pro']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no principal/);
  const badPlan = await runCli(sys, ['plan', 'set', agent.principalId, 'platinum']);
  assert.notEqual(badPlan.code, 0);
  assert.match(badPlan.stderr, /unknown plan platinum/);
});
