// `npm run bench:judge-model`: the model judge's throughput against the loopback OpenAI-compatible test server
// answering each request after a fixed latency (50 ms by default), at the default concurrency: claims per second and
// tokens per claim (prompt tokens as the test server estimates them, 4 characters per token).
//   npm run bench:judge-model -- [--claims 1000] [--latency-ms 50] [--concurrency 8] [--passage-chars 800]
// `benchModelJudge` is exported so a wider judge benchmark can print the same figures next to its own.
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { OpenAIJudge, openaiJudgeDefaults } from '../../actors/verification/judges/openai.ts';
import { startOpenAIServer } from '../support/openai-server.ts';

export interface ModelJudgeBench {
  claims: number;
  latencyMs: number;
  concurrency: number;
  seconds: number;
  claimsPerSecond: number;
  /** Requests in flight at the server at most. */
  maxInFlight: number;
  promptTokensPerClaim: number;
  completionTokensPerClaim: number;
  /** What serial requests would take, claims x latency, and the share of it the run took. */
  serialSeconds: number;
}

const sentence = (i: number) =>
  `Section ${i} explains that a stream keeps messages for its configured retention and replays them to consumers. `;

/** One report of `claims` distinct claims, each against a passage of about `passageChars`, judged once, no cache. */
export async function benchModelJudge(
  options: { claims?: number; latencyMs?: number; concurrency?: number; passageChars?: number } = {},
): Promise<ModelJudgeBench> {
  const claims = options.claims ?? 200;
  const latencyMs = options.latencyMs ?? 50;
  const concurrency = options.concurrency ?? openaiJudgeDefaults.concurrency;
  const passageChars = options.passageChars ?? 800;
  const server = await startOpenAIServer({ latencyMs });
  try {
    const judge = new OpenAIJudge({ baseURL: server.url, model: 'bench-alias', concurrency, cache: null });
    let passage = '';
    for (let i = 0; passage.length < passageChars; i++) passage += sentence(i);
    const cases = Array.from({ length: claims }, (_, i) => ({
      claim: `Claim ${i}: a stream keeps messages for its retention. verdict:supported`,
      passage: passage.trim(),
    }));
    // One request first, so the run measures steady state, not the client's first connection.
    await judge.judge([{ claim: 'warm-up', passage: 'warm-up.' }]);
    server.resetCounts();
    const started = performance.now();
    const run = await judge.judge(cases);
    const seconds = (performance.now() - started) / 1000;
    await judge.close();
    return {
      claims,
      latencyMs,
      concurrency,
      seconds,
      claimsPerSecond: claims / seconds,
      maxInFlight: server.maxInFlight,
      promptTokensPerClaim: run.usage!.promptTokens / claims,
      completionTokensPerClaim: run.usage!.completionTokens / claims,
      serialSeconds: (claims * latencyMs) / 1000,
    };
  } finally {
    await server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      claims: { type: 'string', default: '1000' },
      'latency-ms': { type: 'string', default: '50' },
      concurrency: { type: 'string', default: String(openaiJudgeDefaults.concurrency) },
      'passage-chars': { type: 'string', default: '800' },
    },
  });
  const r = await benchModelJudge({
    claims: Number(values.claims),
    latencyMs: Number(values['latency-ms']),
    concurrency: Number(values.concurrency),
    passageChars: Number(values['passage-chars']),
  });
  const ceiling = (r.concurrency * 1000) / r.latencyMs;
  console.log(
    `model judge, ${r.claims} claims, endpoint latency ${r.latencyMs} ms, concurrency ${r.concurrency}:\n` +
      `  ${r.claimsPerSecond.toFixed(1)} claims/s in ${r.seconds.toFixed(2)} s ` +
      `(ceiling ${ceiling.toFixed(0)}/s = concurrency / latency; serial would take ${r.serialSeconds.toFixed(1)} s)\n` +
      `  at most ${r.maxInFlight} requests in flight\n` +
      `  tokens per claim: ${r.promptTokensPerClaim.toFixed(0)} prompt (estimated at 4 characters per token), ` +
      `${r.completionTokensPerClaim.toFixed(0)} completion`,
  );
}
