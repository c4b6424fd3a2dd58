// test-lane: serial (a killed actor host and 200 agents buying: a load whose request timeouts must not share the cores with another such file)
// Money is conserved under concurrent purchases, key retries and a killed actor host: 200 agents buy from 50
// listings (some missing their floor) while one of two actor hosts is killed with SIGKILL. The kill must land in
// the middle of the load: every agent has bought before it, purchases are in flight on the killed host's shards
// when it dies, the survivor takes over every shard, and every agent the killed host served buys again through the
// survivor. At quiescence every principal's credits in equal available + held + spent, released equals payouts
// accrued, every order answered 201 exists exactly once, and no event appears twice; `assay audit` agrees.
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

import { after, before, test } from 'node:test';

import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { leaseCounts, leaseHolders, pidOf, shardsSplitEvenly } from '../support/leases.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { expectedLedger } from '../support/ledger.ts';
import {
  type Agent,
  backgroundLoad,
  eventually,
  everyOrderSettled,
  ledgerFacts,
  projectedLedger,
  runCli,
  startSystem,
  type TestSystem,
} from '../support/system.ts';

let sys: TestSystem;
const hosts: RoleProcess[] = [];

/** The lease key of the shard that serves a principal, read from its actor subject `<ns>.actor.principal.<shard>.<id>`. */
const principalLease = (principalId: string) =>
  `lease.principal.${sys.names.actorSubject('principal', principalId).split('.').at(-2)}`;

