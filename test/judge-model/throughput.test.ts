// The model judge judges a report's claims in parallel, bounded per process: against an endpoint answering in 50 ms,
// 200 claims keep exactly the default concurrency in flight. How fast that is (claims per second against the serial
// time) is printed here and measured by `npm run bench:judge-model`, not asserted: a loaded machine slows it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openaiJudgeDefaults } from '../../actors/verification/judges/openai.ts';
import { startOpenAIServer } from '../support/openai-server.ts';
import { benchModelJudge } from '../bench/judge-model.ts';
import { fakeTime, testJudge } from './helpers.ts';

test('[JUDGE-MODEL-CONCURRENCY] 200 claims against a 50 ms endpoint at the default concurrency: parallel up to the bound and never past it', async (t) => {
  const r = await benchModelJudge({ claims: 200, latencyMs: 50 });
  t.diagnostic(
    `${r.claimsPerSecond.toFixed(1)} claims/s, ${r.seconds.toFixed(2)} s (serial ${r.serialSeconds} s), ` +
      `${r.maxInFlight} in flight, ${r.promptTokensPerClaim.toFixed(0)} + ${r.completionTokensPerClaim} tokens per claim`,
  );
  assert.equal(r.concurrency, openaiJudgeDefaults.concurrency);
  assert.equal(r.maxInFlight, openaiJudgeDefaults.concurrency, 'requests in flight reach the bound and never pass it');
});

test('[JUDGE-MODEL-CONCURRENCY] the bound is shared by every report the judge is judging at once', async () => {
  const server = await startOpenAIServer({ latencyMs: 20 });
  try {
    const judge = testJudge(server, fakeTime(), { concurrency: 4 });
    const report = (name: string) =>
      Array.from({ length: 30 }, (_, i) => ({ claim: `${name} claim ${i}`, passage: 'A passage.' }));
    const runs = await Promise.all([judge.judge(report('a')), judge.judge(report('b')), judge.judge(report('c'))]);
    assert.deepEqual(
      runs.map((r) => r.judgements.length),
      [30, 30, 30],
    );
    assert.equal(server.maxInFlight, 4);
    assert.equal(server.requests, 90);
  } finally {
    await server.close();
  }
});
