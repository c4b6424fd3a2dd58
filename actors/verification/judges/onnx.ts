// The local model judge (ASSAY_JUDGE=onnx): an NLI or MiniCheck-style cross-encoder run in this process with
// onnxruntime-node, from a directory the operator supplies (ASSAY_JUDGE_MODEL_DIR): the model (model.onnx, or
// onnx/model.onnx as Hugging Face exports lay it out), its tokenizer (tokenizer.json, with tokenizer_config.json when
// there is one) and config.json, whose id2label names the classes. Nothing is downloaded: passages never leave the
// machine. Each claim is the hypothesis and each chunk of its passage the premise; P(entailment) over the classes is
// the chunk's entailment, a contradiction class that wins makes it contradicted, and the claim takes its best chunk
// as the model judge does (model-prompt.ts: chunking, states, best chunk). Pairs are run in batches, verdicts are
// cached under the model's digest, and the version sequence and errata rules are the other drivers'.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Config } from '../../../contracts/index.ts';
import {
  chunkJudgement,
  chunkPassage,
  claimJudgementIndex,
  partiallySupportedFrom,
  verifiedFrom,
} from './model-prompt.ts';
import {
  type ClaimCase,
  type Judge,
  type Judgement,
  type JudgeRun,
  JudgeUnavailable,
  judgeVersionSequence,
} from './port.ts';
import { chunkHash, MemoryVerdictCache, type VerdictCache, verdictKey } from './verdict-cache.ts';

/** The version of this driver's input format and reading of the classes, in the one sequence of every driver. */
export const onnxJudgeVersion = '3.1.0';

/**
 * How the driver asks the model and reads its answer; hashed, with the model's and tokenizer's digests, into the
 * report's judgePromptHash, so a report names exactly what judged it.
 */
export const onnxJudgeRules = `Local cross-encoder judge ${onnxJudgeVersion}.
1. The passage is cut into chunks of at most chunkChars characters on sentence boundaries, each after the first
   repeating the last sentences of the one before up to overlapChars (model-prompt.ts chunkPassage).
2. Each (chunk, claim) pair is tokenized as a pair: the chunk first (the premise), the claim second (the hypothesis),
   with the tokenizer's own special tokens. A pair longer than maxTokens has its chunk shortened at its end until it
   fits.
3. The model's logits for the pair, over the classes config.json names (id2label), go through a softmax. The class
   whose name contains "entail" or is "supported" (any case) is entailment; one containing "contradict" or
   "refute" is contradiction; the others are neither.
4. A chunk whose highest class is contradiction is contradicted, entailment min(P(entailment), 0.1); otherwise its
   entailment is P(entailment): verified from ${verifiedFrom}, partially_supported from ${partiallySupportedFrom},
   unsupported below.
5. A claim takes its best chunk: the highest entailment when verified or partially supported, else a contradicted
   chunk, else the highest unsupported one.`;

export interface OnnxJudgeOptions {
  /** The directory holding the model, tokenizer.json and config.json. */
  modelDir: string;
  /** The model's name in reports (judgeModel is `<name>@<12 hex of the model's sha256>`); default: the folder name. */
  name?: string;
  /** Pairs per inference call. */
  batchSize?: number;
  chunkChars?: number;
  chunkOverlapChars?: number;
  /** The longest pair, in tokens; default: tokenizer_config.json's model_max_length, at most 512. */
  maxTokens?: number;
  cache?: VerdictCache | null;
}

export const onnxJudgeDefaults = { batchSize: 8, chunkChars: 1200, chunkOverlapChars: 300, maxTokensMax: 512 };

/** The model directory is not usable: the judge refuses to start (a configuration error, not a wait). */
export class OnnxModelError extends Error {
  override readonly name = 'OnnxModelError';
}

interface Labels {
  count: number;
  entailment: number;
  contradiction: number | null;
}

/** What onnxruntime-node and the tokenizer give, loaded on start (the module is imported only by this driver). */
interface Loaded {
  session: import('onnxruntime-node').InferenceSession;
  ort: typeof import('onnxruntime-node');
  tokenizer: import('@huggingface/tokenizers').Tokenizer;
  padId: number;
  withTokenTypes: boolean;
}

interface Pair {
  chunk: string;
  claim: string;
}

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

