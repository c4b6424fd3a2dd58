// `npm run bench:judge`: the judges on the shipped labelled set (test/judge/labelled.jsonl), in one run: balanced
// accuracy, sensitivity (supported claims verified) and specificity (unsupported claims not verified) for each
// built-in version, by kind for the current one, and claims judged per second; then the model driver's own cost
// against a loopback test endpoint (claims/s, tokens per claim). Needs no service.
//   npm run bench:judge -- [--file test/judge/labelled.jsonl] [--rounds 20]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { builtinJudge, type Judge } from '../../actors/verification/judges/index.ts';
import { type EvalResult, evaluate, parseCases, type Scores } from '../../cli/judge.ts';
import { benchModelJudge } from './judge-model.ts';

const { values } = parseArgs({
  options: {
    file: { type: 'string', default: new URL('../judge/labelled.jsonl', import.meta.url).pathname },
    rounds: { type: 'string', default: '20' },
  },
});
const rounds = Number(values.rounds);
const cases = parseCases(readFileSync(values.file, 'utf8'), values.file);
const labelled = cases.filter((c) => c.label !== null).length;
console.log(`judge: ${cases.length} cases (${labelled} labelled) from ${values.file}`);

interface Row {
  judge: string;
  result: EvalResult;
  claimsPerSecond: number;
  /** The first pass over the set, which reads WordNet (2.0.0) and fills the per-passage memos. */
  firstPassMs: number;
  /** Endpoint tokens per claim, for a model judge. */
  tokensPerClaim: number | null;
}

/** Judge the set once for the scores, then `rounds` more times for the rate (the first pass loads WordNet). */
async function measure(judge: Judge, version: string): Promise<Row> {
  const result = await evaluate(cases, judge, version);
  let seconds = 0;
  for (let r = 0; r < rounds; r++) seconds += (await evaluate(cases, judge, version)).seconds;
  return {
    judge: `${judge.driver} ${version}`,
    result,
    claimsPerSecond: (cases.length * rounds) / seconds,
    firstPassMs: result.seconds * 1000,
    tokensPerClaim: null,
  };
}

const rows: Row[] = [];
for (const version of builtinJudge.versions) rows.push(await measure(builtinJudge, version));

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '-' : `${(x * 100).toFixed(1)}%`);
const pad = (s: string, n: number) => s.padEnd(n);
console.log('');
console.log(
  `${pad('judge', 16)} ${pad('balanced acc.', 14)} ${pad('sensitivity', 12)} ${pad('specificity', 12)} ${pad('claims/s', 10)} ${pad('first pass', 11)} tokens/claim`,
);
for (const r of rows) {
  const o = r.result.overall;
  console.log(
    `${pad(r.judge, 16)} ${pad(pct(o?.balancedAccuracy), 14)} ${pad(pct(o?.sensitivity), 12)} ${pad(pct(o?.specificity), 12)} ${pad(Math.round(r.claimsPerSecond).toString(), 10)} ${pad(`${r.firstPassMs.toFixed(0)} ms`, 11)} ${r.tokensPerClaim?.toFixed(0) ?? '-'}`,
  );
}

const current = rows.find((r) => r.judge === `builtin ${builtinJudge.version}`)!;
const previous = rows.find((r) => r.judge === 'builtin 1.2.0');
console.log(`\nby kind, ${current.judge} (1.2.0 in brackets):`);
console.log(`${pad('kind', 20)} ${pad('cases', 6)} ${pad('sensitivity', 18)} specificity`);
const both = (now: Scores, before: Scores | undefined, key: 'sensitivity' | 'specificity') =>
  now[key] === null ? '-' : `${pct(now[key])} (${pct(before?.[key])})`;
for (const [kind, s] of Object.entries(current.result.byKind)) {
  const before = previous?.result.byKind[kind];
  console.log(
    `${pad(kind, 20)} ${pad(String(s.cases), 6)} ${pad(both(s, before, 'sensitivity'), 18)} ${both(s, before, 'specificity')}`,
  );
}

// The model driver's figures need a model to mean anything about accuracy; against the loopback test endpoint (its
// verdicts scripted, 50 ms an answer) they say what the driver itself costs: claims per second at the default
// concurrency, and endpoint tokens per claim.
const model = await benchModelJudge({ claims: 400, latencyMs: 50 });
console.log(
  `\nmodel driver (prompt 2.2.0) against the loopback test endpoint, ${model.latencyMs} ms an answer, concurrency ${model.concurrency}: ${Math.round(model.claimsPerSecond)} claims/s (serial would be ${Math.round(1000 / model.latencyMs)}/s; the issue's bar is 50/s), ${model.promptTokensPerClaim.toFixed(0)} prompt + ${model.completionTokensPerClaim.toFixed(0)} completion tokens per claim; accuracy depends on the model, not measured here`,
);
