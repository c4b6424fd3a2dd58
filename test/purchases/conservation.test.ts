// Money is conserved under concurrent purchases, key retries and a killed actor host: 200 agents buy from 50
// listings (some missing their floor) while one of two actor hosts is killed with SIGKILL. At quiescence every
// principal's credits in equal available + held + spent, released equals payouts accrued, every order answered
// 201 exists exactly once, and no event appears twice.
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

import { after, before, test } from 'node:test';
import { Kvm } from '@nats-io/kv';

import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { expectedLedger } from '../support/ledger.ts';
import {
  type Agent,
  eventually,
  ledgerFacts,
  projectedLedger,
  startSystem,
  type TestSystem,
} from '../support/system.ts';

let sys: TestSystem;
const hosts: RoleProcess[] = [];

before(async () => {
  sys = await startSystem(
    { ASSAY_LEASE_TTL_MS: '2000', ASSAY_LEASE_RENEW_MS: '500', ASSAY_REQUEST_TIMEOUT_MS: '3000' },
    ['gateway', 'workers'],
  );
  hosts.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  hosts.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  // Let the two hosts finish splitting the shards before setting up (until then some shards answer 503).
  await eventually(
    'the two hosts to share the shards',
    async () => {
      const kv = await new Kvm(sys.nc).open(sys.names.buckets.leases);
      const owners = new Map<string, number>();
      for await (const key of await kv.keys('lease.>')) {
        if (!/^lease\.(principal|listing)\./.test(key)) continue;

        const e = await kv.get(key);
        if (e?.operation === 'PUT')
          owners.set(e.json<{ host: string }>().host, (owners.get(e.json<{ host: string }>().host) ?? 0) + 1);
      }
      return owners.size === 2 && [...owners.values()].every((n) => n === 64) ? true : undefined;
    },
    20_000,
  );
});
after(async () => {
  for (const h of hosts) h.child.kill('SIGKILL');
  await sys.stop();
});

