// The reference set and what the built-in judge scores on it, computed here from the judge's per-case output lines
// and the labels written in the file: no production scoring function is called, so a wrong formula there (balanced
// accuracy as the better of sensitivity and specificity, say) shows as a mismatch with the summary line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { judgeClaim } from '../../actors/verification/judges/builtin.ts';
import { judgeQualityOf, referenceSet } from '../../actors/verification/judges/quality.ts';
import { assayArgs } from '../support/assay-cli.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const referencePath = new URL('./reference.jsonl', import.meta.url).pathname;
const referenceText = readFileSync(referencePath, 'utf8');

interface Case {
  passage: string;
  claim: string;
  label: boolean;
  kind: string;
  domain: string;
}
const cases: Case[] = referenceText
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));

/** Sensitivity, specificity and their mean, from labels and verified flags (the textbook definitions). */
function measure(pairs: { label: boolean; verified: boolean }[]) {
  let tp = 0;
  let p = 0;
  let tn = 0;
  let n = 0;
  for (const { label, verified } of pairs) {
    if (label) {
      p++;
      if (verified) tp++;
    } else {
      n++;
      if (!verified) tn++;
    }
  }
  return { tp, tn, p, n, sensitivity: tp / p, specificity: tn / n, balanced: (tp / p + tn / n) / 2 };
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-4;

test('[JUDGE-REFERENCE] the reference set: the digest its figures name, 150 cases or more, six new domains, every kind, labels from the file', () => {
  assert.equal(`sha256:${createHash('sha256').update(referenceText).digest('hex')}`, referenceSet.digest);
  assert.ok(cases.length >= 150);
  assert.equal(cases.length, referenceSet.cases);
  assert.equal(cases.filter((c) => c.label).length, referenceSet.positives);
  assert.equal(cases.filter((c) => !c.label).length, referenceSet.negatives);
  assert.deepEqual([...new Set(cases.map((c) => c.domain))].sort(), [
    'api_reference',
    'changelog',
    'contract',
    'news',
    'recipe',
    'scientific_abstract',
  ]);
  const kinds = new Set(cases.map((c) => c.kind));
  for (const k of [
    'paraphrase',
    'flipped_negation',
    'antonym',
    'changed_number',
    'added_fact',
    'quantifier',
    'swapped_roles',
  ])
    assert.ok(kinds.has(k), k);
  // None of its passages was used by a set the judge was tuned on.
  const tuned = ['labelled', 'heldout', 'frozen-check', 'tuning'].flatMap((f) =>
    readFileSync(new URL(`./${f}.jsonl`, import.meta.url), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).passage as string),
  );
  for (const c of cases) assert.ok(!tuned.includes(c.passage), c.passage);
});

test('[JUDGE-REFERENCE] assay judge eval on the reference set: 3.0.0 reaches 90% specificity and 65% balanced accuracy, as computed here from its per-case lines', async () => {
  const { stdout } = await run(
    process.execPath,
    [...assayArgs(), 'judge', 'eval', referencePath, '--version', '3.0.0'],
    { cwd: root, env: { ...process.env, ASSAY_JUDGE: 'builtin' }, maxBuffer: 16 * 1024 * 1024 },
  );
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const rows = lines.slice(0, -1) as { line: number; verified: boolean; state: string }[];
  assert.equal(rows.length, cases.length);
  // The label of each case comes from the file (line n is case n-1: the file has no blank lines), not from the output.
  const pairs = rows.map((r) => ({ label: cases[r.line - 1]!.label, verified: r.verified }));
  for (const r of rows) assert.equal(r.verified, r.state === 'verified');
  const m = measure(pairs);
  assert.ok(m.specificity >= 0.9, `specificity ${m.specificity}`);
  assert.ok(m.balanced >= 0.65, `balanced accuracy ${m.balanced}`);
  // The figures the judge publishes for 3.0.0 are these.
  const published = judgeQualityOf('3.0.0')!;
  assert.ok(close(published.sensitivity, m.sensitivity), `${published.sensitivity} against ${m.sensitivity}`);
  assert.ok(close(published.specificity, m.specificity));
  assert.ok(close(published.balancedAccuracy, m.balanced));
  // The summary line says the same: its balanced accuracy is the mean of two figures that differ here.
  const summary = lines.at(-1);
  assert.ok(Math.abs(m.sensitivity - m.specificity) > 0.3, 'a set whose sensitivity and specificity differ');
  assert.ok(close(summary.sensitivity, m.sensitivity));
  assert.ok(close(summary.specificity, m.specificity));
  assert.ok(close(summary.balancedAccuracy, m.balanced), `${summary.balancedAccuracy} against ${m.balanced}`);
  for (const [kind, s] of Object.entries(summary.byKind as Record<string, { balancedAccuracy: number | null }>)) {
    const k = measure(pairs.filter((_, i) => cases[i]!.kind === kind));
    const expected = k.p === 0 ? k.specificity : k.n === 0 ? k.sensitivity : k.balanced;
    assert.ok(close(s.balancedAccuracy!, expected), `${kind}: ${s.balancedAccuracy} against ${expected}`);
  }
});

test('[JUDGE-REFERENCE] every built-in version publishes the figures it scores on the reference set, case by case', () => {
  for (const version of ['1.0.0', '1.1.0', '1.2.0', '2.0.0']) {
    const m = measure(
      cases.map((c) => ({ label: c.label, verified: judgeClaim(c.claim, c.passage, version).state === 'verified' })),
    );
    const published = judgeQualityOf(version)!;
    assert.ok(close(published.sensitivity, m.sensitivity), `${version} sensitivity`);
    assert.ok(close(published.specificity, m.specificity), `${version} specificity`);
    assert.ok(close(published.balancedAccuracy, m.balanced), `${version} balanced accuracy`);
  }
  assert.equal(judgeQualityOf('2.1.0'), null, 'a model prompt publishes no figures');
});
