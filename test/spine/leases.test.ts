// Shard leases against a real JetStream KV bucket: hosts joining split the shards fairly and disjointly, a host
// leaving hands its shards over, and a host whose heartbeat stops loses them to the others after the TTL. Leases are
// written only when they change hands; a holder whose heartbeat cannot be written stops serving before anyone takes
// over, a host whose watch went quiet does not take a live holder's leases, and a lease another host writes is given
// up at once. The pools of one process share one watch of the bucket. Faults are injected by wrapping the real
// bucket's calls.
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import pino from 'pino';
import { systemClock } from '../../actors/index.ts';
import { watchLeases } from '../../actors/runtime/lease-watch.ts';
import { ShardLeases, type ShardRef } from '../../actors/runtime/leases.ts';
import { connectNats } from '../../storage/index.ts';
import { natsUrl, uniqueNamespace } from '../support/env.ts';
import { eventually } from '../support/system.ts';

const shardCount = 12;
let nc: NatsConnection;
let kv: KV;
let bucket: string;

before(async () => {
  nc = await connectNats(natsUrl, 'leases-test');
  bucket = `${uniqueNamespace()}_leases`;
  kv = await new Kvm(nc).create(bucket, { history: 1 });
});
after(async () => {
  await new Kvm(nc).create(bucket).then((b) => b.destroy());
  await nc.drain();
});

/** Which hosts serve each shard now, across every host of a test: two at once is the fault leases exist to prevent. */
const servedBy = new Map<number, Set<string>>();
const doubleServed: string[] = [];
/** Every host a test started, stopped after it whatever its outcome (their timers would keep the file running). */
const started: ShardLeases[] = [];
afterEach(async () => {
  for (const l of started.splice(0)) {
    (l as unknown as { stopped: boolean }).stopped = false;
    await l.stop();
  }
  servedBy.clear();
  doubleServed.length = 0;
});

function host(id: string, bucket: KV = kv, logLines: string[] = []) {
  const serving = new Set<number>();
  const leases = new ShardLeases({
    kv: bucket,
    hostId: id,
    pool: 'test',
    kinds: [{ kind: 'principal', shardCount }],
    ttlMs: 1200,
    renewMs: 300,
    clock: systemClock,
    log: pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) }),
    acquired: async (r: ShardRef) => {
      const by = servedBy.get(r.shard) ?? new Set();
      if (by.size > 0) doubleServed.push(`shard ${r.shard} acquired by ${id} while ${[...by]} served it`);
      by.add(id);
      servedBy.set(r.shard, by);
      serving.add(r.shard);
    },
    released: async (r: ShardRef) => {
      servedBy.get(r.shard)?.delete(id);
      serving.delete(r.shard);
    },
  });
  started.push(leases);
  return { id, serving, leases };
}

/** Every shard served by exactly one host, each host within one of the fair share. */
function balanced(hosts: ReturnType<typeof host>[]): boolean {
  const all = hosts.flatMap((h) => [...h.serving]);
  const fair = Math.ceil(shardCount / hosts.length);
  return all.length === shardCount && new Set(all).size === shardCount && hosts.every((h) => h.serving.size <= fair);
}

test('[SPINE-LEASES] hosts joining split the shards disjointly; leaving and lapsing hand them over', async () => {
  const a = host('a');
  await a.leases.start();
  assert.equal(a.serving.size, shardCount, 'a lone host serves every shard');

  const b = host('b');
  await b.leases.start();
  await eventually('a and b to split the shards', async () => (balanced([a, b]) ? true : undefined));
  assert.equal(a.serving.size, shardCount / 2);

  const c = host('c');
  await c.leases.start();
  await eventually('three hosts to split the shards', async () => (balanced([a, b, c]) ? true : undefined));

  // Graceful leave: b deletes its leases, the others claim them without waiting for the TTL.
  await b.leases.stop();
  assert.equal(b.serving.size, 0);
  await eventually('a and c to absorb b', async () => (balanced([a, c]) ? true : undefined), 3000);

  // A host that stops renewing (as if paused or killed) loses its shards once its leases lapse.
  const frozen = [...c.serving];
  (c.leases as unknown as { stopped: boolean }).stopped = true;
  await eventually(
    'a to take over the lapsed leases',
    async () => (a.serving.size === shardCount ? true : undefined),
    6000,
  );
  for (const shard of frozen) {
    const e = await kv.get(`lease.principal.${shard}`);
    assert.equal(e?.json<{ host: string }>().host, 'a');
  }
});

