// `assay status` and the actor metrics when an actor host dies (docs/operations.md, Status): two actor hosts as
// child processes share the shards; one is killed with SIGKILL; the status command (the real CLI) and the survivor's
// /metrics then show the survivor owning every shard, the dead host gone, and lease takeovers counted.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freePort } from '../support/env.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
const hosts: { process: RoleProcess; metricsPort: number }[] = [];

before(async () => {
  sys = await startSystem(
    { ASSAY_LEASE_TTL_MS: '2000', ASSAY_LEASE_RENEW_MS: '500', ASSAY_REQUEST_TIMEOUT_MS: '3000' },
    ['gateway', 'workers'],
  );
  for (let i = 0; i < 2; i++) {
    const metricsPort = await freePort();
    const env = { ...sys.env, ASSAY_METRICS_PORT: String(metricsPort) };
    hosts.push({ process: await startRoleProcess('actors', env, 'actor host serving'), metricsPort });
  }
});
after(async () => {
  for (const h of hosts) h.process.child.kill('SIGKILL');
  await sys?.stop();
});

const status = async () => {
  const r = await runCli(sys, ['status', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
};

/** One metric's samples from a process's /metrics, by their label text. */
async function samples(port: number, name: string): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) found.set(m[1] ?? '', Number(m[2]));
  }
  return found;
}

test('[OPS-STATUS] assay status shows who owns which shard; after an actor host is killed the survivor owns them all, and its metrics count the takeovers', async () => {
  const split = await eventually(
    'two hosts sharing the shards',
    async () => {
      const s = await status();
      const actorHosts = s.hosts.filter((h: any) => h.pool === 'actors' && h.alive);
      const shared = actorHosts.length === 2 && actorHosts.every((h: any) => h.shards.principal === 32);
      return shared && s.unownedShards.principal === 0 ? s : undefined;
    },
    30_000,
  );
  assert.ok(split.streams.some((st: any) => st.name.endsWith('_LEDGER') && st.replicas === 1));
  assert.ok(
    split.jobs.some((j: any) => j.job === 'ledger_projector' && j.host),
    'the projector runs somewhere',
  );
  const plain = await runCli(sys, ['status']);
  assert.match(plain.stdout, /Every actor shard has an owner\./);
  assert.match(plain.stdout, /principal 32/);

  // Purchases spread over both hosts' shards, then one host dies without a goodbye.
  const buyers = await Promise.all(Array.from({ length: 20 }, () => sys.register()));
  for (const b of buyers) {
    const r = await sys.call('POST', '/v1/topups', { token: b.token, key: 'before', body: { credits: 1 } });
    assert.equal(r.status, 201);
  }
  const [victim, survivor] = hosts as [(typeof hosts)[0], (typeof hosts)[0]];
  victim.process.child.kill('SIGKILL');
  await victim.process.exited;

  const after = await eventually(
    'the survivor owning every shard',
    async () => {
      const s = await status();
      const live = s.hosts.filter((h: any) => h.pool === 'actors' && h.alive);
      return live.length === 1 && live[0].shards.principal === 64 && s.unownedShards.principal === 0 ? s : undefined;
    },
    30_000,
  );
  assert.equal(after.hosts.filter((h: any) => h.pool === 'actors' && h.alive).length, 1);
  const owned = await samples(survivor.metricsPort, 'assay_actor_shards_owned');
  assert.equal(owned.get('{kind="principal"}'), 64);
  const takeovers = await samples(survivor.metricsPort, 'assay_lease_takeovers_total');
  assert.equal(takeovers.get('{kind="principal"}'), 32, 'the dead host’s 32 principal shards were taken over');
  // And every principal answers again.
  for (const b of buyers) {
    const r = await sys.call('POST', '/v1/topups', { token: b.token, key: 'after', body: { credits: 1 } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
});
