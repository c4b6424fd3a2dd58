// test-lane: serial (child processes, killed nodes and loads that must not share the cores with one another)
// A projection whose consumer's NATS node dies (docs/operations.md, Stalled projections). On a private 3-node
// JetStream cluster with R3 streams, workers as a child process with a short stall bound, agents buying over HTTP:
// the node holding the LEDGER consumer is killed with SIGKILL while the stream keeps growing. The stall shows on
// /healthz, in `assay status` and in the workers' metrics for as long as it lasts, the projector drops and
// re-creates its consumer, the projections catch up within the stated bound, the stall is cleared everywhere, and
// no purchase is lost or applied twice. A second test kills the node a projector's connection and consumer were both
// on (its client then reports no missed heartbeat): only the liveness check gets it going again. A third creates the
// projector's consumers with a node dead: none of them waits on it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import pino from 'pino';
import { type ProcessMetrics, startTelemetry } from '../../cli/telemetry.ts';
import { connectNats, createOrderedConsumer, type Projection, runProjections } from '../../storage/index.ts';
import { freePort } from '../support/env.ts';
import { clusterUnavailable, type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import {
  checkMoney,
  type Market,
  resolveUnavailable,
  setUpMarket,
  startPurchaseLoad,
} from '../support/purchase-load.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

/** The stall bound the workers run with (ASSAY_PROJECTION_STALL_MS): short, so the test need not wait long. */
const stallMs = 1500;
/**
 * How soon the projections must have applied what was appended after the kill (after the test lets go, in the
 * first test): the stall bound, a re-create (creates a second apart while some land on the dead node) and the
 * catch-up of what piled up, on a loaded 2-core machine.
 */
const catchUpBoundMs = stallMs + 15_000;

let cluster: NatsCluster;
let sys: TestSystem;
let workers: RoleProcess;
let metricsPort: number;
/** This process's instruments: the probe projector of the second test records into them. */
let processMetrics: ProcessMetrics;
const others: RoleProcess[] = [];

const skip = clusterUnavailable();
/** A stream of the test's own, replicated like the ledger, for the second and third tests. */
const scratchStream = () => `${sys.names.streams.ledger.name}_CREATES`;

before(async () => {
  processMetrics = await startTelemetry(process.env, 'projection-stall-test');
  if (skip) return;
  cluster = await startNatsCluster(3);
  sys = await startSystem({ NATS_URL: cluster.url, ASSAY_STREAM_REPLICAS: '3' }, []);
  metricsPort = await freePort();
  workers = await startRoleProcess(
    'workers',
    { ...sys.env, ASSAY_PROJECTION_STALL_MS: String(stallMs), ASSAY_METRICS_PORT: String(metricsPort) },
    'workers serving',
  );
  others.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  others.push(await startRoleProcess('gateway', sys.env, 'gateway listening'));
  const jsm = await jetstreamManager(sys.nc);
  await jsm.streams.add({ name: scratchStream(), subjects: [`${scratchStream()}.>`], num_replicas: 3 });
  await jetstream(sys.nc).publish(`${scratchStream()}.x`, '{}');
});
after(async () => {
  for (const p of [workers, ...others]) p?.child.kill('SIGKILL');
  await sys?.stop().catch(() => {});
  await cluster?.cleanup();
});

/** One metric's samples from the workers' /metrics, by their label text. */
/** The workers' newest log lines about projections (stalls, dropped and re-created consumers), for a failure. */
function projectorLog(lines = 8): string {
  return workers
    .output()
    .split('\n')
    .filter((l) => l.includes('projection'))
    .slice(-lines)
    .map((l) => l.slice(0, 400))
    .join('\n');
}

async function samples(name: string): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) found.set(m[1] ?? '', Number(m[2]));
  }
  return found;
}
const sumOf = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/** The LEDGER projections' checkpoints, by name. */
async function checkpoints(): Promise<Map<string, number>> {
  const rows = await sys.sql<{ name: string; last_seq: string }[]>`
    SELECT name, last_seq FROM projection_checkpoints WHERE name LIKE ${`%:${sys.names.streams.ledger.name}`}`;
  return new Map(rows.map((r) => [r.name, Number(r.last_seq)]));
}

