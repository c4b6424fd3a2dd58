// Two actor hosts in separate processes share the principal shards. One is killed with SIGKILL during top-up load
// (every agent has topped up, and top-ups are in flight on its shards): the other takes over its shards and serves
// its principals, every top-up answered 201 exists exactly once in the ledger stream, and requests during the
// handover get 201 or 503 unavailable, nothing else.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { LedgerFact } from '../../contracts/index.ts';
import { leaseCounts, leaseHolders, pidOf } from '../support/leases.ts';
import { startRoleProcess, type RoleProcess } from '../support/processes.ts';
import { type Agent, backgroundLoad, eventually, startSystem, type TestSystem } from '../support/system.ts';

const leaseTtlMs = 2000;
const leaseRenewMs = 500;
let sys: TestSystem;
const hosts: RoleProcess[] = [];

before(async () => {
  sys = await startSystem(
    {
      ASSAY_LEASE_TTL_MS: String(leaseTtlMs),
      ASSAY_LEASE_RENEW_MS: String(leaseRenewMs),
      ASSAY_REQUEST_TIMEOUT_MS: '3000',
    },
    ['gateway', 'workers'],
  );
});
after(async () => {
  for (const h of hosts) h.child.kill('SIGKILL');
  await sys.stop();
});

/** How many principal shards each host holds. */
const leaseOwners = async () => leaseCounts(await leaseHolders(sys, ['principal']));

/** The shard lease of a principal, read from its actor subject `<ns>.actor.principal.<shard>.<id>`. */
const principalShard = (principalId: string) =>
  Number(sys.names.actorSubject('principal', principalId).split('.').at(-2));

