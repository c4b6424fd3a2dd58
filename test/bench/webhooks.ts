// `npm run bench:webhooks`: webhook delivery under the purchase benchmark's load. Buyer principals each have a
// webhook on `order.state_changed` pointing at a fast HTTPS receiver in this process (loopback, answering 204);
// wrk drives their purchases (the purchase benchmark's script, orders.lua), while a few probes here buy one at a
// time and time each purchase's 201 to the receipt of its `order.state_changed` (held) delivery. It prints
// deliveries/s over the measured window, that latency (p50, p99), the purchase load's throughput, and, measured
// first in the same run, the receiver's ceiling: the delivery worker's own client (postJson, 64 in flight, as many
// as one worker has) posting to the same receiver from a process of its own, with no system in between.
//
// How the order events reach a webhook: buyers are sandbox principals (live accounts cannot buy today: a live
// top-up answers "not available in this version", so no account has credits), and the context-file API, where
// webhooks are registered, refuses sandbox tokens. So each buyer's webhook is registered with a live access token
// (read:context, write:context) for that principal, minted with the service's signing key, as
// test/purchases/orders.test.ts mints live tokens for sandbox principals (test/support/tokens.ts). Only the
// registration's credential is made up; the purchase, the ledger fact, the events projection's fan-out, the
// delivery worker and the HTTPS request are the product's own path.
//   npm run bench:webhooks -- [--seconds 20] [--accounts 1000] [--connections 64] [--artifacts 5000] [--probes 4]
//                             [--ceiling-seconds 5]
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { ensureActiveKey, signAgentToken } from '../../actors/index.ts';
import { postJson } from '../../actors/shared/outbound-fetch.ts';
import { signatureHeaders } from '../../actors/webhooks/signing.ts';
import { loadConfig } from '../../contracts/index.ts';
import { systemEnv } from '../support/env.ts';
import { call } from '../support/http.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { selfSignedCertificate, startWebhookReceiver } from '../support/webhook-receiver.ts';
import {
  ensureWrk,
  machineSpeed,
  peakRssMiB,
  registerSandboxAgents,
  usageByGroup,
  usagePerUnit,
  warmUpListings,
  wrk,
} from './support.ts';

/** A body the size of an order event, signed as the worker signs it. */
function sampleDelivery(): { body: string; headers: Record<string, string> } {
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  const body = JSON.stringify({
    id,
    type: 'order.state_changed',
    created_at: new Date().toISOString(),
    sent_at: new Date().toISOString(),
    data: {
      order_id: randomUUID(),
      state: 'held',
      listing_id: randomUUID(),
      escrow_cents: 2550,
      subscription_id: null,
    },
  });
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Assay-Webhooks/1',
    ...signatureHeaders(id, Math.floor(Date.now() / 1000), body, { secret, previous: null }),
  };
  return { body, headers };
}

interface CeilingOptions {
  url: string;
  ca: string;
  seconds: number;
  inflight: number;
}

/** The ceiling's sender: postJson as the delivery worker calls it, `inflight` at a time; prints its counts. */
async function ceilingSender(o: CeilingOptions): Promise<void> {
  const sender = { allowLoopback: true, extraCa: o.ca, timeoutMs: 5000, responseBytesMax: 4096 };
  let ok = 0;
  let failed = 0;
  const deadline = Date.now() + o.seconds * 1000;
  await Promise.all(
    Array.from({ length: o.inflight }, async () => {
      while (Date.now() < deadline) {
        const { body, headers } = sampleDelivery();
        const a = await postJson(o.url, body, headers, sender);
        if (a.ok) ok++;
        else failed++;
      }
    }),
  );
  console.log(`CEILING ${JSON.stringify({ ok, failed })}`);
  process.exit(0);
}

if (process.env.BENCH_WEBHOOKS_CEILING) await ceilingSender(JSON.parse(process.env.BENCH_WEBHOOKS_CEILING));
else await main();