/**
 * `assay status --json`, run again (as an operator would) when one of its requests timed out: right after a node is
 * killed the cluster may still be moving a stream's leader, and a loaded machine stretches that past the request.
 */
const statusJson = async () => {
  for (let attempt = 1; ; attempt++) {
    const r = await runCli(sys, ['status', '--json']);
    if (r.code === 0) return JSON.parse(r.stdout);
    if (attempt === 3 || !/timeout/i.test(r.stderr)) assert.equal(r.code, 0, r.stderr);
  }
};

test('[PROJ-STALL-VISIBLE] [PROJ-STALL-RECOVER] the node holding the ledger consumer dies while the stream grows: the stall shows on /healthz, in assay status and the metrics while it lasts, and the projections catch up within the bound', {
  skip,
}, async () => {
  const jsm = await jetstreamManager(sys.nc);
  const ledger = sys.names.streams.ledger.name;
  const principalFacts = `principal_facts:${ledger}`;
  const events = `events:${ledger}`;
  const market: Market = await setUpMarket(sys, 3, 10);
  const load = startPurchaseLoad(sys, market);
  await load.whileLoading(
    'every agent to buy',
    async () => (load.boughtSince(0).size === market.agents.length ? true : undefined),
    60_000,
  );
  const consumerNodeName = await load.whileLoading(
    'the ledger consumer delivering, listed with the node it lives on',
    async () => {
      // The one delivering is the furthest along (any other one is left over from an earlier pass).
      let delivering: { at: string; seq: number } | null = null;
      for await (const c of jsm.consumers.list(ledger)) {
        const at = c.cluster?.leader;
        if (at && (!delivering || c.delivered.stream_seq > delivering.seq))
          delivering = { at, seq: c.delivered.stream_seq };
      }
      return delivering && delivering.seq > 0 ? delivering.at : undefined;
    },
    15_000,
  );
  const consumerNode = cluster.nodes.find((n) => n.name === consumerNodeName)!;
  const stallsBefore = sumOf(await samples('assay_projection_stalls_total'));
  const restartsBefore = sumOf(await samples('assay_projection_consumer_restarts_total'));

  // The test holds both checkpoint rows locked so that the stall lasts while it looks at /healthz, status and the
  // metrics: the projector can still see the stall, drop its dead consumer and count it, but commits nothing.
  // Without the lock it re-creates the consumer and moves on about `stallMs` after the kill.
  let letGo = () => {};
  const held = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  let locked = () => {};
  const lockTaken = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const holding = sys.sql.begin(async (tx) => {
    // In the order the projector's batch updates them (principal facts, then events): never a deadlock with it.
    await tx`SELECT last_seq FROM projection_checkpoints WHERE name = ${principalFacts} FOR UPDATE`;
    await tx`SELECT last_seq FROM projection_checkpoints WHERE name = ${events} FOR UPDATE`;
    locked();
    await held;
  });
  await lockTaken;
  try {
    const killedAt = Date.now();
    await consumerNode.kill('SIGKILL');
    // Read once the node is dead: whatever its consumer delivered is at or below this.
    const seqAtKill = await load.whileLoading(
      'the ledger to answer after the kill',
      async () => (await jsm.streams.info(ledger)).state.last_seq,
      30_000,
    );
    const appendedAfter = await load.whileLoading(
      'a fact appended after the kill',
      async () => {
        const last = (await jsm.streams.info(ledger)).state.last_seq;
        return last > seqAtKill ? last : undefined;
      },
      30_000,
    );

    // While it lasts: /healthz names both projections stalled.
    const health = await load.whileLoading(
      '/healthz to show both ledger projections stalled',
      async () => {
        const h = await sys.call('GET', '/healthz');
        const stalled = h.body.alerts.filter((a: { kind: string }) => a.kind === 'projection_stalled');
        const subjects = stalled.map((a: { subject: string }) => a.subject).sort();
        return subjects.join() === [events, principalFacts].join() ? h.body : undefined;
      },
      30_000,
    );
    const shownMs = Date.now() - killedAt;
    assert.equal(health.status, 'degraded');
    const alert = health.alerts.find((a: { subject: string }) => a.subject === principalFacts);
    assert.match(alert.message, /has applied nothing for [\d.]+ s while its stream .* moved ahead/);
    assert.ok(alert.count >= 1, 'the alert counts the facts waiting');

    // `assay status` (the real CLI) marks both stalled and lists the alerts.
    const status = await statusJson();
    for (const name of ['principal_facts', 'events']) {
      const p = status.projections.find((x: { name: string }) => x.name === name);
      assert.ok(p.stalledSince, `${name} shown stalled: ${JSON.stringify(p)}`);
      assert.ok(p.lag > 0, `${name} shown behind its stream`);
    }
    assert.ok(status.alerts.some((a: { kind: string }) => a.kind === 'projection_stalled'));
    const plain = await runCli(sys, ['status']);
    assert.match(plain.stdout, /principal_facts: \d+ \/ \d+, lag \d+, STALLED since/);

    // The metrics: stalled, the stall counted, the lag growing, and the dead consumer dropped and counted.
    const lagBefore = await load.whileLoading(
      'the metrics to show both projections stalled and the dead consumer dropped',
      async () => {
        const stalled = await samples('assay_projection_stalled');
        const restarts = sumOf(await samples('assay_projection_consumer_restarts_total'));
        const both = stalled.get('{projection="principal_facts"}') === 1 && stalled.get('{projection="events"}') === 1;
        // Thrown, not returned: a timeout then says which half was missing.
        if (!both || restarts <= restartsBefore)
          throw new Error(
            `stalled ${JSON.stringify([...stalled])}, consumer restarts ${restarts} (${restartsBefore} before); ` +
              `the projector's last words on its projections:\n${projectorLog()}`,
          );
        return (await samples('assay_projection_lag_messages')).get('{projection="principal_facts"}');
      },
      30_000,
    );
    assert.ok(sumOf(await samples('assay_projection_stalls_total')) >= stallsBefore + 2, 'both stalls counted');
    await load.whileLoading(
      'the lag in the metrics to grow while the stall lasts',
      async () => {
        const lag = (await samples('assay_projection_lag_messages')).get('{projection="principal_facts"}');
        return lag !== undefined && lagBefore !== undefined && lag > lagBefore ? true : undefined;
      },
      30_000,
    );
    assert.match(workers.output(), /projection stalled: its stream is ahead of it/);
    assert.match(workers.output(), /dropping it and re-creating it from the checkpoint/);

    // Let go: the projections apply what was appended after the kill within the bound.
    const wantSeq = Math.max(appendedAfter, (await jsm.streams.info(ledger)).state.last_seq);
    const heldMs = Date.now() - killedAt;
    const letGoAt = Date.now();
    letGo();
    await holding;
    await load
      .whileLoading(
        'both ledger projections to apply what was appended while stalled',
        async () => {
          const at = await checkpoints();
          if ([principalFacts, events].every((c) => (at.get(c) ?? 0) >= wantSeq)) return true;
          throw new Error(`at ${JSON.stringify([...at])}, want ${wantSeq}`);
        },
        catchUpBoundMs,
      )
      .catch((err) => {
        console.log(workers.output().slice(-4000));
        throw err;
      });
    const caughtUpMs = Date.now() - letGoAt;

    // And the stall is cleared everywhere.
    await load.whileLoading(
      'the stall to be cleared on /healthz',
      async () => {
        const h = await sys.call('GET', '/healthz');
        return h.body.alerts.some((a: { kind: string }) => a.kind === 'projection_stalled') ? undefined : true;
      },
      30_000,
    );
    const clearedMs = Date.now() - letGoAt;
    const cleared = await statusJson();
    for (const p of cleared.projections) assert.equal(p.stalledSince, null, JSON.stringify(p));
    const stalledAfter = await samples('assay_projection_stalled');
    assert.equal(stalledAfter.get('{projection="principal_facts"}'), 0);
    assert.equal(stalledAfter.get('{projection="events"}'), 0);
    assert.match(workers.output(), /projection moving again after a stall/);
    console.log(
      `projection stall: killed ${consumerNode.name} holding the ledger consumer; /healthz showed the stall ` +
        `${shownMs} ms after the kill; held ${heldMs} ms; caught up to ${wantSeq} ${caughtUpMs} ms after letting ` +
        `go (bound ${catchUpBoundMs} ms); /healthz clear ${clearedMs} ms after letting go`,
    );
  } finally {
    letGo();
    await holding.catch(() => {});
    await consumerNode.start();
    await cluster.ready();
  }
  await load.finish();
  await resolveUnavailable(sys, load);
  // Nothing applied twice or skipped across the drop and the re-creation.
  await checkMoney(sys, market, load);
});

