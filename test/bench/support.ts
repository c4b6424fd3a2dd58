// Shared pieces of the benchmarks: the JetStream append ceiling, process RSS, wrk runs, agent registration.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';

import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { connectNats } from '../../storage/index.ts';
import { call } from '../support/http.ts';
import { uniqueNamespace } from '../support/env.ts';

const run = promisify(execFile);

/** The single-core loop the benchmarks print beside their results (also `npm test`'s yardstick). */
export { machineSpeed } from '../support/yardstick.ts';

/**
 * Raw JetStream publish-with-ack rate from one Node client: `inflight` publishers, 300-byte messages. `stock` uses
 * nats.js as shipped; otherwise the connection Assay uses (flush once per event-loop turn).
 */
export async function jetstreamCeiling(natsUrl: string, seconds: number, stock: boolean, inflight = 64) {
  const nc = stock ? await connect({ servers: natsUrl }) : await connectNats(natsUrl, 'bench-ceiling');
  const jsm = await jetstreamManager(nc);
  const name = `${uniqueNamespace('bench').toUpperCase()}_CEILING`;
  await jsm.streams.add({ name, subjects: [`${name}.>`] });
  const js = jetstream(nc);
  const payload = new Uint8Array(300).fill(120);
  let count = 0;
  const latencies: number[] = [];
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: inflight }, async (_, w) => {
      while (Date.now() < deadline) {
        const t = performance.now();
        await js.publish(`${name}.${w}`, payload);
        latencies.push(performance.now() - t);
        count++;
      }
    }),
  );
  await jsm.streams.delete(name);
  await nc.drain();
  latencies.sort((a, b) => a - b);
  return {
    perSecond: count / seconds,
    p50Ms: latencies[Math.floor(latencies.length * 0.5)]!,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)]!,
  };
}

/** CPU time (user + system) a process has used so far, in seconds (Linux /proc, clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of /proc/<pid>/stat; after the command name they are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds and read/write system calls used so far by one group of processes. */
export interface GroupUsage {
  cpuSeconds: number;
  /** The part of cpuSeconds spent in the kernel (system calls, network stack). */
  systemSeconds: number;
  syscalls: number;
}

/**
 * What every process on the machine has used so far, grouped: the given pids under their names, other processes
 * under their command name (nats-server, postgres, ...). Diff two of these around a measured run.
 */
export function usageByGroup(named: Record<string, number>): Map<string, GroupUsage> {
  const byPid = new Map(Object.entries(named).map(([name, pid]) => [pid, name]));
  const groups = new Map<string, GroupUsage>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    let io = '';
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      io = readFileSync(`/proc/${entry}/io`, 'utf8');
    } catch {
      if (!stat!) continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const group = byPid.get(Number(entry)) ?? (comm === 'postgres' ? postgresRole(entry) : comm);
    const g = groups.get(group) ?? { cpuSeconds: 0, systemSeconds: 0, syscalls: 0 };
    g.cpuSeconds += (Number(fields[11]) + Number(fields[12])) / 100;
    g.systemSeconds += Number(fields[12]) / 100;
    g.syscalls += Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0) + Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0);
    groups.set(group, g);
  }
  return groups;
}

/** `postgres (backends)`, or the auxiliary process a PostgreSQL process title names (walwriter, autovacuum, ...). */
function postgresRole(pid: string): string {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    const m = /^postgres: [^:]+: (.*)$/.exec(title.trim());
    if (!m) return 'postgres';
    const aux = /^(checkpointer|background writer|walwriter|autovacuum \w+|logical replication \w+|stats \w+)/.exec(
      m[1]!,
    );
    return `postgres (${aux ? aux[1] : 'backends'})`;
  } catch {
    return 'postgres';
  }
}

/**
 * CPU (with its kernel share) and read/write system calls per unit of work between two `usageByGroup` snapshots,
 * largest first.
 */

export function usagePerUnit(before: Map<string, GroupUsage>, after: Map<string, GroupUsage>, units: number): string {
  const rows = usageRows(before, after);
  const total = rows.reduce((sum, r) => sum + r.cpu, 0);
  const us = (s: number) => `${Math.round((s / units) * 1e6)} µs`;
  const parts = rows.map(
    (r) =>
      `${r.name} ${us(r.cpu)}${r.calls > 0 ? ` (${Math.round((r.system / r.cpu) * 100)}% kernel, ${(r.calls / units).toFixed(1)} syscalls)` : ''}`,
  );
  return `${us(total)} in all: ${parts.join(', ')}`;
}

/** CPU microseconds per unit of work between two `usageByGroup` snapshots, by group, largest first. */
export function cpuPerUnitByGroup(
  before: Map<string, GroupUsage>,
  after: Map<string, GroupUsage>,
  units: number,
): Map<string, number> {
  return new Map(usageRows(before, after).map((r) => [r.name, (r.cpu / units) * 1e6]));
}

/** What each group used between two snapshots (above 50 ms of CPU), largest first. */
function usageRows(before: Map<string, GroupUsage>, after: Map<string, GroupUsage>) {
  return [...after]
    .map(([name, u]) => {
      const b = before.get(name) ?? { cpuSeconds: 0, systemSeconds: 0, syscalls: 0 };
      return {
        name,
        cpu: u.cpuSeconds - b.cpuSeconds,
        system: u.systemSeconds - b.systemSeconds,
        calls: u.syscalls - b.syscalls,
      };
    })
    .filter((r) => r.cpu > 0.05)
    .sort((a, b) => b.cpu - a.cpu);
}

