// `npm run bench:catalog`: verification throughput (editions per second, one worker process) while the sandbox
// corpus is scaled to --artifacts (default 100,000), then search throughput and latency over it with wrk, and the
// query plans search relies on.
//   npm run bench:catalog -- [--artifacts 100000] [--seconds 20] [--connections 32]
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { corpusArtifact } from '../../actors/index.ts';
import { systemEnv } from '../support/env.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { ensureWrk, peakRssMiB, registerAgents, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    artifacts: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
    keep: { type: 'boolean', default: false },
  },
});
const artifacts = Number(values.artifacts);
ensureWrk();

const env = await systemEnv({
  LOG_LEVEL: 'warn',
  ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
  ASSAY_SANDBOX_CORPUS_ARTIFACTS: String(artifacts),
});
const procs: RoleProcess[] = [];
const sql = postgres(env.DATABASE_URL!, { max: 2, onnotice: () => {} });
try {
  console.log(`catalog: ${artifacts} sandbox artifacts; one workers process verifies them while they load`);
  procs.push(await startRoleProcess('actors', env, 'actor host serving'));
  const started = Date.now();
  const workers = await startRoleProcess('workers', env, 'workers serving');
  procs.push(workers);
  const loadedMs = Date.now() - started;
  let listings = 0;
  for (let i = 0; i < artifacts; i++)
    listings += corpusArtifact(env.ASSAY_SANDBOX_CORPUS_SEED ?? 'assay-sandbox-1', i).listings.length;
  console.log(`corpus written (artifacts, editions, ${listings} listing facts) in ${(loadedMs / 1000).toFixed(1)} s`);
  let last = { at: Date.now(), n: 0 };
  const samples: number[] = [];
  for (;;) {
    const [r] = await sql<{ reports: number; listings: number }[]>`
      SELECT (SELECT count(*)::int FROM reports) AS reports, (SELECT count(*)::int FROM listings) AS listings`;
    const now = Date.now();
    if (r!.reports > last.n && now > last.at) samples.push(((r!.reports - last.n) * 1000) / (now - last.at));
    last = { at: now, n: r!.reports };
    if (r!.reports >= artifacts && r!.listings >= listings) break;
    await new Promise((res) => setTimeout(res, 2000));
  }
  const totalS = (Date.now() - started) / 1000;
  samples.sort((a, b) => a - b);
  console.log(
    `verification: ${artifacts} editions in ${totalS.toFixed(1)} s from start = ${(artifacts / totalS).toFixed(0)} editions/s per worker process (median 2 s window ${samples[Math.floor(samples.length / 2)]?.toFixed(0)}/s, best ${samples.at(-1)?.toFixed(0)}/s); workers peak RSS ${peakRssMiB(workers.child.pid!)} MiB`,
  );
  await sql`VACUUM ANALYZE artifacts`;
  await sql`VACUUM ANALYZE listings`;
  procs.push(await startRoleProcess('gateway', env, 'gateway listening'));
  const baseUrl = env.ASSAY_BASE_URL!;
  const tokens = await registerAgents(baseUrl, 200);
  const script = new URL('./search.lua', import.meta.url).pathname;
  await wrk({ url: `${baseUrl}/v1/search`, script, tokens, seconds: 5, connections: Number(values.connections) });
  const r = await wrk({
    url: `${baseUrl}/v1/search`,
    script,
    tokens,
    seconds: Number(values.seconds),
    connections: Number(values.connections),
  });
  console.log(
    `search (mix of 8 filter combinations, first pages of 20 to 50 items with offers and trust): ${Math.round(r.perSecond)}/s  p50 ${r.p50Ms.toFixed(1)} ms  p90 ${r.p90Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms  max ${r.maxMs.toFixed(0)} ms  non-2xx ${r.non2xx}`,
  );
  const plans: [string, string][] = [
    ['browse', ''],
    ['topic', "AND search_tsv @@ websearch_to_tsquery('english'::regconfig, 'postgresql')"],
    ['rare topic', "AND search_tsv @@ websearch_to_tsquery('english'::regconfig, 'signatures')"],
    ['floor + max_price', 'AND current_mean_entailment >= 0.8 AND min_live_price_cents <= 300'],
  ];
  for (const [label, filter] of plans) {
    const plan = await sql.unsafe(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id FROM artifacts
       WHERE sandbox = true AND live_listing_count > 0 ${filter} ORDER BY catalog_seq DESC LIMIT 51`,
    );
    console.log(`plan (${label}):\n  ${plan.map((p: any) => p['QUERY PLAN']).join('\n  ')}`);
  }
} finally {
  for (const p of procs.reverse()) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
  await sql.end();
  if (!values.keep) await dropEnv(env).catch(() => {});
}