test('[PROJ-STALL-RECOVER] a projector whose connection and consumer were both on the node that died, so that its client never reports a missed heartbeat, drops the silent consumer and catches up', {
  skip,
}, async () => {
  const jsm = await jetstreamManager(sys.nc);
  const stream = scratchStream();
  const probe: Projection<unknown> = {
    checkpoint: `probe:${stream}`,
    stream,
    apply: async () => {},
    truncate: async () => {},
  };
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const restartsOf = async (reason: string) =>
    (await processMetrics.metrics.projectionConsumerRestarts.get()).values.find(
      (v) => v.labels.projection === 'probe' && v.labels.reason === reason,
    )?.value ?? 0;
  // The projector's consumer lands on a random peer of the stream: run it, connected to one node only, until its
  // consumer lives on that node too (its client learns the others from the cluster and reconnects to one of them).
  let node = cluster.nodes[0]!;
  let running: { stop: AbortController; done: Promise<void> } | null = null;
  let nc: NatsConnection | null = null;
  let publishing = true;
  const publisher = (async () => {
    const js = jetstream(sys.nc);
    while (publishing) {
      await js.publish(`${stream}.x`, '{}').catch(() => {});
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 30, 'the projector never placed its consumer on the node it is connected to');
      node = cluster.nodes[attempt % cluster.nodes.length]!;
      nc = await connectNats(node.url, 'assay-test-probe');
      const stop = new AbortController();
      running = { stop, done: runProjections(nc, sys.sql, [probe], { log, stallMs }, stop.signal) };
      const at = await eventually(
        'the probe consumer delivering',
        async () => {
          let delivering: { at: string; seq: number } | null = null;
          for await (const c of jsm.consumers.list(stream)) {
            const leader = c.cluster?.leader;
            if (leader && (!delivering || c.delivered.stream_seq > delivering.seq))
              delivering = { at: leader, seq: c.delivered.stream_seq };
          }
          return delivering && delivering.seq > 1 ? delivering.at : undefined;
        },
        30_000,
      );
      if (at === node.name && nc.getServer().endsWith(`:${node.port}`)) break;
      stop.abort();
      await running.done;
      running = null;
      await nc.close();
      nc = null;
      // Its consumer gone before the next try, so that the one listed next is the next projector's.
      await eventually(
        'the probe consumers deleted',
        async () => {
          const names: string[] = [];
          for await (const c of jsm.consumers.list(stream)) names.push(c.name);
          for (const name of names) await jsm.consumers.delete(stream, name).catch(() => {});
          return names.length === 0 ? true : undefined;
        },
        30_000,
      );
    }
    const stalledBefore = await restartsOf('stalled');
    await node.kill('SIGKILL');
    // Read once the node is dead: whatever its consumer delivered is at or below this.
    const seqAtKill = await eventually(
      'the stream to answer after the kill',
      async () => (await jsm.streams.info(stream)).state.last_seq,
      30_000,
    );
    const appendedAfter = await eventually(
      'a message appended after the kill',
      async () => {
        const last = (await jsm.streams.info(stream)).state.last_seq;
        return last > seqAtKill ? last : undefined;
      },
      30_000,
    );
    await eventually(
      'the probe projection to apply what was appended after the kill',
      async () => {
        const [row] = await sys.sql<{ last_seq: string }[]>`
          SELECT last_seq FROM projection_checkpoints WHERE name = ${probe.checkpoint}`;
        if (Number(row?.last_seq) >= appendedAfter) return true;
        throw new Error(`at ${row?.last_seq}, want ${appendedAfter}`);
      },
      catchUpBoundMs,
    ).catch((err) => {
      console.log(lines.join('').slice(-4000));
      throw err;
    });
    // Its client reported nothing: the silent consumer was dropped by the liveness check, and said so.
    assert.ok(
      (await restartsOf('stalled')) > stalledBefore,
      `the silent consumer dropped for delivering nothing: ${JSON.stringify((await processMetrics.metrics.projectionConsumerRestarts.get()).values)} ${lines.join('')}`,
    );
    assert.ok(
      lines.some((l) => l.includes('projection consumer delivered nothing while its stream moved on')),
      lines.join(''),
    );
  } finally {
    publishing = false;
    await publisher;
    running?.stop.abort();
    await running?.done;
    await nc?.close();
    await node.start();
    await cluster.ready();
  }
});

