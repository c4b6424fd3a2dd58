// The model judge driver: each claim is checked against its passage by a language model on any OpenAI-compatible
// endpoint (OpenAI, vLLM, llama.cpp's llama-server, Ollama, ...), through the official `openai` client pointed at
// ASSAY_JUDGE_URL. One request per (claim, passage chunk), MiniCheck style, temperature 0; the entailment is
// P(supported) from the answer's token log-probabilities when the endpoint returns them, else 1 or 0 from the verdict.
// Requests are bounded per process, retried with backoff, cut off by a circuit breaker and cached; when a claim cannot
// be answered the whole run throws JudgeUnavailable, never a partial run and never another judge's answer.
import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import Type from 'typebox';
import { Value } from 'typebox/value';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { Config } from '../../../contracts/index.ts';
import { type Clock, systemClock } from '../../runtime/clock.ts';
import {
  chunkJudgement,
  chunkOverlapCharsDefault,
  chunkCharsDefault,
  chunkPassage,
  claimJudgementIndex,
  modelPromptHash,
  modelPromptVersion,
  parseVerdict,
  renderPrompt,
  supportedProbability,
  type TokenLogprob,
} from './model-prompt.ts';
import {
  type ClaimCase,
  type Judge,
  type JudgeRun,
  JudgeUnavailable,
  type JudgeUsage,
  type Judgement,
  judgeVersionSequence,
} from './port.ts';
import { Breaker, backoffMs, Limiter, retryAfterMs, type Sleep } from './reliability.ts';
import {
  type CachedVerdict,
  chunkHash,
  MemoryVerdictCache,
  type VerdictCache,
  type VerdictKey,
  verdictKey,
} from './verdict-cache.ts';

/** Defaults of the options that have no configuration key. */
export const openaiJudgeDefaults = {
  concurrency: 8,
  requestTimeoutMs: 30_000,
  /** Requests per chunk for endpoint failures (429, 5xx, network, timeout), the first included. */
  attemptsMax: 4,
  backoffBaseMs: 500,
  backoffMaxMs: 8000,
  /** A Retry-After longer than this is not waited for: the claim gives up and the report waits for a later try. */
  retryAfterMaxMs: 30_000,
  breakerFailuresMax: 5,
  breakerCoolDownMs: 30_000,
  chunkChars: chunkCharsDefault,
  chunkOverlapChars: chunkOverlapCharsDefault,
} as const;

/**
 * Tokens the answer may take. `{"verdict":"unsupported"}` is about eight; a fenced answer about fifteen. A longer
 * answer is cut and then fails to parse, which is the right outcome for an answer that is not the JSON asked for.
 */
export const answerTokensMax = 32;
/** Alternatives asked for at each answer token: the three verdicts' first tokens and some room. */
export const topLogprobs = 5;
/** Sent as the bearer token when no API key is configured; local servers (llama.cpp, Ollama) ignore it. */
const noApiKey = 'no-key';

export interface OpenAIJudgeOptions {
  /** The endpoint's base URL, e.g. http://127.0.0.1:11434/v1. */
  baseURL: string;
  /** The model to ask for (the configured name or alias). */
  model: string;
  apiKey?: string;
  /** Requests in flight at most, over every report this judge judges (ASSAY_JUDGE_CONCURRENCY). */
  concurrency?: number;
  /** How long one request may take, headers and body, before it is abandoned and retried (ASSAY_JUDGE_TIMEOUT_MS). */
  requestTimeoutMs?: number;
  attemptsMax?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  retryAfterMaxMs?: number;
  breakerFailuresMax?: number;
  breakerCoolDownMs?: number;
  chunkChars?: number;
  chunkOverlapChars?: number;
  /** Where verdicts are looked up before asking and stored after; null for none. */
  cache?: VerdictCache | null;
  clock?: Clock;
  /** Waits between retries. */
  sleep?: Sleep;
  /** The jitter source, 0 <= r < 1. */
  random?: () => number;
}

const systemSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal });

