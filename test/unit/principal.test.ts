// The principal actor's rules as pure functions, with the clock passed in: idempotency records expire after the
// retention window, leave memory for the index only once it holds them, and a fact that breaks an invariant is
// refused loudly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IndexedKey } from '../../actors/principal/idempotency-index.ts';
import { principalBehaviour } from '../../actors/principal/principal.ts';
import { decideCommand } from '../../actors/runtime/host.ts';
import type { BusReply, BusRequest, LedgerFact } from '../../contracts/index.ts';
import { names } from '../../contracts/index.ts';

const hourMs = 3_600_000;
let now = Date.parse('2026-11-21T00:00:00.000Z');
let n = 0;
/** The stream and the index, in memory: what the host and the projector give a real actor. */
const log: LedgerFact[] = [];
const index = { through: 0, up: true };
const indexed = (principalId: string, key: string): IndexedKey | null => {
  for (let seq = Math.min(index.through, log.length); seq >= 1; seq--) {
    const f = log[seq - 1]!;
    // The projector prunes keys past retention (a purchase's stays with its order; top-ups are all this tests).
    if (Date.parse(f.at) < now - 24 * hourMs) continue;
    if (f.principalId === principalId && f.idempotency?.key === key) {
      return { requestHash: f.idempotency.requestHash, seq };
    }
  }
  return null;
};
const behaviourWith = (hotKeysMax: number) =>
  principalBehaviour({
    names: names('unit'),
    clock: { nowMs: () => now, nowIso: () => new Date(now).toISOString() },
    ids: { uuid: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}` },
    idempotencyRetentionMs: 24 * hourMs,
    approvalTtlMs: 86_400_000,
    processorConfigured: false,
    hotKeysMax,
    index: {
      indexedThroughSeq: () => index.through,
      lookup: async (principalId, key) =>
        index.up ? { found: indexed(principalId, key), indexedThroughSeq: index.through } : null,
    },
    loadFact: async (principalId, seq) => (log[seq - 1]?.principalId === principalId ? log[seq - 1]! : null),
    // Top-ups never ask for quotes; purchases are tested against the real system.
    defaultPlan: 'enterprise',
    sandboxPlan: 'enterprise',
    rateLeaseMs: 2000,
    quotes: { listing: async () => null, artifact: async () => null },
  });
const behaviour = behaviourWith(1000);
const principalId = '11111111-1111-4111-8111-111111111111';
const topUp = (key: string, credits: number): BusRequest => ({
  op: 'topUp',
  requestId: key,
  caller: { principalId, agentId: 'a', scopes: ['purchase'], sandbox: true },
  params: {},
  query: {},
  body: { credits },
  idempotency: { key, requestHash: `hash-${key}-${credits}` },
});

async function run(state: ReturnType<typeof behaviour.initial>, req: BusRequest, b = behaviour) {
  const d = await decideCommand(b, state, req, { actorId: principalId, seq: 0 });
  assert.ok(!('call' in d), 'top-ups are decided by the principal alone');
  if ('fact' in d) {
    log.push(d.fact);
    b.apply(state, d.fact, log.length);
  }
  return d as { reply: BusReply; fact?: LedgerFact };
}

test('[SPINE-IDEM-RETENTION] a key replays within the retention window and is forgotten after it', async () => {
  const state = behaviour.initial(principalId);
  const first = await run(state, topUp('k1', 5));
  assert.ok(first.fact);
  now += 23 * hourMs;
  const replay = await run(state, topUp('k1', 5));
  assert.ok(!replay.fact && replay.reply.ok && replay.reply.replayed);
  const conflict = await run(state, topUp('k1', 6));
  assert.ok(!conflict.reply.ok && conflict.reply.error.code === 'idempotency_conflict');
  // A fact after the window prunes the old record (the index holds it); the key then names a new request.
  now += 2 * hourMs;
  index.through = log.length;
  await run(state, topUp('k2', 1));
  assert.equal(state.idempotency.has('k1'), false);
  const again = await run(state, topUp('k1', 5));
  assert.ok(again.fact, 'an expired key executes again');
  assert.equal(state.availableCents, 1100);
});

test('[SPINE-IDEM-INDEX] past the keys kept in memory, a key replays from the index, and a miss the index cannot vouch for is refused', async () => {
  const hot = behaviourWith(2);
  const state = hot.initial(principalId);
  index.through = 0;
  for (const k of ['i1', 'i2', 'i3']) assert.ok((await run(state, topUp(k, 1), hot)).fact);
  // Nothing is indexed yet: every record stays in memory, whatever the cap.
  assert.equal(state.idempotency.size, 3);
  index.through = log.length;
  assert.ok((await run(state, topUp('i4', 1), hot)).fact);
  assert.deepEqual([...state.idempotency.keys()], ['i3', 'i4']);
  assert.ok(state.evictedThroughSeq > 0);

  const replay = await run(state, topUp('i1', 1), hot);
  assert.ok(!replay.fact && replay.reply.ok && replay.reply.replayed, 'an evicted key replays from the index');
  assert.deepEqual(replay.reply.ok && replay.reply.body, { status: 'credited', amount_cents: 100, sandbox: true });
  const conflict = await run(state, topUp('i2', 7), hot);
  assert.ok(!conflict.reply.ok && conflict.reply.error.code === 'idempotency_conflict');

  // The index moved back (a rebuild) or is unreachable: a key it cannot find might be one that left memory.
  index.through = 1;
  const unsure = await run(state, topUp('i9', 1), hot);
  assert.ok(!unsure.fact && !unsure.reply.ok && unsure.reply.error.code === 'unavailable');
  index.through = log.length;
  index.up = false;
  const down = await run(state, topUp('i9', 1), hot);
  assert.ok(!down.fact && !down.reply.ok && down.reply.error.code === 'unavailable');
  index.up = true;
  assert.ok((await run(state, topUp('i9', 1), hot)).fact, 'a new key runs once the index can vouch for it');
  assert.equal(state.availableCents, 500);
});

test('[SPINE-INVARIANTS] a fact whose balance disagrees with the fold, or that credits nothing, is refused', () => {
  const state = behaviour.initial(principalId);
  const fact = (amountCents: number, balanceAfterCents: number): LedgerFact => ({
    type: 'credited',
    id: 'f',
    at: new Date(now).toISOString(),
    principalId,
    sandbox: true,
    source: 'sandbox_topup',
    amountCents,
    topupId: 't',
    balanceAfterCents,
  });
  assert.throws(() => behaviour.apply(state, fact(100, 999), 1), /disagree/);
  assert.throws(() => behaviour.apply(behaviour.initial(principalId), fact(0, 0), 1), /positive/);
  assert.throws(
    () => behaviour.apply(behaviour.initial(principalId), { ...fact(100, 100), principalId: 'someone-else' }, 1),
    /wrong principal/,
  );
});

test('[SPINE-SETTLED-AT-PURCHASE] a hold that carries its settlement folds both transitions, and either balance wrong is refused', () => {
  const funded = () => {
    const s = behaviour.initial(principalId);
    behaviour.apply(
      s,
      {
        type: 'credited',
        id: 'c',
        at: new Date(now).toISOString(),
        principalId,
        sandbox: true,
        source: 'sandbox_topup',
        amountCents: 1_000,
        topupId: 't',
        balanceAfterCents: 1_000,
      },
      1,
    );
    return s;
  };
  const held = (balanceAfterCents: number, settled: { type: 'escrow_released' | 'escrow_refunded'; after: number }) =>
    ({
      type: 'escrow_held',
      id: 'h',
      at: new Date(now).toISOString(),
      principalId,
      sandbox: true,
      balanceAfterCents,
      orderId: 'o',
      agentId: 'a',
      listingId: 'l',
      artifactId: 'art',
      editionId: 'e',
      sellerPrincipalId: 's',
      priceCents: 300,
      formats: ['md'],
      floor: 0.5,
      priceSnapshotId: 'l@1',
      subscriptionId: null,
      settled: {
        id: 'r',
        type: settled.type,
        balanceAfterCents: settled.after,
        reportDigest: 'd',
        meanEntailment: 0.9,
      },
    }) as LedgerFact;
  const released = behaviour.apply(funded(), held(700, { type: 'escrow_released', after: 700 }), 2);
  assert.deepEqual(
    [released.availableCents, released.heldCents, released.spentCents, released.held.size],
    [700, 0, 300, 0],
    'spent, and no order left in escrow',
  );
  const refunded = behaviour.apply(funded(), held(700, { type: 'escrow_refunded', after: 1_000 }), 2);
  assert.deepEqual([refunded.availableCents, refunded.heldCents, refunded.spentCents], [1_000, 0, 0]);
  assert.throws(
    () => behaviour.check(funded(), held(1_000, { type: 'escrow_released', after: 700 })),
    /after the hold/,
  );
  assert.throws(() => behaviour.check(funded(), held(700, { type: 'escrow_released', after: 1_000 })), /disagree/);
  assert.throws(() => behaviour.check(funded(), held(700, { type: 'escrow_refunded', after: 700 })), /disagree/);
});

test('[SPINE-STATE-SHARED-EMPTY] states start on shared empty maps: a write gives the state its own, and never reaches another principal', async () => {
  const a = behaviour.initial(principalId);
  const b = behaviour.initial('22222222-2222-4222-8222-222222222222');
  assert.equal(a.idempotency, b.idempotency, 'one empty map for both until either writes');
  assert.throws(() => a.idempotency.set('k', 'v'), /own\(\)/, 'the shared map refuses a write that skips own()');
  await run(a, topUp('shared-empty-1', 5));
  assert.equal(a.idempotency.size, 1);
  assert.equal(b.idempotency.size, 0, "the other principal's map is untouched");
  assert.notEqual(a.idempotency, b.idempotency);
  assert.equal(behaviour.initial('x').idempotency.size, 0, 'and the shared one is still empty');
});
