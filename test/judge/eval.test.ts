// `assay judge eval` as a user runs it (a real CLI process, no service behind it), and the accuracy the shipped
// labelled set holds the built-in judge to.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { evaluate, parseCases } from '../../cli/judge.ts';
import {
  builtinJudge,
  currentJudgeVersion,
  judgeClaim,
  judgePromptHash,
} from '../../actors/verification/judges/index.ts';
import { readFileSync } from 'node:fs';
import { answeredModelDefault, startOpenAIServer } from '../support/openai-server.ts';
import { assayArgs } from '../support/assay-cli.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const labelledPath = new URL('./labelled.jsonl', import.meta.url).pathname;

async function assay(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [...assayArgs(), ...args], {
      cwd: root,
      env: { ...process.env, ASSAY_JUDGE: 'builtin', ...env },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function withFile<T>(text: string, f: (path: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'assay-judge-eval-'));
  try {
    const path = join(dir, 'cases.jsonl');
    await writeFile(path, text);
    return await f(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const passage = 'By default an idle session expires after two minutes. Sessions are not shared between users.';
const small = [
  { passage, claim: 'By default an idle session expires after 120 seconds.', label: true, kind: 'number_format' },
  { passage, claim: 'By default an idle session expires after two hours.', label: false, kind: 'changed_unit' },
  { passage, claim: 'Sessions are shared between users.', label: false, kind: 'flipped_negation' },
  { passage, claim: 'An idle session expires after two minutes by default.' },
];

test('[JUDGE-EVAL-CLI] assay judge eval prints a line per claim and a summary, overall and by kind', async () => {
  await withFile(`${small.map((c) => JSON.stringify(c)).join('\n')}\n\n`, async (path) => {
    const { code, stdout, stderr } = await assay(['judge', 'eval', path]);
    assert.equal(code, 0, stderr);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, small.length + 1);
    for (const [i, c] of small.entries()) {
      const expected = judgeClaim(c.claim, c.passage, currentJudgeVersion);
      assert.deepEqual(lines[i], {
        line: i + 1,
        kind: c.kind ?? null,
        label: c.label ?? null,
        entailment: expected.entailment,
        state: expected.state,
        verified: expected.state === 'verified',
      });
    }
    const summary = lines.at(-1);
    assert.equal(summary.summary, true);
    assert.deepEqual(summary.judge, {
      driver: 'builtin',
      model: 'assay-lexical-judge',
      version: '3.0.0',
      promptHash: judgePromptHash('3.0.0'),
    });
    assert.equal(summary.cases, 4);
    assert.equal(summary.labelled, 3);
    assert.equal(summary.sensitivity, 1);
    assert.equal(summary.specificity, 1);
    assert.equal(summary.balancedAccuracy, 1);
    assert.deepEqual(Object.keys(summary.byKind).sort(), ['changed_unit', 'flipped_negation', 'number_format']);
    assert.deepEqual(summary.byKind.changed_unit, {
      cases: 1,
      positives: 0,
      negatives: 1,
      sensitivity: null,
      specificity: 1,
      balancedAccuracy: 1,
    });
  });
  // --version picks an older rule set: 1.2.0 took 120 seconds for a changed number.
  await withFile(`${JSON.stringify(small[0])}\n`, async (path) => {
    const { code, stdout } = await assay(['judge', 'eval', path, '--version', '1.2.0']);
    assert.equal(code, 0);
    const [row, summary] = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(row.state, 'contradicted');
    assert.equal(summary.judge.version, '1.2.0');
    assert.equal(summary.sensitivity, 0);
  });
});

test('[JUDGE-EVAL-CLI] a bad line is named by its number and exits 2; so do an unknown version and a missing judge', async () => {
  const good = JSON.stringify(small[0]);
  const bad: [string, RegExp][] = [
    [`${good}\nnot json\n`, /:2: not JSON/],
    [`${good}\n\n${JSON.stringify({ passage })}\n`, /:3: "claim" must be a non-empty string/],
    [`${JSON.stringify({ claim: 'x' })}\n`, /:1: "passage" must be a non-empty string/],
    [`${JSON.stringify({ passage, claim: 'x', label: 'yes' })}\n`, /:1: "label" must be true or false/],
    [`[1, 2]\n`, /:1: expected a JSON object/],
  ];
  for (const [text, message] of bad) {
    await withFile(text, async (path) => {
      const { code, stdout, stderr } = await assay(['judge', 'eval', path]);
      assert.equal(code, 2, text);
      assert.match(stderr, message);
      assert.equal(stdout, '');
    });
  }
  await withFile(`${good}\n`, async (path) => {
    const unknown = await assay(['judge', 'eval', path, '--version', '9.9.9']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown judge version 9\.9\.9/);
    const openai = await assay(['judge', 'eval', path], { ASSAY_JUDGE: 'openai' });
    assert.equal(openai.code, 1);
    assert.match(openai.stderr, /ASSAY_JUDGE_URL is not set/);
  });
  const usage = await assay(['judge']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: assay judge eval/);
});

test('[JUDGE-DETERMINISTIC] a fresh process (WordNet read anew) judges the shipped set exactly as this one does', async () => {
  const { code, stdout, stderr } = await assay(['judge', 'eval', labelledPath]);
  assert.equal(code, 0, stderr);
  const rows = stdout
    .trim()
    .split('\n')
    .slice(0, -1)
    .map((l) => JSON.parse(l));
  const cases = parseCases(readFileSync(labelledPath, 'utf8'));
  assert.equal(rows.length, cases.length);
  for (const [i, c] of cases.entries()) {
    const j = judgeClaim(c.claim, c.passage, currentJudgeVersion);
    assert.deepEqual([rows[i].entailment, rows[i].state], [j.entailment, j.state], c.claim);
  }
});

test('[JUDGE-ACCURACY] on the shipped labelled set, 2.0.0 reaches 70% balanced accuracy and 85% specificity, 3.0.0 95% specificity', async () => {
  const cases = parseCases(readFileSync(labelledPath, 'utf8'));
  const current = await evaluate(cases, builtinJudge, '2.0.0');
  const old = await evaluate(cases, builtinJudge, '1.2.0');
  assert.ok(current.overall!.balancedAccuracy! >= 0.7, `balanced accuracy ${current.overall!.balancedAccuracy}`);
  assert.ok(current.overall!.specificity! >= 0.85, `specificity ${current.overall!.specificity}`);
  assert.ok(current.overall!.balancedAccuracy! > old.overall!.balancedAccuracy!);
  // 3.0.0 puts specificity first: on the set 2.0.0 was tuned on it lets fewer than one false claim in twenty through.
  const v3 = await evaluate(cases, builtinJudge, '3.0.0');
  assert.ok(v3.overall!.specificity! >= 0.95, `3.0.0 specificity ${v3.overall!.specificity}`);
  assert.ok(v3.overall!.balancedAccuracy! >= 0.7, `3.0.0 balanced accuracy ${v3.overall!.balancedAccuracy}`);
});

test('[JUDGE-LABELLED-SET] the shipped set: 200 cases or more, balanced, every kind, several domains', () => {
  const rows = readFileSync(labelledPath, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { passage: string; claim: string; label: boolean; kind: string; domain: string });
  assert.ok(rows.length >= 200);
  for (const r of rows) {
    assert.equal(typeof r.passage, 'string');
    assert.equal(typeof r.claim, 'string');
    assert.equal(typeof r.label, 'boolean');
    assert.equal(typeof r.domain, 'string');
  }
  const positives = rows.filter((r) => r.label).length;
  assert.ok(positives / rows.length >= 0.4 && positives / rows.length <= 0.6, `${positives} of ${rows.length}`);
  const kinds = new Set(rows.map((r) => r.kind));
  for (const k of [
    'paraphrase',
    'verbatim',
    'number_format',
    'swapped_roles',
    'reversed_comparison',
    'changed_number',
    'changed_unit',
    'flipped_negation',
    'quantifier',
    'antonym',
    'added_fact',
    'unrelated',
  ])
    assert.ok(kinds.has(k), k);
  assert.ok(new Set(rows.map((r) => r.domain)).size >= 6);
  assert.equal(new Set(rows.map((r) => `${r.passage}\n${r.claim}`)).size, rows.length, 'no case twice');
});

test('[JUDGE-EVAL-CLI] with ASSAY_JUDGE=openai the eval asks the model endpoint and names the model it answered as', async () => {
  const server = await startOpenAIServer();
  try {
    const cases = [
      { passage: 'The window is two minutes. has:window', claim: 'The window is 2 minutes. needs:window', label: true },
      { passage: 'The window is two minutes.', claim: 'The window is 2 hours. verdict:contradicted', label: false },
    ];
    await withFile(`${cases.map((c) => JSON.stringify(c)).join('\n')}\n`, async (path) => {
      const r = await assay(['judge', 'eval', path], {
        ASSAY_JUDGE: 'openai',
        ASSAY_JUDGE_URL: server.url,
        ASSAY_JUDGE_MODEL: 'judge-alias',
      });
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.slice(0, 2).map((l) => [l.state, l.verified]),
        [
          ['verified', true],
          ['contradicted', false],
        ],
      );
      const summary = lines.at(-1);
      assert.deepEqual(
        [summary.judge.driver, summary.judge.model, summary.judge.version],
        ['openai', answeredModelDefault, '2.2.0'],
      );
      assert.equal(summary.balancedAccuracy, 1);
    });
    assert.equal(server.requests, 2);
  } finally {
    await server.close();
  }
});