type EntailmentFrom = CachedVerdict['entailmentFrom'];

/** One (chunk, claim) pair to judge; pairs repeated within a run are judged once. */
interface Item {
  chunk: string;
  chunkHash: string;
  claim: string;
}

interface Outcome {
  judgement: Judgement;
  /** null for judge_error, which has no entailment to speak of. */
  from: EntailmentFrom | null;
  /** The model id that answered (for a cached verdict, the one it was cached under). */
  model: string;
  cached: boolean;
}

type Failure = { retryable: boolean; reason: string; retryAfterMs: number | null };

export class OpenAIJudge implements Judge {
  readonly driver = 'openai' as const;
  readonly version = modelPromptVersion;
  /**
   * Every model prompt version, all judged with the current prompt: 2.1.0 is retired, not rendered (its quotes could
   * be closed by the text they quoted), so an edition recorded to be judged by it (published before 2.2.0) is judged
   * by the current prompt, and its report names that one.
   */
  readonly versions: readonly string[] = judgeVersionSequence.modelPrompt;
  readonly promptHash = modelPromptHash;
  /** The model name asked for. */
  readonly requestedModel: string;
  readonly options: Readonly<Required<Omit<OpenAIJudgeOptions, 'apiKey' | 'cache' | 'clock' | 'sleep' | 'random'>>>;
  readonly #client: OpenAI;
  readonly #limiter: Limiter;
  readonly #breaker: Breaker;
  readonly #cache: VerdictCache | null;
  readonly #clock: Clock;
  readonly #sleep: Sleep;
  readonly #random: () => number;
  readonly #closed = new AbortController();
  /** The model id the endpoint last answered with: the cache is looked up under it. Unknown until a first answer. */
  #answeredModel: string | null = null;

