// The local model judge (ASSAY_JUDGE=onnx) on a tiny cross-encoder this test writes (test/support/tiny-onnx.ts):
// the real loading and inference path through onnxruntime-node and the tokenizer, checked for shapes, chunking,
// batching, the verdict cache and its refusals; and end to end, an edition judged by it through the worker, its
// report signed and verified offline. The weights are seeded noise with two planted words, so nothing here is about
// accuracy.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  JudgeUnavailable,
  MemoryVerdictCache,
  OnnxJudge,
  OnnxModelError,
  onnxJudgeFromConfig,
} from '../../actors/verification/judges/index.ts';
import { loadConfig } from '../../contracts/index.ts';
import { artifactContent, registerSeller, registerWithScopes, reportDigestOf } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { runCli, startSystem } from '../support/system.ts';
import { writeTinyModel } from '../support/tiny-onnx.ts';

let root: string;
let modelDir: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'assay-onnx-'));
  modelDir = (await writeTinyModel(join(root, 'tiny-nli'))).dir;
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const passage =
  'A stream keeps duplicate message ids for two minutes by default. The window is two minutes. Messages with an id already seen in the window are dropped. The window can be changed per stream.';
const supported = 'A stream keeps duplicate ids for two minutes.';

test('[JUDGE-ONNX-LOAD] the judge loads a model directory, names the model by its weights, and answers one judgement per claim in each state', async () => {
  const judge = new OnnxJudge({ modelDir, cache: null });
  try {
    await judge.start();
    assert.match(judge.model, /^tiny-nli@[0-9a-f]{12}$/);
    assert.match(judge.promptHash, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual([judge.driver, judge.version, [...judge.versions]], ['onnx', '3.1.0', ['3.1.0']]);
    const run = await judge.judge([
      { claim: supported, passage },
      { claim: 'The window is refuted.', passage },
      { claim: 'The window is unclear.', passage },
    ]);
    assert.deepEqual(
      [run.model, run.version, run.promptHash, run.entailmentFrom],
      [judge.model, '3.1.0', judge.promptHash, 'classifier'],
    );
    assert.deepEqual(
      run.judgements.map((j) => j.state),
      ['verified', 'contradicted', 'unsupported'],
    );
    for (const j of run.judgements) assert.ok(j.entailment >= 0 && j.entailment <= 1);
    assert.ok(run.judgements[1]!.entailment <= 0.1, 'a contradiction is capped at 0.1');
    await assert.rejects(judge.judge([{ claim: supported, passage }], '2.1.0'), /unknown judge version/);
  } finally {
    await judge.close();
  }
  // The Hugging Face export layout (onnx/model.onnx) loads too, and the same weights give the same name.
  const hf = new OnnxJudge({ modelDir: (await writeTinyModel(join(root, 'hf'), { layout: 'hf' })).dir, name: 'x' });
  try {
    await hf.start();
    assert.equal(hf.model.split('@')[1], judge.model.split('@')[1]);
    assert.equal(hf.model.split('@')[0], 'x');
  } finally {
    await hf.close();
  }
});

test('[JUDGE-ONNX-CHUNKS] a long passage is judged in chunks, batched: every batch size gives the same judgements, and the calls follow the batch size', async () => {
  const long = Array.from({ length: 12 }, (_, i) => `Sentence ${i} of the passage is here.`).join(' ') + ` ${passage}`;
  const cases = [
    { claim: supported, passage: long },
    { claim: 'The window is refuted.', passage: long },
    { claim: supported, passage },
  ];
  const results = [];
  for (const batchSize of [1, 3, 64]) {
    const judge = new OnnxJudge({ modelDir, batchSize, chunkChars: 120, chunkOverlapChars: 40, cache: null });
    try {
      results.push({ batchSize, run: await judge.judge(cases) });
    } finally {
      await judge.close();
    }
  }
  // Pairs: every chunk of the long passage for each of its two claims, and the short passage once.
  const chunks = (await import('../../actors/verification/judges/model-prompt.ts')).chunkPassage(long, 120, 40);
  assert.ok(chunks.length >= 4, `${chunks.length} chunks`);
  const pairs = chunks.length * 2 + 1;
  for (const { batchSize, run } of results) {
    assert.equal(run.usage!.calls, Math.ceil(pairs / batchSize), `batch size ${batchSize}`);
    assert.deepEqual(run.judgements, results[0]!.run.judgements, `batch size ${batchSize} judges as batch size 1`);
  }
  assert.deepEqual(
    results[0]!.run.judgements.map((j) => j.state),
    ['verified', 'contradicted', 'verified'],
  );
  // A pair longer than the model takes has its chunk shortened until it fits; a claim that alone does not fit
  // cannot be judged, and the edition waits.
  const short = new OnnxJudge({ modelDir, maxTokens: 24, cache: null });
  try {
    const fitted = await short.judge([{ claim: supported, passage: long }]);
    assert.equal(fitted.judgements.length, 1);
    await assert.rejects(
      short.judge([{ claim: `${supported} `.repeat(6), passage }]),
      (err: Error) => err instanceof JudgeUnavailable && /longer than 24 tokens/.test(err.message),
    );
  } finally {
    await short.close();
  }
});

test('[JUDGE-ONNX-CACHE] a judged pair is answered from the verdict cache, and other weights are not', async () => {
  const cache = new MemoryVerdictCache(100);
  const judge = new OnnxJudge({ modelDir, cache });
  const other = new OnnxJudge({ modelDir: (await writeTinyModel(join(root, 'wider'), { maxTokens: 64 })).dir, cache });
  try {
    const cases = [
      { claim: supported, passage },
      { claim: 'The window is refuted.', passage },
    ];
    const first = await judge.judge(cases);
    assert.deepEqual(first.usage, { calls: 1, promptTokens: 0, completionTokens: 0, cachedClaims: 0 });
    const again = await judge.judge(cases);
    assert.deepEqual(again.usage, { calls: 0, promptTokens: 0, completionTokens: 0, cachedClaims: 2 });
    assert.deepEqual(again.judgements, first.judgements);
    // Same weights, another tokenizer setting: another prompt hash, so nothing is taken from the first's verdicts.
    assert.notEqual(other.promptHash, judge.promptHash);
    assert.equal((await other.judge(cases)).usage!.cachedClaims, 0);
  } finally {
    await judge.close();
    await other.close();
  }
});

test('[JUDGE-ONNX-CONFIG] the judge refuses a directory it cannot use, with a message that names what is missing', async () => {
  const bad = async (name: string, prepare: (dir: string) => Promise<void>) => {
    const dir = (await writeTinyModel(join(root, name))).dir;
    await prepare(dir);
    return dir;
  };
  assert.throws(
    () => onnxJudgeFromConfig(loadConfig({ ASSAY_JUDGE: 'onnx' })),
    (err: Error) => err instanceof OnnxModelError && /ASSAY_JUDGE_MODEL_DIR is not set/.test(err.message),
  );
  assert.throws(() => new OnnxJudge({ modelDir: join(root, 'nowhere') }), /no model\.onnx/);
  const noTokenizer = await bad('no-tokenizer', (d) => rm(join(d, 'tokenizer.json')));
  assert.throws(() => new OnnxJudge({ modelDir: noTokenizer }), /no tokenizer\.json/);
  const noEntailment = await bad('labels', (d) =>
    writeFile(join(d, 'config.json'), JSON.stringify({ id2label: { 0: 'LABEL_0', 1: 'LABEL_1' } })),
  );
  assert.throws(() => new OnnxJudge({ modelDir: noEntailment }), /no entailment class in id2label/);
  const garbage = await bad('garbage', (d) => writeFile(join(d, 'model.onnx'), 'not a model'));
  await assert.rejects(new OnnxJudge({ modelDir: garbage }).start(), /not a model onnxruntime can load/);
  const twoScores = (await writeTinyModel(join(root, 'two'), { outputs: 2 })).dir;
  await assert.rejects(
    new OnnxJudge({ modelDir: twoScores }).start(),
    /answers 2 scores per pair; config\.json names 3 classes/,
  );
  assert.throws(() => new OnnxJudge({ modelDir, batchSize: 0 }), /batch size 0/);
  const fromConfig = onnxJudgeFromConfig(
    loadConfig({ ASSAY_JUDGE: 'onnx', ASSAY_JUDGE_MODEL_DIR: modelDir, ASSAY_JUDGE_BATCH: '3' }),
  );
  assert.equal(fromConfig.batchSize, 3);
});

test('[JUDGE-ONNX-SYSTEM] with ASSAY_JUDGE=onnx an edition is judged by the local model through the worker, its report signed and verified offline', async () => {
  const sys = await startSystem({ ASSAY_JUDGE: 'onnx', ASSAY_JUDGE_MODEL_DIR: modelDir, ASSAY_JUDGE_BATCH: '2' });
  try {
    const seller = await registerSeller(sys);
    const published = await sys.call('POST', '/v1/artifacts', {
      token: seller.token,
      body: {
        title: 'Local model',
        content: artifactContent(
          'local',
          [
            ['c1', supported],
            ['c2', 'The window is refuted.'],
            ['c3', 'Duplicate ids are kept two minutes.'],
          ],
          [passage],
        ),
      },
      key: 'a-local',
    });
    assert.equal(published.status, 201, JSON.stringify(published.body));
    const digest = await reportDigestOf(sys, seller.token, published.body.id);
    const report = (await sys.call('GET', `/v1/reports/${digest}`, { token: seller.token })).body;
    assert.match(report.judgeModel, /^tiny-nli@[0-9a-f]{12}$/);
    assert.equal(report.judgePromptVersion, '3.1.0');
    assert.deepEqual(report.judge, { driver: 'onnx', entailmentFrom: 'classifier' });
    assert.deepEqual(
      report.claims.map((c: { state: string }) => c.state),
      ['verified', 'contradicted', 'verified'],
    );
    assert.equal(report.judgeQuality, null, 'no figures are published for a model the project does not ship');
    const [row] = await sys.sql<{ judge_usage: { calls: number } }[]>`
      SELECT judge_usage FROM reports WHERE digest = ${digest}`;
    assert.equal(row!.judge_usage.calls, 2, 'three pairs in batches of two');
    const file = join(root, 'report.json');
    await writeFile(file, JSON.stringify(report));
    const ok = await runCli(sys, ['verify-report', file, '--keys', `${sys.baseUrl}/.well-known/report-keys`]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    // A mandate asking for a measured specificity does not buy what a model with no published figures judged.
    const listing = await sys.call('POST', '/v1/listings', {
      token: seller.token,
      body: { artifact_id: published.body.id, price_cents: 100, floor: 0, formats: ['md'] },
      key: 'l-local',
    });
    assert.equal(listing.status, 201, JSON.stringify(listing.body));
    const b = await registerWithScopes(sys, ['read:artifact', 'purchase', 'manage:mandate']);
    const m = await sys.call('POST', '/v1/mandates', {
      token: b.token,
      body: { per_item_cap_cents: 1000, min_judge_specificity: 0.5 },
      key: 'm',
    });
    assert.equal(m.status, 201);
    const refused = await sys.call('POST', '/v1/orders', {
      token: b.token,
      body: { listing_id: listing.body.id, formats: ['md'] },
      key: 'o',
    });
    assert.equal(refused.status, 403);
    assert.ok(isTypedError(refused.body, 'judge_version_rejected'), JSON.stringify(refused.body));
    assert.match(refused.body.message, /no measured specificity/);
    // The eval command judges with the same model, in its own process.
    const cases = join(root, 'cases.jsonl');
    await writeFile(
      cases,
      `${JSON.stringify({ passage, claim: supported, label: true })}\n${JSON.stringify({ passage, claim: 'The window is refuted.', label: false })}\n`,
    );
    const evaluated = await runCli(sys, ['judge', 'eval', cases]);
    assert.equal(evaluated.code, 0, evaluated.stderr);
    const lines = evaluated.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.slice(0, 2).map((l) => l.state),
      ['verified', 'contradicted'],
    );
    assert.equal(lines[2].judge.driver, 'onnx');
  } finally {
    await sys.stop();
  }
});