/**
 * wrk's own CPU per request, beside what the machine had per request (every core's seconds over the requests):
 * what the system under test could spend at most is the difference.
 */
export function loadGeneratorUsage(r: WrkResult, seconds: number): string {
  const us = (s: number) => Math.round((s / r.requests) * 1e6);
  return `wrk (the load, on the same cores) ${us(r.cpuSeconds)} µs per request; the machine had ${us(availableParallelism() * seconds)} µs of CPU per request in all`;
}

/** Peak resident set (VmHWM) of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Sandbox agents, registered 32 at a time: each one's token and principal. */
export async function registerSandboxAgents(
  baseUrl: string,
  n: number,
): Promise<{ token: string; principalId: string }[]> {
  const agents: { token: string; principalId: string }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        next++;
        const r = await call(baseUrl, 'POST', '/sandbox/agents', { body: {} });
        if (r.status !== 201) throw new Error(`registration failed: ${r.status} ${JSON.stringify(r.body)}`);
        agents.push({ token: r.body.token, principalId: r.body.principal_id });
      }
    }),
  );
  return agents;
}

export async function registerAgents(baseUrl: string, n: number): Promise<string[]> {
  return (await registerSandboxAgents(baseUrl, n)).map((a) => a.token);
}

/**
 * Buy until every listing has been bought once, so a run measures the steady state (quotes cached, listing actors
 * active) rather than a cold cache whose share of the run grows as the machine gets slower. Answers how many
 * listings were walked: the counter the measured run starts from.
 */
export async function warmUpListings(o: {
  url: string;
  script: string;
  tokens: string[];
  files: Record<string, string[]>;
  connections: number;
  listingCount: number;
}): Promise<number> {
  let walked = 0;
  while (walked < o.listingCount) {
    const warm = await wrk({
      url: o.url,
      script: o.script,
      tokens: o.tokens,
      files: o.files,
      seconds: 5,
      connections: o.connections,
      env: { COUNTER_START: String(walked) },
    });
    walked += warm.requests;
  }
  return walked;
}

export interface WrkResult {
  requests: number;
  perSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  socketErrors: number;
  /**
   * CPU seconds wrk itself spent (user + system, from /usr/bin/time): the load generator shares the two cores with
   * what it measures, so its cost per request is part of every throughput figure here.
   */
  cpuSeconds: number;
  /** Everything the script printed, for lines of its own beside RESULT. */
  output: string;
}

/**
 * Run wrk with a Lua script against the gateway; tokens (one line per agent) are handed to the script through a
 * file named by TOKENS_FILE and AGENTS_FILE, and `env` adds variables the script reads.
 */
export async function wrk(o: {
  url: string;
  script: string;
  tokens: string[];
  seconds: number;
  connections: number;
  threads?: number;
  /** Extra lines files for the script, by environment variable name. */
  files?: Record<string, string[]>;
  env?: Record<string, string>;
}): Promise<WrkResult> {
  const tokensFile = join(tmpdir(), `assay-bench-tokens-${process.pid}`);
  writeFileSync(tokensFile, `${o.tokens.join('\n')}\n`);
  const extra: Record<string, string> = {};
  for (const [name, lines] of Object.entries(o.files ?? {})) {
    const file = join(tmpdir(), `assay-bench-${name.toLowerCase()}-${process.pid}`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    extra[name] = file;
  }

  const args = ['-t', String(o.threads ?? 1), '-c', String(o.connections), '-d', `${o.seconds}s`, '--timeout', '10s'];
  const { stdout, stderr } = await run(
    '/usr/bin/time',
    ['-f', 'wrk-cpu %U %S', 'wrk', ...args, '-s', o.script, o.url],
    {
      env: {
        ...process.env,
        ...o.env,
        TOKENS_FILE: tokensFile,
        ...extra,
        AGENTS_FILE: tokensFile,
        RUN_ID: `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`,
      },
      maxBuffer: 1 << 20,
    },
  );
  const m =
    /RESULT requests=(\d+) duration_us=(\d+) p50_us=(\d+) p90_us=(\d+) p99_us=(\d+) max_us=(\d+) non2xx=(\d+) errors=(\d+)/.exec(
      stdout,
    );
  if (!m) throw new Error(`wrk printed no result:\n${stdout}`);
  const [requests, durationUs, p50, p90, p99, max, non2xx, errors] = m.slice(1).map(Number) as number[];
  const cpu = /wrk-cpu ([\d.]+) ([\d.]+)/.exec(stderr);
  return {
    requests: requests!,
    perSecond: requests! / (durationUs! / 1e6),
    p50Ms: p50! / 1000,
    p90Ms: p90! / 1000,
    p99Ms: p99! / 1000,
    maxMs: max! / 1000,
    non2xx: non2xx!,
    socketErrors: errors!,
    cpuSeconds: cpu ? Number(cpu[1]) + Number(cpu[2]) : Number.NaN,
    output: stdout,
  };
}

export function ensureWrk(): void {
  if (existsSync('/usr/bin/wrk')) return;
  const r = spawnSync(
    'sh',
    ['-c', 'apt-get install -y -qq wrk || (apt-get update -qq && apt-get install -y -qq wrk)'],
    {
      stdio: 'inherit',
    },
  );
  if (r.status !== 0 || !existsSync('/usr/bin/wrk')) throw new Error('wrk is needed: apt-get install -y wrk');
}