test('[SPINE-SHARDING] kill -9 of one actor host: takeover, no lost or doubled top-up, only 201 or 503 (or 429 to an agent past its rate)', async () => {
  const env = { ...sys.env };
  hosts.push(await startRoleProcess('actors', env, 'actor host serving'));
  hosts.push(await startRoleProcess('actors', env, 'actor host serving'));
  const [a, b] = hosts as [RoleProcess, RoleProcess];
  // Both hosts hold shards: 32 each once they have rebalanced.
  await eventually(
    'shards to split between the two hosts',
    async () => {
      const owners = await leaseOwners();
      const counts = [...owners.values()];
      return owners.size === 2 && counts.every((c) => c === 32) ? owners : undefined;
    },
    20_000,
  );

  const agents: Agent[] = [];
  for (let i = 0; i < 24; i++) agents.push(await sys.register());
  // The agents whose principal shard the host to kill holds.
  const kv = await new Kvm(sys.nc).open(sys.names.buckets.leases);
  const victimAgents = new Set<string>();
  for (const agent of agents) {
    const e = await kv.get(`lease.principal.${principalShard(agent.principalId)}`);
    if (e?.operation === 'PUT' && pidOf(e.json<{ host: string }>().host) === a.child.pid)
      victimAgents.add(agent.principalId);
  }
  assert.ok(victimAgents.size > 0 && victimAgents.size < agents.length, `${victimAgents.size} agents on the victim`);
  const statuses = new Map<number, number>();
  const accepted = new Map<string, { principalId: string; credits: number }>();
  const unresolved = new Map<string, { agent: Agent; credits: number }>();
  const toppedUpBeforeKill = new Set<string>();
  const toppedUpAfterTakeover = new Set<string>();
  const inFlight = new Set<string>();
  let phase: 'before kill' | 'handover' | 'after takeover' = 'before kill';
  /** A top-up, counted as in flight (each agent has one request out at a time) until it is answered. */
  const topUp = async (agent: Agent, credits: number, key: string) => {
    inFlight.add(agent.principalId);
    try {
      return await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits }, key });
    } finally {
      inFlight.delete(agent.principalId);
    }
  };
  const { whileLoading, finish } = backgroundLoad((running) =>
    agents.map(async (agent, ai) => {
      for (let i = 0; running(); i++) {
        const key = `${ai}-${i}`;
        const credits = (i % 5) + 1;
        const sentIn = phase;
        const r = await topUp(agent, credits, key);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201) {
          accepted.set(key, { principalId: agent.principalId, credits });
          if (sentIn === 'before kill') toppedUpBeforeKill.add(agent.principalId);
          if (sentIn === 'after takeover') toppedUpAfterTakeover.add(agent.principalId);
        } else if (r.status === 503) {
          assert.equal(r.body.code, 'unavailable');
          assert.equal(r.body.retryable, true);
          unresolved.set(key, { agent, credits });
        } else if (r.status === 429) {
          // An agent that outruns its plan's top-up rate is refused, which applies nothing: back off as told.
          assert.equal(r.body.code, 'rate_limited');
          await new Promise((resolve) => setTimeout(resolve, Number(r.headers.get('retry-after') ?? '1') * 1000));
        } else assert.fail(`unexpected ${r.status} ${JSON.stringify(r.body)}`);
        // Replay a used key now and then: it must replay, never apply again. A replay counts against the agent's
        // rate like any call, so one past the rate is refused (429, applying nothing) as the call itself would be.
        if (i % 7 === 3 && accepted.has(key)) {
          const again = await topUp(agent, credits, key);
          assert.ok([201, 503, 429].includes(again.status), `replay got ${again.status}`);
          if (again.status === 429) assert.equal(again.body.code, 'rate_limited');
        }
      }
    }),
  );

  // Kill once every agent has topped up, while top-ups are in flight on the host killed.
  await whileLoading(
    'every agent to top up',
    async () => (toppedUpBeforeKill.size === agents.length ? true : undefined),
    10_000,
  );
  const inFlightOnVictim = [...inFlight].filter((p) => victimAgents.has(p)).length;
  phase = 'handover';
  const killedAt = Date.now();
  a.child.kill('SIGKILL');
  assert.ok(inFlightOnVictim > 0, 'top-ups were in flight on the killed host');
  const survivorPid = b.child.pid!;
  // How long this takes is measured and printed, not asserted: the design's bound (docs/operations.md, "Handover
  // bound") is the lease TTL plus one renew interval plus the time the survivor's requests take, and on a loaded
  // machine nothing bounds the last term. The timeout here only turns a takeover that never comes into a failure.
  const takeoverMs = await whileLoading(
    'the survivor to own all 64 shards',
    async () => {
      const owners = await leaseOwners();
      const mine = [...owners].find(([host]) => pidOf(host) === survivorPid)?.[1];
      return mine === 64 ? Date.now() - killedAt : undefined;
    },
    30_000,
  );
  phase = 'after takeover';
  // Every principal the killed host served tops up again, through the survivor.
  await whileLoading(
    "the killed host's agents to top up through the survivor",
    async () => ([...victimAgents].every((p) => toppedUpAfterTakeover.has(p)) ? true : undefined),
    30_000,
  );
  await finish();

  // Resolve every 503 by retrying its key: it either replays the original effect or applies it now, once.
  // An agent the load took past its rate is refused first (429, applying nothing): its retry waits as it is told.
  for (const [key, { agent, credits }] of unresolved) {
    let r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits }, key });
    while (r.status === 429) {
      await sleep(1000 * Number(r.headers.get('retry-after') ?? 1));
      r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits }, key });
    }
    assert.equal(r.status, 201, JSON.stringify(r.body));
    accepted.set(key, { principalId: agent.principalId, credits });
  }

  // The stream holds exactly one credit fact per accepted key, and no other top-up.
  const js = jetstream(sys.nc);
  const stream = sys.names.streams.ledger.name;
  const info = await (await js.jetstreamManager()).streams.info(stream);
  const consumer = await js.consumers.get(stream);
  const perKey = new Map<string, number>();
  const messages = await consumer.consume();
  for await (const m of messages) {
    const f = m.json<LedgerFact>();
    if (f.type === 'credited' && f.source === 'sandbox_topup') {
      const k = f.idempotency!.key;
      perKey.set(k, (perKey.get(k) ?? 0) + 1);
    }
    if (m.seq >= info.state.last_seq) break;
  }
  await messages.close();
  assert.deepEqual([...perKey.keys()].sort(), [...accepted.keys()].sort());
  assert.ok(
    [...perKey.values()].every((n) => n === 1),
    'no top-up applied twice',
  );

  for (const agent of agents) {
    const expected =
      agent.balanceCents +
      [...accepted.values()]
        .filter((v) => v.principalId === agent.principalId)
        .reduce((s, v) => s + v.credits * 100, 0);
    const r = await sys.call('GET', '/v1/balance', { token: agent.token });
    assert.equal(r.body.balance_cents, expected);
  }
  // The survivor's own account of the takeover, from its log: when it took the lapsed leases.
  const tookOver = b
    .output()
    .split('\n')
    .filter((line) => line.includes('took over lapsed lease'))
    .flatMap((line) => {
      try {
        return [(JSON.parse(line) as { time: number }).time - killedAt];
      } catch {
        return [];
      }
    });
  const survivorSays = tookOver.length > 0 ? `${Math.min(...tookOver)}-${Math.max(...tookOver)} ms` : 'not logged';
  console.log(
    `takeover after kill -9: survivor took ${tookOver.length} lapsed leases ${survivorSays} after the kill, ` +
      `observed owning all 64 principal shards after ${takeoverMs} ms (design: TTL ${leaseTtlMs} + renew ` +
      `${leaseRenewMs} ms plus the time its requests take); ${inFlightOnVictim} top-ups in flight on the killed ` +
      `host; statuses ${JSON.stringify([...statuses])}`,
  );
});