  constructor(options: OpenAIJudgeOptions) {
    const o = { ...openaiJudgeDefaults, ...definedOnly(options) };
    const problems: string[] = [];
    if (!/^https?:\/\/[^/]/.test(o.baseURL)) problems.push(`baseURL ${JSON.stringify(o.baseURL)}: expected http(s)://`);
    if (o.model === '') problems.push('model: empty');
    if (!(o.requestTimeoutMs >= 1)) problems.push(`requestTimeoutMs ${o.requestTimeoutMs}: expected >= 1`);
    if (!(Number.isInteger(o.attemptsMax) && o.attemptsMax >= 1)) problems.push(`attemptsMax ${o.attemptsMax}: >= 1`);
    if (!(o.backoffBaseMs >= 0 && o.backoffBaseMs <= o.backoffMaxMs)) {
      problems.push(`backoffBaseMs ${o.backoffBaseMs} must be from 0 to backoffMaxMs ${o.backoffMaxMs}`);
    }
    if (problems.length > 0) throw new Error(`bad model judge options: ${problems.join('; ')}`);
    chunkPassage('', o.chunkChars, o.chunkOverlapChars); // checks the chunk size and overlap
    this.options = {
      baseURL: o.baseURL,
      model: o.model,
      concurrency: o.concurrency,
      requestTimeoutMs: o.requestTimeoutMs,
      attemptsMax: o.attemptsMax,
      backoffBaseMs: o.backoffBaseMs,
      backoffMaxMs: o.backoffMaxMs,
      retryAfterMaxMs: o.retryAfterMaxMs,
      breakerFailuresMax: o.breakerFailuresMax,
      breakerCoolDownMs: o.breakerCoolDownMs,
      chunkChars: o.chunkChars,
      chunkOverlapChars: o.chunkOverlapChars,
    };
    this.requestedModel = o.model;
    this.#clock = options.clock ?? systemClock;
    this.#sleep = options.sleep ?? systemSleep;
    this.#random = options.random ?? Math.random;
    this.#cache = options.cache ?? null;
    this.#limiter = new Limiter(o.concurrency);
    this.#breaker = new Breaker(o.breakerFailuresMax, o.breakerCoolDownMs, () => this.#clock.nowMs());
    // Retries, timeouts and backoff are ours (with the injected clock and jitter); the client makes one attempt.
    // Organization and project are pinned so OPENAI_* variables in the environment cannot change the requests.
    this.#client = new OpenAI({
      baseURL: o.baseURL,
      apiKey: options.apiKey || noApiKey,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: o.requestTimeoutMs,
    });
    setMaxListeners(0, this.#closed.signal);
  }

  /** The breaker's state, for health reports. */
  get circuit(): 'closed' | 'open' | 'half-open' {
    return this.#breaker.state;
  }

  async judge(cases: ClaimCase[], version: string = this.version): Promise<JudgeRun> {
    if (!this.versions.includes(version)) {
      throw new Error(`unknown judge version ${version} for the openai driver (it judges ${this.versions.join(', ')})`);
    }
    if (this.#closed.signal.aborted) throw new JudgeUnavailable('the model judge is closed');
    this.#breaker.check();
    const cancel = new AbortController();
    const signal = AbortSignal.any([cancel.signal, this.#closed.signal]);
    setMaxListeners(0, signal);
    const usage: JudgeUsage = { calls: 0, promptTokens: 0, completionTokens: 0, cachedClaims: 0 };
    try {
      // A report names one model. If the endpoint's answers name another model than the cached verdicts (or than
      // each other), the alias moved: judge again under the newest id (what was just answered is cached under it).
      const paid = new Set<string>();
      const first = await this.#judgeOnce(cases, usage, paid, signal);
      if (first.run) return first.run;
      const second = await this.#judgeOnce(cases, usage, paid, signal);
      if (second.run) return second.run;
      throw new JudgeUnavailable(
        `the endpoint answered as several models (${second.models.join(', ')}); a report names one, so it waits`,
      );
    } catch (err) {
      if (this.#closed.signal.aborted && !(err instanceof JudgeUnavailable)) {
        throw new JudgeUnavailable('the model judge was closed while judging');
      }
      throw err;
    } finally {
      // Stops this run's queued and in-flight requests once one claim has failed the run.
      cancel.abort(new JudgeUnavailable('the run was abandoned'));
    }
  }

  async close(): Promise<void> {
    this.#closed.abort(new JudgeUnavailable('the model judge is closed'));
  }

  /** One pass over the cases. `paid` collects the keys of verdicts answered in this run (not free when cached). */
  async #judgeOnce(
    cases: ClaimCase[],
    usage: JudgeUsage,
    paid: Set<string>,
    signal: AbortSignal,
  ): Promise<{ run: JudgeRun; models?: never } | { run?: never; models: string[] }> {
    const items: Item[] = [];
    const itemIndex = new Map<string, number>();
    const caseItems = cases.map(({ claim, passage }) =>
      chunkPassage(passage, this.options.chunkChars, this.options.chunkOverlapChars).map((chunk) => {
        const hash = chunkHash(chunk);
        const dedupe = JSON.stringify([hash, claim]);
        let i = itemIndex.get(dedupe);
        if (i === undefined) {
          i = items.push({ chunk, chunkHash: hash, claim }) - 1;
          itemIndex.set(dedupe, i);
        }
        return i;
      }),
    );
    const outcomes: (Outcome | undefined)[] = new Array(items.length);
    let pending = items.map((_, i) => i);
    const fresh: number[] = [];
    let answered = false;
    try {
      if (this.#answeredModel === null && pending.length > 0) {
        // The cache is keyed by the answered model id, which only an answer tells: the first request goes first.
        const i = pending.shift()!;
        outcomes[i] = await this.#ask(items[i]!, usage, signal);
        fresh.push(i);
      }
      const expected = this.#answeredModel;
      if (this.#cache && expected !== null && pending.length > 0) {
        const keys = pending.map((i) => this.#key(items[i]!, expected));
        const hits = await this.#cache.get(keys);
        pending = pending.filter((i, k) => {
          const hit = hits.get(keys[k]!.id);
          if (!hit) return true;
          outcomes[i] = {
            judgement: { entailment: hit.entailment, state: hit.state },
            from: hit.entailmentFrom,
            model: expected,
            cached: !paid.has(keys[k]!.id),
          };
          return false;
        });
      }
      await Promise.all(
        pending.map(async (i) => {
          outcomes[i] = await this.#ask(items[i]!, usage, signal);
          fresh.push(i);
        }),
      );
      answered = true;
    } finally {
      // What was answered is kept even when the run fails, so the next try of the report pays only for the rest.
      const entries = fresh.flatMap((i) => {
        const o = outcomes[i]!;
        if (o.from === null) return [];
        const key = this.#key(items[i]!, o.model);
        paid.add(key.id);
        return [{ key, verdict: { ...o.judgement, entailmentFrom: o.from } }];
      });
      if (this.#cache && entries.length > 0) {
        const put = this.#cache.put(entries);
        if (answered) await put;
        else await put.catch(() => {}); // the run's own error is the one to report
      }
    }
    const done = outcomes as Outcome[];
    const models = [...new Set(done.map((o) => o.model))];
    if (models.length > 1) {
      // The newest id wins: the last fresh answer's.
      this.#answeredModel = done[fresh.at(-1)!]!.model;
      return { models };
    }
    const judgements: Judgement[] = [];
    const froms = new Set<EntailmentFrom>();
    for (const indices of caseItems) {
      const chunks = indices.map((i) => done[i]!);
      const best = chunks[claimJudgementIndex(chunks.map((o) => o.judgement))]!;
      judgements.push(best.judgement);
      if (best.from) froms.add(best.from);
      if (chunks.every((o) => o.cached)) usage.cachedClaims++;
    }
    return {
      run: {
        model: models[0] ?? this.#answeredModel ?? this.requestedModel,
        version: this.version,
        promptHash: this.promptHash,
        entailmentFrom: froms.size > 1 ? 'mixed' : froms.has('logprobs') ? 'logprobs' : 'verdict',
        judgements,
        usage,
      },
    };
  }

  #key(item: Item, model: string): VerdictKey {
    return verdictKey({
      requestedModel: this.requestedModel,
      model,
      promptHash: this.promptHash,
      chunkHash: item.chunkHash,
      claim: item.claim,
    });
  }

  /**
   * One chunk's verdict. Endpoint failures are retried with backoff up to attemptsMax requests, then the run fails
   * with JudgeUnavailable; an answer that is not the JSON asked for is asked again once, then it is judge_error.
   */
  async #ask(item: Item, usage: JudgeUsage, signal: AbortSignal): Promise<Outcome> {
    const prompt = renderPrompt(item.chunk, item.claim);
    let failures = 0;
    let malformed = 0;
    for (;;) {
      const answer = await this.#request(prompt, usage, signal);
      if ('failure' in answer) {
        const { failure } = answer;
        failures++;
        if (!failure.retryable) throw new JudgeUnavailable(`the judge endpoint refused the request: ${failure.reason}`);
        if (failures >= this.options.attemptsMax) {
          throw new JudgeUnavailable(`the judge endpoint failed ${failures} times: ${failure.reason}`);
        }
        if (failure.retryAfterMs !== null && failure.retryAfterMs > this.options.retryAfterMaxMs) {
          throw new JudgeUnavailable(
            `the judge endpoint asked to wait ${failure.retryAfterMs} ms, more than ${this.options.retryAfterMaxMs}`,
          );
        }
        const backoff = backoffMs(failures, this.options.backoffBaseMs, this.options.backoffMaxMs, this.#random);
        await this.#sleep(Math.max(backoff, failure.retryAfterMs ?? 0), signal);
        continue;
      }
      const verdict = parseVerdict(answer.content);
      if (verdict === null) {
        malformed++;
        if (malformed < 2) continue;
        return { judgement: { entailment: 0, state: 'judge_error' }, from: null, model: answer.model, cached: false };
      }
      const p = supportedProbability(answer.logprobs);
      return {
        judgement: chunkJudgement(verdict, p),
        from: p === null ? 'verdict' : 'logprobs',
        model: answer.model,
        cached: false,
      };
    }
  }

  /** One request, through the breaker and the concurrency bound, with its timeout. */
  async #request(
    prompt: string,
    usage: JudgeUsage,
    signal: AbortSignal,
  ): Promise<{ content: string; model: string; logprobs: TokenLogprob[] | null } | { failure: Failure }> {
    // The breaker admits before a slot is taken: requests waiting for a half-open probe hold no slot the probe needs.
    const probe = await this.#breaker.admit(signal);
    let outcome: 'succeeded' | 'failed' | 'abandoned' = 'abandoned';
    let release: (() => void) | null = null;
    try {
      release = await this.#limiter.acquire(signal);
      if (!probe) this.#breaker.check();
      usage.calls++;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), this.options.requestTimeoutMs);
      try {
        let completion: unknown;
        try {
          completion = await this.#client.chat.completions.create(
            {
              model: this.requestedModel,
              messages: [{ role: 'user', content: prompt }],
              temperature: 0,
              logprobs: true,
              top_logprobs: topLogprobs,
              max_tokens: answerTokensMax,
            },
            { signal: AbortSignal.any([signal, timeout.signal]) },
          );
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          outcome = 'failed';
          return { failure: this.#classify(err, timeout.signal.aborted) };
        }
        const answer = readCompletion(completion);
        if (answer === null) {
          outcome = 'failed';
          return { failure: { retryable: true, reason: 'the answer is not a chat completion', retryAfterMs: null } };
        }
        outcome = 'succeeded';
        usage.promptTokens += answer.promptTokens;
        usage.completionTokens += answer.completionTokens;
        this.#answeredModel = answer.model;
        return answer;
      } finally {
        clearTimeout(timer);
      }
    } finally {
      release?.();
      if (outcome === 'succeeded') this.#breaker.succeeded();
      else if (outcome === 'failed') this.#breaker.failed(probe);
      else this.#breaker.abandoned(probe);
    }
  }

  #classify(err: unknown, timedOut: boolean): Failure {
    if (timedOut || err instanceof APIConnectionTimeoutError) {
      return { retryable: true, reason: `no answer within ${this.options.requestTimeoutMs} ms`, retryAfterMs: null };
    }
    if (err instanceof APIConnectionError) {
      return { retryable: true, reason: `cannot reach the endpoint (${err.message})`, retryAfterMs: null };
    }
    if (err instanceof APIError && !(err instanceof APIUserAbortError) && typeof err.status === 'number') {
      const status = err.status;
      const retryable = status === 408 || status === 429 || status >= 500;
      return {
        retryable,
        reason: `HTTP ${status}${err.message ? `: ${err.message.slice(0, 200)}` : ''}`,
        retryAfterMs: retryable ? retryAfterMs(err.headers, this.#clock.nowMs()) : null,
      };
    }
    // A 200 whose body is not JSON, a connection cut while the body was read, ...: the endpoint misbehaved.
    return { retryable: true, reason: `bad answer (${(err as Error)?.message ?? String(err)})`, retryAfterMs: null };
  }
}

