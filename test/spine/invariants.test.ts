// A fact that would break a money invariant is refused before it is appended: an actor host on a real NATS serves a
// principal whose top-up handler (for one amount) decides a fact with a wrong balance. The command answers 503,
// nothing reaches the stream, and the principal keeps serving; appended first, the fact would have failed every
// reload and left the principal answering 503 for ever.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import pino from 'pino';
import { ActorHost, principalBehaviour, randomIds, systemClock } from '../../actors/index.ts';
import {
  type BusReply,
  type BusRequest,
  decodeReply,
  type LedgerFact,
  names as namesOf,
} from '../../contracts/index.ts';
import { connectNats, dropNamespace, ensureStreams, openBuckets } from '../../storage/index.ts';
import { natsUrl, uniqueNamespace } from '../support/env.ts';

const names = namesOf(uniqueNamespace('inv'));
let nc: NatsConnection;
let host: ActorHost;

before(async () => {
  nc = await connectNats(natsUrl, 'assay-test-invariants');
  await ensureStreams(nc, names, 1);
  const buckets = await openBuckets(nc, names, 1, { mcpSessionMaxAgeMs: 60_000, revokedMaxAgeMs: 60_000 });
  const jsm = await jetstreamManager(nc);
  const principal = principalBehaviour({
    names,
    clock: systemClock,
    ids: randomIds,
    idempotencyRetentionMs: 3_600_000,
    approvalTtlMs: 86_400_000,
    processorConfigured: false,
    hotKeysMax: 1000,
    // Nothing leaves memory in this test, so the index is never asked.
    index: { indexedThroughSeq: () => 0, lookup: async () => null },
    loadFact: async (_principalId, seq) => (await jsm.direct.getMessage(names.streams.ledger.name, { seq }))!.json(),
    defaultPlan: 'enterprise',
    sandboxPlan: 'enterprise',
    rateLeaseMs: 2000,
    quotes: { listing: async () => null, artifact: async () => null },
  });
  const topUp = principal.handlers.topUp;
  principal.handlers.topUp = async (state, req, at) => {
    const decision = await topUp(state, req, at);
    // A bug: for 13 credits the decided fact claims a balance the fold does not reach.
    if (req.body.credits === 13 && 'fact' in decision) {
      (decision.fact as LedgerFact).balanceAfterCents += 1;
    }
    return decision;
  };
  host = new ActorHost({
    nc,
    names,
    snapshots: buckets.snapshots,
    leasesKv: buckets.leases,
    behaviours: [principal],
    hostId: 'invariants-test',
    clock: systemClock,
    log: pino({ level: 'silent' }),
    leaseTtlMs: 3000,
    leaseRenewMs: 750,
    mailboxDepthMax: 100,
    snapshotEvery: 64,
    actorsCachedMax: 1000,
    appendTimeoutMs: 2000,
    callTimeoutMs: 2000,
  });
  await host.start();
});

after(async () => {
  await host.stop();
  await dropNamespace(nc, names);
  await nc.drain();
});

const principalId = randomUUID();
const topUp = async (credits: number, key: string): Promise<BusReply> => {
  const req: BusRequest = {
    op: 'topUp',
    requestId: key,
    caller: { principalId, agentId: randomUUID(), scopes: ['purchase'], sandbox: true },
    params: {},
    query: {},
    body: { credits },
    idempotency: { key, requestHash: `hash-${key}` },
  };
  const msg = await nc.request(names.actorSubject('principal', principalId), JSON.stringify(req), { timeout: 5000 });
  return decodeReply(msg.data).reply;
};
const factsOnSubject = async () => {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(names.streams.ledger.name, { subjects_filter: names.ledgerSubject(principalId) });
  return info.state.subjects?.[names.ledgerSubject(principalId)] ?? 0;
};

test('[SPINE-CHECK-BEFORE-APPEND] a decided fact that breaks an invariant is refused, never appended, and the actor keeps serving', async () => {
  const first = await topUp(2, 'k1');
  assert.ok(first.ok, JSON.stringify(first));
  assert.equal(await factsOnSubject(), 1);

  const broken = await topUp(13, 'k2');
  assert.ok(!broken.ok);
  assert.equal(broken.error.code, 'unavailable');
  assert.doesNotMatch(broken.error.message, /balance|assert|fold/i, 'no internal text reaches the caller');
  assert.equal(await factsOnSubject(), 1, 'the refused fact is not in the stream');

  const next = await topUp(3, 'k3');
  assert.ok(next.ok, `the principal still serves: ${JSON.stringify(next)}`);
  assert.deepEqual(next.body, { status: 'credited', amount_cents: 300, sandbox: true });
  assert.equal(await factsOnSubject(), 2);
});
