// The model judge when the endpoint misbehaves: retries with backoff (the injected sleep records every wait), Retry-After,
// timeouts, bodies that are no chat completion, refusals, the circuit breaker, and JudgeUnavailable instead of a partial
// run.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JudgeUnavailable } from '../../actors/verification/judges/port.ts';
import { backoffMs, retryAfterMs } from '../../actors/verification/judges/reliability.ts';
import { type OpenAIServer, startOpenAIServer } from '../support/openai-server.ts';
import { fakeTime, testJudge } from './helpers.ts';

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer();
});
after(async () => {
  await server.close();
});
const fresh = () => {
  server.resetCounts();
  server.always = null;
};

const passage = 'The default duplicate window of a stream is 2 minutes.';
const supported = [{ claim: 'The window is 2 minutes. verdict:supported', passage }];
const verified = [{ entailment: 0.9, state: 'verified' }];

test('[JUDGE-MODEL-RETRY] backoff doubles up to its ceiling, with equal jitter; Retry-After is read as seconds or an HTTP date', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 500, 8000, () => 0)),
    [250, 500, 1000, 2000, 4000, 4000],
  );
  assert.deepEqual(
    [1, 2, 3].map((n) => backoffMs(n, 500, 8000, () => 0.999999)),
    [500, 1000, 2000],
  );
  const now = Date.UTC(2026, 10, 23, 12, 0, 0);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': '3' }), now), 3000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': new Date(now + 7000).toUTCString() }), now), 7000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': new Date(now - 7000).toUTCString() }), now), 0);
  assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': '1250', 'retry-after': '9' }), now), 1250);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now), null);
  assert.equal(retryAfterMs(new Headers(), now), null);
});

test('[JUDGE-MODEL-RETRY] a 429 with Retry-After is waited out (seconds, or an HTTP date against the clock), then answered', async () => {
  fresh();
  const time = fakeTime();
  server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3' } });
  const run = await testJudge(server, time).judge(supported);
  assert.deepEqual(run.judgements, verified);
  assert.deepEqual(time.sleeps, [3000], 'Retry-After beats the 375 ms backoff');
  assert.equal(run.usage!.calls, 2);

  fresh();
  const dated = fakeTime();
  const at = new Date(dated.clock.nowMs() + 7000).toUTCString();
  server.script({ kind: 'status', status: 503, headers: { 'retry-after': at } });
  await testJudge(server, dated).judge(supported);
  assert.deepEqual(dated.sleeps, [7000]);

  fresh();
  const short = fakeTime();
  server.script({ kind: 'status', status: 429, headers: { 'retry-after': '0' } });
  await testJudge(server, short).judge(supported);
  assert.deepEqual(short.sleeps, [375], 'a shorter Retry-After than the backoff waits the backoff');
});

test('[JUDGE-MODEL-RETRY] a Retry-After beyond the cap is not waited for: JudgeUnavailable at once', async () => {
  fresh();
  const time = fakeTime();
  server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3600' } });
  await assert.rejects(testJudge(server, time, { retryAfterMaxMs: 30_000 }).judge(supported), (err: Error) => {
    assert.ok(err instanceof JudgeUnavailable);
    assert.match(err.message, /asked to wait 3600000 ms/);
    return true;
  });
  assert.deepEqual(time.sleeps, []);
  assert.equal(server.requests, 1);
});

test('[JUDGE-MODEL-RETRY] 500, a dropped connection, an HTML page and a cut-off body are retried with backoff, then answered', async () => {
  fresh();
  const time = fakeTime();
  server.script({ kind: 'status', status: 500 }, { kind: 'drop' }, { kind: 'non-json' }, { kind: 'broken-json' });
  const run = await testJudge(server, time, { attemptsMax: 5 }).judge(supported);
  assert.deepEqual(run.judgements, verified);
  assert.deepEqual(time.sleeps, [375, 750, 1500, 3000]);
  assert.equal(run.usage!.calls, 5);
  assert.equal(server.requests, 5);
});

test('[JUDGE-MODEL-RETRY] a request stalled past the timeout is abandoned and retried', async () => {
  fresh();
  const time = fakeTime();
  server.script({ kind: 'stall' });
  const started = performance.now();
  const run = await testJudge(server, time, { requestTimeoutMs: 200 }).judge(supported);
  const elapsedMs = performance.now() - started;
  assert.deepEqual(run.judgements, verified);
  assert.equal(server.requests, 2);
  assert.deepEqual(time.sleeps, [375]);
  assert.ok(elapsedMs >= 190 && elapsedMs < 2000, `${elapsedMs} ms`);
});

