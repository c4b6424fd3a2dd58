// Purchases driven by concurrent agents over real HTTP while a test breaks something underneath (a NATS node, an
// actor host), and the money checks afterwards: every purchase answered 201 exists exactly once (ledger stream and
// orders projection), nothing was bought that no 201 answered, and each principal's credits in equal available +
// held + spent. The fault tests of the hardening suite share it.
import assert from 'node:assert/strict';
import { registerSeller, verifiedListing } from './catalog.ts';
import { type Agent, backgroundLoad, eventually, everyOrderSettled, ledgerFacts, type TestSystem } from './system.ts';

export interface Market {
  agents: Agent[];
  listings: { id: string; price: number }[];
}

/** A seller with `listingCount` verified listings (every fifth misses its floor, so some orders refund) and agents. */
export async function setUpMarket(sys: TestSystem, listingCount: number, agentCount: number): Promise<Market> {
  const seller = await registerSeller(sys);
  const listings: Market['listings'] = [];
  for (let i = 0; i < listingCount; i++) {
    // Small prices: an agent's sandbox grant lasts the whole run, so every answer is a 201 or a 503.
    const price = 10 + i;
    const l = await verifiedListing(sys, seller.token, `load-${i}`, { price, good: i % 5 !== 4 });
    listings.push({ id: l.listingId, price });
  }
  const agents = await Promise.all(Array.from({ length: agentCount }, () => sys.register()));
  return { agents, listings };
}

export interface Attempt {
  key: string;
  principalId: string;
  sentAtMs: number;
  answeredAtMs: number;
  status: number;
  code: string | null;
  /** A second request with a key already answered 201: answered from the actor's records, it appends nothing. */
  replay: boolean;
  /** The 503's message (which of the few stable texts: unreachable, no responders, no answer in time, ...). */
  message?: string;
}

export interface PurchaseLoad {
  /** Every answer, in the order they came. */
  attempts: Attempt[];
  /** Keys answered 201, with the order each bought (a replay of a key must name the same order). */
  accepted: Map<string, { principalId: string; orderId: string }>;
  /** Keys answered 503 and not yet retried. */
  unavailable: Map<string, { agent: Agent; body: object }>;
  /** Agents with a new purchase (not a replay) answered 201 among requests sent at or after `fromMs`. */
  boughtSince(fromMs: number): Set<string>;
  /** Polls `check` like `eventually`, failing at once if the load broke (an answer other than 201 or 503). */
  whileLoading<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T>;
  /** Stop the agents and wait for their last answers; rethrows what broke the load. */
  finish(): Promise<void>;
}

/**
 * Each agent buys in a loop, one request out at a time, a new Idempotency-Key each time, and now and then replays a
 * key it was answered 201 for. Every answer must be 201 or 503 `unavailable` (retryable); anything else fails the load.
 */