/** The revision of every lease key of the test's kind in the bucket. */
async function leaseRevisions(): Promise<Map<string, number>> {
  const revisions = new Map<string, number>();
  for (let shard = 0; shard < shardCount; shard++) {
    const e = await kv.get(`lease.principal.${shard}`);
    if (e?.operation === 'PUT') revisions.set(e.key, e.revision);
  }
  return revisions;
}

/** The real bucket with some of its calls replaced (a fault injected); every other call goes to it unchanged. */
function bucketWith(replaced: Partial<Pick<KV, 'put' | 'watch' | 'delete'>>): KV {
  return new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop in replaced) return replaced[prop as keyof typeof replaced];
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** The real bucket, with writes of one key made to fail while `failing` is set (as when its NATS node is gone). */
function failingPutsTo(key: string): { bucket: KV; failing: { on: boolean } } {
  const failing = { on: false };
  const bucket = bucketWith({
    put: (k, ...rest) => (failing.on && k === key ? Promise.reject(new Error('TIMEOUT')) : kv.put(k, ...rest)),
  });
  return { bucket, failing };
}

test('[SPINE-LEASES-HEARTBEAT] a host holding leases writes only its heartbeat: the leases are not rewritten while held', async () => {
  const a = host('a');
  await a.leases.start();
  const heartbeat = async () => (await kv.get('host.test.a'))!.revision;
  const before = await leaseRevisions();
  const beatBefore = await heartbeat();
  assert.equal(before.size, shardCount);
  await sleep(5 * 300);
  assert.deepEqual(await leaseRevisions(), before, 'no lease was written while its holder kept it');
  assert.ok((await heartbeat()) >= beatBefore + 3, 'the heartbeat moved at every renewal');
  assert.equal(a.serving.size, shardCount);
});

test('[SPINE-LEASES-HEARTBEAT] a holder whose heartbeat cannot be written stops serving before another host takes its shards, and claims its share again once it can', async () => {
  const faulty = failingPutsTo('host.test.a');
  const aLog: string[] = [];
  const a = host('a', faulty.bucket, aLog);
  await a.leases.start();
  const b = host('b');
  await b.leases.start();
  await eventually('a and b to split the shards', async () => (balanced([a, b]) ? true : undefined));

  faulty.failing.on = true;
  await eventually('b to take over every shard', async () => (b.serving.size === shardCount ? true : undefined), 6000);
  assert.equal(a.serving.size, 0);
  assert.deepEqual(doubleServed, [], 'no shard was served by two hosts at once');
  assert.ok(
    aLog.some((l) => l.includes('stopping serving every shard')),
    'a said why it stopped serving',
  );

  faulty.failing.on = false;
  await eventually('a and b to split the shards again', async () => (balanced([a, b]) ? true : undefined), 6000);
  assert.deepEqual(doubleServed, []);
});

test("[SPINE-LEASES-HEARTBEAT] a host whose watch stopped showing a holder's heartbeat reads it afresh and takes none of its leases", async () => {
  const a = host('a');
  await a.leases.start();
  // b's watch shows every key but a's heartbeat, as when a watch's NATS node died and a's writes went unseen.
  const quiet = bucketWith({
    watch: (async (opts: Parameters<KV['watch']>[0]) => {
      const it = await kv.watch(opts);
      return {
        stop: () => it.stop(),
        async *[Symbol.asyncIterator]() {
          let seenA = false;
          for await (const e of it) {
            if (e.key === 'host.test.a') {
              if (seenA) continue;
              seenA = true;
            }
            yield e;
          }
        },
      };
    }) as unknown as KV['watch'],
  });
  const bLog: string[] = [];
  const b = host('b', quiet, bLog);
  await b.leases.start();
  await eventually('a and b to split the shards', async () => (balanced([a, b]) ? true : undefined));
  // Long past the time to live of a heartbeat b saw once.
  await sleep(3 * 1200);
  assert.ok(balanced([a, b]), 'a kept its share');
  assert.deepEqual(doubleServed, [], 'no shard was served by two hosts at once');
  assert.ok(!bLog.some((l) => l.includes('took over lapsed lease')), 'b took over nothing');
});

