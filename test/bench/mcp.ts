// `npm run bench:mcp`: tools/call throughput and latency for get_balance and top_up next to their REST twins, in the
// same run against the same one-process deployment (`assay serve`), with the MCP overhead as ratios. Each agent has
// its own MCP session (opened before the runs), as a fleet of MCP clients would.
// REST and MCP runs alternate for `--rounds` rounds and each line shows the median round, so that load from other
// processes on a shared machine falls on both faces alike.
//   npm run bench:mcp -- [--seconds 10] [--warmup 3] [--rounds 3] [--connections 64] [--agents 1000]
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../storage/index.ts';
import { systemEnv } from '../support/env.ts';
import { openRawSession } from '../support/mcp.ts';
import { startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { cpuSeconds, ensureWrk, peakRssMiB, registerAgents, type WrkResult, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    agents: { type: 'string', default: '1000' },
  },
});
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const agentCount = Number(values.agents);
const script = new URL('./mcp-calls.lua', import.meta.url).pathname;

type Kind = 'rest-balance' | 'mcp-balance' | 'rest-topup' | 'mcp-topup';
interface Measured {
  result: WrkResult;
  /** CPU of the serve process per answered request, in microseconds. */
  cpuUsPerRequest: number;
  appended: number;
}

ensureWrk();
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const env = await systemEnv({
  LOG_LEVEL: 'warn',
  NATS_URL: natsUrl,
  ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
});
const serve = await startRoleProcess('serve', env, 'gateway listening');
const baseUrl = env.ASSAY_BASE_URL!;
const nc = await connectNats(natsUrl, 'bench-mcp');
try {
  const tokens = await registerAgents(baseUrl, agentCount);
  const sessions: string[] = new Array(tokens.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < tokens.length) {
        const i = next++;
        sessions[i] = await openRawSession(baseUrl, tokens[i]!, '2025-06-18');
      }
    }),
  );
  const agents = tokens.map((t, i) => `${t} ${sessions[i]}`);
  const jsm = await jetstreamManager(nc);
  const stream = `${env.ASSAY_NAMESPACE!.toUpperCase()}_LEDGER`;

  const measure = async (kind: Kind): Promise<Measured> => {
    const url = `${baseUrl}${kind.startsWith('mcp') ? '/mcp' : kind === 'rest-balance' ? '/v1/balance' : '/v1/topups'}`;
    const run = (s: number) => wrk({ url, script, tokens: agents, seconds: s, connections, env: { KIND: kind } });
    await run(warmupSeconds);
    const factsBefore = (await jsm.streams.info(stream)).state.messages;
    const cpuBefore = cpuSeconds(serve.child.pid!);
    const result = await run(seconds);
    const cpu = cpuSeconds(serve.child.pid!) - cpuBefore;
    const appended = (await jsm.streams.info(stream)).state.messages - factsBefore;
    return { result, cpuUsPerRequest: (cpu * 1e6) / Math.max(1, result.requests), appended };
  };

  /** The round with the median throughput. */
  const median = (runs: Measured[]) =>
    [...runs].sort((a, b) => a.result.perSecond - b.result.perSecond)[Math.floor(runs.length / 2)]!;

  console.log(
    `MCP vs REST: ${agentCount} agents (one MCP session each), ${connections} connections, ${seconds} s measured after ${warmupSeconds} s warm-up per run, median of ${rounds} alternating rounds; one process (assay serve); wrk on the same 2 cores`,
  );
  const line = (label: string, m: Measured) =>
    `${label.padEnd(26)} ${Math.round(m.result.perSecond).toString().padStart(7)}/s   p50 ${m.result.p50Ms.toFixed(1).padStart(5)} ms   p99 ${m.result.p99Ms.toFixed(1).padStart(5)} ms   max ${m.result.maxMs.toFixed(0).padStart(4)} ms   serve CPU ${Math.round(m.cpuUsPerRequest).toString().padStart(4)} us/req   refused ${m.result.non2xx}   socket errors ${m.result.socketErrors}`;
  for (const [name, rest, mcp] of [
    ['get_balance', 'rest-balance', 'mcp-balance'],
    ['top_up', 'rest-topup', 'mcp-topup'],
  ] as const) {
    const restRuns: Measured[] = [];
    const mcpRuns: Measured[] = [];
    for (let i = 0; i < rounds; i++) {
      restRuns.push(await measure(rest));
      mcpRuns.push(await measure(mcp));
    }
    const r = median(restRuns);
    const m = median(mcpRuns);
    const spread = (runs: Measured[]) => `rounds ${runs.map((x) => Math.round(x.result.perSecond)).join(', ')}/s`;
    console.log(`${line(`${name} REST`, r)}   (${spread(restRuns)})`);
    console.log(`${line(`${name} MCP tools/call`, m)}   (${spread(mcpRuns)})`);
    if (name === 'top_up') {
      console.log(
        `  facts appended: REST ${r.appended} for ${r.result.requests - r.result.non2xx} accepted, MCP ${m.appended} for ${m.result.requests - m.result.non2xx} accepted`,
      );
    }
    console.log(
      `  MCP/REST: throughput ${(m.result.perSecond / r.result.perSecond).toFixed(2)}x, p50 ${(m.result.p50Ms / r.result.p50Ms).toFixed(2)}x, p99 ${(m.result.p99Ms / r.result.p99Ms).toFixed(2)}x, serve CPU per request ${(m.cpuUsPerRequest / r.cpuUsPerRequest).toFixed(2)}x (+${Math.round(m.cpuUsPerRequest - r.cpuUsPerRequest)} us)`,
    );
  }
  console.log(`peak RSS of serve: ${peakRssMiB(serve.child.pid!)} MiB`);
} finally {
  await nc.drain();
  serve.child.kill('SIGTERM');
  await serve.exited;
  await dropEnv(env).catch(() => {});
}
