// The model judge driver against a loopback OpenAI-compatible server, through the real `openai` client: verdicts and
// entailments, the run's identity (answered model, prompt version and hash), chunking, malformed answers, the cache,
// and configuration.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../contracts/index.ts';
import { modelPromptHash } from '../../actors/verification/judges/model-prompt.ts';
import { openaiJudgeFromConfig } from '../../actors/verification/judges/openai.ts';
import { JudgeUnavailable } from '../../actors/verification/judges/port.ts';
import { MemoryVerdictCache } from '../../actors/verification/judges/verdict-cache.ts';
import { answeredModelDefault, type OpenAIServer, startOpenAIServer } from '../support/openai-server.ts';
import { fakeTime, requestedAlias, testJudge } from './helpers.ts';

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer();
});
after(async () => {
  await server.close();
});
const fresh = () => {
  server.resetCounts();
  server.logprobs = true;
  server.always = null;
  server.answeredModel = answeredModelDefault;
};

const passage = 'Streams keep messages for 2 minutes by default. Consumers acknowledge each message.';

test('[JUDGE-MODEL-PROMPT] a run names the model id the endpoint answered with, version 2.2.0 and the prompt hash; requests ask for log-probabilities at temperature 0', async () => {
  fresh();
  const run = await testJudge(server).judge([{ claim: 'Streams keep messages. verdict:supported', passage }]);
  assert.equal(run.model, answeredModelDefault);
  assert.notEqual(run.model, requestedAlias);
  assert.equal(run.version, '2.2.0');
  assert.equal(run.promptHash, modelPromptHash);
  assert.equal(server.requests, 1);
  const { body, model } = server.received[0]!;
  assert.equal(model, requestedAlias);
  assert.equal(body.temperature, 0);
  assert.equal(body.logprobs, true);
  assert.equal(body.top_logprobs, 5);
  assert.equal(body.response_format, undefined, 'JSON is asked for by the prompt, not response_format');
  assert.deepEqual(
    (body.messages as { role: string }[]).map((m) => m.role),
    ['user'],
  );
});

test('[JUDGE-MODEL-ENTAILMENT] [JUDGE-MODEL-STATES] with log-probabilities: entailment is P(supported), states by threshold', async () => {
  fresh();
  const judge = testJudge(server);
  const run = await judge.judge([
    { claim: 'A verdict:supported', passage }, // P(supported) 0.9
    { claim: 'B verdict:supported p:0.6', passage },
    { claim: 'C verdict:unsupported', passage }, // P(supported) 0.1 / 3
    { claim: 'D verdict:contradicted p:0.7', passage }, // P(supported) 0.1
    { claim: 'E verdict:unsupported odds:0.48,0.5,0.02', passage }, // a hesitant `unsupported`
  ]);
  assert.equal(run.entailmentFrom, 'logprobs');
  assert.deepEqual(run.judgements, [
    { entailment: 0.9, state: 'verified' },
    { entailment: 0.6, state: 'partially_supported' },
    { entailment: 0.0333, state: 'unsupported' },
    { entailment: 0.1, state: 'contradicted' },
    { entailment: 0.48, state: 'partially_supported' },
  ]);
  assert.deepEqual(run.usage, {
    calls: 5,
    promptTokens: server.received.reduce((s, r) => s + Math.ceil(r.prompt.length / 4), 0),
    completionTokens: 5 * 6,
    cachedClaims: 0,
  });
});

test('[JUDGE-MODEL-ENTAILMENT] without log-probabilities: 1 or 0 from the verdict; some of each: mixed', async () => {
  fresh();
  server.logprobs = false;
  const judge = testJudge(server);
  const cases = [
    { claim: 'A verdict:supported p:0.6', passage },
    { claim: 'B verdict:unsupported', passage },
    { claim: 'C verdict:contradicted', passage },
  ];
  const run = await judge.judge(cases);
  assert.equal(run.entailmentFrom, 'verdict');
  assert.deepEqual(run.judgements, [
    { entailment: 1, state: 'verified' },
    { entailment: 0, state: 'unsupported' },
    { entailment: 0, state: 'contradicted' },
  ]);
  server.logprobs = true;
  server.script({ kind: 'answer', logprobs: false });
  const mixed = await testJudge(server, fakeTime(), { concurrency: 1 }).judge(cases);
  assert.equal(mixed.entailmentFrom, 'mixed');
  assert.deepEqual(
    mixed.judgements.map((j) => j.entailment),
    [1, 0.0333, 0.0333],
  );
});

