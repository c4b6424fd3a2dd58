// The context-file API's hourly rate across gateway processes (docs/contexts.md, Rate limits): two gateways answer
// one principal's API key from one allowance in the principal's actor, not one allowance each.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { issueApiKey } from '../support/context-api.ts';
import { signUp, type WebJar } from '../support/oauth.ts';
import { type ExtraGateway, startExtraGateway } from '../support/processes.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let second: ExtraGateway;
/** A gateway with ASSAY_CONTEXT_RATE_LIMIT=off, as the benchmark runs one. */
let unlimited: ExtraGateway;

before(async () => {
  sys = await startSystem({ ASSAY_DEFAULT_PLAN: 'free' });
  [second, unlimited] = await Promise.all([
    startExtraGateway(sys.env),
    startExtraGateway(sys.env, { ASSAY_CONTEXT_RATE_LIMIT: 'off' }),
  ]);
});
after(async () => {
  second?.p.child.kill('SIGKILL');
  unlimited?.p.child.kill('SIGKILL');
  await sys?.stop();
});

// The context-file API's hourly allowances, from docs/fleet.md's table (not read from contracts/plans.ts).
/** Free: 100 requests an hour, refilled evenly (one every 36 s). */
const freeHourly = 100;
const freeMsPerToken = 36_000;
/** Pro: 1,000 an hour. */
const proHourly = 1_000;

/** An API key issued by the API's own route with the signed-in session: itself one request of the hour. */
const issueKey = (jar: WebJar) => issueApiKey(sys.config.webUrl, jar);

async function principalOf(jar: WebJar): Promise<string> {
  const page = await (await jar.get('/account')).text();
  return /<code>([0-9a-f-]{36})<\/code>/.exec(page)![1]!;
}

async function list(apiUrl: string, key: string): Promise<{ status: number; headers: Headers }> {
  const res = await fetch(`${apiUrl}/v1/contexts`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return { status: res.status, headers: res.headers };
}

test('[CONTEXT-RATE-SHARED] two gateway processes spend one Free allowance: 100 requests in the hour between them, Remaining never rises, and Pro admits on both again', async () => {
  const hourly = freeHourly;
  const msPerToken = freeMsPerToken;
  const startedMs = Date.now();
  const jar = await signUp(sys.baseUrl, 'shared@example.com');
  const key = await issueKey(jar);
  const principalId = await principalOf(jar);
  const gateways = [sys.config.apiUrl, second.apiUrl];
  const admitted = [0, 0];
  const remaining: number[][] = [[], []];
  const remainingWhenAdmitted: number[] = [];
  // Each round asks both gateways at once, so the actor sees them race; one request at a time per gateway, so each
  // one's answers are in order. It stops when both refuse in the same round: neither then holds a token it could
  // still spend, so the allowance is used up everywhere.
  let rounds = 0;
  for (; rounds < hourly + 5; rounds++) {
    const answers = await Promise.all(gateways.map((g) => list(g, key)));
    for (const [i, r] of answers.entries()) {
      assert.ok(r.status === 200 || r.status === 429, `gateway ${i}: ${r.status}`);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(hourly));
      const left = Number(r.headers.get('x-ratelimit-remaining'));
      remaining[i]!.push(left);
      if (r.status === 200) {
        admitted[i]!++;
        remainingWhenAdmitted.push(left);
      } else {
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
        assert.equal(left, 0);
      }
    }
    if (answers.every((r) => r.status === 429)) break;
  }
  assert.ok(rounds < hourly + 5, 'both gateways end up refusing');
  const elapsedMs = Date.now() - startedMs;
  // The bucket refills one token every 36 s on Free; a run that took longer may spend the refill too.
  const refilled = Math.floor(elapsedMs / msPerToken);
  const total = admitted[0]! + admitted[1]!;
  // Issuing the key was the hour's first request, so the two gateways admitted the other 99 between them; a
  // per-process counter would have let each admit its own 100.
  assert.ok(
    total >= hourly - 1 && total <= hourly - 1 + refilled,
    `admitted ${admitted.join(' + ')} in ${elapsedMs} ms; expected ${hourly - 1}${refilled ? ` to ${hourly - 1 + refilled}` : ''}`,
  );
  assert.ok(admitted[0]! > 0 && admitted[1]! > 0, `both gateways admitted some: ${admitted.join(', ')}`);
  for (const [i, seen] of remaining.entries()) {
    for (let j = 1; j < seen.length; j++) {
      assert.ok(seen[j]! <= seen[j - 1]!, `gateway ${i}'s Remaining rose from ${seen[j - 1]} to ${seen[j]}`);
    }
  }
  if (refilled === 0) {
    // A Free principal's batches are one token, so each admitted request shows the actor's count after it: the two
    // gateways' answers together count down 98..0, each number once.
    assert.deepEqual(
      [...remainingWhenAdmitted].sort((a, b) => b - a),
      Array.from({ length: hourly - 1 }, (_, i) => hourly - 2 - i),
    );
  }

  const upgrade = await runCli(sys, ['plan', 'set', principalId, 'pro']);
  assert.equal(upgrade.code, 0, upgrade.stderr);
  // Each gateway refuses on its own for at most a second after a refusal, then asks the actor under the new plan.
  for (const g of gateways) {
    const r = await eventually(
      `the Pro allowance on ${g}`,
      async () => {
        const a = await list(g, key);
        return a.status === 200 ? a : undefined;
      },
      3000,
    );
    assert.equal(r.headers.get('x-ratelimit-limit'), String(proHourly));
  }
});

test('[CONTEXT-RATE-OFF] a gateway with ASSAY_CONTEXT_RATE_LIMIT=off admits without rate headers and spends nothing of the allowance', async () => {
  const hourly = freeHourly;
  const jar = await signUp(sys.baseUrl, 'unlimited@example.com');
  const key = await issueKey(jar);
  for (let i = 0; i < 3; i++) {
    const r = await list(unlimited.apiUrl, key);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-ratelimit-limit'), null);
    assert.equal(r.headers.get('x-ratelimit-remaining'), null);
  }
  // The key's issuance was the only request counted so far.
  const counted = await list(sys.config.apiUrl, key);
  assert.equal(counted.headers.get('x-ratelimit-remaining'), String(hourly - 2));
  assert.match(unlimited.p.output(), /ASSAY_CONTEXT_RATE_LIMIT=off/, 'the gateway warns at start');
});
