// `npm run bench:contexts`: the context-file API on {api_url}/v1, GET /contexts/{id} and POST /contexts, with the
// plans' hourly rate limiter on (principals on Enterprise: 10,000 requests an hour each) and off
// (ASSAY_CONTEXT_RATE_LIMIT=off), same routes, same data, same run: req/s, p50, p99, and the limiter's cost per
// request as the difference. Each setting is its own start of `assay serve` on the same namespace and database; the
// order of the two alternates between rounds, so drift of the machine falls on both.
// The limiter's cost has two parts: the local spend of a token the gateway holds (measured here in-process too) and
// the batch requests (`rate.lease`) to the principal's actor when its batch runs out, which only the end-to-end
// difference shows.
//   npm run bench:contexts -- [--seconds 10] [--warmup 3] [--rounds 3] [--connections 64] [--accounts 50] [--files 20]
import { parseArgs } from 'node:util';
import pino from 'pino';
import { batchFor } from '../../actors/principal/rate.ts';
import { type Caller, loadConfig, names, plans } from '../../contracts/index.ts';
import { type GatewayBus, RateLimiter } from '../../gateway/index.ts';
import { connectNats } from '../../storage/index.ts';
import { systemEnv } from '../support/env.ts';
import { signUp, type WebJar } from '../support/oauth.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import {
  ensureWrk,
  type GroupUsage,
  machineSpeed,
  peakRssMiB,
  usageByGroup,
  usagePerUnit,
  type WrkResult,
  wrk,
} from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    accounts: { type: 'string', default: '50' },
    files: { type: 'string', default: '20' },
  },
});
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const accountCount = Number(values.accounts);
const filesPerAccount = Number(values.files);
const script = new URL('./contexts.lua', import.meta.url).pathname;

type Kind = 'get' | 'post';
type Limit = 'on' | 'off';
interface Measured {
  result: WrkResult;
  /** 429s: the principals' hourly allowance ran out, so the run is no measurement of the route. */
  limited: number;
  serveCpuUsPerRequest: number;
  usage: string;
}

ensureWrk();

/** Microseconds one RateLimiter.take() costs when the gateway holds a batch: the limiter's usual path, alone. */
async function localTakeUs(calls = 1_000_000): Promise<number> {
  const granted = { granted: 1e9, limit: 10_000, remaining: 10_000, resetMs: 0, retryAfterMs: 0, batch: 1e9 };
  const bus = { request: async () => ({ ok: true, body: granted }) } as unknown as GatewayBus;
  const limiter = new RateLimiter({
    bus,
    names: names('bench'),
    leaseMs: 3_600_000,
    nowMs: Date.now,
    log: pino({ enabled: false }),
  });
  // The context-file API's rate is the whole principal's, as gateway/context/face.ts takes it.
  const callers: Caller[] = Array.from({ length: 50 }, (_, i) => ({
    principalId: `p${i}`,
    agentId: `p${i}`,
    scopes: [],
    sandbox: false,
  }));
  for (const c of callers) await limiter.take(c, 'context', 'principal');
  let best = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < 3; pass++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) limiter.take(callers[i % callers.length]!, 'context', 'principal');
    best = Math.min(best, ((performance.now() - started) * 1000) / calls);
  }
  limiter.close();
  return best;
}

/** Requests to the principals' actors asking for a batch of tokens, while `load` runs. */
async function countLeases(load: () => Promise<WrkResult>): Promise<{ leases: number; requests: number }> {
  const nc = await connectNats(natsUrl, 'bench-contexts-leases');
  const sub = nc.subscribe(`${env.ASSAY_NAMESPACE}.actor.principal.>`);
  let leases = 0;
  void (async () => {
    for await (const msg of sub) if (Buffer.from(msg.data).includes('"op":"rate.lease"')) leases++;
  })();
  await nc.flush();
  const r = await load();
  await nc.drain();
  return { leases, requests: r.requests };
}

/** An API key issued by the API's own route with the signed-in session. */
async function issueKey(jar: WebJar, webUrl: string): Promise<string> {
  if (!jar.cookies.has('assay_csrf')) await jar.get('/signin');
  const res = await fetch(`${webUrl}/api/v1/api-keys`, {
    method: 'POST',
    headers: {
      cookie: jar.header(),
      origin: new URL(webUrl).origin,
      'x-csrf-token': jar.csrf,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: 'bench' }),
  });
  const body = (await res.json()) as { data: { key: string } };
  if (res.status !== 201) throw new Error(`API key not issued: ${res.status} ${JSON.stringify(body)}`);
  return body.data.key;
}