test('[JUDGE-MODEL-CHUNKS] a claim supported only by the last chunk of a long passage is supported; one request per chunk', async () => {
  fresh();
  const sentences = Array.from({ length: 400 }, (_, i) => `Filler sentence number ${i} says nothing of note.`);
  const long = `${sentences.join(' ')} The answer is has:evidence42 here.`;
  assert.ok(long.length > 4000 * 4);
  const judge = testJudge(server, fakeTime(), { chunkChars: 4000, chunkOverlapChars: 600 });
  const run = await judge.judge([
    { claim: 'The answer needs:evidence42', passage: long },
    { claim: 'Something needs:nowhere', passage: long },
  ]);
  assert.deepEqual(run.judgements, [
    { entailment: 0.9, state: 'verified' },
    { entailment: 0.0333, state: 'unsupported' },
  ]);
  const chunks = Math.ceil(server.requests / 2);
  assert.ok(chunks >= 5, `${chunks} chunks`);
  assert.equal(server.requests, 2 * chunks);
  // Only the last chunk carried the evidence.
  assert.equal(server.received.filter((r) => r.prompt.includes('has:evidence42')).length, 2);
});

test('[JUDGE-MODEL-MALFORMED] an answer that is not the JSON asked for is asked again once, then the claim is judge_error, never verified', async () => {
  fresh();
  server.script({ kind: 'content', content: 'Supported.' });
  const once = await testJudge(server).judge([{ claim: 'verdict:supported', passage }]);
  assert.deepEqual(once.judgements, [{ entailment: 0.9, state: 'verified' }]);
  assert.equal(once.usage!.calls, 2);

  fresh();
  server.script(
    { kind: 'content', content: 'Supported.' },
    { kind: 'content', content: '{"verdict":"supported","confidence":1}' },
  );
  const twice = await testJudge(server).judge([{ claim: 'verdict:supported', passage }]);
  assert.deepEqual(twice.judgements, [{ entailment: 0, state: 'judge_error' }]);
  assert.equal(twice.usage!.calls, 2);
  assert.equal(server.requests, 2);
});

test('[JUDGE-MODEL-CACHE] an unchanged claim is answered from the cache without a request; a moved alias is judged again', async () => {
  fresh();
  const cache = new MemoryVerdictCache(100);
  const judge = testJudge(server, fakeTime(), { cache });
  const cases = [
    { claim: 'A verdict:supported', passage },
    { claim: 'B verdict:contradicted', passage },
    { claim: 'A verdict:supported', passage }, // the same pair twice in one report: judged once
  ];
  const first = await judge.judge(cases);
  assert.equal(server.requests, 2);
  assert.deepEqual(first.usage, { ...first.usage!, calls: 2, cachedClaims: 0 });
  server.resetCounts();
  const second = await judge.judge(cases);
  assert.equal(server.requests, 0, 'no request for cached claims');
  assert.deepEqual(second.judgements, first.judgements);
  assert.equal(second.model, answeredModelDefault);
  assert.equal(second.entailmentFrom, 'logprobs');
  assert.deepEqual(second.usage, { calls: 0, promptTokens: 0, completionTokens: 0, cachedClaims: 3 });

  // A process that starts knows no answered id yet: its first request learns it, the rest come from the cache.
  server.resetCounts();
  const restarted = await testJudge(server, fakeTime(), { cache }).judge([{ claim: 'C', passage }, ...cases]);
  assert.equal(server.requests, 1);
  assert.equal(restarted.usage!.cachedClaims, 3);

  // The endpoint now answers as another model: cached verdicts of the old one are not mixed into the report.
  server.resetCounts();
  server.answeredModel = 'assay-test-judge-2027-01-01';
  const moved = await judge.judge([...cases, { claim: 'D', passage }]);
  assert.equal(moved.model, 'assay-test-judge-2027-01-01');
  assert.equal(server.requests, 3, 'D, then A and B again under the new id (D from the cache)');
  assert.equal(moved.usage!.calls, 3);
  assert.equal(moved.usage!.cachedClaims, 0);
  assert.equal(cache.size, 6, 'A, B and C under the old id, A, B and D under the new one');
});