test('[PROJ-STALL-RECOVER] with a node of the stream dead, every consumer the projector creates is answered and lives on a live node', {
  skip,
}, async () => {
  const jsm = await jetstreamManager(sys.nc);
  const stream = scratchStream();
  // Every replica current first (the previous test restarted a node).
  const info = await eventually(
    'every replica of the stream current',
    async () => {
      const i = await jsm.streams.info(stream);
      const replicas = i.cluster?.replicas ?? [];
      return i.cluster?.leader && replicas.length === 2 && replicas.every((r) => r.current) ? i : undefined;
    },
    60_000,
  );
  // A follower: the stream keeps its leader, so what is measured is placement alone.
  const victim = cluster.nodes.find((n) => n.name !== info.cluster?.leader)!;
  await victim.kill('SIGKILL');
  try {
    // If the victim led the JetStream meta group, nothing is created until the other two elect a leader.
    await eventually(
      'the cluster to create consumers again',
      async () => {
        const c = await createOrderedConsumer(sys.nc, stream, 1, new AbortController().signal);
        await c.delete().catch(() => {});
        return true;
      },
      60_000,
    );
    // nats-server 2.9 places a one-replica consumer on any peer of the stream, the dead one included: about one
    // create in three is never answered. Twelve calls all answered is what hedging gives; with one create per call,
    // 1 run in 130 would pass.
    const placed: string[] = [];
    for (let i = 0; i < 12; i++) {
      try {
        const consumer = await createOrderedConsumer(sys.nc, stream, 1, new AbortController().signal);
        placed.push(String((await consumer.info(true)).cluster?.leader));
        await consumer.delete().catch(() => {});
      } catch (err) {
        placed.push(`failed (${String(err)})`);
      }
    }
    assert.ok(
      placed.every((at) => at !== victim.name && cluster.nodes.some((n) => n.name === at)),
      `placed on ${placed.join(', ')} with ${victim.name} dead`,
    );
  } finally {
    await victim.start();
    await cluster.ready();
  }
});