/** Accounts with an API key and `filesPerAccount` files each: "<key> <file id>" lines, and the keys. */
async function prepare(webUrl: string, apiUrl: string): Promise<{ pairs: string[]; keys: string[] }> {
  const keys: string[] = [];
  const pairs: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < accountCount) {
        const i = next++;
        const jar = await signUp(webUrl, `bench-${i}@example.com`);
        const key = await issueKey(jar, webUrl);
        keys.push(key);
        for (let f = 0; f < filesPerAccount; f++) {
          const res = await fetch(`${apiUrl}/v1/contexts`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `Brief ${f}`, content: `Notes for brief ${f}. `.repeat(20) }),
          });
          const body = (await res.json()) as { data: { id: string } };
          if (res.status !== 201) throw new Error(`file not created: ${res.status} ${JSON.stringify(body)}`);
          pairs.push(`${key} ${body.data.id}`);
        }
      }
    }),
  );
  return { pairs, keys };
}

const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const env = await systemEnv({
  LOG_LEVEL: 'warn',
  NATS_URL: natsUrl,
  // The principals are on Enterprise so the runs stay inside the hourly allowance; cheap password hashes and no
  // sign-up throttle, because making the accounts is set-up, not what is measured.
  ASSAY_DEFAULT_PLAN: 'enterprise',
  ASSAY_PASSWORD_SCRYPT_LOG_N: '10',
  ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE: '1000000',
});
const config = loadConfig(env);
const hourly = plans.enterprise.principal.context.burst;
const batch = batchFor(plans.enterprise.principal.context, config.rateLeaseMs);

const start = (limit: Limit) =>
  startRoleProcess('serve', { ...env, ASSAY_CONTEXT_RATE_LIMIT: limit }, 'gateway listening');
const stop = async (p: RoleProcess) => {
  p.child.kill('SIGTERM');
  await p.exited;
};