export class OnnxJudge implements Judge {
  readonly driver = 'onnx' as const;
  readonly version = onnxJudgeVersion;
  readonly versions: readonly string[] = judgeVersionSequence.onnx;
  /** judgeModel: the name and the model file's digest, so an erratum can name these weights and no others. */
  readonly model: string;
  readonly promptHash: string;
  readonly batchSize: number;
  readonly chunkChars: number;
  readonly chunkOverlapChars: number;
  readonly maxTokens: number;
  readonly modelPath: string;
  readonly labels: Labels;
  readonly #tokenizerJson: unknown;
  readonly #tokenizerConfig: Record<string, unknown>;
  readonly #cache: VerdictCache | null;
  #loading: Promise<Loaded> | null = null;
  /** One inference at a time per process: onnxruntime already uses the cores for one batch. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(o: OnnxJudgeOptions) {
    const dir = o.modelDir;
    if (!dir) throw new OnnxModelError('ASSAY_JUDGE_MODEL_DIR is not set (a directory with the ONNX model)');
    const modelPath = [join(dir, 'model.onnx'), join(dir, 'onnx', 'model.onnx')].find((p) => existsSync(p));
    if (!modelPath) throw new OnnxModelError(`${dir}: no model.onnx (nor onnx/model.onnx)`);
    this.modelPath = modelPath;
    const tokenizerPath = join(dir, 'tokenizer.json');
    if (!existsSync(tokenizerPath)) throw new OnnxModelError(`${dir}: no tokenizer.json`);
    const tokenizerText = readFileSync(tokenizerPath, 'utf8');
    this.#tokenizerJson = parseJson(tokenizerText, tokenizerPath);
    const configPath = join(dir, 'tokenizer_config.json');
    this.#tokenizerConfig = existsSync(configPath)
      ? (parseJson(readFileSync(configPath, 'utf8'), configPath) as Record<string, unknown>)
      : {};
    const modelConfigPath = join(dir, 'config.json');
    if (!existsSync(modelConfigPath))
      throw new OnnxModelError(`${dir}: no config.json (its id2label names the classes)`);
    this.labels = labelsOf(parseJson(readFileSync(modelConfigPath, 'utf8'), modelConfigPath), modelConfigPath);
    this.batchSize = o.batchSize ?? onnxJudgeDefaults.batchSize;
    if (!(Number.isInteger(this.batchSize) && this.batchSize >= 1 && this.batchSize <= 1024))
      throw new OnnxModelError(`batch size ${this.batchSize}: expected 1 to 1024`);
    this.chunkChars = o.chunkChars ?? onnxJudgeDefaults.chunkChars;
    this.chunkOverlapChars = o.chunkOverlapChars ?? onnxJudgeDefaults.chunkOverlapChars;
    chunkPassage('', this.chunkChars, this.chunkOverlapChars); // checks the chunk size and overlap
    const declared = Number(this.#tokenizerConfig.model_max_length);
    this.maxTokens =
      o.maxTokens ??
      (Number.isInteger(declared) && declared > 0
        ? Math.min(declared, onnxJudgeDefaults.maxTokensMax)
        : onnxJudgeDefaults.maxTokensMax);
    const modelDigest = sha256(readFileSync(modelPath));
    this.model = `${o.name || basename(dir.replace(/\/+$/, ''))}@${modelDigest.slice(0, 12)}`;
    this.promptHash = `sha256:${sha256(
      [
        onnxJudgeRules,
        `model sha256:${modelDigest}`,
        `tokenizer sha256:${sha256(tokenizerText)}`,
        `classes ${JSON.stringify(this.labels)}`,
        `chunkChars ${this.chunkChars} overlapChars ${this.chunkOverlapChars} maxTokens ${this.maxTokens}`,
      ].join('\n'),
    )}`;
    this.#cache = o.cache === undefined ? new MemoryVerdictCache() : o.cache;
  }

  /** Load the model and the tokenizer and check that the model answers one score per class. */
  start(): Promise<void> {
    return this.#load().then(() => undefined);
  }

