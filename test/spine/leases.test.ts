// Shard leases against a real JetStream KV bucket: hosts joining split the shards fairly and disjointly, a host
// leaving hands its shards over, and a host that stops renewing loses them to the others after the TTL.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import pino from 'pino';
import { systemClock } from '../../actors/index.ts';
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

function host(id: string) {
  const serving = new Set<number>();
  const leases = new ShardLeases({
    kv,
    hostId: id,
    pool: 'test',
    kinds: [{ kind: 'principal', shardCount }],
    ttlMs: 1200,
    renewMs: 300,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    acquired: async (r: ShardRef) => {
      serving.add(r.shard);
    },
    released: async (r: ShardRef) => {
      serving.delete(r.shard);
    },
  });
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
  await a.leases.stop();
  (c.leases as unknown as { stopped: boolean }).stopped = false;
  await c.leases.stop();
});
