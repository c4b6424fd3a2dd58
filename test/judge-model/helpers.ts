// Shared by the model judge's tests: time that tests move (a clock, a sleep that records its waits and advances the
// clock at once, a fixed jitter), and a judge pointed at a loopback test server.
import type { Clock } from '../../actors/runtime/clock.ts';
import { OpenAIJudge, type OpenAIJudgeOptions } from '../../actors/verification/judges/openai.ts';
import type { OpenAIServer } from '../support/openai-server.ts';

export interface FakeTime {
  clock: Clock & { advance(ms: number): void };
  /** Every wait the judge asked for, in ms, in order. */
  sleeps: number[];
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  random: () => number;
}

export function fakeTime(startMs = Date.UTC(2026, 10, 23, 12, 0, 0), jitter = 0.5): FakeTime {
  let now = startMs;
  const sleeps: number[] = [];
  return {
    clock: {
      nowMs: () => now,
      nowIso: () => new Date(now).toISOString(),
      advance: (ms) => {
        now += ms;
      },
    },
    sleeps,
    sleep: async (ms, signal) => {
      signal.throwIfAborted();
      sleeps.push(ms);
      now += ms;
    },
    random: () => jitter,
  };
}

/** The alias the tests ask for; the server answers with another id (answeredModelDefault). */
export const requestedAlias = 'judge-alias';

export function testJudge(
  server: OpenAIServer,
  time: FakeTime = fakeTime(),
  options: Partial<OpenAIJudgeOptions> = {},
): OpenAIJudge {
  return new OpenAIJudge({
    baseURL: server.url,
    model: requestedAlias,
    apiKey: 'test-key',
    clock: time.clock,
    sleep: time.sleep,
    random: time.random,
    ...options,
  });
}
