// The plans as a first hour meets them, on the shipped defaults: sandbox principals are on the sandbox plan (a
// fleet of agents buys and tops up at once without a 429), live ones on Free; X-RateLimit-Remaining counts down by
// exactly one per call on every plan; and the context-file API sends its X-RateLimit-* headers on every answer, its
// 401s included, spending the address's allowance when nobody is identified.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { askInternal } from '../../actors/index.ts';
import { internalRequest, type PlanName } from '../../contracts/index.ts';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { contextCall, issueApiKey } from '../support/context-api.ts';
import { signUp } from '../support/oauth.ts';
import { type Agent, runCli, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;

// One agent's buckets, written out from docs/fleet.md (not read from contracts/plans.ts): half its principal's.
/** Sandbox top-ups and purchases: the principal's 500 at 50 a second, so an agent's 250 at 25. */
const sandboxAgentBurst = 250;
/** Free reads: the principal's 60, so an agent's 30. */
const freeReadBurst = 30;
/** Reads per plan, an agent's burst, and calls that stay within a gateway's first batch (docs/fleet.md). */
const readsByPlan = {
  free: { burst: 30, calls: 3 },
  pro: { burst: 300, calls: 6 },
  enterprise: { burst: 5_000, calls: 6 },
  sandbox: { burst: 500, calls: 6 },
} as const;
/** Free's context-file allowance: 100 requests an hour. */
const freeHourly = 100;

before(async () => {
  // The shipped defaults: an empty value is the key's default (the suite's environment sets both to enterprise).
  sys = await startSystem({ ASSAY_DEFAULT_PLAN: '', ASSAY_SANDBOX_PLAN: '' });
});
after(async () => {
  await sys?.stop();
});

/** Put a principal on a plan as the operator command does, by asking its actor (the command is FLEET-PLAN's). */
async function setPlan(principalId: string, plan: PlanName, sandbox: boolean) {
  const subject = sys.names.actorSubject('principal', principalId);
  return askInternal(sys.nc, subject, internalRequest('plan.set', { principalId, plan, sandbox }), 10_000);
}

const post = (agent: Agent, path: string, body: unknown, key: string) =>
  fetch(`${sys.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));

test('[FLEET-SANDBOX-PLAN] a sandbox principal is on the sandbox plan and a live one on Free, unless an operator says otherwise', async () => {
  const agent = await sys.register();
  const shown = await runCli(sys, ['plan', 'show', agent.principalId]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /on the sandbox plan \(the default\): 10000 purchases and unlimited cents a day/);
  const topUp = await post(agent, '/v1/topups', { credits: 1 }, 'one');
  assert.equal(topUp.status, 201);
  assert.equal(topUp.headers.get('x-ratelimit-limit'), String(sandboxAgentBurst));
  // A live principal's agent on the same deployment: Free.
  const live = await mintToken(sys.config, { sandbox: false });
  const balance = await sys.call('GET', '/v1/balance', { token: live });
  assert.equal(balance.status, 200);
  assert.equal(balance.headers.get('x-ratelimit-limit'), String(freeReadBurst));
  // The sandbox plan spends test credits only: a live principal cannot be put on it.
  const jar = await signUp(sys.baseUrl, 'plans@example.com');
  const principalId = /<code>([0-9a-f-]{36})<\/code>/.exec(await (await jar.get('/account')).text())![1]!;
  const refused = await setPlan(principalId, 'sandbox', false);
  assert.ok(!refused.ok && refused.reply.error.code === 'validation_failed');
  assert.match(refused.reply.error.message, /a live principal's plan is one of free, pro, enterprise/);
});

test('[FLEET-SANDBOX-FLEET] ten sandbox agents each send 20 purchases and 20 top-ups at once in their first minute: none is refused for rate', async () => {
  const seller = await registerSeller(sys);
  const { listingId } = await verifiedListing(sys, seller.token, 'fleet', { price: 100, good: true });
  const agents = await Promise.all(Array.from({ length: 10 }, () => sys.register()));
  const started = Date.now();
  const answers = await Promise.all(
    agents.flatMap((agent, a) =>
      Array.from({ length: 20 }, (_, i) => [
        post(agent, '/v1/orders', { listing_id: listingId, formats: ['md'], max_price_cents: 100 }, `buy-${a}-${i}`),
        post(agent, '/v1/topups', { credits: 1 }, `top-${a}-${i}`),
      ]).flat(),
    ),
  );
  assert.ok(Date.now() - started < 60_000, 'all within the first minute');
  const statuses = new Map<number, number>();
  for (const r of answers) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  assert.deepEqual([...statuses], [[201, 400]], JSON.stringify(answers.find((r) => r.status !== 201)?.body));
  for (const r of answers) assert.equal(r.headers.get('x-ratelimit-limit'), String(sandboxAgentBurst));
});

test('[FLEET-RATE-EXACT] X-RateLimit-Remaining counts down by exactly one per call on every plan', async () => {
  for (const [plan, { burst, calls }] of Object.entries(readsByPlan)) {
    const agent = await sys.register();
    if (plan !== 'sandbox') {
      const set = await setPlan(agent.principalId, plan as PlanName, true);
      assert.ok(set.ok, JSON.stringify(set));
    }
    const seen: number[] = [];
    for (let i = 0; i < calls; i++) {
      const r = await sys.call('GET', '/v1/balance', { token: agent.token });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(burst), plan);
      seen.push(Number(r.headers.get('x-ratelimit-remaining')));
    }
    assert.deepEqual(
      seen,
      Array.from({ length: calls }, (_, i) => burst - 1 - i),
      `${plan}: each call leaves one fewer`,
    );
  }
});

test('[CONTEXT-RATE-HEADERS] every context-file API answer carries X-RateLimit-*, 401s included: an unidentified caller spends its address allowance', async () => {
  const api = `${sys.config.apiUrl}/v1`;
  const rateHeaders = (h: Headers) => ['limit', 'remaining', 'reset'].map((n) => h.get(`x-ratelimit-${n}`));
  const missing = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET');
  assert.equal(missing.status, 401);
  assert.equal(missing.body.error, 'unauthorized');
  assert.deepEqual(rateHeaders(missing.headers).slice(0, 2), [String(freeHourly), String(freeHourly - 1)]);
  assert.ok(Number(missing.headers.get('x-ratelimit-reset')) > 0);
  const wrongKey = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET', { bearer: 'asyk_not-a-key' });
  assert.equal(wrongKey.status, 401);
  assert.equal(wrongKey.headers.get('x-ratelimit-remaining'), String(freeHourly - 2));
  // An identified caller spends its principal's allowance, not the address's: on a route, and off one.
  const jar = await signUp(sys.baseUrl, 'context-headers@example.com');
  const key = await issueApiKey(sys.config.webUrl, jar);
  const listed = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET', { bearer: key });
  assert.equal(listed.status, 200);
  assert.equal(listed.headers.get('x-ratelimit-limit'), String(freeHourly));
  const noRoute = await contextCall(sys.config.webUrl, `${api}/nothing-here`, 'GET', { bearer: key });
  assert.equal(noRoute.status, 404);
  assert.ok(rateHeaders(noRoute.headers).every((v) => v !== null));
  // The address's allowance runs out like a principal's: 429 with Retry-After, still with the headers.
  let last = wrongKey;
  for (let i = 2; i < freeHourly; i++) last = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET');
  assert.equal(last.status, 401);
  assert.equal(last.headers.get('x-ratelimit-remaining'), '0');
  const refused = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET');
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error, 'rate_limited');
  assert.ok(Number(refused.headers.get('retry-after')) > 0);
  assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
  // The principal's own allowance was not touched by the address's.
  const stillListed = await contextCall(sys.config.webUrl, `${api}/contexts`, 'GET', { bearer: key });
  assert.equal(stillListed.status, 200);
});
