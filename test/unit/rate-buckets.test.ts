// The principal actor's rate-limit buckets as a pure decision (actors/principal/rate.ts), with time in the test's
// hand: what a gateway's request for a batch is granted, what it is told, and how buckets refill and take tokens back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PrincipalDeps } from '../../actors/principal/deps.ts';
import { leaseRate } from '../../actors/principal/rate.ts';
import { initialState } from '../../actors/principal/state.ts';
import type { RateClass, RequestOf } from '../../contracts/index.ts';

let now = Date.parse('2026-11-24T12:00:00.000Z');
const deps = {
  clock: { nowMs: () => now, nowIso: () => new Date(now).toISOString() },
  defaultPlan: 'free',
  sandboxPlan: 'free',
  rateLeaseMs: 10_000,
} as unknown as PrincipalDeps;

const ask = (
  state: ReturnType<typeof initialState>,
  agentId: string,
  want: number,
  giveBack = 0,
  rateClass: RateClass = 'topup',
) => {
  const req = { body: { agentId, rateClass, want, giveBack } } as RequestOf<'rate.lease'>;
  const d = leaseRate(deps, state, req);
  assert.ok('reply' in d && d.reply.ok);
  return d.reply.body as {
    granted: number;
    limit: number;
    remaining: number;
    resetMs: number;
    retryAfterMs: number;
    batch: number;
  };
};

test("[FLEET-RATE] an agent is granted at most its bucket, told when the next token comes, and refilled at the plan's rate", () => {
  const state = initialState('p');
  // Free top-ups: the principal holds 5 (0.1/s), each agent half: 2 (0.05/s, one token every 20 s).
  const first = ask(state, 'a', 5);
  assert.deepEqual([first.granted, first.limit, first.remaining, first.batch], [2, 2, 0, 1]);
  assert.equal(first.resetMs, 40_000);
  const empty = ask(state, 'a', 1);
  assert.deepEqual([empty.granted, empty.retryAfterMs], [0, 20_000]);
  now += 20_000;
  assert.equal(ask(state, 'a', 5).granted, 1);
  // Tokens given back return to both buckets, never past their burst.
  const back = ask(state, 'a', 1, 7);
  assert.deepEqual([back.granted, back.remaining], [1, 1]);
});

test('[FLEET-RATE] agents share their principal: once the principal is spent, a fresh agent is refused and told of the principal', () => {
  const state = initialState('q');
  assert.equal(ask(state, 'a', 2).granted, 2);
  assert.equal(ask(state, 'b', 2).granted, 2);
  const c = ask(state, 'c', 2);
  // The principal's 5 hold one more; after it, agent d finds the principal's bucket the tighter one.
  assert.equal(c.granted, 1);
  const d = ask(state, 'd', 1);
  assert.deepEqual([d.granted, d.limit, d.remaining], [0, 5, 0]);
  assert.equal(d.retryAfterMs, 10_000);
});

test('[FLEET-RATE] classes have their own buckets; a plan change moves each bucket by the difference in burst, up or down', () => {
  const state = initialState('r');
  assert.equal(ask(state, 'a', 100).granted, 2);
  // Reads are untouched by spent top-ups: Free gives an agent 30 of 60.
  assert.equal(ask(state, 'a', 100, 0, 'read').granted, 30);
  // An upgrade adds the new room at once: Enterprise gives an agent 5,000 reads, of which 30 were spent.
  state.plan = 'enterprise';
  const read = ask(state, 'a', 10_000, 0, 'read');
  assert.deepEqual([read.granted, read.limit, read.remaining], [4_970, 5_000, 0]);
  // A downgrade takes the difference away: nothing is left of Free's 30 after 5,000 were granted.
  state.plan = 'free';
  assert.equal(ask(state, 'a', 1, 0, 'read').granted, 0);
});
