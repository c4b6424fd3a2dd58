// test-lane: serial (child processes, killed nodes and loads that must not share the cores with one another)
// Assay on a 3-node NATS JetStream cluster (docs/operations.md, Durability and replicas): split roles (gateway,
// workers, two actor hosts) as child processes with ASSAY_STREAM_REPLICAS=3 and NATS_URL naming all three nodes.
// While agents buy over HTTP, the node leading the LEDGER stream is killed with SIGKILL and later restarted with
// its store; then the node holding the projectors' consumers is killed and restarted. Every answer is 201 or 503
// `unavailable`, purchases serve again within the stated bound, the restarted node rejoins as a current replica,
// the projections resume, and no purchase answered 201 is lost or applied twice.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { clusterUnavailable, type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts';
import { leaseCounts, leaseHolders, shardsSplitEvenly } from '../support/leases.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import {
  checkMoney,
  everyAgentBoughtSince,
  type Market,
  type PurchaseLoad,
  recovery,
  resolveUnavailable,
  setUpMarket,
  startPurchaseLoad,
  statusCounts,
} from '../support/purchase-load.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';
import { connectNats } from '../../storage/index.ts';

/**
 * What the test holds the fail-over to: from the kill until every agent has bought again. It is measured and printed
 * (docs/operations.md gives the figures); this bound is generous on purpose, for a loaded 2-core machine.
 */
const failoverBoundMs = 30_000;
/**
 * How soon the projections must move again after the node holding their stream consumers dies (they notice missing
 * heartbeats within about 5 s; before that was fixed they stayed stalled for over a minute).
 */
const projectorBoundMs = 30_000;

/** What the roles logged last above info: it explains a projection or a settlement that never caught up. */
function logProblems(): void {
  for (const [i, p] of processes.entries()) {
    const lines = p
      .output()
      .split('\n')
      .filter((l) => /"level":(40|50|60)/.test(l) && !l.includes('bus request failed'));
    const byMessage = new Map<string, number>();
    for (const l of p.output().split('\n')) {
      const m = /"msg":"([^"]*)"/.exec(l)?.[1];
      if (m) byMessage.set(m, (byMessage.get(m) ?? 0) + 1);
    }
    console.log(
      `process ${i}: ${lines.length} warnings and errors; messages ${JSON.stringify([...byMessage])}; the last:\n` +
        lines.slice(-6).join('\n').slice(0, 4000),
    );
  }
}

/** Every running node answers the stream's last sequence and leader alike, twice in a row, with every replica current. */
let agreedOn = '';
async function nodesAgree(stream: string): Promise<true | undefined> {
  const views: string[] = [];
  for (const n of cluster.nodes) {
    const nc = await connectNats(n.url, 'assay-test-view');
    try {
      const info = await (await jetstreamManager(nc)).streams.info(stream);
      const current = (info.cluster?.replicas ?? []).every((r) => r.current);
      views.push(current ? `${info.state.last_seq} ${info.cluster?.leader}` : 'catching up');
    } finally {
      await nc.close();
    }
  }
  const view = views[0]!;
  const agreed = view !== 'catching up' && views.every((v) => v === view) && view === agreedOn;
  agreedOn = view;
  return agreed ? true : undefined;
}

/** The stream as each running node answers for it (they should agree): for a failure message. */
async function logStreamViews(stream: string): Promise<void> {
  for (const n of cluster.nodes.filter((x) => x.running())) {
    const nc = await connectNats(n.url, 'assay-test-view');
    try {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(stream);
      const consumers = [];
      for await (const c of jsm.consumers.list(stream))
        consumers.push([c.name, c.cluster?.leader, c.delivered.stream_seq, c.num_pending]);
      console.log(
        `${n.name} says: last ${info.state.last_seq}, cluster ${JSON.stringify(info.cluster)}, consumers ${JSON.stringify(consumers)}`,
      );
    } catch (err) {
      console.log(`${n.name}: ${String(err)}`);
    } finally {
      await nc.close();
    }
  }
}

/**
 * A wait that timed out, with what explains it: the load's answers since `sinceMs`, the roles' warnings, the lease
 * holders and the ledger as each node sees it. CI runs on a slow machine timed out at several of these waits with
 * nothing else to go on.
 */
async function explained<T>(wait: Promise<T>, load: PurchaseLoad, sinceMs: number): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    const answers = statusCounts(load.attempts.filter((a) => a.sentAtMs >= sinceMs));
    console.log(`answers since ${new Date(sinceMs).toISOString()}: ${JSON.stringify(answers)}`);
    logProblems();
    console.log(`actor shard leases by host: ${JSON.stringify([...leaseCounts(await leaseHolders(sys))])}`);
    await logStreamViews(sys.names.streams.ledger.name);
    throw err;
  }
}

