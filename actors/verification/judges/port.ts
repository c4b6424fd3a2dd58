// The judge port: what the verification pipeline asks of a judge, whichever driver answers. A judge takes claims,
// each with the passage its locator names, and returns one judgement per claim, naming the model, prompt (or rule
// set) version and prompt hash that judged them: the report carries those three, so a report always names the judge
// that made it. Drivers: `builtin` (deterministic rules, no network) and `openai` (a language model on any
// OpenAI-compatible endpoint). Which one runs is configuration (ASSAY_JUDGE); there is no fallback from one to the
// other: a judge that cannot answer throws JudgeUnavailable and the edition waits, pending, to be tried again.

/** The states a claim can end in. `judge_error`: the model's answer was not the verdict asked for, twice. */
export type ClaimState =
  | 'verified'
  | 'partially_supported'
  | 'unsupported'
  | 'contradicted'
  | 'source_missing'
  | 'locator_missing'
  | 'judge_error';

export interface Judgement {
  /** 0..1: how strongly the passage supports the claim. */
  entailment: number;
  state: ClaimState;
}

/** One claim and the passage it cites (the source section its locator names, or the whole source). */
export interface ClaimCase {
  claim: string;
  passage: string;
}

export interface JudgeUsage {
  /** Requests made to the endpoint (retries included). */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Claims answered from the verdict cache, at no cost. */
  cachedClaims: number;
}

/** The judgements of one batch of claims and what made them. */
export interface JudgeRun {
  /** The report's judgeModel: for a model judge, the model id the endpoint answered with, not a configured alias. */
  model: string;
  /** The report's judgePromptVersion: a semantic version in the one sequence all drivers share. */
  version: string;
  /** The report's judgePromptHash: `sha256:<hex>` of the prompt (or rules) text of that version. */
  promptHash: string;
  /**
   * How entailments were obtained: `rules` (the built-in judge), `logprobs` (the probability of `supported` from the
   * endpoint's token log-probabilities), `verdict` (1 or 0 from the verdict, when the endpoint gives no
   * log-probabilities), or `mixed` (some claims each way).
   */
  entailmentFrom: 'rules' | 'logprobs' | 'verdict' | 'mixed' | 'classifier';
  /** One per case, in the order of the cases. */
  judgements: Judgement[];
  /** Endpoint usage for a model judge; null for the built-in one. */
  usage: JudgeUsage | null;
}

export interface Judge {
  readonly driver: 'builtin' | 'openai' | 'onnx';
  /** The version this judge judges new editions with. */
  readonly version: string;
  /** Every version this judge can judge with (the built-in judge keeps its old rule sets reproducible). */
  readonly versions: readonly string[];
  /**
   * Judge each case. `version` picks one of `versions` (default `version`). Throws JudgeUnavailable when the judge
   * cannot answer (endpoint down, circuit open, out of retries); never answers with another judge instead.
   */
  judge(cases: ClaimCase[], version?: string): Promise<JudgeRun>;
  /** Load what the judge needs (a local model) and check it; a judge with nothing to load has none. */
  start?(): Promise<void>;
  close?(): Promise<void>;
}

/** The judge cannot answer now: the edition stays pending and its verification is retried later. */
export class JudgeUnavailable extends Error {
  override readonly name = 'JudgeUnavailable';
}

/**
 * The one version sequence every driver shares, in order (a mandate's min_judge_version compares against it):
 * the built-in rule sets 1.0.0, 1.1.0, 1.2.0 and 2.0.0, the model prompts 2.1.0 and 2.2.0, the built-in rules
 * 3.0.0, then the local cross-encoder's input format 3.1.0. A new rule set or prompt takes the next version;
 * versions are never changed once released.
 */
export const judgeVersionSequence = {
  builtin: ['1.0.0', '1.1.0', '1.2.0', '2.0.0', '3.0.0'],
  modelPrompt: ['2.1.0', '2.2.0'],
  onnx: ['3.1.0'],
} as const;
