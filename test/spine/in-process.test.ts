// In one process, the gateway hands a request for an actor whose shard this process's host serves straight to that
// host: no message crosses nats-server, and the answer is the one the bus would have carried. A request for a shard
// another host serves goes over NATS as before.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { actorKinds, shardOf } from '../../contracts/index.ts';
import { startRoleProcess, type RoleProcess } from '../support/processes.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let other: RoleProcess | null = null;

before(async () => {
  sys = await startSystem({ ASSAY_LEASE_TTL_MS: '2000', ASSAY_LEASE_RENEW_MS: '500' });
});
after(async () => {
  other?.child.kill('SIGKILL');
  await sys.stop();
});

test('[SPINE-IN-PROCESS] a request for a shard of this process skips nats-server; one for another host’s shard goes over NATS', async () => {
  // Every message on a principal actor's subject that crosses nats-server.
  const crossed: string[] = [];
  const monitor = sys.nc.subscribe(`${sys.names.namespace}.actor.principal.>`, {
    callback: (_err, msg) => {
      crossed.push(msg.subject);
    },
  });
  const topUp = async (agent: Agent, credits: number) => {
    await sys.nc.flush();
    crossed.length = 0;
    const r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits }, key: `k-${credits}` });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual([r.body.status, r.body.amount_cents], ['credited', credits * 100]);
    await sys.nc.flush();
    return crossed.filter((s) => s === sys.names.actorSubject('principal', agent.principalId)).length;
  };
  try {
    // This process's host serves every shard: the top-up is answered in process.
    const alone = await sys.register();
    assert.equal(await topUp(alone, 3), 0, 'no message on the actor subject');
    // A replay of the same key comes back the same way, marked as a replay.
    const replay = await sys.call('POST', '/v1/topups', { token: alone.token, body: { credits: 3 }, key: 'k-3' });
    assert.equal(replay.status, 201);
    const balance = await sys.call('GET', '/v1/balance', { token: alone.token });
    assert.equal(balance.body.balance_cents, alone.balanceCents + 300);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');

    // A second actor host takes about half the shards.
    other = await startRoleProcess('actors', { ...sys.env }, 'actor host serving');
    const shardCount = actorKinds.principal.shardCount;
    const held = await eventually(
      'the shards to split between the two hosts',
      async () => {
        const mine = sys.running!.host!.heldShards().filter((r) => r.kind === 'principal');
        return mine.length === shardCount / 2 ? new Set(mine.map((r) => r.shard)) : undefined;
      },
      20_000,
    );
    const agents: Agent[] = [];
    for (let i = 0; i < 12; i++) agents.push(await sys.register());
    const here = agents.filter((a) => held.has(shardOf(a.principalId, shardCount)));
    const there = agents.filter((a) => !held.has(shardOf(a.principalId, shardCount)));
    assert.ok(here.length > 0 && there.length > 0, `${here.length} here, ${there.length} there`);
    for (const a of here) assert.equal(await topUp(a, 5), 0, 'a shard of this process: in process');
    // The top-up, and the gateway's first rate lease for the principal, both go to the other host.
    for (const a of there) assert.ok((await topUp(a, 5)) >= 1, "another host's shard: over NATS");
  } finally {
    monitor.unsubscribe();
  }
});