test('[SPINE-LEASES-HEARTBEAT] a holder that sees another host write a lease it holds stops serving that shard at once', async () => {
  const aLog: string[] = [];
  const a = host('a', kv, aLog);
  await a.leases.start();
  assert.ok(a.serving.has(3));
  // Another host wins shard 3 (as after a partition that kept a's heartbeat from the others).
  await kv.put('lease.principal.3', JSON.stringify({ host: 'elsewhere' }));
  await eventually('a to stop serving shard 3', async () => (!a.serving.has(3) ? true : undefined), 2000);
  assert.ok(aLog.some((l) => l.includes('lease lost')));
  // Its new holder has no heartbeat at all (gone, or never a host): a takes it back at its next tick.
  await eventually('a to serve shard 3 again', async () => (a.serving.has(3) ? true : undefined), 5000);
});

test('[SPINE-LEASES-ORPHAN] a lease given back whose deletion was lost is deleted again by its holder, so the host that joined claims it and every shard is served', async () => {
  // a's first deletion of shard 11's lease times out unapplied (as when the reply, and the request, die with a
  // NATS node, or a starved process sends it too late): a stops serving the shard, but the lease still names a.
  let dropped = 0;
  const deletes: string[] = [];
  const lossy = bucketWith({
    delete: (k, ...rest) => {
      deletes.push(k);
      if (k === 'lease.principal.11' && dropped++ === 0) return Promise.reject(new Error('TIMEOUT'));
      return kv.delete(k, ...rest);
    },
  });
  const aLog: string[] = [];
  const a = host('a', lossy, aLog);
  await a.leases.start();
  assert.equal(a.serving.size, shardCount);
  const b = host('b');
  await b.leases.start();
  // b sees a live host named on shard 11 and never claims it: only a can free it.
  await eventually('a and b to split the shards, shard 11 among them', async () =>
    balanced([a, b]) ? true : undefined,
  );
  // The six it gave back, and the lost one once more: none it saw through is sent again while its watch catches up.
  assert.deepEqual(
    deletes.sort(),
    [6, 7, 8, 9, 10, 11, 11].map((n) => `lease.principal.${n}`).sort(),
    'the lost deletion was sent again, and only it',
  );
  assert.ok(b.serving.has(11), 'b serves the shard a gave back');
  assert.ok(aLog.some((l) => l.includes('released a lease this host named but did not serve')));
  assert.deepEqual(doubleServed, []);
});

test('[SPINE-LEASES-HEARTBEAT] while a host of the earlier rule (it renews each lease) is alive in the pool, held leases are renewed as it expects; once it is gone they are not', async () => {
  const a = host('a');
  await a.leases.start();
  // The earlier release's heartbeat: no `leases` rule in it.
  const beat = () => kv.put('host.test.earlier', JSON.stringify({ host: 'earlier', at: Date.now() }));
  await beat();
  const beating = setInterval(() => void beat(), 300);
  try {
    // a counts it as a host of the pool: it gives back the shards above its fair share first.
    await eventually('a to give back half', async () => (a.serving.size === shardCount / 2 ? true : undefined));
    const before = await leaseRevisions();
    assert.equal(before.size, shardCount / 2);
    await sleep(4 * 300);
    const during = await leaseRevisions();
    assert.ok(
      [...before].every(([key, rev]) => during.get(key)! > rev),
      'every lease a holds was renewed while the earlier host was alive',
    );
  } finally {
    clearInterval(beating);
  }
  await kv.delete('host.test.earlier');
  await sleep(2 * 300);
  const after = await leaseRevisions();
  await sleep(4 * 300);
  assert.deepEqual(await leaseRevisions(), after, 'no lease rewritten once it was gone');
});

