// Metrics an operator relies on (docs/operations.md, Metrics): a real Prometheus (Debian's package) scrapes the admin
// listener of a running system every second while the test buys, tops up and calls MCP tools; PromQL through its
// HTTP API shows the counters, the escrow figures and the projection positions move as the load says. `promtool
// check metrics` (Prometheus's own parser and linter of the text format) checks the exposition, and the number of
// series does not grow with the number of agents.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { freePort } from '../support/env.ts';
import { connectMcp } from '../support/mcp.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

const prometheusBin = '/usr/bin/prometheus';
const promtoolBin = '/usr/bin/promtool';
const missing = !existsSync(prometheusBin) || !existsSync(promtoolBin);

let sys: TestSystem;
let metricsPort: number;
let prometheus: ChildProcess | null = null;
let promPort: number;

before(async () => {
  if (missing && process.env.CI === 'true') throw new Error('CI installs the prometheus package; it is missing');
  metricsPort = await freePort();
  sys = await startSystem({ ASSAY_METRICS_PORT: String(metricsPort) });
  if (missing) return;
  promPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'assay-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(
    configFile,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: assay\n    static_configs:\n      - targets: ['127.0.0.1:${metricsPort}']\n`,
  );
  prometheus = spawn(
    prometheusBin,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: 'ignore' },
  );
});
after(async () => {
  prometheus?.kill('SIGTERM');
  await sys?.stop();
});

const scrape = async () => {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  return res.text();
};

/** One PromQL instant query through Prometheus's HTTP API: the value of each series, by its labels. */
async function promql(query: string): Promise<{ labels: Record<string, string>; value: number }[]> {
  const res = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(query)}`);
  const body = (await res.json()) as any;
  assert.equal(body.status, 'success', JSON.stringify(body));
  return body.data.result.map((r: any) => ({ labels: r.metric, value: Number(r.value[1]) }));
}

const sumOf = (rows: { value: number }[]) => rows.reduce((s, r) => s + r.value, 0);