/**
 * The parts of a chat completion the judge reads, from whatever the endpoint sent: a model name and a first choice
 * with a message. Log-probabilities and usage are read when they are well formed and left out otherwise.
 */
const Completion = Type.Object({
  model: Type.String({ minLength: 1 }),
  choices: Type.Array(Type.Unknown(), { minItems: 1 }),
  usage: Type.Optional(Type.Unknown()),
});
const Choice = Type.Object({
  message: Type.Object({ content: Type.Optional(Type.Unknown()) }),
  logprobs: Type.Optional(Type.Unknown()),
});
const TokenLogprobs = Type.Object({
  content: Type.Array(
    Type.Object({ token: Type.String(), logprob: Type.Number(), top_logprobs: Type.Optional(Type.Unknown()) }),
  ),
});
const TopLogprobs = Type.Union([
  Type.Array(Type.Object({ token: Type.String(), logprob: Type.Number() })),
  Type.Null(),
]);
const Usage = Type.Object({
  prompt_tokens: Type.Optional(Type.Unknown()),
  completion_tokens: Type.Optional(Type.Unknown()),
});

/** The parts of a chat completion the judge reads, or null when the body is not one. */
function readCompletion(body: unknown): {
  content: string;
  model: string;
  logprobs: TokenLogprob[] | null;
  promptTokens: number;
  completionTokens: number;
} | null {
  if (!Value.Check(Completion, body)) return null;
  const choice = body.choices[0];
  if (!Value.Check(Choice, choice)) return null;
  const content = choice.message.content;
  const usage = Value.Check(Usage, body.usage) ? body.usage : {};
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : 0);
  return {
    // A null content (a refusal, a tool call) is an answer that is not the JSON asked for.
    content: typeof content === 'string' ? content : '',
    model: body.model,
    logprobs: tokenLogprobs(choice.logprobs),
    promptTokens: count(usage.prompt_tokens),
    completionTokens: count(usage.completion_tokens),
  };
}

