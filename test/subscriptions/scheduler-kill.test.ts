// The scheduler killed with SIGKILL between a cycle's claim and its purchase. Roles run as child processes: the
// actor host is stopped (SIGSTOP) so the claimed cycles cannot be bought, the workers process (which runs the
// scheduler) is killed while it holds the claims, the actor host continues, and a new workers process takes the
// claims up once they expire. Real time, living listings with a 2-second interval. Afterwards every cycle of
// every subscription was billed exactly once, in order, and each buyer's balance moved by exactly its released
// cycles.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { type Agent, eventually, ledgerFacts, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let actors: RoleProcess;
let workers: RoleProcess;
const workersReady = 'workers serving';

before(async () => {
  sys = await startSystem(
    { ASSAY_SUBSCRIPTION_POLL_MS: '50', ASSAY_SUBSCRIPTION_CLAIM_SECONDS: '2', ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0' },
    ['gateway'],
  );
  workers = await startRoleProcess('workers', sys.env, workersReady);
  actors = await startRoleProcess('actors', sys.env, 'actor host serving');
});
after(async () => {
  for (const p of [actors, workers]) {
    p?.child.kill('SIGCONT');
    p?.child.kill('SIGKILL');
  }
  await sys.stop();
});

const claimedCount = async () =>
  (
    await sys.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM subscriptions WHERE claimed_cycle > cycle AND claimed_until > now()`
  )[0]!.n;

test('[SUBS-KILL] a scheduler killed between claim and purchase: after restart every cycle is billed exactly once', async () => {
  const seller = await registerSeller(sys);
  const price = 100;
  const { artifactId } = await verifiedListing(sys, seller.token, 'kill', { price, good: true });
  const living = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: {
      artifact_id: artifactId,
      price_cents: price,
      floor: 0.7,
      formats: ['md'],
      billing: { interval_seconds: 2 },
    },
    key: 'kill-living',
  });
  assert.equal(living.status, 201);
  const buyers: Agent[] = [];
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const b = await sys.register();
    const r = await sys.call('POST', '/v1/subscriptions', {
      token: b.token,
      body: { listing_id: living.body.id },
      key: `kill-${i}`,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    buyers.push(b);
    ids.push(r.body.id);
  }

  // Stop the actor host, let the scheduler claim the next cycles it can no longer buy, and kill it holding them.
  actors.child.kill('SIGSTOP');
  await eventually(
    'the scheduler claims due cycles',
    async () => ((await claimedCount()) >= 5 ? true : undefined),
    15_000,
  );
  workers.child.kill('SIGKILL');
  await workers.exited;
  actors.child.kill('SIGCONT');
  workers = await startRoleProcess('workers', sys.env, workersReady);

  // Let a few more cycles run through the new scheduler, then end every subscription.
  const cycleOf = async (b: Agent, id: string) => {
    const r = await sys.call('GET', '/v1/subscriptions', { token: b.token });
    return r.body.items.find((s: any) => s.id === id)?.cycles as number;
  };
  await eventually(
    'every subscription runs cycles after the restart',
    async () => {
      const cycles = await Promise.all(buyers.map((b, i) => cycleOf(b, ids[i]!)));
      return cycles.every((c) => c >= 4) ? true : undefined;
    },
    30_000,
  );
  for (const [i, b] of buyers.entries()) {
    const r = await sys.call('POST', `/v1/subscriptions/${ids[i]}/cancel`, { token: b.token, body: {}, key: 'end' });
    assert.equal(r.status, 201);
  }

  // Exactly once, from the facts: cycles 1..n of each subscription, each held once, none skipped.
  const facts = await ledgerFacts(sys);
  for (const [i, id] of ids.entries()) {
    const cycles = facts
      .filter(({ fact: f }) => f.type === 'escrow_held' && f.subscriptionId === id)
      .map(({ fact: f }) => (f.type === 'escrow_held' ? f.subscription!.cycle : 0));
    assert.deepEqual(
      cycles,
      cycles.map((_, n) => n + 1),
      `subscription ${i}: cycles ${cycles.join(',')}`,
    );
    // The balance moved by exactly the released cycles (every report here meets the floor).
    const b = buyers[i]!;
    await eventually('every cycle settles', async () => {
      const balance = (await sys.call('GET', '/v1/balance', { token: b.token })).body.balance_cents;
      return balance === b.balanceCents - cycles.length * price ? true : undefined;
    });
    const orders = (await sys.call('GET', '/v1/orders?limit=200', { token: b.token })).body.items as any[];
    assert.equal(orders.filter((o) => o.subscriptionId === id).length, cycles.length);
  }
});
