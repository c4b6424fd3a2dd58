// `npm run bench:delivery`: delivery of a bought 200-claim artifact through the whole path (HTTP -> gateway ->
// NATS -> delivery service -> PostgreSQL, a signed receipt written per delivery): Markdown deliveries per second as
// JSON and as raw bytes, and cached PDF deliveries per second. Beside them, measured in the same run: the
// compliance-bundle read of the same order (the same path with a stored document and no receipt), which bounds what
// a delivery can reach, and the renderer alone in this process.
// Before those, in `--rounds` rounds: the first delivery of a PDF (which renders it) in a workers process just
// started (no font opened, nothing shaped), then the next ones (cached), for the 200-claim artifact and for one in
// Greek, Russian and Japanese (test/support/pdf.ts), each round a new edition of both; medians printed. With
// `--baseline <git revision>` the workers of each round also run that revision's code (a temporary worktree sharing
// node_modules) right before this tree's, on the same editions: its renderer is cached under its own version.
//   npm run bench:delivery -- [--seconds 10] [--connections 16] [--claims 200] [--rounds 3] [--baseline <rev>]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemEnv } from '../support/env.ts';
import { call } from '../support/http.ts';
import { claimsArtifact, scriptsArtifact } from '../support/pdf.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv, eventually } from '../support/system.ts';
import { benchPdf } from './delivery-pdf.ts';
import { cpuSeconds, ensureWrk, peakRssMiB, usageByGroup, usagePerUnit, type WrkResult, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    claims: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const claims = Number(values.claims);
const rounds = Math.max(1, Number(values.rounds));
const script = new URL('./delivery.lua', import.meta.url).pathname;
const here = new URL('../../', import.meta.url).pathname;
/** Cached deliveries timed one after another in each round; their median is the round's figure. */
const cachedDeliveries = 10;
ensureWrk();

const line = (what: string, r: WrkResult) =>
  `${what.padEnd(44)} ${Math.round(r.perSecond).toString().padStart(6)}/s  p50 ${r.p50Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms  max ${r.maxMs.toFixed(0)} ms  non-2xx ${r.non2xx}`;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The code a workers process runs: this tree, or a baseline revision checked out beside it. */
interface Code {
  root: string;
  name: string;
}

/** A temporary worktree of `revision`, sharing this tree's node_modules (the lock file must match). */
function checkout(revision: string): Code {
  const dir = join(mkdtempSync(join(tmpdir(), 'assay-baseline-')), 'tree');
  execFileSync('git', ['worktree', 'add', '--detach', dir, revision], { cwd: here, stdio: 'ignore' });
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'));
  const commit = execFileSync('git', ['rev-parse', '--short', revision], { cwd: here }).toString().trim();
  return { root: `${dir}/`, name: `baseline ${commit}` };
}

const env = await systemEnv({ LOG_LEVEL: 'warn', ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0' });
const codes: Code[] = [...(values.baseline ? [checkout(values.baseline)] : []), { root: here, name: 'this tree' }];
let actors: RoleProcess | null = null;
let workers: RoleProcess | null = null;
let gateway: RoleProcess | null = null;
const stop = async (p: RoleProcess | null) => {
  if (!p) return;
  p.child.kill('SIGTERM');
  await p.exited;
};
/** A new workers process of `code`: nothing rendered, no font opened. */
const restartWorkers = async (code: Code) => {
  await stop(workers);
  workers = null;
  workers = await startRoleProcess('workers', env, 'workers serving', code.root);
};

try {
  actors = await startRoleProcess('actors', env, 'actor host serving');
  await restartWorkers(codes.at(-1)!);
  gateway = await startRoleProcess('gateway', env, 'gateway listening');
  const baseUrl = env.ASSAY_BASE_URL!;

  const seller = await call(baseUrl, 'POST', '/sandbox/agents', {
    body: { scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'] },
  });
  const buyer = await call(baseUrl, 'POST', '/sandbox/agents', { body: {} });
  const sellerToken: string = seller.body.token;
  const token: string = buyer.body.token;

  /** Publishes, lists and buys (md and pdf) an artifact; resolves with the order once released. */
  const bought = async (key: string, title: string, markdown: string) => {
    const a = await call(baseUrl, 'POST', '/v1/artifacts', {
      token: sellerToken,
      body: { title, content: markdown },
      key: `bench-artifact-${key}`,
    });
    if (a.status !== 201) throw new Error(`publish failed: ${a.status} ${JSON.stringify(a.body)}`);
    await eventually(
      `the report of ${key}`,
      async () =>
        (await call(baseUrl, 'GET', `/v1/artifacts/${a.body.id}`, { token })).body?.currentEdition?.reportDigest ??
        undefined,
      120_000,
    );
    const l = await call(baseUrl, 'POST', '/v1/listings', {
      token: sellerToken,
      body: { artifact_id: a.body.id, price_cents: 100, floor: 0, formats: ['md', 'pdf'] },
      key: `bench-listing-${key}`,
    });
    const order = await call(baseUrl, 'POST', '/v1/orders', {
      token,
      body: { listing_id: l.body.id, formats: ['md', 'pdf'] },
      key: `bench-order-${key}`,
    });
    const orderId: string = order.body.order_id;
    await eventually(`order ${key} to be released`, async () => {
      const o = (await call(baseUrl, 'GET', '/v1/orders', { token })).body.items.find((i: any) => i.id === orderId);
      return o?.state === 'released' ? true : undefined;
    });
    return orderId;
  };
  // Each round a new edition of each artifact (a line naming the round under its first heading), so its PDF is
  // rendered, not read from PostgreSQL.
  const marked = (markdown: string, round: number) =>
    markdown.replace(/^# .*$/m, (heading) => `${heading}\n\nBenchmark round ${round}.`);
  const latin = claimsArtifact(claims);
  const scripts = scriptsArtifact();
  const kinds = [
    { name: `${claims} claims`, title: latin.title, markdown: latin.markdown },
    { name: 'Greek, Russian, Japanese', title: scripts.title, markdown: scripts.markdown },
  ];
  const orders: string[][] = [];
  for (let r = 1; r <= rounds; r++) {
    orders.push(
      await Promise.all(kinds.map((k, i) => bought(`${r}-${i}`, `${k.title} (${r})`, marked(k.markdown, r)))),
    );
  }
  console.log(
    `delivery: ${claims}-claim artifact (${latin.markdown.length} characters of Markdown) and one in Greek, Russian and Japanese (${scripts.markdown.length}); ${connections} connections, ${seconds} s per row`,
  );

  // The first PDF delivery in a fresh workers process renders it (and stores it in PostgreSQL and the process'
  // memory); the next ones are cached.
  interface PdfDelivery {
    firstMs: number;
    /** CPU the workers process spent meanwhile: the render, less moved by other load on the machine. */
    firstCpuMs: number;
    cachedMs: number;
    bytes: number;
    renderer: string;
    /** 503s before the first delivery answered (a render past the gateway's request timeout goes on). */
    retries: number;
  }
  const measured = new Map<string, PdfDelivery[]>();
  const deliverPdf = async (orderId: string, pid: number): Promise<PdfDelivery> => {
    const path = `/v1/orders/${orderId}/content?format=pdf`;
    const cpuBefore = cpuSeconds(pid);
    let started = performance.now();
    let first = await call(baseUrl, 'GET', path, { token });
    let retries = 0;
    for (; first.status === 503 && retries < 3; retries++) first = await call(baseUrl, 'GET', path, { token });
    const firstMs = performance.now() - started;
    const firstCpuMs = (cpuSeconds(pid) - cpuBefore) * 1000;
    if (first.status !== 200) throw new Error(`pdf delivery failed: ${first.status} ${JSON.stringify(first.body)}`);
    const cached: number[] = [];
    for (let i = 0; i < cachedDeliveries; i++) {
      started = performance.now();
      await call(baseUrl, 'GET', path, { token });
      cached.push(performance.now() - started);
    }
    return {
      firstMs,
      firstCpuMs,
      cachedMs: median(cached),
      bytes: first.body.byte_length,
      renderer: first.body.renderer,
      retries,
    };
  };
  for (let r = 0; r < rounds; r++) {
    for (const code of codes) {
      for (const [i, k] of kinds.entries()) {
        await restartWorkers(code);
        const d = await deliverPdf(orders[r]![i]!, workers!.child.pid!);
        const key = `${code.name}\u0000${k.name}`;
        measured.set(key, [...(measured.get(key) ?? []), d]);
        console.log(
          `  round ${r + 1}, ${code.name} (${d.renderer}), ${k.name}: first ${d.firstMs.toFixed(0)} ms (workers CPU ${d.firstCpuMs.toFixed(0)} ms${d.retries > 0 ? `, after ${d.retries} 503` : ''}), cached ${d.cachedMs.toFixed(1)} ms, ${d.bytes} bytes`,
        );
      }
    }
  }
  console.log(
    `PDF deliveries, median of ${rounds} round${rounds === 1 ? '' : 's'} (first: renders it in a workers process just started; cached: median of ${cachedDeliveries} after it):`,
  );
  for (const code of codes) {
    for (const k of kinds) {
      const ds = measured.get(`${code.name}\u0000${k.name}`)!;
      console.log(
        `  ${`${code.name} (${ds[0]!.renderer}), ${k.name}`.padEnd(52)} first ${median(ds.map((d) => d.firstMs)).toFixed(0)} ms (${ds.map((d) => d.firstMs.toFixed(0)).join(', ')}; workers CPU ${median(ds.map((d) => d.firstCpuMs)).toFixed(0)} ms), cached ${median(ds.map((d) => d.cachedMs)).toFixed(1)} ms, ${ds[0]!.bytes} bytes`,
      );
    }
  }

  const orderId = orders[0]![0]!;
  const rows: [string, string][] = [
    ['ceiling: compliance bundle of the order', `/v1/orders/${orderId}/compliance-bundle`],
    ['Markdown as JSON (GET /v1/orders/{id}/content)', `/v1/orders/${orderId}/content?format=md`],
    ['Markdown raw (download_url)', `/api/orders/${orderId}/content?format=md`],
    ['PDF cached, raw (download_url)', `/api/orders/${orderId}/content?format=pdf`],
    ['PDF cached, as JSON (base64)', `/v1/orders/${orderId}/content?format=pdf`],
  ];
  const named = { actors: actors.child.pid!, workers: workers!.child.pid!, gateway: gateway.child.pid! };
  for (const [what, path] of rows) {
    const o = { url: `${baseUrl}${path}`, script, tokens: [token], connections, env: { DELIVERY_PATH: path } };
    await wrk({ ...o, seconds: 2 });
    const before = usageByGroup(named);
    const r = await wrk({ ...o, seconds });
    console.log(line(what, r));
    console.log(`  CPU per request: ${usagePerUnit(before, usageByGroup(named), r.requests)}`);
  }
  console.log(`workers peak RSS ${peakRssMiB(workers!.child.pid!)} MiB`);
  for (const scriptsOnly of [false, true]) {
    const pdf = await benchPdf({ claims, scripts: scriptsOnly, renders: 10 });
    console.log(
      `renderer alone, in this process, ${pdf.artifact}: first render ${pdf.firstRenderMs.toFixed(0)} ms (CPU ${pdf.firstRenderCpuMs.toFixed(0)} ms), then ${pdf.meanMs.toFixed(0)} ms each (CPU ${pdf.meanCpuMs.toFixed(0)} ms, ${pdf.rendersPerSecond.toFixed(1)}/s), ${pdf.pdfBytes} bytes`,
    );
  }
} finally {
  await stop(gateway);
  await stop(workers);
  await stop(actors);
  await dropEnv(env).catch(() => {});
  for (const code of codes.slice(0, -1)) {
    execFileSync('git', ['worktree', 'remove', '--force', code.root], { cwd: here });
  }
}