/** Each token's log-probability and its alternatives; a token's malformed alternatives count as none given. */
function tokenLogprobs(logprobs: unknown): TokenLogprob[] | null {
  if (!Value.Check(TokenLogprobs, logprobs)) return null;
  return logprobs.content.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    ...(t.top_logprobs === undefined
      ? {}
      : { top_logprobs: Value.Check(TopLogprobs, t.top_logprobs) ? t.top_logprobs : null }),
  }));
}

function definedOnly<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The model judge of a process, from its configuration: ASSAY_JUDGE_URL, ASSAY_JUDGE_MODEL, the key from
 * ASSAY_JUDGE_API_KEY or the file ASSAY_JUDGE_API_KEY_FILE, ASSAY_JUDGE_CONCURRENCY, ASSAY_JUDGE_TIMEOUT_MS. Build one
 * per process: the concurrency bound and the breaker belong to the instance. The verdict cache defaults to a bounded
 * in-memory one; pass the PostgreSQL one to share verdicts across processes and restarts.
 */
export function openaiJudgeFromConfig(
  config: Config,
  extra: Pick<OpenAIJudgeOptions, 'cache' | 'clock' | 'sleep' | 'random'> = {},
): OpenAIJudge {
  const problems: string[] = [];
  if (config.judgeUrl === '') problems.push('ASSAY_JUDGE_URL is not set');
  if (config.judgeModel === '') problems.push('ASSAY_JUDGE_MODEL is not set');
  if (config.judgeApiKey !== '' && config.judgeApiKeyFile !== '') {
    problems.push('ASSAY_JUDGE_API_KEY and ASSAY_JUDGE_API_KEY_FILE are both set; set one');
  }
  let apiKey = config.judgeApiKey;
  if (config.judgeApiKeyFile !== '') {
    try {
      apiKey = readFileSync(config.judgeApiKeyFile, 'utf8').trim();
    } catch (err) {
      problems.push(`ASSAY_JUDGE_API_KEY_FILE=${config.judgeApiKeyFile}: ${(err as Error).message}`);
    }
    if (apiKey === '' && problems.length === 0)
      problems.push(`ASSAY_JUDGE_API_KEY_FILE=${config.judgeApiKeyFile} is empty`);
  }
  if (problems.length > 0) throw new Error(`bad judge configuration (ASSAY_JUDGE=openai):\n  ${problems.join('\n  ')}`);
  return new OpenAIJudge({
    baseURL: config.judgeUrl,
    model: config.judgeModel,
    apiKey,
    concurrency: config.judgeConcurrency,
    requestTimeoutMs: config.judgeTimeoutMs,
    breakerCoolDownMs: config.judgeBreakerCoolDownMs,
    cache: extra.cache === undefined ? new MemoryVerdictCache() : extra.cache,
    ...(extra.clock ? { clock: extra.clock } : {}),
    ...(extra.sleep ? { sleep: extra.sleep } : {}),
    ...(extra.random ? { random: extra.random } : {}),
  });
}