before(async () => {
  sys = await startSystem(
    { ASSAY_LEASE_TTL_MS: '2000', ASSAY_LEASE_RENEW_MS: '500', ASSAY_REQUEST_TIMEOUT_MS: '3000' },
    ['gateway', 'workers'],
  );
  hosts.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  hosts.push(await startRoleProcess('actors', sys.env, 'actor host serving'));
  // Let the two hosts finish splitting the shards before setting up (until then some shards answer 503).
  await shardsSplitEvenly(sys, hosts);
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

  const [victim, survivor] = hosts as [RoleProcess, RoleProcess];
  const holders = await leaseHolders(sys);
  const victimHost = [...holders.values()].find((h) => pidOf(h) === victim.child.pid)!;
  assert.ok(victimHost, 'the host to kill holds leases');
  // The agents whose principal actors the host to kill serves: they must be served by the survivor after it.
  const victimAgents = new Set(
    agents.filter((a) => holders.get(principalLease(a.principalId)) === victimHost).map((a) => a.principalId),
  );
  assert.ok(victimAgents.size > 0 && victimAgents.size < agents.length, `${victimAgents.size} agents on the victim`);

  const accepted = new Map<string, { principalId: string; orderId: string }>();
  const statuses = new Map<string, number>();
  const boughtBeforeKill = new Set<string>();
  const boughtAfterTakeover = new Set<string>();
  const inFlight = new Set<string>();
  let phase: 'before kill' | 'handover' | 'after takeover' = 'before kill';
  let resolveTakeover!: () => void;
  let rejectTakeover!: (err: unknown) => void;
  const takenOver = new Promise<void>((resolve, reject) => {
    resolveTakeover = resolve;
    rejectTakeover = reject;
  });
  takenOver.catch(() => {});
  /** A purchase, counted as in flight (each agent has one request out at a time) until it is answered. */
  const buy = async (agent: Agent, body: object, key: string) => {
    inFlight.add(agent.principalId);
    try {
      return await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
    } finally {
      inFlight.delete(agent.principalId);
    }
  };

  /** Retry a purchase answered 503 until it is served, waiting out the handover; 20 s after it at most. */
  const retryUntilServed = async (agent: Agent, body: object, key: string) => {
    let deadline = Date.now() + 20_000;
    for (;;) {
      if (phase === 'handover') {
        await takenOver;
        deadline = Date.now() + 20_000;
      }
      const x = await buy(agent, body, key);
      if (x.status !== 503) return x;
      if (Date.now() > deadline) throw new Error(`retry of ${key} still answered 503 after 20 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const { whileLoading, finish } = backgroundLoad((running) =>
    agents.map(async (agent, ai) => {
      for (let i = 0; running(); i++) {
        const key = `${ai}-${i}`;
        const l = listings[(ai * 7 + i) % listings.length]!;
        const body = { listing_id: l.id, formats: ['md'] };
        const sentIn = phase;
        let r = await buy(agent, body, key);
        const label = r.status === 201 ? '201' : `${r.status} ${r.body.code}`;
        statuses.set(label, (statuses.get(label) ?? 0) + 1);
        if (r.status === 503) {
          // Retry the same key: it replays what a host committed, or buys now, once. In the handover, retry once the
          // survivor holds every shard; before the kill a loaded machine can answer 503 too (a request timeout, a
          // lease renewed late), and the agent retries at once rather than wait for a kill that waits for it.
          assert.equal(r.body.code, 'unavailable');
          r = await retryUntilServed(agent, body, key);
        }
        if (r.status === 201) {
          accepted.set(key, { principalId: agent.principalId, orderId: r.body.order_id });
          if (sentIn === 'before kill') boughtBeforeKill.add(agent.principalId);
          if (sentIn === 'after takeover') boughtAfterTakeover.add(agent.principalId);
        } else {
          assert.ok(r.status === 409 && r.body.code === 'insufficient_credits', JSON.stringify(r.body));
        }
        // Retry a used key now and then: it replays the same order, never buys twice.
        if (i % 4 === 1 && r.status === 201) {
          const again = await buy(agent, body, key);
          assert.ok(again.status === 201 || again.status === 503, `retry got ${again.status}`);
          if (again.status === 201) assert.equal(again.body.order_id, r.body.order_id);
        }
      }
    }),
  );

  // Kill only once every agent has bought, and while purchases are in flight on the victim's shards.
  await whileLoading(
    'every agent to buy',
    async () => (boughtBeforeKill.size === agents.length ? true : undefined),
    60_000,
  ).catch((err) => {
    throw new Error(
      `${err.message}: ${boughtBeforeKill.size} of ${agents.length}, statuses ${JSON.stringify([...statuses])}`,
    );
  });
  const inFlightOnVictim = [...inFlight].filter((p) => victimAgents.has(p)).length;
  phase = 'handover';
  victim.child.kill('SIGKILL');
  assert.ok(inFlightOnVictim > 0, 'purchases were in flight on the killed host');
  const killedAt = Date.now();
  try {
    await whileLoading(
      'the survivor to hold every shard',
      async () => {
        const counts = leaseCounts(await leaseHolders(sys));
        return [...counts].some(([host, n]) => pidOf(host) === survivor.child.pid && n === 128) ? true : undefined;
      },
      30_000,
    );
  } catch (err) {
    rejectTakeover(err);
    throw err;
  }
  const takeoverMs = Date.now() - killedAt;
  phase = 'after takeover';
  resolveTakeover();
  // Every principal the killed host served buys again, through the survivor.
  await whileLoading(
    "the killed host's agents to buy through the survivor",
    async () => ([...victimAgents].every((p) => boughtAfterTakeover.has(p)) ? true : undefined),
    30_000,
  );
  await finish();

  // Quiescence: every held order settled (all reports exist), and the projections caught up.
  await everyOrderSettled(sys);
  const facts = await ledgerFacts(sys);
  const per = new Map<string, { credited: number; held: number; spent: number; available: number }>();
  const heldOrders = new Map<string, number>();
  /** Each order's states as its events must show them, from the facts: held, then released or auto_refunded. */
  const orderStates = new Map<string, { principalId: string; states: string[] }>();
  const released = { total: 0 };
  for (const { fact } of facts) {
    const p = per.get(fact.principalId) ?? { credited: 0, held: 0, spent: 0, available: 0 };
    per.set(fact.principalId, p);
    if (fact.type === 'credited') p.credited += fact.amountCents;
    if (fact.type === 'escrow_held') {
      assert.ok(!heldOrders.has(fact.orderId), `order ${fact.orderId} held twice`);
      heldOrders.set(fact.orderId, (heldOrders.get(fact.orderId) ?? 0) + 1);
      p.held += fact.priceCents;
      orderStates.set(fact.orderId, { principalId: fact.principalId, states: ['held'] });
    }
    if (fact.type === 'escrow_released') {
      p.held -= fact.priceCents;
      p.spent += fact.priceCents;
      released.total += fact.priceCents;
      orderStates.get(fact.orderId)!.states.push('released');
    }
    if (fact.type === 'escrow_refunded') {
      p.held -= fact.priceCents;
      orderStates.get(fact.orderId)!.states.push('auto_refunded');
    }
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

  // Through the API, for ten agents of each host: every order's events, exactly held then its outcome, none twice.
  const checked = [
    ...agents.filter((a) => victimAgents.has(a.principalId)).slice(0, 10),
    ...agents.filter((a) => !victimAgents.has(a.principalId)).slice(0, 10),
  ];
  for (const agent of checked) {
    const evs: any[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page: any = (
        await sys.call('GET', `/v1/events?type=order.state_changed&limit=200${cursor ? `&cursor=${cursor}` : ''}`, {
          token: agent.token,
        })
      ).body;
      if (page.items.length === 0) break;
      evs.push(...page.items);
      cursor = page.next_cursor;
    }
    assert.equal(new Set(evs.map((e) => e.id)).size, evs.length, 'no event twice');
    const byOrder = new Map<string, string[]>();
    for (const e of evs) byOrder.set(e.data.order_id, [...(byOrder.get(e.data.order_id) ?? []), e.data.state]);
    const want = new Map(
      [...orderStates].filter(([, o]) => o.principalId === agent.principalId).map(([id, o]) => [id, o.states]),
    );
    assert.ok(want.size > 0, `agent ${agent.principalId} bought something`);
    assert.deepEqual(byOrder, want, `the events of ${agent.principalId}'s orders`);
  }
  // And the operator's audit (docs/operations.md, Audit) finds every invariant kept, every row matching its fact.
  const audited = await runCli(sys, ['audit', '--json']);
  const report = JSON.parse(audited.stdout);
  assert.equal(audited.code, 0, JSON.stringify(report.violations ?? audited.stderr));
  assert.equal(report.orders.total, answered.size);
  assert.equal(report.orders.held, 0);
  assert.equal(report.money.sandbox.releasedCents, released.total);
  assert.equal(report.money.sandbox.accruedCents, released.total);
  console.log(
    `conservation run: ${accepted.size} orders; ${victimAgents.size} agents on the killed host, ` +
      `${inFlightOnVictim} of them in flight at the kill; takeover observed after ${takeoverMs} ms; ` +
      `statuses ${JSON.stringify([...statuses])}`,
  );
});