  #load(): Promise<Loaded> {
    this.#loading ??= (async () => {
      const ort = await import('onnxruntime-node');
      const { Tokenizer } = await import('@huggingface/tokenizers');
      let session: Loaded['session'];
      try {
        session = await ort.InferenceSession.create(this.modelPath, { graphOptimizationLevel: 'all' });
      } catch (err) {
        throw new OnnxModelError(`${this.modelPath}: not a model onnxruntime can load (${(err as Error).message})`);
      }
      for (const name of ['input_ids', 'attention_mask'])
        if (!session.inputNames.includes(name))
          throw new OnnxModelError(`${this.modelPath}: the model has no ${name} input (inputs: ${session.inputNames})`);
      let tokenizer: Loaded['tokenizer'];
      try {
        tokenizer = new Tokenizer(this.#tokenizerJson as object, this.#tokenizerConfig);
      } catch (err) {
        throw new OnnxModelError(`tokenizer.json: not a tokenizer this driver can read (${(err as Error).message})`);
      }
      const padToken = typeof this.#tokenizerConfig.pad_token === 'string' ? this.#tokenizerConfig.pad_token : null;
      const loaded: Loaded = {
        session,
        ort,
        tokenizer,
        padId: (padToken === null ? undefined : tokenizer.token_to_id(padToken)) ?? 0,
        withTokenTypes: session.inputNames.includes('token_type_ids'),
      };
      const probe = await this.#infer(loaded, [{ chunk: 'A passage.', claim: 'A claim.' }]);
      if (probe.length !== 1 || probe[0]!.length !== this.labels.count)
        throw new OnnxModelError(
          `${this.modelPath}: the model answers ${probe[0]?.length ?? 0} scores per pair; config.json names ${this.labels.count} classes`,
        );
      return loaded;
    })();
    // A failed load is not remembered: the next start or judge tries again.
    this.#loading.catch(() => {
      this.#loading = null;
    });
    return this.#loading;
  }

  async judge(cases: ClaimCase[], version: string = this.version): Promise<JudgeRun> {
    if (!this.versions.includes(version)) throw new Error(`unknown judge version ${version}`);
    const loaded = await this.#load();
    // Every (chunk, claim) pair of the run, each once.
    const pairs: Pair[] = [];
    const index = new Map<string, number>();
    const perCase = cases.map(({ claim, passage }) =>
      chunkPassage(passage, this.chunkChars, this.chunkOverlapChars).map((chunk) => {
        const id = JSON.stringify([chunk, claim]);
        let i = index.get(id);
        if (i === undefined) {
          i = pairs.push({ chunk, claim }) - 1;
          index.set(id, i);
        }
        return i;
      }),
    );
    const keys = pairs.map((p) =>
      verdictKey({
        requestedModel: this.model,
        model: this.model,
        promptHash: this.promptHash,
        chunkHash: chunkHash(p.chunk),
        claim: p.claim,
      }),
    );
    const done: (Judgement | undefined)[] = new Array(pairs.length);
    const cached = new Set<number>();
    if (this.#cache && pairs.length > 0) {
      const hits = await this.#cache.get(keys);
      keys.forEach((k, i) => {
        const hit = hits.get(k.id);
        if (hit) {
          done[i] = { entailment: hit.entailment, state: hit.state };
          cached.add(i);
        }
      });
    }
    const todo = pairs.map((_, i) => i).filter((i) => done[i] === undefined);
    let calls = 0;
    for (let at = 0; at < todo.length; at += this.batchSize) {
      const batch = todo.slice(at, at + this.batchSize);
      let scores: number[][];
      try {
        scores = await this.#serial(() =>
          this.#infer(
            loaded,
            batch.map((i) => pairs[i]!),
          ),
        );
      } catch (err) {
        // A failed inference (out of memory, a broken model) is not a judgement: the edition waits.
        throw new JudgeUnavailable(`the local model could not judge: ${(err as Error).message}`);
      }
      calls++;
      batch.forEach((i, k) => {
        done[i] = this.#chunkJudgement(scores[k]!);
      });
    }
    if (this.#cache && todo.length > 0)
      await this.#cache.put(
        todo.map((i) => ({ key: keys[i]!, verdict: { ...done[i]!, entailmentFrom: 'classifier' as const } })),
      );
    let cachedClaims = 0;
    const judgements = perCase.map((indices) => {
      const chunks = indices.map((i) => done[i]!);
      if (indices.every((i) => cached.has(i))) cachedClaims++;
      return chunks[claimJudgementIndex(chunks)]!;
    });
    return {
      model: this.model,
      version,
      promptHash: this.promptHash,
      entailmentFrom: 'classifier',
      judgements,
      usage: { calls, promptTokens: 0, completionTokens: 0, cachedClaims },
    };
  }

  #chunkJudgement(logits: number[]): Judgement {
    const max = Math.max(...logits);
    const exps = logits.map((x) => Math.exp(x - max));
    const total = exps.reduce((a, b) => a + b, 0);
    const p = exps.map((x) => x / total);
    const top = p.indexOf(Math.max(...p));
    const contradicted = this.labels.contradiction !== null && top === this.labels.contradiction;
    return chunkJudgement(contradicted ? 'contradicted' : 'supported', p[this.labels.entailment]!);
  }

  /** Logits per pair: one padded batch through the session. */
  async #infer(l: Loaded, batch: Pair[]): Promise<number[][]> {
    const encoded = batch.map((p) => this.#encode(l, p));
    const width = Math.max(...encoded.map((e) => e.ids.length));
    const ids = new BigInt64Array(batch.length * width).fill(BigInt(l.padId));
    const mask = new BigInt64Array(batch.length * width);
    const types = new BigInt64Array(batch.length * width);
    encoded.forEach((e, row) => {
      for (let k = 0; k < e.ids.length; k++) {
        ids[row * width + k] = BigInt(e.ids[k]!);
        mask[row * width + k] = 1n;
        types[row * width + k] = BigInt(e.types[k] ?? 0);
      }
    });
    const dims = [batch.length, width];
    const feeds: Record<string, import('onnxruntime-node').Tensor> = {
      input_ids: new l.ort.Tensor('int64', ids, dims),
      attention_mask: new l.ort.Tensor('int64', mask, dims),
    };
    if (l.withTokenTypes) feeds.token_type_ids = new l.ort.Tensor('int64', types, dims);
    const out = await l.session.run(feeds);
    const logits = out[l.session.outputNames[0]!]!;
    const classes = logits.dims.at(-1) ?? 0;
    if (logits.dims.length !== 2 || logits.dims[0] !== batch.length)
      throw new Error(`the model answered logits of shape [${logits.dims}] for a batch of ${batch.length}`);
    const data = logits.data as Float32Array;
    return batch.map((_, row) => Array.from(data.subarray(row * classes, (row + 1) * classes)));
  }

  /** Token ids of the pair (chunk first), the chunk shortened at its end until the pair fits maxTokens. */
  #encode(l: Loaded, p: Pair): { ids: number[]; types: number[] } {
    let chunk = p.chunk;
    for (;;) {
      const e = l.tokenizer.encode(chunk, { text_pair: p.claim, return_token_type_ids: true });
      if (e.ids.length <= this.maxTokens || chunk.length === 0) {
        if (e.ids.length > this.maxTokens) throw new Error(`the claim alone is longer than ${this.maxTokens} tokens`);
        return { ids: e.ids, types: e.token_type_ids };
      }
      // Shorten by the share of tokens over the limit (at least one character), then check again.
      const over = (e.ids.length - this.maxTokens) / e.ids.length;
      chunk = chunk.slice(0, Math.max(0, Math.floor(chunk.length * (1 - over)) - 1));
    }
  }

  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(f, f);
    this.#queue = run.catch(() => {});
    return run;
  }

  async close(): Promise<void> {
    const loading = this.#loading;
    this.#loading = null;
    if (loading) await (await loading.catch(() => null))?.session.release();
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new OnnxModelError(`${path}: not JSON (${(err as Error).message})`);
  }
}

