// `npm run bench:subscriptions`: how fast the scheduler bills cycles when 10,000 active subscriptions fall due at
// once. Roles run split (workers, actors, gateway as child processes, with settlement and projections running);
// 10,000 sandbox buyers subscribe to one living listing (hourly), which runs their first cycles; then a scheduler
// whose clock is an hour ahead (the same code every worker runs, in this process, so its clock can be moved) bills
// the second cycle of all of them. Printed: cycles per second until the last one is held, the delay from due time to
// order held (p50, p99), and, measured in the same run, the JetStream publish-with-ack ceiling of one Node client.
//   npm run bench:subscriptions -- [--subscriptions 10000] [--batch 256] [--concurrency 64]
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import pino from 'pino';
import { runDueCycles } from '../../actors/index.ts';
import { names as namesOf } from '../../contracts/index.ts';
import { connectNats } from '../../storage/index.ts';
import { artifactContent } from '../support/catalog.ts';
import { systemEnv } from '../support/env.ts';
import { call } from '../support/http.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { jetstreamCeiling, machineSpeed, registerAgents } from './support.ts';

const { values } = parseArgs({
  options: {
    subscriptions: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '256' },
    concurrency: { type: 'string', default: '64' },
  },
});
const count = Number(values.subscriptions);
const hour = 3600;

const env = await systemEnv({
  LOG_LEVEL: 'warn',
  ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
  ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0',
});
const sql = postgres(env.DATABASE_URL!, { max: 4, onnotice: () => {} });
const nc = await connectNats(env.NATS_URL!, 'bench-subscriptions');
const procs: RoleProcess[] = [];
const log = pino({ level: 'warn' });
try {
  procs.push(await startRoleProcess('workers', env, 'workers serving'));
  procs.push(await startRoleProcess('actors', env, 'actor host serving'));
  procs.push(await startRoleProcess('gateway', env, 'gateway listening'));
  const baseUrl = env.ASSAY_BASE_URL!;

  // One seller, one verified artifact, one hourly living listing.
  const s = await call(baseUrl, 'POST', '/sandbox/agents', {
    body: { scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'] },
  });
  const seller = s.body.token as string;
  const content = artifactContent('Living bench', [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.']);
  const a = await call(baseUrl, 'POST', '/v1/artifacts', {
    token: seller,
    body: { title: 'Living bench', content },
    key: 'bench-artifact',
  });
  for (;;) {
    const r = await call(baseUrl, 'GET', `/v1/artifacts/${a.body.id}`, { token: seller });
    if (r.body?.currentEdition?.reportDigest) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  const l = await call(baseUrl, 'POST', '/v1/listings', {
    token: seller,
    body: {
      artifact_id: a.body.id,
      price_cents: 100,
      floor: 0.7,
      formats: ['md'],
      billing: { interval_seconds: hour },
    },
    key: 'bench-listing',
  });
  const listingId = l.body.id as string;

  const setupStarted = performance.now();
  const tokens = await registerAgents(baseUrl, count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < tokens.length) {
        const i = next++;
        const r = await call(baseUrl, 'POST', '/v1/subscriptions', {
          token: tokens[i]!,
          body: { listing_id: listingId },
          key: `bench-${i}`,
        });
        if (r.status !== 201) throw new Error(`subscribe failed: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }),
  );
  // Every first cycle held and projected: the table the scheduler reads is complete.
  for (;;) {
    const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM subscriptions WHERE cycle >= 1`;
    if (r!.n >= count) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  const setupSeconds = (performance.now() - setupStarted) / 1000;

  // Everything is due at once for a clock an hour (and a second) ahead.
  const dueAtMs = Date.now();
  const clock = {
    nowMs: () => Date.now() + (hour + 1) * 1000,
    nowIso: () => new Date(Date.now() + (hour + 1) * 1000).toISOString(),
  };
  const deps = {
    nc,
    sql,
    names: namesOf(env.ASSAY_NAMESPACE!),
    clock,
    log,
    pollMs: 10,
    claimSeconds: 30,
    timeoutMs: 10_000,
    batch: Number(values.batch),
    concurrency: Number(values.concurrency),
  };
  let passes = 0;
  while (await runDueCycles(deps)) passes++;
  passes++;
  // A last pass for claims given back after a failed command (none, unless an actor refused one as busy).
  await new Promise((res) => setTimeout(res, 1100));
  while (await runDueCycles(deps)) passes++;
  for (;;) {
    const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM subscriptions WHERE cycle >= 2`;
    if (r!.n >= count) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  const [d] = await sql<{ held: number; p50: number; p99: number; max: number }[]>`
    SELECT count(*)::int AS held,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
           max(ms) AS max
    FROM (SELECT extract(epoch FROM (created_at - ${new Date(dueAtMs)}::timestamptz)) * 1000 AS ms
          FROM orders WHERE subscription_id IS NOT NULL AND created_at >= ${new Date(dueAtMs)}) o`;
  const ceiling = await jetstreamCeiling(env.NATS_URL!, 3, false);

  console.log(`machine speed ${machineSpeed().toFixed(0)} ops/ms (compare runs with it)`);
  console.log(`setup: ${count} buyers registered and subscribed (first cycles held) in ${setupSeconds.toFixed(1)} s`);
  // From the instant everything fell due to the last order held.
  const elapsed = d!.max / 1000;
  console.log(
    `scheduler: ${d!.held} second cycles held in ${elapsed.toFixed(2)} s = ${Math.round(d!.held / elapsed)} cycles/s ` +
      `(${passes} passes of up to ${values.batch}, ${values.concurrency} in flight, one scheduler)`,
  );
  console.log(
    `due -> held: p50 ${Math.round(d!.p50)} ms  p99 ${Math.round(d!.p99)} ms  max ${Math.round(d!.max)} ms ` +
      '(all due at the same instant, so p99 is the time to drain the backlog)',
  );
  console.log(
    `ceiling: JetStream publish-with-ack from one Node client ${Math.round(ceiling.perSecond)}/s ` +
      '(each cycle is one append, plus one for its settlement)',
  );
} finally {
  for (const p of procs) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await sql.end({ timeout: 1 });
  await nc.drain().catch(() => {});
  await dropEnv(env).catch(() => {});
}
