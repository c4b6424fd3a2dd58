// The events store: `GET /v1/events` pages a principal's events from their own table, fed from the LEDGER facts by
// the events projection. A cursor handed out before the store (a LEDGER stream sequence) resumes where it did; a
// rebuild by replay writes the same events with the same ids and order.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { eventsOf } from '../../actors/index.ts';
import { encodeCursor } from '../../actors/shared/cursor.ts';
import { eventsPage, openPool, rebuildProjection, type Sql } from '../../storage/index.ts';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { type Agent, eventually, ledgerFacts, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
let buyer: Agent;
/** The LEDGER stream sequence of each of the buyer's facts, by fact id. */
const factSeq = new Map<string, number>();
let orderIds: { released: string; refunded: string };

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
  buyer = await sys.register();
  // A top-up, an order released and an order refunded, each settled before the next call, so the buyer's events
  // have one order: credited, held, released, held, auto_refunded, credited.
  const good = await verifiedListing(sys, seller.token, 'ev-good', { price: 300, good: true });
  const bad = await verifiedListing(sys, seller.token, 'ev-bad', { price: 400, good: false });
  const topUp = async (key: string) =>
    assert.equal((await sys.call('POST', '/v1/topups', { token: buyer.token, body: { credits: 5 }, key })).status, 201);
  const buyAndSettle = async (listingId: string, key: string, state: string) => {
    const r = await sys.call('POST', '/v1/orders', {
      token: buyer.token,
      body: { listing_id: listingId, formats: ['md'] },
      key,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await eventually(`order ${key} to be ${state}`, async () => {
      const orders = (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items as any[];
      return orders.find((o) => o.id === r.body.order_id)?.state === state ? true : undefined;
    });
    return r.body.order_id as string;
  };
  await topUp('ev-t1');
  orderIds = {
    released: await buyAndSettle(good.listingId, 'ev-b1', 'released'),
    refunded: await buyAndSettle(bad.listingId, 'ev-b2', 'auto_refunded'),
  };
  await topUp('ev-t2');
  for (const { seq, fact } of await ledgerFacts(sys))
    if (fact.principalId === buyer.principalId) factSeq.set(fact.id, seq);
});
after(async () => {
  await sys.stop();
});

const page = async (query: string) => {
  const r = await sys.call('GET', `/v1/events${query}`, { token: buyer.token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as { items: any[]; next_cursor: string | null };
};
/** The buyer's events once all six are in the store. */
const allEvents = () =>
  eventually('the six events to be in the store', async () => {
    const items = (await page('?limit=200')).items;
    return items.length >= 6 ? items : undefined;
  });
/** The LEDGER sequence of the fact an event comes from (`evt_<fact id>`). */
const sourceSeq = (e: { id: string }) => factSeq.get(e.id.slice('evt_'.length))!;

describe('the events store', () => {
  test('[EVENTS-STORE] events in stream order with their data; order events say they were bought outside a subscription', async () => {
    const items = await allEvents();
    assert.deepEqual(
      items.map((e) => [e.type, e.data.state ?? null, e.data.order_id ?? null]),
      [
        ['topup.credited', null, null],
        ['order.state_changed', 'held', orderIds.released],
        ['order.state_changed', 'released', orderIds.released],
        ['order.state_changed', 'held', orderIds.refunded],
        ['order.state_changed', 'auto_refunded', orderIds.refunded],
        ['topup.credited', null, null],
      ],
    );
    for (const e of items) {
      assert.ok(factSeq.has(e.id.slice('evt_'.length)), `${e.id} is evt_<id of one of the buyer's facts>`);
      assert.ok(!Number.isNaN(Date.parse(e.created_at)));
    }
    assert.deepEqual(items[0].data, { topup_id: items[0].data.topup_id, amount_cents: 500, sandbox: true });
    const orderEvents = items.filter((e) => e.type === 'order.state_changed');
    for (const e of orderEvents) {
      const keys = ['escrow_cents', 'listing_id', 'order_id', 'state', 'subscription_id'];
      if (e.data.state === 'auto_refunded') keys.push('reason');
      assert.deepEqual(Object.keys(e.data).sort(), keys.sort(), `the data of a ${e.data.state} event`);
      assert.equal(e.data.subscription_id, null, 'an ordinary order has no subscription');
    }
    assert.deepEqual(
      orderEvents.map((e) => e.data.escrow_cents),
      [300, 300, 400, 400],
    );
    assert.equal(orderEvents[3].data.reason, 'floor_missed');
  });

  test('[EVENTS-STORE] the type filter returns only that type, in the same order', async () => {
    const items = await allEvents();
    for (const type of ['topup.credited', 'order.state_changed', 'subscription.state_changed']) {
      const filtered = await page(`?type=${type}`);
      assert.deepEqual(
        filtered.items.map((e) => e.id),
        items.filter((e) => e.type === type).map((e) => e.id),
        type,
      );
    }
    // A filtered page's cursor resumes after its last event, keeping the filter.
    const first = await page('?type=order.state_changed&limit=3');
    assert.equal(first.items.length, 3);
    const rest = await page(`?type=order.state_changed&cursor=${first.next_cursor}`);
    assert.deepEqual(
      rest.items.map((e) => e.data.state),
      ['auto_refunded'],
    );
  });

  test('[EVENTS-STORE] pages of two walk the same events as one page, and an empty page keeps the cursor', async () => {
    const items = await allEvents();
    const walked: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const p = await page(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      if (p.items.length === 0) {
        assert.equal(p.next_cursor, cursor, 'an empty page hands back the cursor it was given');
        break;
      }
      walked.push(...p.items.map((e) => e.id));
      cursor = p.next_cursor;
    }
    assert.deepEqual(
      walked,
      items.map((e) => e.id),
    );
  });

  test('[EVENTS-TYPE-INDEX] a page of a rare type reads the type index under a generic plan; order events are not in it', async () => {
    await allEvents();
    // Scans of the type index by this transaction alone (the xact statistics functions).
    const typeIndexScans = async (tx: Sql) => {
      const [r] = await tx<{ scans: number }[]>`
        SELECT pg_stat_get_xact_numscans('events_by_type'::regclass)::int AS scans`;
      return r!.scans;
    };
    const readsTypeIndex = (type: string) =>
      sys.sql.begin(async (tx) => {
        const t = tx as unknown as Sql;
        // A generic plan cannot see the type's value: only the query's own words can show the index predicate holds.
        await t`SET LOCAL plan_cache_mode = force_generic_plan`;
        await t`SET LOCAL enable_seqscan = off`;
        const before = await typeIndexScans(t);
        const rows = await eventsPage(t, { principalId: buyer.principalId, afterSeq: 0, type, limit: 10 });
        assert.ok(rows.every((e) => e.type === type));
        return { scans: (await typeIndexScans(t)) - before, rows: rows.length };
      });
    assert.deepEqual(await readsTypeIndex('topup.credited'), { scans: 1, rows: 2 });
    assert.deepEqual(await readsTypeIndex('order.state_changed'), { scans: 0, rows: 4 });
  });

  test('[EVENTS-OLD-CURSOR] a cursor handed out before the store (a LEDGER sequence) resumes where it did', async () => {
    const items = await allEvents();
    // Before the store, a page's cursor was its last event's LEDGER sequence, and the next page held the events of
    // the facts after it. Try every such cursor, and one before all of them.
    const cursors = [0, ...items.map(sourceSeq)];
    for (const seq of cursors) {
      const p = await page(`?cursor=${encodeCursor('events', seq)}`);
      assert.deepEqual(
        p.items.map((e) => e.id),
        items.filter((e) => sourceSeq(e) > seq).map((e) => e.id),
        `after LEDGER sequence ${seq}`,
      );
      // The next cursor is the store's own, and resumes after the last event either way.
      const next = await page(`?cursor=${p.next_cursor}`);
      assert.deepEqual(next.items, [], `nothing after the page that followed LEDGER sequence ${seq}`);
    }
    // A cursor naming the sequence just before a fact resumes at that fact's event.
    const held = items.find((e) => e.type === 'order.state_changed' && e.data.state === 'held')!;
    const p = await page(`?cursor=${encodeCursor('events', sourceSeq(held) - 1)}&limit=1`);
    assert.deepEqual(
      p.items.map((e) => e.id),
      [held.id],
    );
    // A cursor of another list is still refused.
    const refused = await sys.call('GET', `/v1/events?cursor=${encodeCursor('orders', 1)}`, { token: buyer.token });
    assert.equal(refused.status, 422);
  });

  test('[EVENTS-REBUILD] rebuilding the events store by replay gives the same events: ids, sequences, data and order', async () => {
    const rows = () =>
      sys.sql`SELECT principal_id, seq, id, type, data, sandbox, source_seq, created_at FROM events
              ORDER BY principal_id, seq`;
    const heads = () => sys.sql`SELECT principal_id, last_seq FROM event_heads ORDER BY principal_id`;
    const lastSeq = (await ledgerFacts(sys)).at(-1)!.seq;
    await eventually('the events projection to hold every fact', async () => {
      const [c] = await sys.sql<{ last: number }[]>`
        SELECT last_seq AS last FROM projection_checkpoints WHERE name = ${eventsOf(sys.names).checkpoint}`;
      return c && c.last >= lastSeq ? true : undefined;
    });
    const before = (await rows()).map((r) => ({ ...r }));
    const headsBefore = (await heads()).map((r) => ({ ...r }));
    const apiBefore = await allEvents();
    assert.ok(before.length >= 6);
    // Damage the store: one event gone, another's data changed. The rebuild must mend both.
    await sys.sql`DELETE FROM events WHERE id = ${apiBefore[1].id}`;
    await sys.sql`UPDATE events SET data = '{}' WHERE id = ${apiBefore[2].id}`;
    const sql = openPool(sys.config.databaseUrl, 2);
    try {
      const rebuilt = await rebuildProjection(sys.nc, sql, eventsOf(sys.names), { log: pino({ level: 'silent' }) });
      assert.ok(rebuilt >= lastSeq);
    } finally {
      await sql.end();
    }
    assert.deepEqual(
      (await rows()).map((r) => ({ ...r })),
      before,
    );
    assert.deepEqual(
      (await heads()).map((r) => ({ ...r })),
      headsBefore,
    );
    assert.deepEqual(await allEvents(), apiBefore);
    // Each principal's events are numbered 1, 2, 3, ... in stream order, and its head is the last of them.
    const byPrincipal = new Map<string, typeof before>();
    for (const r of before) byPrincipal.set(r.principal_id, [...(byPrincipal.get(r.principal_id) ?? []), r]);
    for (const [principalId, events] of byPrincipal) {
      assert.deepEqual(
        events.map((e) => e.seq),
        events.map((_, i) => i + 1),
      );
      assert.ok(events.every((e, i) => i === 0 || e.source_seq >= events[i - 1]!.source_seq));
      assert.equal(headsBefore.find((h) => h.principal_id === principalId)?.last_seq, events.length);
    }
  });
});
