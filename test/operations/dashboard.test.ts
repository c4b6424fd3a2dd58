// The Grafana dashboard shipped in deploy/ (docs/operations.md, Dashboard): every panel's PromQL parses (promtool
// checks it, as recording rules) and names only metrics Assay exports, so a renamed metric cannot leave a panel
// silently empty.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { metricsRegistry } from '../../cli/metrics.ts';

const deploy = new URL('../../deploy/', import.meta.url).pathname;

test('[OPS-DASHBOARD] the dashboard covers traffic, shards, lag and escrow with PromQL that parses and metrics that exist', (t) => {
  const dashboard = JSON.parse(readFileSync(join(deploy, 'grafana/assay.json'), 'utf8'));
  const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((q: any) => q.expr as string));
  const exported = new Set(metricsRegistry.getMetricsAsArray().map((m) => m.name));
  for (const expr of exprs) {
    for (const [name] of expr.matchAll(/assay_[a-z_]+/g)) {
      // A histogram is exported as one family; its series add _bucket, _sum and _count.
      const family = name.replace(/_(bucket|sum|count)$/, '');
      assert.ok(exported.has(family), `${name} in "${expr}" is a metric Assay exports`);
    }
  }
  const titles = dashboard.panels.map((p: any) => p.title as string).join(' | ');
  for (const topic of [
    /latency/i,
    /errors/i,
    /shards owned/i,
    /mailbox/i,
    /projection lag/i,
    /settlement lag/i,
    /escrow/i,
  ]) {
    assert.match(titles, topic);
  }
  const promtool = '/usr/bin/promtool';
  if (!existsSync(promtool)) {
    if (process.env.CI === 'true') assert.fail('CI installs the prometheus package; promtool is missing');
    return t.skip('promtool is not installed (CI installs the prometheus package)');
  }
  const rules = {
    groups: [{ name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `assay:dashboard_${i}`, expr })) }],
  };
  const file = join(mkdtempSync(join(tmpdir(), 'assay-dashboard-')), 'rules.json');
  // YAML is a superset of JSON: promtool reads the rules file as it is.
  writeFileSync(file, JSON.stringify(rules));
  const out = execFileSync(promtool, ['check', 'rules', file], { encoding: 'utf8' });
  assert.match(out, new RegExp(`SUCCESS: ${exprs.length} rules found`));
});