/** The ceiling's sender run as a child process (this file again), so it has a core of its own as the worker does. */
function ceilingInChild(o: CeilingOptions): Promise<{ ok: number; failed: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname], {
    env: { ...process.env, BENCH_WEBHOOKS_CEILING: JSON.stringify(o) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const m = /CEILING (\{.*\})/.exec(out);
      if (code === 0 && m) resolve(JSON.parse(m[1]!));
      else reject(new Error(`the ceiling's sender failed (${code}): ${out}`));
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '20' },
      accounts: { type: 'string', default: '1000' },
      connections: { type: 'string', default: '64' },
      artifacts: { type: 'string', default: '5000' },
      probes: { type: 'string', default: '4' },
      'ceiling-seconds': { type: 'string', default: '5' },
    },
  });
  const seconds = Number(values.seconds);
  const accountCount = Number(values.accounts);
  const connections = Number(values.connections);
  const probeCount = Number(values.probes);
  const ceilingSeconds = Number(values['ceiling-seconds']);
  const script = new URL('./orders.lua', import.meta.url).pathname;
  const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  ensureWrk();

  const cert = selfSignedCertificate();
  const receiver = await startWebhookReceiver(cert);
  const env = await systemEnv({
    LOG_LEVEL: 'warn',
    ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
    ASSAY_SANDBOX_CORPUS_ARTIFACTS: values.artifacts,
    ASSAY_SANDBOX_GRANT_CENTS: '1000000000',
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
    ASSAY_WEBHOOK_CA_FILE: cert.certFile,
  });
  const config = loadConfig(env);
  const sql = postgres(env.DATABASE_URL!, { max: 2, onnotice: () => {} });
  let serve: RoleProcess | null = null;
  try {
    console.log(
      `webhooks: ${accountCount} buyer principals, each with a webhook on order.state_changed to one loopback HTTPS receiver in this process (204 at once); purchase load as bench:purchases (orders.lua, ${connections} connections) over up to 10,000 listings (${values.artifacts} corpus artifacts), ${probeCount} latency probes buying one at a time; ${seconds} s measured; one process (assay serve) with the default delivery settings (ASSAY_WEBHOOK_CONCURRENCY ${config.webhookConcurrency}, PER_ENDPOINT_MAX ${config.webhookPerEndpointMax}, POLL_MS ${config.webhookPollMs}); wrk and the receiver on the same 2 cores`,
    );

    // The ceiling: the receiver's rate with the worker's own client and nothing else running.
    const ceiling = await ceilingInChild({
      url: receiver.url('/ceiling'),
      ca: cert.certPem,
      seconds: ceilingSeconds,
      inflight: 64,
    });
    console.log(
      `ceiling: postJson (actors/webhooks/sender.ts, keep-alive) from a process of its own to the receiver, 64 in flight, no system running: ${Math.round(ceiling.ok / ceilingSeconds)}/s (${ceiling.failed} failed)`,
    );
    receiver.received.length = 0;

    serve = await startRoleProcess('serve', env, 'gateway listening');
    for (;;) {
      const [r] = await sql<{ reports: number; live: number }[]>`
      SELECT (SELECT count(*)::int FROM reports) reports, (SELECT count(*)::int FROM listings WHERE state = 'live') live`;
      if (r!.reports >= Number(values.artifacts) && r!.live > 0) break;
      await sleep(1000);
    }
    const listings = (
      await sql<
        { id: string }[]
      >`SELECT id FROM listings WHERE state = 'live' AND 'md' = ANY(formats) ORDER BY id LIMIT 10000`
    ).map((r) => r.id);
    const files = { LISTINGS_FILE: listings };
    const baseUrl = env.ASSAY_BASE_URL!;
    const buyers = await registerSandboxAgents(baseUrl, accountCount);

    // Each buyer's webhook, registered on {api_url}/v1/webhooks with a live context token for its principal.
    const keySql = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
    const clock = { nowMs: () => Date.now(), nowIso: () => new Date().toISOString() };
    const signingKey = await ensureActiveKey(keySql, 'token', clock);
    await keySql.end();
    let nextHook = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (nextHook < buyers.length) {
          const i = nextHook++;
          const { token } = await signAgentToken(
            signingKey,
            {
              principalId: buyers[i]!.principalId,
              agentId: randomUUID(),
              scopes: ['read:context', 'write:context'],
              sandbox: false,
              issuer: config.baseUrl,
              ttlSeconds: 3600,
              jti: randomUUID(),
            },
            clock,
          );
          const res = await fetch(`${config.apiUrl}/v1/webhooks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `bench ${i}`, url: receiver.url(`/w/${i}`), events: ['order.state_changed'] }),
          });
          if (res.status !== 201) throw new Error(`webhook not registered: ${res.status} ${await res.text()}`);
        }
      }),
    );

    const pending = async () =>
      (await sql<{ n: number }[]>`SELECT count(*)::int n FROM webhook_deliveries WHERE state = 'pending'`)[0]!.n;
    const drain = async (limitMs: number) => {
      const started = Date.now();
      let n = await pending();
      while (n > 0 && Date.now() - started < limitMs) {
        await sleep(250);
        n = await pending();
      }
      return { ms: Date.now() - started, left: n };
    };

    // Warm-up as bench:purchases: walk every listing once (quotes cached, listing actors active), then let the
    // deliveries it made drain, so the measured window starts from an empty queue.
    const tokens = buyers.map((b) => b.token);
    const url = `${baseUrl}/v1/orders`;
    const walked = await warmUpListings({ url, script, tokens, files, connections, listingCount: listings.length });
    const warmDrain = await drain(120_000);
    await sleep(1000);
    receiver.received.length = 0;

    // The measured window: wrk's purchase load, and the probes timing 201 -> delivery beside it.
    const probes: { orderId: string; at201: number; requestMs: number }[] = [];
    let probeFailures = 0;
    let running = true;
    const probeLoops = Array.from({ length: probeCount }, async (_, p) => {
      let n = 0;
      while (running) {
        const b = buyers[(p * 7919 + n++) % buyers.length]!;
        const listing = listings[(p * 104729 + n * 7919) % listings.length]!;
        const started = Date.now();
        const r = await call(baseUrl, 'POST', '/v1/orders', {
          token: b.token,
          key: `probe-${p}-${n}-${started}`,
          body: { listing_id: listing, formats: ['md'] },
        });
        const at201 = Date.now();
        if (r.status !== 201) {
          probeFailures++;
          continue;
        }
        probes.push({ orderId: r.body.order_id ?? r.body.id, at201, requestMs: at201 - started });
      }
    });
    const named = { serve: serve.child.pid!, bench: process.pid };
    const speed = machineSpeed();
    const cpuBefore = usageByGroup(named);
    const windowStart = Date.now();
    const load = await wrk({
      url,
      script,
      tokens,
      files,
      seconds,
      connections,
      env: { COUNTER_START: String(walked) },
    });
    const windowEnd = Date.now();
    running = false;
    await Promise.all(probeLoops);
    const cpuAfter = usageByGroup(named);
    const backlogAtEnd = await pending();
    const [made] = await sql<{ n: number; held: number }[]>`
    SELECT count(*)::int n, count(*) FILTER (WHERE e.data->>'state' = 'held')::int held
    FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.created_at >= ${new Date(windowStart)} AND d.created_at < ${new Date(windowEnd)}`;
    const endDrain = await drain(120_000);

    const inWindow = receiver.received.filter((r) => r.atMs >= windowStart && r.atMs < windowEnd);
    const windowS = (windowEnd - windowStart) / 1000;
    const deliveredPerSecond = inWindow.length / windowS;
    const ids = new Set<string>();
    const heldAt = new Map<string, number>();
    let duplicates = 0;
    for (const r of receiver.received) {
      const e = JSON.parse(r.body) as { id: string; data: { order_id: string; state: string } };
      if (ids.has(e.id)) duplicates++;
      ids.add(e.id);
      if (e.data.state === 'held' && !heldAt.has(e.data.order_id)) heldAt.set(e.data.order_id, r.atMs);
    }
    const latencies: number[] = [];
    let missing = 0;
    for (const p of probes) {
      const at = heldAt.get(p.orderId);
      if (at === undefined) missing++;
      else latencies.push(at - p.at201);
    }
    latencies.sort((a, b) => a - b);
    const requestMs = probes.map((p) => p.requestMs).sort((a, b) => a - b);
    const ceilingPerSecond = ceiling.ok / ceilingSeconds;

    console.log(
      `purchase load (wrk, orders.lua, ${connections} connections, ${buyers.length} buyers with webhooks): ${Math.round(load.perSecond)}/s   p50 ${load.p50Ms.toFixed(1)} ms   p99 ${load.p99Ms.toFixed(1)} ms   non-2xx ${load.non2xx}   socket errors ${load.socketErrors}`,
    );
    console.log(
      `deliveries received in the ${windowS.toFixed(1)} s window: ${Math.round(deliveredPerSecond)}/s sustained (${inWindow.length}), ${(deliveredPerSecond / ceilingPerSecond).toFixed(2)} of the receiver's ceiling; deliveries queued in the window ${Math.round(made!.n / windowS)}/s (${made!.held} held + ${made!.n - made!.held} settled: each purchase makes a held event now and a released or refunded one at settlement)`,
    );
    console.log(
      `  backlog at the end of the window: ${backlogAtEnd} pending deliveries; drained in ${(endDrain.ms / 1000).toFixed(1)} s with the load stopped (${Math.round((backlogAtEnd - endDrain.left) / Math.max(0.001, endDrain.ms / 1000))}/s)${endDrain.left > 0 ? ` (${endDrain.left} still pending after 120 s)` : ''}; warm-up backlog drained in ${(warmDrain.ms / 1000).toFixed(1)} s; ${duplicates} duplicate deliveries`,
    );
    console.log(
      `201 -> order.state_changed (held) received, ${latencies.length} probe purchases: ${latencies.length === 0 ? 'none received' : `p50 ${pct(latencies, 0.5).toFixed(0)} ms   p99 ${pct(latencies, 0.99).toFixed(0)} ms   max ${latencies.at(-1)!.toFixed(0)} ms`}${missing > 0 ? `   ${missing} never delivered` : ''}${probeFailures > 0 ? `   ${probeFailures} probe purchases not 201` : ''} (the probes' own purchase latency p50 ${pct(requestMs, 0.5).toFixed(1)} ms, p99 ${pct(requestMs, 0.99).toFixed(1)} ms)`,
    );
    console.log(
      `  CPU per delivery received in the window: ${usagePerUnit(cpuBefore, cpuAfter, Math.max(1, inWindow.length))} (serve also bought, settled and projected: this is per delivery, not of delivery)`,
    );
    console.log(
      `  peak RSS: serve ${peakRssMiB(serve.child.pid!)} MiB; machine speed just before the run ${speed.toFixed(0)} ops/ms`,
    );
    console.log(
      "  note: the buyers are sandbox principals whose webhooks were registered with minted live context tokens (live accounts cannot buy: live top-ups are not available), so these are real order events on the product's delivery path",
    );
  } finally {
    if (serve) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    await sql.end();
    await receiver.close();
    await dropEnv(env).catch(() => {});
    rmSync(cert.dir, { recursive: true, force: true });
  }
}
