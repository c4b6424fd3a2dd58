// `assay judge eval <file.jsonl>`: judge labelled claims with the configured judge and say how well it did. Each line
// of the file is one JSON object: `passage`, `claim`, optional `label` (true when the passage supports the claim)
// and optional `kind`. It writes one JSON line per case, then a summary line (balanced accuracy, sensitivity and
// specificity, overall and by kind) when labels are given. Needs no running service, NATS or database.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Config } from '../contracts/index.ts';
import { type ClaimCase, type Judge, judgeFromConfig } from '../actors/index.ts';

export interface LabelledCase extends ClaimCase {
  /** 1-based line number in the file. */
  line: number;
  label: boolean | null;
  kind: string | null;
}

/** Cases one run judges at most: a file with more is refused rather than held in memory. */
export const casesMax = 100_000;

export class BadCaseFile extends Error {
  override readonly name = 'BadCaseFile';
}

/** Parse JSON lines; blank lines are skipped. Throws BadCaseFile naming the first bad line. */
export function parseCases(text: string, file = 'input'): LabelledCase[] {
  const cases: LabelledCase[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    if (raw === '') continue;
    const where = `${file}:${i + 1}`;
    if (cases.length === casesMax) throw new BadCaseFile(`${where}: more than ${casesMax} cases; split the file`);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      throw new BadCaseFile(`${where}: not JSON (${(err as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new BadCaseFile(`${where}: expected a JSON object`);
    const o = value as Record<string, unknown>;
    if (typeof o.passage !== 'string' || o.passage.trim() === '')
      throw new BadCaseFile(`${where}: "passage" must be a non-empty string`);
    if (typeof o.claim !== 'string' || o.claim.trim() === '')
      throw new BadCaseFile(`${where}: "claim" must be a non-empty string`);
    if (o.label !== undefined && typeof o.label !== 'boolean')
      throw new BadCaseFile(`${where}: "label" must be true or false when given`);
    if (o.kind !== undefined && typeof o.kind !== 'string') throw new BadCaseFile(`${where}: "kind" must be a string`);
    cases.push({
      line: i + 1,
      passage: o.passage,
      claim: o.claim,
      label: (o.label as boolean | undefined) ?? null,
      kind: (o.kind as string | undefined) ?? null,
    });
  }
  return cases;
}

export interface Scores {
  cases: number;
  /** Labelled true: the passage supports the claim. */
  positives: number;
  negatives: number;
  /** Share of supported claims judged verified (null without any). */
  sensitivity: number | null;
  /** Share of unsupported claims not judged verified (null without any). */
  specificity: number | null;
  /** Mean of sensitivity and specificity; the one that exists when a kind has one class only. */
  balancedAccuracy: number | null;
}

export function scores(rows: { label: boolean; verified: boolean }[]): Scores {
  const positives = rows.filter((r) => r.label);
  const negatives = rows.filter((r) => !r.label);
  const sensitivity = positives.length === 0 ? null : positives.filter((r) => r.verified).length / positives.length;
  const specificity = negatives.length === 0 ? null : negatives.filter((r) => !r.verified).length / negatives.length;
  const parts = [sensitivity, specificity].filter((x): x is number => x !== null);
  return {
    cases: rows.length,
    positives: positives.length,
    negatives: negatives.length,
    sensitivity: round4(sensitivity),
    specificity: round4(specificity),
    balancedAccuracy: parts.length === 0 ? null : round4(parts.reduce((a, b) => a + b, 0) / parts.length),
  };
}

const round4 = (x: number | null) => (x === null ? null : Math.round(x * 10_000) / 10_000);

export interface EvalResult {
  rows: {
    line: number;
    kind: string | null;
    label: boolean | null;
    entailment: number;
    state: string;
    verified: boolean;
  }[];
  model: string;
  version: string;
  promptHash: string;
  /** Over the labelled cases; null when none is labelled. */
  overall: Scores | null;
  byKind: Record<string, Scores>;
  seconds: number;
}

/** Judge every case with `judge` at `version` and score the labelled ones. `now` measures the judging time. */
export async function evaluate(
  cases: LabelledCase[],
  judge: Judge,
  version: string = judge.version,
  now: () => number = () => performance.now(),
): Promise<EvalResult> {
  const started = now();
  const run = await judge.judge(
    cases.map((c) => ({ claim: c.claim, passage: c.passage })),
    version,
  );
  const seconds = (now() - started) / 1000;
  const rows = cases.map((c, i) => {
    const j = run.judgements[i]!;
    return {
      line: c.line,
      kind: c.kind,
      label: c.label,
      entailment: j.entailment,
      state: j.state,
      verified: j.state === 'verified',
    };
  });
  const labelled = rows.filter((r): r is (typeof rows)[number] & { label: boolean } => r.label !== null);
  const kinds = [...new Set(labelled.map((r) => r.kind ?? '(none)'))].sort();
  const byKind: Record<string, Scores> = {};
  for (const k of kinds) byKind[k] = scores(labelled.filter((r) => (r.kind ?? '(none)') === k));
  return {
    rows,
    model: run.model,
    version: run.version,
    promptHash: run.promptHash,
    overall: labelled.length === 0 ? null : scores(labelled),
    byKind,
    seconds,
  };
}

const usage = 'usage: assay judge eval <file.jsonl> [--version <judge version>]';

/**
 * Returns the exit code: 0 when judged, 2 for bad input (a bad line, an unknown version, a bad command), 1 when the
 * configured judge cannot be had.
 */
export async function judgeCommand(
  config: Config,
  args: string[],
  out: Pick<Console, 'log' | 'error'> = console,
): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'eval') {
    out.error(usage);
    return 2;
  }
  let parsed: ReturnType<typeof parseArgs<{ options: { version: { type: 'string' } }; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, options: { version: { type: 'string' } } });
  } catch (err) {
    out.error(`assay judge eval: ${(err as Error).message}\n${usage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    out.error(usage);
    return 2;
  }
  const file = positionals[0]!;
  let judge: Judge;
  try {
    judge = judgeFromConfig(config);
    await judge.start?.();
  } catch (err) {
    out.error(`assay judge eval: ${(err as Error).message}`);
    return 1;
  }
  const version = values.version ?? judge.version;
  if (!judge.versions.includes(version)) {
    out.error(`assay judge eval: unknown judge version ${version} (known: ${judge.versions.join(', ')})`);
    return 2;
  }
  let cases: LabelledCase[];
  try {
    cases = parseCases(await readFile(file, 'utf8'), file);
  } catch (err) {
    out.error(`assay judge eval: ${(err as Error).message}`);
    return 2;
  }
  const result = await evaluate(cases, judge, version);
  for (const r of result.rows) out.log(JSON.stringify(r));
  out.log(
    JSON.stringify({
      summary: true,
      judge: { driver: judge.driver, model: result.model, version: result.version, promptHash: result.promptHash },
      cases: result.rows.length,
      verified: result.rows.filter((r) => r.verified).length,
      ...(result.overall
        ? {
            balancedAccuracy: result.overall.balancedAccuracy,
            sensitivity: result.overall.sensitivity,
            specificity: result.overall.specificity,
            labelled: result.overall.cases,
            byKind: result.byKind,
          }
        : {}),
    }),
  );
  return 0;
}