test('[OPS-METRICS] Prometheus scrapes the admin listener: requests by operation and face, escrow, projections and actor shards move with the load', async (t) => {
  if (missing) return t.skip('the prometheus package is not installed (CI installs it)');
  const seller = await registerSeller(sys);
  const { listingId } = await verifiedListing(sys, seller.token, 'metrics', { price: 250, good: true });
  const buyers = await Promise.all(Array.from({ length: 4 }, () => sys.register()));
  for (const [i, b] of buyers.entries()) {
    const r = await sys.call('POST', '/v1/orders', {
      token: b.token,
      key: `buy-${i}`,
      body: { listing_id: listingId, formats: ['md'] },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(
      (await sys.call('POST', '/v1/topups', { token: b.token, key: `top-${i}`, body: { credits: 1 } })).status,
      201,
    );
  }
  const mcp = await connectMcp(sys.baseUrl, buyers[0]!.token);
  for (let i = 0; i < 3; i++) await mcp.client.callTool({ name: 'get_balance', arguments: {} });
  await mcp.client.close();

  const purchases = await eventually(
    'Prometheus sees the purchases',
    async () => {
      const rows = await promql('sum(assay_requests_total{operation="purchaseArtifact",face="rest",status="201"})');
      return sumOf(rows) >= 4 ? rows : undefined;
    },
    30_000,
  );
  assert.equal(sumOf(purchases), 4);
  const tools = await eventually('the MCP calls', async () => {
    const rows = await promql('sum(assay_requests_total{operation="getBalance",face="mcp"})');
    return sumOf(rows) >= 3 ? rows : undefined;
  });
  assert.equal(sumOf(tools), 3);
  // Four orders of 250 cents, released (the report meets the floor): the escrow gauge says so, by side.
  const released = await eventually(
    'escrow released',
    async () => {
      const rows = await promql('assay_escrow_cents{state="released",side="sandbox"}');
      return sumOf(rows) >= 1000 ? rows : undefined;
    },
    30_000,
  );
  assert.equal(sumOf(released), 1000);
  assert.equal(sumOf(await promql('assay_escrow_cents{side="live"}')), 0);
  // Latency histograms, projections caught up, and every actor shard owned by this one host.
  const p99 = await promql(
    'histogram_quantile(0.99, sum by (le) (assay_request_duration_seconds_bucket{operation="purchaseArtifact"}))',
  );
  assert.ok(p99.length === 1 && Number.isFinite(p99[0]!.value) && p99[0]!.value > 0, JSON.stringify(p99));
  const applied = await promql('assay_projection_applied_sequence{projection="principal_facts"}');
  assert.ok(sumOf(applied) > 0, 'the principal-facts projection reports its position');
  const lag = await eventually('projection lag back to 0', async () => {
    const rows = await promql('max(assay_projection_lag_messages)');
    return sumOf(rows) === 0 ? rows : undefined;
  });
  assert.equal(sumOf(lag), 0);
  const shards = await promql('assay_actor_shards_owned');
  const owned = Object.fromEntries(shards.map((r) => [r.labels.kind, r.value]));
  assert.ok(owned.principal! > 0 && owned.listing! > 0, JSON.stringify(owned));
  const commands = await promql('sum(assay_actor_commands_total{kind="principal",outcome="ok"})');
  assert.ok(sumOf(commands) >= 8, 'purchases and top-ups were commands of principal actors');
  const settlement = await promql('sum(assay_settlement_lag_seconds_count)');
  assert.ok(sumOf(settlement) >= 4, 'each settlement observed its lag');
});

test('[OPS-METRICS-FORMAT] /metrics passes promtool check metrics, and its series do not grow with the number of agents', async () => {
  const seller = await registerSeller(sys);
  const { listingId } = await verifiedListing(sys, seller.token, 'cardinality', { price: 100, good: true });
  // Agents in groups of 50 at a time: each registers and makes one purchase.
  const buyAs = async (n: number) => {
    for (let done = 0; done < n; done += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, n - done) }, async () => {
          const a = await sys.register();
          const r = await sys.call('POST', '/v1/orders', {
            token: a.token,
            key: 'one',
            body: { listing_id: listingId, formats: ['md'] },
          });
          assert.equal(r.status, 201, JSON.stringify(r.body));
        }),
      );
    }
  };
  // Assay's own series (the runtime's, such as garbage collections by kind, come and go with what the process did).
  const series = (text: string) =>
    new Set(
      text
        .split('\n')
        .filter((l) => l.startsWith('assay_'))
        .map((l) => l.slice(0, l.lastIndexOf(' '))),
    );
  await buyAs(20);
  const before = series(await scrape());
  await buyAs(200);
  const text = await scrape();
  // Ten times the agents: a label carrying an id would add a series per agent, 180 or more. A few may appear (a
  // status or a NATS outcome seen for the first time under load), never one per agent.
  const added = [...series(text)].filter((s) => !before.has(s));
  assert.ok(added.length <= 10, `series added with the agents: ${added.join(', ')}`);
  assert.doesNotMatch(text, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/, 'no id in any label');
  if (missing) return;
  // promtool reads the exposition from stdin: a parse error or a convention it flags fails the test. Assay's own
  // families only: prom-client's runtime gauges named *_total (nodejs_active_handles_total) are the library's.
  const ours = text
    .split('\n')
    .filter((l) => /^(# (HELP|TYPE) )?assay_/.test(l))
    .join('\n');
  const lint = execFileSync(promtoolBin, ['check', 'metrics'], { input: `${ours}\n`, encoding: 'utf8' });
  assert.equal(lint.trim(), '', lint);
  // Every family is in the operator's table (docs/operations.md, Metrics).
  const documented = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  for (const family of new Set([...ours.matchAll(/^# TYPE (assay_\w+)/gm)].map((m) => m[1]!))) {
    assert.ok(documented.includes(`\`${family}\``), `${family} is documented`);
  }
});