let serve: RoleProcess | null = null;
try {
  const speed = machineSpeed();
  const takeUs = await localTakeUs();
  serve = await start('on');
  const setupStarted = performance.now();
  const { pairs, keys } = await prepare(config.webUrl, config.apiUrl);
  console.log(
    `context files: ${accountCount} accounts on Enterprise (${hourly} requests an hour each, ${accountCount * hourly} in all), ${pairs.length} files (made in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s); ${connections} connections, ${seconds} s measured after ${warmupSeconds} s warm-up per run, median of ${rounds} rounds alternating on/off; one process (assay serve), restarted for each setting; wrk on the same 2 cores; machine speed ${speed.toFixed(1)} ops/ms`,
  );
  await stop(serve);
  serve = null;

  const runs = new Map<string, Measured[]>();
  for (let round = 0; round < rounds; round++) {
    const order: Limit[] = round % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
    for (const limit of order) {
      // A fresh process per setting: actors load again, and with them full buckets (they live in memory).
      serve = await start(limit);
      const named = { serve: serve.child.pid! };
      for (const kind of ['get', 'post'] as Kind[]) {
        const o = {
          url: `${config.apiUrl}/v1/contexts`,
          script,
          tokens: kind === 'get' ? pairs : keys,
          connections,
          env: { KIND: kind },
        };
        await wrk({ ...o, seconds: warmupSeconds });
        const before: Map<string, GroupUsage> = usageByGroup(named);
        const result = await wrk({ ...o, seconds });
        const after = usageByGroup(named);
        const cpu = (m: Map<string, GroupUsage>) => m.get('serve')?.cpuSeconds ?? 0;
        const m: Measured = {
          result,
          limited: Number(/LIMITED (\d+)/.exec(result.output)?.[1] ?? 0),
          serveCpuUsPerRequest: ((cpu(after) - cpu(before)) * 1e6) / Math.max(1, result.requests),
          usage: usagePerUnit(before, after, Math.max(1, result.requests)),
        };
        runs.set(`${kind} ${limit}`, [...(runs.get(`${kind} ${limit}`) ?? []), m]);
        console.log(`  round ${round + 1}, ${kind.toUpperCase()} limiter ${limit}: ${line(m)}`);
        if (round === 0) {
          // Counted in a run of its own: copying every actor request to this process would load the measured one.
          const c = await countLeases(() => wrk({ ...o, seconds: 3 }));
          console.log(
            `    rate.lease requests to the principals' actors: ${c.leases} for ${c.requests} requests${c.leases > 0 ? ` (one per ${(c.requests / c.leases).toFixed(1)})` : ''}`,
          );
        }
      }
      console.log(`  peak RSS of serve (limiter ${limit}): ${peakRssMiB(serve.child.pid!)} MiB`);
      await stop(serve);
      serve = null;
    }
  }

  const median = (ms: Measured[]) =>
    [...ms].sort((a, b) => a.result.perSecond - b.result.perSecond)[Math.floor(ms.length / 2)]!;
  let valid = true;
  console.log('');
  for (const [kind, label] of [
    ['get', 'GET /v1/contexts/{id}'],
    ['post', 'POST /v1/contexts'],
  ] as const) {
    const on = median(runs.get(`${kind} on`)!);
    const off = median(runs.get(`${kind} off`)!);
    const spread = (limit: Limit) =>
      `rounds ${runs
        .get(`${kind} ${limit}`)!
        .map((m) => Math.round(m.result.perSecond))
        .join(', ')}/s`;
    console.log(`${`${label}, limiter on`.padEnd(32)} ${line(on)}   (${spread('on')})`);
    console.log(`${`${label}, limiter off`.padEnd(32)} ${line(off)}   (${spread('off')})`);
    console.log(`  CPU per request, limiter on:  ${on.usage}`);
    console.log(`  CPU per request, limiter off: ${off.usage}`);
    // Each round's on and off ran back to back, so the cost is taken within a round and the median of those shown.
    const ons = runs.get(`${kind} on`)!;
    const offs = runs.get(`${kind} off`)!;
    const paired = (f: (m: Measured) => number) => {
      const diffs = ons.map((m, i) => f(m) - f(offs[i]!));
      const mid = [...diffs].sort((a, b) => a - b)[Math.floor(diffs.length / 2)]!;
      return `${signed(mid)} µs (rounds ${diffs.map(signed).join(', ')})`;
    };
    console.log(`  limiter's cost per request, on - off within each round, median:`);
    console.log(`    wall time (1/rate, wrk on the same 2 cores): ${paired((m) => 1e6 / m.result.perSecond)}`);
    console.log(`    serve CPU: ${paired((m) => m.serveCpuUsPerRequest)}`);
    console.log(`    p50: ${paired((m) => m.result.p50Ms * 1000)}; p99: ${paired((m) => m.result.p99Ms * 1000)}`);
    for (const m of [...runs.get(`${kind} on`)!, ...runs.get(`${kind} off`)!]) {
      if (m.result.non2xx > 0 || m.result.socketErrors > 0) valid = false;
    }
  }
  console.log(
    `of which the local spend (RateLimiter.take() with a batch in hand, in-process): ${takeUs.toFixed(3)} µs per request; the rest is the batch requests to the principal's actor: a batch is ${batch} tokens at Enterprise (ASSAY_RATE_LEASE_MS ${config.rateLeaseMs}), so about one rate.lease round trip per ${batch} requests under load (counted in round 1)`,
  );
  if (!valid) {
    console.log(
      'NOT A VALID MEASUREMENT: some runs had non-2xx answers or socket errors (429s: the hourly allowance ran out; use more --accounts)',
    );
  }
} finally {
  if (serve) await stop(serve);
  await dropEnv(env).catch(() => {});
}

function line(m: Measured): string {
  const r = m.result;
  return `${Math.round(r.perSecond).toString().padStart(6)}/s   p50 ${r.p50Ms.toFixed(2).padStart(6)} ms   p99 ${r.p99Ms.toFixed(2).padStart(6)} ms   serve CPU ${Math.round(m.serveCpuUsPerRequest).toString().padStart(4)} µs/req   non-2xx ${r.non2xx} (429: ${m.limited})   socket errors ${r.socketErrors}`;
}

function signed(n: number): string {
  return `${n >= 0 ? '+' : ''}${n.toFixed(n !== 0 && Math.abs(n) < 10 ? 1 : 0)}`;
}
