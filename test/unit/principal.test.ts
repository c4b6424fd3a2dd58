// The principal actor's rules as pure functions, with the clock passed in: idempotency records expire after the
// retention window, and a fact that breaks an invariant is refused loudly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BusReply, BusRequest, LedgerFact } from '../../contracts/index.ts';
import { names } from '../../contracts/index.ts';
import { principalBehaviour } from '../../actors/principal/principal.ts';

const hourMs = 3_600_000;
let now = Date.parse('2026-11-21T00:00:00.000Z');
let n = 0;
const behaviour = principalBehaviour({
  names: names('unit'),
  clock: { nowMs: () => now, nowIso: () => new Date(now).toISOString() },
  ids: { uuid: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}` },
  idempotencyRetentionMs: 24 * hourMs,
  // Top-ups never ask for quotes; purchases are tested against the real system.
  quotes: { listing: async () => null, artifact: async () => null },
});
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

async function run(state: ReturnType<typeof behaviour.initial>, req: BusRequest) {
  const d = await behaviour.decide(state, req, principalId, 0);

  assert.ok(!('call' in d), 'top-ups are decided by the principal alone');
  if ('fact' in d) behaviour.apply(state, d.fact);
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
  // A fact after the window prunes the old record; the key then names a new request.
  now += 2 * hourMs;
  await run(state, topUp('k2', 1));
  assert.equal(state.idempotency.has('k1'), false);
  const again = await run(state, topUp('k1', 5));
  assert.ok(again.fact, 'an expired key executes again');
  assert.equal(state.availableCents, 1100);
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
  assert.throws(() => behaviour.apply(state, fact(100, 999)), /disagree/);
  assert.throws(() => behaviour.apply(behaviour.initial(principalId), fact(0, 0)), /positive/);
  assert.throws(
    () => behaviour.apply(behaviour.initial(principalId), { ...fact(100, 100), principalId: 'someone-else' }),
    /wrong principal/,
  );
});