test('[JUDGE-MODEL-RETRY] out of attempts: JudgeUnavailable, and never a partial run', async () => {
  fresh();
  const time = fakeTime();
  server.always = { kind: 'status', status: 502 };
  await assert.rejects(testJudge(server, time).judge(supported), (err: Error) => {
    assert.ok(err instanceof JudgeUnavailable);
    assert.match(err.message, /failed 4 times: HTTP 502/);
    return true;
  });
  assert.equal(server.requests, 4);
  assert.deepEqual(time.sleeps, [375, 750, 1500]);

  // One claim of many that cannot be answered fails the whole run.
  fresh();
  const many = Array.from({ length: 20 }, (_, i) => ({ claim: `claim ${i} verdict:supported`, passage }));
  many[7] = { claim: 'this claim gets status:503 every time', passage };
  await assert.rejects(testJudge(server, fakeTime(), { breakerFailuresMax: 100 }).judge(many), JudgeUnavailable);

  // A refusal that no retry changes (a bad key, an unknown model) is not retried.
  fresh();
  server.script({ kind: 'status', status: 401 });
  await assert.rejects(testJudge(server).judge(supported), /refused the request: HTTP 401/);
  assert.equal(server.requests, 1);
});

test('[JUDGE-MODEL-BREAKER] after N failures in a row the circuit opens: nothing reaches the endpoint until a probe succeeds', async () => {
  fresh();
  const time = fakeTime();
  const judge = testJudge(server, time, { attemptsMax: 2, breakerFailuresMax: 3, breakerCoolDownMs: 60_000 });
  server.always = { kind: 'status', status: 500 };
  await assert.rejects(judge.judge(supported), /failed 2 times/);
  assert.equal(judge.circuit, 'closed');
  // The third failure in a row opens the circuit; the claim's retry is refused without a request.
  await assert.rejects(judge.judge(supported), /circuit open/);
  assert.equal(judge.circuit, 'open');
  assert.equal(server.requests, 3);
  // Open: refused at once, whatever the endpoint would say now.
  server.always = null;
  time.clock.advance(59_000);
  await assert.rejects(judge.judge(supported), (err: Error) => {
    assert.ok(err instanceof JudgeUnavailable);
    assert.match(err.message, /circuit open, next try in \d+ ms/);
    return true;
  });
  assert.equal(server.requests, 3, 'no request reached the endpoint while open');
  // After the cool-down one probe goes; its failure opens the circuit again.
  time.clock.advance(1000 + 2000);
  assert.equal(judge.circuit, 'half-open');
  server.script({ kind: 'status', status: 500 });
  await assert.rejects(judge.judge(supported), /circuit open/);
  assert.equal(server.requests, 4);
  assert.equal(judge.circuit, 'open');
  // The next probe succeeds and closes it; the other claims of that run wait for the probe, then go.
  time.clock.advance(60_000);
  const many = Array.from({ length: 12 }, (_, i) => ({ claim: `claim ${i} verdict:supported`, passage }));
  const run = await judge.judge(many);
  assert.equal(judge.circuit, 'closed');
  assert.equal(run.judgements.length, 12);
  assert.equal(server.requests, 4 + 12);
});

test('[JUDGE-MODEL-BREAKER] half-open: one probe goes, the others wait for its outcome', async () => {
  const { Breaker } = await import('../../actors/verification/judges/reliability.ts');
  let now = 0;
  const breaker = new Breaker(2, 1000, () => now);
  const signal = new AbortController().signal;
  breaker.failed(false);
  assert.equal(breaker.state, 'closed');
  breaker.failed(false);
  assert.equal(breaker.state, 'open');
  await assert.rejects(breaker.admit(signal), JudgeUnavailable);
  now = 1000;
  assert.equal(await breaker.admit(signal), true, 'the first request after the cool-down is the probe');
  const waiting = breaker.admit(signal);
  breaker.succeeded();
  assert.equal(await waiting, false, 'after a good probe the others go as ordinary requests');
  breaker.failed(false);
  breaker.failed(false);
  now = 2000;
  assert.equal(await breaker.admit(signal), true);
  const refused = breaker.admit(signal);
  breaker.failed(true);
  await assert.rejects(refused, JudgeUnavailable, 'after a failed probe the others are refused');
  assert.equal(breaker.state, 'open');
});
