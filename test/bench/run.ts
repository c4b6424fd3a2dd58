// `npm run bench`: top-ups through the whole path (HTTP -> gateway -> NATS -> principal actor -> JetStream ack ->
// 201) with many agents, next to the raw JetStream publish-with-ack ceiling measured in the same run.
//   npm run bench -- [--seconds 20] [--connections 64] [--agents 1000] [--modes serve,split]
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../storage/index.ts';
import { systemEnv } from '../support/env.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { ensureWrk, jetstreamCeiling, peakRssMiB, registerAgents, type WrkResult, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '64' },
    agents: { type: 'string', default: '1000' },
    modes: { type: 'string', default: 'serve,split' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const agentCount = Number(values.agents);
const script = new URL('./topups.lua', import.meta.url).pathname;

/** Figures from the issue, measured on this 2-core machine with the load generator on the same cores. */
const reference = {
  prototype: { perSecond: 8500, p99Ms: 18, what: 'bare JetStream-backed prototype of this path' },
  prototypeBatched: { perSecond: 12000, p99Ms: 12, what: 'same prototype, gateway flushing NATS once per loop turn' },
  target: { perSecond: 6000, p99Ms: 50 },
};

ensureWrk();

async function runMode(mode: 'serve' | 'split', natsUrl: string) {
  const env = await systemEnv({
    LOG_LEVEL: 'warn',
    NATS_URL: natsUrl,
    ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
  });
  const procs: { role: string; p: RoleProcess }[] = [];
  try {
    if (mode === 'serve') procs.push({ role: 'serve', p: await startRoleProcess('serve', env, 'gateway listening') });
    else {
      procs.push({ role: 'workers', p: await startRoleProcess('workers', env, 'workers serving') });
      procs.push({ role: 'actors', p: await startRoleProcess('actors', env, 'actor host serving') });
      procs.push({ role: 'gateway', p: await startRoleProcess('gateway', env, 'gateway listening') });
    }
    const baseUrl = env.ASSAY_BASE_URL!;
    const tokens = await registerAgents(baseUrl, agentCount);
    const url = `${baseUrl}/v1/topups`;
    await wrk({ url, script, tokens, seconds: Math.min(5, seconds), connections }); // warm-up: actors activate, JIT
    const nc = await connectNats(natsUrl, 'bench');
    const jsm = await jetstreamManager(nc);
    const stream = `${env.ASSAY_NAMESPACE!.toUpperCase()}_LEDGER`;
    const before = (await jsm.streams.info(stream)).state.messages;
    const result = await wrk({ url, script, tokens, seconds, connections });
    const appended = (await jsm.streams.info(stream)).state.messages - before;
    await nc.drain();
    const rss = procs.map(({ role, p }) => `${role} ${peakRssMiB(p.child.pid!)} MiB`).join(', ');
    return { mode, result, appended, rss };
  } finally {
    for (const { p } of procs.reverse()) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await dropEnv(env).catch(() => {});
  }
}

function line(label: string, r: WrkResult) {
  return `${label.padEnd(34)} ${Math.round(r.perSecond).toString().padStart(7)}/s   p50 ${r.p50Ms.toFixed(1)} ms   p90 ${r.p90Ms.toFixed(1)} ms   p99 ${r.p99Ms.toFixed(1)} ms   max ${r.maxMs.toFixed(0)} ms   non-2xx ${r.non2xx}   socket errors ${r.socketErrors}`;
}

const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
console.log(
  `top-ups: ${agentCount} agents, ${connections} connections, ${seconds} s measured after a warm-up; wrk on the same 2 cores`,
);
const stockCeiling = await jetstreamCeiling(natsUrl, 5, true);
const ceiling = await jetstreamCeiling(natsUrl, 5, false);
for (const [label, c] of [
  ['stock nats.js client', stockCeiling],
  ["Assay's connection (one flush per loop turn)", ceiling],
] as const) {
  console.log(
    `ceiling: raw JetStream publish+ack, one Node client, 64 in flight, ${label}: ${Math.round(c.perSecond)}/s (p50 ${c.p50Ms.toFixed(1)} ms, p99 ${c.p99Ms.toFixed(1)} ms)`,
  );
}
for (const mode of values.modes.split(',') as ('serve' | 'split')[]) {
  const { result, appended, rss } = await runMode(mode, natsUrl);
  const label = mode === 'serve' ? 'one process (assay serve)' : 'split (gateway, actors, workers)';
  console.log(line(label, result));
  console.log(`  facts appended ${appended} (2xx answered ${result.requests - result.non2xx}); peak RSS: ${rss}`);
  console.log(
    `  ratio to JetStream ceiling ${(result.perSecond / ceiling.perSecond).toFixed(2)} (stock client ${(result.perSecond / stockCeiling.perSecond).toFixed(2)}); to prototype ${(result.perSecond / reference.prototype.perSecond).toFixed(2)}; to batched prototype ${(result.perSecond / reference.prototypeBatched.perSecond).toFixed(2)}; target ${reference.target.perSecond}/s with p99 < ${reference.target.p99Ms} ms: ${result.perSecond >= reference.target.perSecond && result.p99Ms < reference.target.p99Ms ? 'met' : 'NOT met'}`,
  );
}