test('[JUDGE-MODEL-CACHE] a run that fails keeps what it was answered: the next try pays only for the rest', async () => {
  fresh();
  const cache = new MemoryVerdictCache(100);
  // One request at a time, in order: A, B and C are answered, D fails four times.
  const judge = testJudge(server, fakeTime(), { cache, concurrency: 1 });
  const cases = ['A', 'B', 'C', 'D'].map((claim) => ({ claim, passage }));
  const unavailable = { kind: 'status', status: 503 } as const;
  server.script({ kind: 'answer' }, { kind: 'answer' }, { kind: 'answer' }, unavailable, unavailable, unavailable);
  server.script(unavailable);
  await assert.rejects(judge.judge(cases), JudgeUnavailable);
  assert.equal(server.requests, 7);
  server.resetCounts();
  const run = await judge.judge(cases);
  assert.equal(server.requests, 1);
  assert.equal(run.usage!.cachedClaims, 3);
});

test('[JUDGE-MODEL-CACHE] the in-memory cache is bounded: the least recently used verdict goes', async () => {
  const { verdictKey } = await import('../../actors/verification/judges/verdict-cache.ts');
  const cache = new MemoryVerdictCache(2);
  const key = (claim: string) =>
    verdictKey({ requestedModel: 'm', model: 'm', promptHash: 'h', chunkHash: 'c', claim });
  const verdict = { entailment: 1, state: 'verified', entailmentFrom: 'verdict' } as const;
  await cache.put([
    { key: key('a'), verdict },
    { key: key('b'), verdict },
  ]);
  await cache.get([key('a')]);
  await cache.put([{ key: key('c'), verdict }]);
  assert.deepEqual([...(await cache.get([key('a'), key('b'), key('c')])).keys()], [key('a').id, key('c').id]);
  await cache.put([{ key: key('e'), verdict: { entailment: 0, state: 'judge_error', entailmentFrom: 'verdict' } }]);
  assert.equal((await cache.get([key('e')])).size, 0, 'judge_error is never cached');
});

test('[JUDGE-MODEL-CONFIG] built from the configuration: URL, model, key or key file, concurrency, timeout', async () => {
  fresh();
  const dir = mkdtempSync(join(tmpdir(), 'assay-judge-'));
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, 'sk-from-file\n');
  const config = loadConfig({
    ASSAY_JUDGE: 'openai',
    ASSAY_JUDGE_URL: server.url,
    ASSAY_JUDGE_MODEL: requestedAlias,
    ASSAY_JUDGE_API_KEY_FILE: keyFile,
    ASSAY_JUDGE_CONCURRENCY: '3',
    ASSAY_JUDGE_TIMEOUT_MS: '1500',
  });
  const judge = openaiJudgeFromConfig(config);
  assert.equal(judge.driver, 'openai');
  assert.equal(judge.options.concurrency, 3);
  assert.equal(judge.options.requestTimeoutMs, 1500);
  assert.deepEqual(judge.versions, ['2.1.0', '2.2.0']);
  const run = await judge.judge([{ claim: 'verdict:supported', passage }]);
  assert.equal(run.model, answeredModelDefault);
  await judge.close();
  assert.throws(
    () => openaiJudgeFromConfig(loadConfig({ ASSAY_JUDGE: 'openai' })),
    /ASSAY_JUDGE_URL is not set\n\s+ASSAY_JUDGE_MODEL is not set/,
  );
  assert.throws(
    () =>
      openaiJudgeFromConfig(
        loadConfig({
          ASSAY_JUDGE_URL: server.url,
          ASSAY_JUDGE_MODEL: 'm',
          ASSAY_JUDGE_API_KEY_FILE: join(dir, 'none'),
        }),
      ),
    /ASSAY_JUDGE_API_KEY_FILE=.*none: ENOENT/,
  );
  await assert.rejects(judge.judge([{ claim: 'x', passage }], '1.2.0'), /unknown judge version 1.2.0/);
});
