// The verdict cache port: a judged (claim, passage chunk) pair is not paid for twice. The model judge looks its
// chunks up before calling the endpoint and stores what it was answered. This file has the port, the key, and a
// bounded in-memory implementation for tests and the eval command; a PostgreSQL one implements the same port.
import { createHash } from 'node:crypto';
import type { Judgement } from './port.ts';

/**
 * What a verdict is keyed by. `model` is the model id the endpoint answered with, and `requestedModel` the name the
 * driver asked for (ASSAY_JUDGE_MODEL): the answered id names the weights that judged (an alias such as `gpt-4o` moves
 * to new weights under the same name), the requested name keeps apart two configurations a server answers under one
 * id (llama.cpp answers with whatever alias it was started with). `promptHash` names the prompt (and so its version);
 * `chunkHash` is `sha256:<hex>` of the exact chunk text; `claim` is the claim text as judged.
 */
export interface VerdictKeyParts {
  requestedModel: string;
  model: string;
  promptHash: string;
  chunkHash: string;
  claim: string;
}

export interface VerdictKey extends VerdictKeyParts {
  /** `sha256:<hex>` of the parts above: what a store indexes by. */
  id: string;
}

/** A cached chunk verdict: its judgement and how its entailment was obtained. `judge_error` is never cached. */
export interface CachedVerdict extends Judgement {
  entailmentFrom: 'logprobs' | 'verdict' | 'classifier';
}

export interface VerdictCache {
  /** The verdicts known for some of the keys, by key id; a key not in the map is a miss. */
  get(keys: readonly VerdictKey[]): Promise<Map<string, CachedVerdict>>;
  put(entries: readonly { key: VerdictKey; verdict: CachedVerdict }[]): Promise<void>;
}

export function verdictKey(parts: VerdictKeyParts): VerdictKey {
  const id = createHash('sha256')
    .update(JSON.stringify([parts.requestedModel, parts.model, parts.promptHash, parts.chunkHash, parts.claim]))
    .digest('hex');
  return { ...parts, id: `sha256:${id}` };
}

export function chunkHash(chunk: string): string {
  return `sha256:${createHash('sha256').update(chunk).digest('hex')}`;
}

/** Entries the in-memory cache keeps by default. */
export const memoryVerdictCacheEntriesMax = 10_000;

/** A bounded in-memory cache: the least recently used entry goes when it is full. */
export class MemoryVerdictCache implements VerdictCache {
  readonly entriesMax: number;
  readonly #entries = new Map<string, CachedVerdict>();

  constructor(entriesMax = memoryVerdictCacheEntriesMax) {
    if (!(Number.isInteger(entriesMax) && entriesMax >= 1)) throw new Error(`entriesMax ${entriesMax}: expected >= 1`);
    this.entriesMax = entriesMax;
  }

  get size(): number {
    return this.#entries.size;
  }

  async get(keys: readonly VerdictKey[]): Promise<Map<string, CachedVerdict>> {
    const found = new Map<string, CachedVerdict>();
    for (const key of keys) {
      const verdict = this.#entries.get(key.id);
      if (verdict === undefined) continue;
      // Map keeps insertion order: re-inserting marks the entry as the most recently used.
      this.#entries.delete(key.id);
      this.#entries.set(key.id, verdict);
      found.set(key.id, verdict);
    }
    return found;
  }

  async put(entries: readonly { key: VerdictKey; verdict: CachedVerdict }[]): Promise<void> {
    for (const { key, verdict } of entries) {
      if (verdict.state === 'judge_error') continue;
      this.#entries.delete(key.id);
      this.#entries.set(key.id, { ...verdict });
      while (this.#entries.size > this.entriesMax) this.#entries.delete(this.#entries.keys().next().value!);
    }
  }
}