/** The classes config.json names, and which of them are entailment and contradiction. */
function labelsOf(config: unknown, path: string): Labels {
  const id2label = (config as { id2label?: unknown } | null)?.id2label;
  if (typeof id2label !== 'object' || id2label === null)
    throw new OnnxModelError(`${path}: no id2label (the names of the model's classes)`);
  const names: [id: number, name: string][] = Object.entries(id2label as Record<string, unknown>).map(([id, name]) => [
    Number(id),
    String(name).toLowerCase(),
  ]);
  const count = names.length;
  if (count < 2 || names.some(([id]) => !(Number.isInteger(id) && id >= 0 && id < count)))
    throw new OnnxModelError(`${path}: id2label must number its classes 0 to n-1, two or more`);
  const find = (test: (name: string) => boolean) => names.find(([, name]) => test(name))?.[0] ?? null;
  const entailment = find((n) => n.includes('entail') || n === 'supported' || n === 'support');
  if (entailment === null)
    throw new OnnxModelError(`${path}: no entailment class in id2label (${JSON.stringify(id2label)})`);
  const contradiction = find((n) => n.includes('contradict') || n.includes('refute'));
  return { count, entailment, contradiction };
}

/** The local model judge from configuration (ASSAY_JUDGE=onnx). Build one per process. */
export function onnxJudgeFromConfig(config: Config, extra: { cache?: VerdictCache | null } = {}): OnnxJudge {
  return new OnnxJudge({
    modelDir: config.judgeModelDir,
    name: config.judgeModel,
    batchSize: config.judgeBatchSize,
    cache: extra.cache === undefined ? new MemoryVerdictCache() : extra.cache,
  });
}
