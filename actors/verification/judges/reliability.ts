// What keeps the model judge polite to its endpoint and honest to the pipeline: a bound on requests in flight, an
// exponential backoff with jitter that honours Retry-After, and a circuit breaker. Time and randomness come in from
// outside (STYLE.md: pass the clock in), so tests move time instead of sleeping.
import { JudgeUnavailable } from './port.ts';

/** Waits `ms`, or rejects when `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** A FIFO semaphore: at most `slots` holders at once; waiting callers queue in order and can be aborted. */
export class Limiter {
  readonly slots: number;
  #held = 0;
  readonly #waiting: { grant: () => void }[] = [];

  constructor(slots: number) {
    if (!(Number.isInteger(slots) && slots >= 1)) throw new Error(`concurrency ${slots}: expected an integer >= 1`);
    this.slots = slots;
  }

  get held(): number {
    return this.#held;
  }

  /** Resolves with a release function once a slot is free; release exactly once. */
  acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.#held < this.slots) {
      this.#held++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter: `held` stays the same.
      if (next) next.grant();
      else this.#held--;
    };
  }
}

/**
 * Exponential backoff with "equal jitter": the n-th retry (n from 1) waits between half and all of
 * min(maxMs, baseMs x 2^(n-1)), the share drawn from `random` (0 <= r < 1).
 */
export function backoffMs(retry: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/**
 * How long the server asked to wait, in ms, or null if it did not say: `retry-after-ms` (OpenAI's own header), else
 * `Retry-After` as delta-seconds or as an HTTP date (RFC 9110 section 10.2.3), measured against `nowMs`.
 */
export function retryAfterMs(headers: Headers | undefined, nowMs: number): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers.get('retry-after')?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/**
 * A circuit breaker over the endpoint. Closed: requests go. After `failuresMax` consecutive failed requests it opens:
 * for `coolDownMs` every request is refused at once with JudgeUnavailable, reaching nothing. Then it is half-open:
 * one request (the probe) goes, the others wait for its outcome; a success closes the breaker, a failure opens it for
 * another cool-down.
 */
export class Breaker {
  readonly failuresMax: number;
  readonly coolDownMs: number;
  readonly #nowMs: () => number;
  #state: 'closed' | 'open' | 'half-open' = 'closed';
  #failures = 0;
  #openedAtMs = 0;
  #probe: { settled: Promise<void>; settle: () => void } | null = null;

  constructor(failuresMax: number, coolDownMs: number, nowMs: () => number) {
    if (!(Number.isInteger(failuresMax) && failuresMax >= 1)) throw new Error(`breaker failures ${failuresMax}: >= 1`);
    if (!(coolDownMs >= 0)) throw new Error(`breaker cool-down ${coolDownMs}: >= 0`);
    this.failuresMax = failuresMax;
    this.coolDownMs = coolDownMs;
    this.#nowMs = nowMs;
  }

  get state(): 'closed' | 'open' | 'half-open' {
    return this.#state === 'open' && this.#cooledDown() ? 'half-open' : this.#state;
  }

  /** Throws JudgeUnavailable while open and cooling down. */
  check(): void {
    if (this.#state === 'open' && !this.#cooledDown()) throw this.#unavailable();
  }

  /**
   * Admits one request: resolves with `true` when it is the half-open probe, `false` for an ordinary request; throws
   * JudgeUnavailable when the breaker is open (at once, or after the probe it waited for failed).
   */
  async admit(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      signal.throwIfAborted();
      if (this.#state === 'closed') return false;
      if (this.#state === 'open') {
        if (!this.#cooledDown()) throw this.#unavailable();
        this.#state = 'half-open';
        let settle = () => {};
        const settled = new Promise<void>((resolve) => {
          settle = resolve;
        });
        this.#probe = { settled, settle };
        return true;
      }
      // Half-open with a probe in flight: wait for its outcome, then look again.
      await abortable(this.#probe!.settled, signal);
    }
  }

  /** The request (a probe or not) got an answer from the endpoint. */
  succeeded(): void {
    this.#failures = 0;
    if (this.#state !== 'closed') {
      this.#state = 'closed';
      this.#settleProbe();
    }
  }

  /** The request failed (no answer, 429, 5xx, timeout, a body that is no chat completion). */
  failed(probe: boolean): void {
    this.#failures++;
    if (probe || (this.#state === 'closed' && this.#failures >= this.failuresMax)) {
      this.#state = 'open';
      this.#openedAtMs = this.#nowMs();
      this.#settleProbe();
    }
  }

  /** A probe that ended without an outcome (its run was cancelled): let another request probe. */
  abandoned(probe: boolean): void {
    if (probe && this.#state === 'half-open') {
      this.#state = 'open';
      this.#openedAtMs = this.#nowMs() - this.coolDownMs;
      this.#settleProbe();
    }
  }

  #cooledDown(): boolean {
    return this.#nowMs() - this.#openedAtMs >= this.coolDownMs;
  }

  #settleProbe(): void {
    this.#probe?.settle();
    this.#probe = null;
  }

  #unavailable(): JudgeUnavailable {
    const retryInMs = Math.max(0, this.#openedAtMs + this.coolDownMs - this.#nowMs());
    return new JudgeUnavailable(
      `the judge endpoint failed ${this.failuresMax} times in a row; circuit open, next try in ${retryInMs} ms`,
    );
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
