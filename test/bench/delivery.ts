// `npm run bench:delivery`: delivery of a bought 200-claim artifact through the whole path (HTTP -> gateway ->
// NATS -> delivery service -> PostgreSQL, a signed receipt written per delivery): Markdown deliveries per second as
// JSON and as raw bytes, the PDF's first (cold) delivery, which renders it, and cached PDF deliveries per second.
// Beside them, measured in the same run: the compliance-bundle read of the same order (the same path with a stored
// document and no receipt), which bounds what a delivery can reach, and the renderer alone in this process.
//   npm run bench:delivery -- [--seconds 10] [--connections 16] [--claims 200]
import { parseArgs } from 'node:util';
import { call } from '../support/http.ts';
import { claimsArtifact } from '../support/pdf.ts';
import { systemEnv } from '../support/env.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv, eventually } from '../support/system.ts';
import { benchPdf } from './delivery-pdf.ts';
import { ensureWrk, peakRssMiB, usageByGroup, usagePerUnit, type WrkResult, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    claims: { type: 'string', default: '200' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const claims = Number(values.claims);
const script = new URL('./delivery.lua', import.meta.url).pathname;
ensureWrk();

const line = (what: string, r: WrkResult) =>
  `${what.padEnd(44)} ${Math.round(r.perSecond).toString().padStart(6)}/s  p50 ${r.p50Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms  max ${r.maxMs.toFixed(0)} ms  non-2xx ${r.non2xx}`;

const env = await systemEnv({ LOG_LEVEL: 'warn', ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0' });
const procs: RoleProcess[] = [];
try {
  procs.push(await startRoleProcess('actors', env, 'actor host serving'));
  const workers = await startRoleProcess('workers', env, 'workers serving');
  procs.push(workers);
  procs.push(await startRoleProcess('gateway', env, 'gateway listening'));
  const baseUrl = env.ASSAY_BASE_URL!;

  const seller = await call(baseUrl, 'POST', '/sandbox/agents', {
    body: { scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'] },
  });
  const buyer = await call(baseUrl, 'POST', '/sandbox/agents', { body: {} });
  const sellerToken: string = seller.body.token;
  const token: string = buyer.body.token;
  const { markdown, title } = claimsArtifact(claims);
  const a = await call(baseUrl, 'POST', '/v1/artifacts', {
    token: sellerToken,
    body: { title, content: markdown },
    key: 'bench-artifact',
  });
  if (a.status !== 201) throw new Error(`publish failed: ${a.status} ${JSON.stringify(a.body)}`);
  await eventually(
    'the report',
    async () =>
      (await call(baseUrl, 'GET', `/v1/artifacts/${a.body.id}`, { token })).body?.currentEdition?.reportDigest ??
      undefined,
    120_000,
  );
  const l = await call(baseUrl, 'POST', '/v1/listings', {
    token: sellerToken,
    body: { artifact_id: a.body.id, price_cents: 100, floor: 0, formats: ['md', 'pdf'] },
    key: 'bench-listing',
  });
  const order = await call(baseUrl, 'POST', '/v1/orders', {
    token,
    body: { listing_id: l.body.id, formats: ['md', 'pdf'] },
    key: 'bench-order',
  });
  const orderId: string = order.body.order_id;
  await eventually('the order to be released', async () => {
    const o = (await call(baseUrl, 'GET', '/v1/orders', { token })).body.items.find((i: any) => i.id === orderId);
    return o?.state === 'released' ? true : undefined;
  });
  console.log(
    `delivery: one order of a ${claims}-claim artifact (${markdown.length} characters of Markdown), ${connections} connections, ${seconds} s per row`,
  );

  // The cold PDF: the first delivery renders it (then stores it in PostgreSQL and the worker's memory).
  let started = performance.now();
  const cold = await call(baseUrl, 'GET', `/v1/orders/${orderId}/content?format=pdf`, { token });
  const coldMs = performance.now() - started;
  if (cold.status !== 200) throw new Error(`pdf delivery failed: ${cold.status} ${JSON.stringify(cold.body)}`);
  console.log(
    `PDF first delivery (renders it): ${coldMs.toFixed(0)} ms for ${cold.body.byte_length} bytes (${cold.body.renderer})`,
  );
  started = performance.now();
  await call(baseUrl, 'GET', `/v1/orders/${orderId}/content?format=pdf`, { token });
  console.log(`PDF second delivery (cached): ${(performance.now() - started).toFixed(1)} ms`);

  const rows: [string, string][] = [
    ['ceiling: compliance bundle of the order', `/v1/orders/${orderId}/compliance-bundle`],
    ['Markdown as JSON (GET /v1/orders/{id}/content)', `/v1/orders/${orderId}/content?format=md`],
    ['Markdown raw (download_url)', `/api/orders/${orderId}/content?format=md`],
    ['PDF cached, raw (download_url)', `/api/orders/${orderId}/content?format=pdf`],
    ['PDF cached, as JSON (base64)', `/v1/orders/${orderId}/content?format=pdf`],
  ];
  const named = Object.fromEntries(['actors', 'workers', 'gateway'].map((role, i) => [role, procs[i]!.child.pid!]));
  for (const [what, path] of rows) {
    const o = { url: `${baseUrl}${path}`, script, tokens: [token], connections, env: { DELIVERY_PATH: path } };
    await wrk({ ...o, seconds: 2 });
    const before = usageByGroup(named);
    const r = await wrk({ ...o, seconds });
    console.log(line(what, r));
    console.log(`  CPU per request: ${usagePerUnit(before, usageByGroup(named), r.requests)}`);
  }
  console.log(`workers peak RSS ${peakRssMiB(workers.child.pid!)} MiB`);
  const pdf = await benchPdf({ claims, renders: 10 });
  console.log(
    `renderer alone, in this process: first render ${pdf.firstRenderMs.toFixed(0)} ms, then ${pdf.meanMs.toFixed(0)} ms each (${pdf.rendersPerSecond.toFixed(1)}/s), ${pdf.pdfBytes} bytes`,
  );
} finally {
  for (const p of procs.reverse()) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
  await dropEnv(env).catch(() => {});
}