export function startPurchaseLoad(sys: TestSystem, market: Market): PurchaseLoad {
  const attempts: Attempt[] = [];
  const accepted: PurchaseLoad['accepted'] = new Map();
  const unavailable: PurchaseLoad['unavailable'] = new Map();
  const buy = async (agent: Agent, body: object, key: string, replay = false) => {
    const sentAtMs = Date.now();
    const r = await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
    attempts.push({
      key,
      principalId: agent.principalId,
      sentAtMs,
      answeredAtMs: Date.now(),
      status: r.status,
      code: r.status === 201 ? null : (r.body?.code ?? String(r.body)),
      replay,
      ...(r.status === 503 ? { message: String(r.body?.message) } : {}),
    });
    if (r.status === 503) {
      assert.equal(r.body.code, 'unavailable', JSON.stringify(r.body));
      assert.equal(r.body.retryable, true);
    } else assert.equal(r.status, 201, `${key}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  };
  const load = backgroundLoad((running) =>
    market.agents.map(async (agent, ai) => {
      for (let i = 0; running(); i++) {
        const key = `${ai}-${i}`;
        const l = market.listings[(ai * 7 + i) % market.listings.length]!;
        const body = { listing_id: l.id, formats: ['md'] };
        const r = await buy(agent, body, key);
        if (r.status === 503) {
          unavailable.set(key, { agent, body });
          // A client backs off a little before its next request, as the error's retryable flag invites.
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        accepted.set(key, { principalId: agent.principalId, orderId: r.body.order_id });
        if (i % 5 === 2) {
          const again = await buy(agent, body, key, true);
          if (again.status === 201) assert.equal(again.body.order_id, r.body.order_id, `replay of ${key}`);
        }
      }
    }),
  );
  return {
    attempts,
    accepted,
    unavailable,
    boughtSince: (fromMs) =>
      new Set(attempts.filter((a) => a.status === 201 && !a.replay && a.sentAtMs >= fromMs).map((a) => a.principalId)),
    whileLoading: load.whileLoading,
    finish: load.finish,
  };
}

/** Retry every key answered 503 until it is answered 201: it replays what was committed, or buys now, once. */
export async function resolveUnavailable(sys: TestSystem, load: PurchaseLoad): Promise<void> {
  const byAgent = new Map<string, [string, { agent: Agent; body: object }][]>();
  for (const entry of load.unavailable) {
    const id = entry[1].agent.principalId;
    byAgent.set(id, [...(byAgent.get(id) ?? []), entry]);
  }
  // Agents retry side by side, each its own keys one at a time (as its own client would).
  await Promise.all(
    [...byAgent.values()].map(async (entries) => {
      for (const [key, { agent, body }] of entries) {
        const r = await eventually(
          `the retry of ${key}`,
          async () => {
            const x = await sys.call('POST', '/v1/orders', { token: agent.token, body, key });
            if (x.status === 503) return undefined;
            assert.equal(x.status, 201, `${key}: ${x.status} ${JSON.stringify(x.body)}`);
            return x;
          },
          30_000,
        );
        load.accepted.set(key, { principalId: agent.principalId, orderId: r.body.order_id });
        load.unavailable.delete(key);
      }
    }),
  );
}

/**
 * Once every order has settled: one escrow fact per order answered 201 and none other, every order in PostgreSQL
 * exactly once, per principal credits in = available (the API's balance) + held + spent, and released = payouts.
 */
export async function checkMoney(sys: TestSystem, market: Market, load: PurchaseLoad): Promise<{ orders: number }> {
  assert.equal(load.unavailable.size, 0, 'every 503 was resolved first');
  await everyOrderSettled(sys);
  const facts = await ledgerFacts(sys);
  const per = new Map<string, { credited: number; held: number; spent: number; available: number }>();
  const heldOrders = new Map<string, string>();
  const settled = new Set<string>();
  let released = 0;
  for (const { seq, fact } of facts) {
    const p = per.get(fact.principalId) ?? { credited: 0, held: 0, spent: 0, available: 0 };
    per.set(fact.principalId, p);
    if (fact.type === 'credited') p.credited += fact.amountCents;
    if (fact.type === 'escrow_held') {
      // Where both holds are (stream sequence, fact id, time) says whether two decisions were appended or one fact
      // was read twice.
      const where = `seq ${seq} fact ${fact.id} at ${fact.at}`;
      assert.ok(
        !heldOrders.has(fact.orderId),
        `order ${fact.orderId} held twice: ${heldOrders.get(fact.orderId)}, ${where}`,
      );
      heldOrders.set(fact.orderId, where);
      p.held += fact.priceCents;
    }
    if (fact.type === 'escrow_released' || fact.type === 'escrow_refunded') {
      assert.ok(!settled.has(fact.orderId), `order ${fact.orderId} settled twice`);
      settled.add(fact.orderId);
      p.held -= fact.priceCents;
      if (fact.type === 'escrow_released') {
        p.spent += fact.priceCents;
        released += fact.priceCents;
      }
    }
    p.available = fact.balanceAfterCents;
  }
  const answered = [...new Set([...load.accepted.values()].map((a) => a.orderId))].sort();
  assert.deepEqual([...heldOrders.keys()].sort(), answered, 'the stream holds exactly the orders answered 201');
  for (const agent of market.agents) {
    const p = per.get(agent.principalId)!;
    const balance = (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents;
    assert.equal(balance, p.available, `balance of ${agent.principalId}`);
    assert.equal(p.held, 0);
    assert.equal(p.credited, p.available + p.held + p.spent, `credits in = available + held + spent`);
  }
  // The projection: every order answered 201 is one row, no other row, no ledger entry twice, payouts = released.
  const lastSeq = facts.at(-1)?.seq ?? 0;
  await eventually(
    'the projections to catch up',
    async () => {
      const rows = await sys.sql<{ id: string; state: string }[]>`SELECT id, state FROM orders`;
      const [{ payouts, dup } = { payouts: -1, dup: -1 }] = await sys.sql<{ payouts: number; dup: number }[]>`
        SELECT (SELECT coalesce(sum(amount_cents), 0)::int FROM payouts) payouts,
               (SELECT count(*)::int - count(DISTINCT id)::int FROM ledger) dup`;
      const held = rows.filter((r) => r.state === 'held').length;
      if (rows.length !== answered.length || held > 0 || payouts !== released) {
        const checkpoints = await sys.sql`SELECT name, last_seq FROM projection_checkpoints`;
        // Thrown, not returned: `eventually` names the last state in its timeout message.
        throw new Error(
          `${rows.length} order rows (want ${answered.length}), ${held} held, payouts ${payouts} (want ${released}); ` +
            `stream at ${lastSeq}, checkpoints ${JSON.stringify(checkpoints)}`,
        );
      }
      assert.deepEqual(rows.map((r) => r.id).sort(), answered, 'every order answered 201 is one row');
      assert.equal(dup, 0, 'no ledger entry projected twice');
      return true;
    },
    60_000,
  );
  return { orders: answered.length };
}

/**
 * A check for `whileLoading`: true once every agent has a new purchase answered 201 among requests sent at or after
 * `fromMs`; until then it throws what the others were answered meanwhile, so a timeout says why they could not buy.
 */
export function everyAgentBoughtSince(load: PurchaseLoad, market: Market, fromMs: number): () => Promise<true> {
  return async () => {
    const bought = load.boughtSince(fromMs);
    if (bought.size === market.agents.length) return true;
    const waiting = new Set(market.agents.map((a) => a.principalId).filter((id) => !bought.has(id)));
    const answers = statusCounts(load.attempts.filter((a) => a.sentAtMs >= fromMs && waiting.has(a.principalId)));
    throw new Error(`${waiting.size} agents not yet served, answered ${JSON.stringify(answers)} since`);
  };
}

/** Answers by status and code (and a 503's message), for the test's log line. */
export function statusCounts(attempts: Attempt[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of attempts) {
    const label = a.code ? `${a.status} ${a.code}${a.message ? `: ${a.message}` : ''}` : String(a.status);
    out[label] = (out[label] ?? 0) + 1;
  }
  return out;
}

/**
 * When purchases served again after `fromMs`: the first new purchase (not a replay) answered 201 among requests sent
 * at or after it, and the time by which every agent had one (every principal shard serves again).
 */
export function recovery(attempts: Attempt[], agents: Agent[], fromMs: number): { firstMs: number; allMs: number } {
  const firstByAgent = new Map<string, number>();
  for (const a of attempts) {
    if (a.status !== 201 || a.replay || a.sentAtMs < fromMs) continue;
    const prev = firstByAgent.get(a.principalId);
    if (prev === undefined || a.answeredAtMs < prev) firstByAgent.set(a.principalId, a.answeredAtMs);
  }
  if (firstByAgent.size < agents.length) return { firstMs: Number.NaN, allMs: Number.NaN };
  const times = [...firstByAgent.values()];
  return { firstMs: Math.min(...times) - fromMs, allMs: Math.max(...times) - fromMs };
}