let cluster: NatsCluster;
let sys: TestSystem;
const processes: RoleProcess[] = [];

const skip = clusterUnavailable();

before(async () => {
  if (skip) return;
  cluster = await startNatsCluster(3);
  // No role in this process: every role is a child process connected to the cluster, as in production.
  sys = await startSystem({ NATS_URL: cluster.url, ASSAY_STREAM_REPLICAS: '3' }, []);
  processes.push(await startRoleProcess('workers', sys.env, 'workers serving'));
  processes.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  processes.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  processes.push(await startRoleProcess('gateway', sys.env, 'gateway listening'));
  // Until the two hosts have split the shards, a shard handed from one to the other answers 503: setting up the
  // market then met one (a CI run), which is not the fail-over this test measures.
  await shardsSplitEvenly(sys, processes.slice(1, 3));
});
after(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await sys?.stop().catch(() => {});
  await cluster?.cleanup();
});

test('[HARDEN-NATS-CLUSTER] a 3-node cluster loses its LEDGER leader to SIGKILL mid-load: only 201 or 503, service within the bound, no purchase lost or doubled', {
  skip,
}, async () => {
  const jsm = await jetstreamManager(sys.nc);
  const ledgerStream = sys.names.streams.ledger.name;
  const ledgerInfo = await jsm.streams.info(ledgerStream);
  assert.equal(ledgerInfo.config.num_replicas, 3, 'the ledger is replicated three times');
  assert.equal(ledgerInfo.cluster?.replicas?.length, 2, 'two followers beside the leader');

  const market: Market = await setUpMarket(sys, 5, 30);
  const load = startPurchaseLoad(sys, market);
  await explained(
    load.whileLoading(
      'every agent to buy',
      async () => (load.boughtSince(0).size === market.agents.length ? true : undefined),
      60_000,
    ),
    load,
    0,
  );

  // The node leading the ledger: killing it stops every append until the other two elect a new leader.
  const leaderName = (await jsm.streams.info(ledgerStream)).cluster!.leader!;
  const victim = cluster.nodes.find((n) => n.name === leaderName)!;
  // The projectors read the ledger through ordered consumers, which have one replica: those on the victim die with it.
  let consumersOnVictim = 0;
  for await (const c of jsm.consumers.list(ledgerStream)) if (c.cluster?.leader === victim.name) consumersOnVictim++;
  const acceptedBeforeKill = load.accepted.size;
  const killedAt = Date.now();
  await victim.kill('SIGKILL');
  await explained(
    load.whileLoading(
      'every agent to buy again after the kill',
      async () => (load.boughtSince(killedAt).size === market.agents.length ? true : undefined),
      failoverBoundMs + 30_000,
    ),
    load,
    killedAt,
  );

  const failover = recovery(load.attempts, market.agents, killedAt);
  const lastRefusal = Math.max(
    killedAt,
    ...load.attempts.filter((a) => a.status === 503 && a.sentAtMs >= killedAt).map((a) => a.answeredAtMs),
  );

  // Later, the node comes back with its store: it rejoins as a follower and catches up while purchases go on.
  await new Promise((r) => setTimeout(r, 2000));
  const restartedAt = Date.now();
  await victim.start();
  await cluster.ready();
  const caughtUp = await explained(
    load.whileLoading(
      'the restarted node to be a current replica of the ledger',
      async () => {
        const info = await jsm.streams.info(ledgerStream);
        const peers = [info.cluster?.leader, ...(info.cluster?.replicas ?? []).map((r) => r.name)];
        const current = (info.cluster?.replicas ?? []).every((r) => r.current && !r.offline);
        return peers.includes(victim.name) && current ? Date.now() - restartedAt : undefined;
      },
      60_000,
    ),
    load,
    restartedAt,
  );

  await explained(
    load.whileLoading(
      'every agent to buy after the restart',
      async () => (load.boughtSince(restartedAt).size === market.agents.length ? true : undefined),
      30_000,
    ),
    load,
    restartedAt,
  );

  // Then the node holding the ledger's consumer dies too. The projectors read through an ordered consumer, which has
  // one replica and dies with its node: the projections must notice and resume from their checkpoints. The shared
  // ledger pass has one consumer, and after the first kill it may be between its old and its new one: wait until
  // one is listed with its node. Only the one delivering counts (the furthest along): a consumer whose create timed
  // out on the dead node may have been created there when it came back, and delivers nothing to anyone.
  const consumerCounts = new Map<string, number>();
  const consumerNodeName = await eventually(
    'the ledger consumer delivering, listed with the node it lives on',
    async () => {
      consumerCounts.clear();
      let delivering: { at: string; seq: number } | null = null;
      for await (const c of jsm.consumers.list(ledgerStream)) {
        const at = c.cluster?.leader;
        if (!at) continue;
        consumerCounts.set(at, (consumerCounts.get(at) ?? 0) + 1);
        if (!delivering || c.delivered.stream_seq > delivering.seq) delivering = { at, seq: c.delivered.stream_seq };
      }
      return delivering && delivering.seq > 0 ? delivering.at : undefined;
    },
    15_000,
  );
  const consumerNode = cluster.nodes.find((n) => n.name === consumerNodeName)!;
  const consumersLost = consumerCounts.get(consumerNodeName)!;
  const secondKillAt = Date.now();
  await consumerNode.kill('SIGKILL');
  // Read once the node is dead: whatever its consumer delivered is at or below this. A fact appended after it can
  // reach a projection only through a consumer that is alive (one read before the kill let a fact the dying
  // consumer still delivered pass for a recovery).
  const seqAtSecondKill = await explained(
    load.whileLoading(
      'the ledger to answer after the second kill',
      async () => (await jsm.streams.info(ledgerStream)).state.last_seq,
      30_000,
    ),
    load,
    secondKillAt,
  );

  // Held to what the first kill's wait allows: a kill of a node that leads other streams and buckets than the ledger
  // can take as long to serve again (5 s on an idle machine; a CI run on a slow one saw no append within 30 s).
  const appendedAfter = await explained(
    load.whileLoading(
      'a fact appended after the second kill',
      async () => {
        const last = (await jsm.streams.info(ledgerStream)).state.last_seq;
        return last > seqAtSecondKill ? last : undefined;
      },
      failoverBoundMs + 30_000,
    ),
    load,
    secondKillAt,
  );

  const appendedAfterMs = Date.now() - secondKillAt;
  const projectorsMs = await explained(
    load.whileLoading(
      'both ledger projections to project what was appended after the second kill',
      async () => {
        const rows = await sys.sql<{ name: string; last_seq: string }[]>`
          SELECT name, last_seq FROM projection_checkpoints WHERE name LIKE ${`%:${ledgerStream}`}`;
        const passed = rows.length === 2 && rows.every((r) => Number(r.last_seq) >= appendedAfter);
        if (passed) return Date.now() - secondKillAt;
        // Thrown, so that the timeout names where each projection stands.
        throw new Error(`at ${JSON.stringify(rows)}, want ${appendedAfter}`);
      },
      projectorBoundMs,
    ),
    load,
    secondKillAt,
  );
  await consumerNode.start();
  await cluster.ready();
  const secondRestartAt = Date.now();
  await explained(
    load.whileLoading(
      'every agent to buy after the second restart',
      everyAgentBoughtSince(load, market, secondRestartAt),
      30_000,
    ),
    load,
    secondRestartAt,
  );
  await load.finish();

  const refused = load.unavailable.size;
  await resolveUnavailable(sys, load);
  // The checks read the ledger through consumers and stream info, which a replica still catching up may answer
  // from its own (older) copy: read only once every node says the same.
  await eventually('every node to agree on the ledger', () => nodesAgree(ledgerStream), 60_000);
  const { orders } = await checkMoney(sys, market, load).catch((err) => {
    logProblems();
    throw err;
  });
  assert.ok(load.accepted.size > acceptedBeforeKill, 'purchases went on after the kill');
  assert.ok(
    failover.allMs < failoverBoundMs,
    `every agent bought again ${failover.allMs} ms after the kill (bound ${failoverBoundMs} ms)`,
  );
  console.log(
    `nats cluster fail-over: killed ${victim.name} (LEDGER leader); first purchase after the kill served after ` +
      `${failover.firstMs} ms, every agent served after ${failover.allMs} ms, last 503 answered ` +
      `${lastRefusal - killedAt} ms after the kill; ${consumersOnVictim} ledger consumers died with it; ` +
      `restarted node current after ${caughtUp} ms; then killed ${consumerNode.name} holding the delivering ledger ` +
      `consumer (${consumersLost} of those listed by node: ${JSON.stringify([...consumerCounts])}): the ledger appended ` +
      `again after ${appendedAfterMs} ms, both projections moved on after ` +
      `${projectorsMs} ms; ${orders} orders, ` +
      `${refused} keys answered 503 and retried; answers ${JSON.stringify(statusCounts(load.attempts))}`,
  );
});