test('[SPINE-LEASES-HEARTBEAT] a host whose process was paused past the time to live keeps its shards when it resumes: its heartbeat had no chance to be written', async () => {
  const aLog: string[] = [];
  const a = host('a', kv, aLog);
  await a.leases.start();
  let released = 0;
  const leases = a.leases as unknown as { o: { released: (r: ShardRef) => Promise<void> } };
  const release = leases.o.released;
  leases.o.released = async (r) => {
    released++;
    await release(r);
  };
  // The event loop blocked for twice the time to live (a long pause of the process, a starved CPU).
  const until = Date.now() + 2 * 1200;
  while (Date.now() < until) {}
  await sleep(3 * 300);
  assert.equal(released, 0, 'no shard was given up');
  assert.equal(a.serving.size, shardCount);
  assert.ok(!aLog.some((l) => l.includes('stopping serving every shard')));
});

test('[SPINE-LEASES-WATCH] the pools of one process share one watch of the bucket: one consumer for all of them, a pool that joins late is given the newest entry of each key first, a pool that left is given nothing, and one joining after the last left sees the bucket as it is', async () => {
  const jsm = await jetstreamManager(nc);
  const consumers = async () => (await jsm.streams.info(`KV_${bucket}`)).state.consumer_count;
  const log = pino({ level: 'silent' });
  const before = await consumers();

  const first: string[] = [];
  const leaveFirst = await watchLeases(kv, log, (e) => first.push(`${e.key}=${e.operation}`));
  await kv.put('lease.watch.1', JSON.stringify({ host: 'x' }));
  await kv.put('lease.watch.2', JSON.stringify({ host: 'x' }));
  await kv.delete('lease.watch.2');
  await eventually('the first pool to see the writes', async () =>
    first.includes('lease.watch.2=DEL') ? true : undefined,
  );

  // Joining late: every key's newest entry is handed over before the join resolves, a deletion as a deletion.
  const late: string[] = [];
  const leaveLate = await watchLeases(kv, log, (e) => late.push(`${e.key}=${e.operation}`));
  assert.ok(late.includes('lease.watch.1=PUT'), `the late pool sees the lease written before it joined: ${late}`);
  assert.ok(late.includes('lease.watch.2=DEL'), `and the deletion: ${late}`);
  assert.equal(late.filter((l) => l.startsWith('lease.watch.2')).length, 1, 'only the newest entry of a key');
  assert.equal(await consumers(), before + 1, 'two pools, one consumer on the bucket');

  // Both go on seeing what is written after.
  await kv.put('lease.watch.3', JSON.stringify({ host: 'y' }));
  await eventually('both pools to see a later write', async () =>
    first.includes('lease.watch.3=PUT') && late.includes('lease.watch.3=PUT') ? true : undefined,
  );

  leaveFirst();
  await kv.put('lease.watch.4', JSON.stringify({ host: 'y' }));
  await eventually('the pool still in to see writes after the other left', async () =>
    late.includes('lease.watch.4=PUT') ? true : undefined,
  );
  assert.ok(!first.includes('lease.watch.4=PUT'), 'a pool that left is given nothing');
  leaveLate();
  await kv.put('lease.watch.5', JSON.stringify({ host: 'y' }));
  await sleep(300);
  assert.ok(!late.includes('lease.watch.5=PUT'), 'once the last pool left, nothing is handed out');

  // A pool starting after that opens the watch again and sees the bucket as it is.
  const again: string[] = [];
  const leaveAgain = await watchLeases(kv, log, (e) => again.push(`${e.key}=${e.operation}`));
  await eventually('a pool joining after the last left to see the bucket', async () =>
    again.includes('lease.watch.5=PUT') && again.includes('lease.watch.2=DEL') ? true : undefined,
  );
  leaveAgain();
});