test('[BUY-CONSERVATION] 200 agents, 50 listings, retries and a SIGKILLed actor host: money is conserved', async () => {
  const seller = await registerSeller(sys);
  const listings: { id: string; price: number; good: boolean }[] = [];
  for (let i = 0; i < 50; i++) {
    const good = i % 5 !== 0;
    const price = 100 + ((i * 37) % 20) * 50;
    const l = await verifiedListing(sys, seller.token, `cons-${i}`, { price, good });
    listings.push({ id: l.listingId, price, good });
  }
  const agents: Agent[] = [];
  for (let i = 0; i < 200; i++) agents.push(await sys.register());

  const accepted = new Map<string, { principalId: string; orderId: string }>();
  const unresolved = new Map<string, { agent: Agent; body: object }>();
  const statuses = new Map<string, number>();
  let running = true;
  const load = agents.map(async (agent, ai) => {
    for (let i = 0; running; i++) {
      const key = `${ai}-${i}`;
      const l = listings[(ai * 7 + i) % listings.length]!;
      const body = { listing_id: l.id, formats: ['md'] };
      const r = await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
      const label = r.status === 201 ? '201' : `${r.status} ${r.body.code}`;
      statuses.set(label, (statuses.get(label) ?? 0) + 1);
      if (r.status === 201) accepted.set(key, { principalId: agent.principalId, orderId: r.body.order_id });
      else if (r.status === 503) unresolved.set(key, { agent, body });
      else assert.ok(r.status === 409 && r.body.code === 'insufficient_credits', label);
      // Retry a used key now and then: it replays the same order, never buys twice.
      if (i % 4 === 1 && r.status === 201) {
        const again = await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
        assert.ok(again.status === 201 || again.status === 503, `retry got ${again.status}`);
        if (again.status === 201) assert.equal(again.body.order_id, r.body.order_id);
      }
      if (i > 60) break;
    }
  });
  await new Promise((r) => setTimeout(r, 2000));
  hosts[0]!.child.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 3000));
  running = false;
  await Promise.all(load);
  for (const [key, { agent, body }] of unresolved) {
    const r = await eventually(
      `retry of ${key}`,
      async () => {
        const x = await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
        return x.status === 503 ? undefined : x;
      },
      20_000,
    );
    assert.ok(r.status === 201 || (r.status === 409 && r.body.code === 'insufficient_credits'), JSON.stringify(r.body));
    if (r.status === 201) accepted.set(key, { principalId: agent.principalId, orderId: r.body.order_id });
  }
  assert.ok(accepted.size > 500, `load ran: ${JSON.stringify([...statuses])}`);

  // Quiescence: every held order settled (all reports exist), and the projections caught up.
  await eventually(
    'every order to settle',
    async () => {
      const facts = await ledgerFacts(sys);
      const held = new Set<string>();
      for (const { fact } of facts) {
        if (fact.type === 'escrow_held') held.add(fact.orderId);
        if (fact.type === 'escrow_released' || fact.type === 'escrow_refunded') held.delete(fact.orderId);
      }
      return held.size === 0 ? true : undefined;
    },
    60_000,
  );
  const facts = await ledgerFacts(sys);
  const per = new Map<string, { credited: number; held: number; spent: number; available: number }>();
  const heldOrders = new Map<string, number>();
  const released = { total: 0 };
  for (const { fact } of facts) {
    const p = per.get(fact.principalId) ?? { credited: 0, held: 0, spent: 0, available: 0 };
    per.set(fact.principalId, p);
    if (fact.type === 'credited') p.credited += fact.amountCents;
    if (fact.type === 'escrow_held') {
      assert.ok(!heldOrders.has(fact.orderId), `order ${fact.orderId} held twice`);
      heldOrders.set(fact.orderId, (heldOrders.get(fact.orderId) ?? 0) + 1);
      p.held += fact.priceCents;
    }
    if (fact.type === 'escrow_released') {
      p.held -= fact.priceCents;
      p.spent += fact.priceCents;
      released.total += fact.priceCents;
    }
    if (fact.type === 'escrow_refunded') p.held -= fact.priceCents;
    p.available = fact.balanceAfterCents;
  }
  for (const agent of agents) {
    const p = per.get(agent.principalId)!;
    const balance = (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents;
    assert.equal(balance, p.available);
    assert.equal(p.held, 0);
    assert.equal(
      p.credited,
      p.available + p.held + p.spent,
      `credits in = available + held + spent for ${agent.principalId}`,
    );
  }
  // Every order answered 201 exists exactly once, in the stream and in the orders projection.
  const answered = new Set([...accepted.values()].map((a) => a.orderId));
  assert.deepEqual([...answered].sort(), [...heldOrders.keys()].sort());
  const rows = await eventually(
    'the projections to catch up',
    async () => {
      const [r] = await sys.sql<{ orders: number; held: number; payouts: number; dup_events: number }[]>`
      SELECT (SELECT count(*)::int FROM orders) orders, (SELECT count(*)::int FROM orders WHERE state = 'held') held,
             (SELECT coalesce(sum(amount_cents), 0)::int FROM payouts) payouts,
             (SELECT count(*)::int - count(DISTINCT id)::int FROM ledger) dup_events`;
      return r!.orders === answered.size && r!.held === 0 && r!.payouts === released.total ? r : undefined;
    },
    30_000,
  );
  assert.equal(rows.payouts, released.total, 'released = payouts accrued');
  assert.equal(rows.dup_events, 0, 'no fact, and so no event, is projected twice');
  // The projected ledger (credits in their table, escrow entries in their order rows) is exactly the facts' entries.
  const entries = (await projectedLedger(sys)).map((r) => ({ ...r }));
  const expected = expectedLedger(facts);
  assert.equal(entries.length, expected.length, 'one ledger entry per money fact');
  const differs = expected.findIndex((e, i) => !isDeepStrictEqual(entries[i], e));
  if (differs >= 0) assert.deepEqual(entries[differs], expected[differs], `ledger entry ${differs}`);

  // No event twice through the API either, and each order's events are held then its outcome.
  for (const agent of agents.slice(0, 20)) {
    const evs = (await sys.call('GET', '/v1/events?type=order.state_changed&limit=200', { token: agent.token })).body
      .items;
    assert.equal(new Set(evs.map((e: any) => e.id)).size, evs.length);
    const byOrder = new Map<string, string[]>();
    for (const e of evs) byOrder.set(e.data.order_id, [...(byOrder.get(e.data.order_id) ?? []), e.data.state]);
    for (const states of byOrder.values()) {
      assert.equal(states[0], 'held');
      assert.equal(states.length, 2);
    }
  }
  console.log(`conservation run: ${accepted.size} orders, statuses ${JSON.stringify([...statuses])}`);
});
