// The quote cache of an actor host, with the clock and the loads in the test's hands: one load per key at a time,
// a change noticed while a load is in flight never lets the stale read in, entries are refreshed in the background
// at three quarters of their time to live and never used past it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QuoteMap } from '../../actors/principal/quotes.ts';

/** Loads the test resolves by hand, in any order. */
function manualLoads() {
  const pending: { key: string; resolve: (v: string) => void }[] = [];
  let loads = 0;
  return {
    load: (key: string) =>
      new Promise<string>((resolve) => {
        loads++;
        pending.push({ key, resolve });
      }),
    finish(value: string) {
      pending.shift()!.resolve(value);
    },
    get loads() {
      return loads;
    },
    get waiting() {
      return pending.length;
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

test('[BUY-QUOTE-FRESH] concurrent gets of one key share one load, and the value is cached for the time to live', async () => {
  let now = 0;
  const l = manualLoads();
  const map = new QuoteMap<string>(1000, () => now, l.load);
  const a = map.get('k');
  const b = map.get('k');
  l.finish('v1');
  assert.deepEqual(await Promise.all([a, b]), ['v1', 'v1']);
  assert.equal(l.loads, 1);
  now = 700;
  assert.equal(await map.get('k'), 'v1');
  assert.equal(l.loads, 1, 'younger than three quarters of the ttl: no load');
});

test('[BUY-QUOTE-FRESH] an invalidation during a load keeps that load’s (possibly stale) value out of the cache', async () => {
  const now = 0;
  const l = manualLoads();
  const map = new QuoteMap<string>(1000, () => now, l.load);
  const inFlight = map.get('k');
  map.invalidate('k');
  l.finish('stale');
  assert.equal(await inFlight, 'stale', 'the caller that asked before the change gets what was read');
  const next = map.get('k');
  assert.equal(l.loads, 2, 'the stale read was not cached');
  l.finish('fresh');
  assert.equal(await next, 'fresh');
  assert.equal(await map.get('k'), 'fresh');
  assert.equal(l.loads, 2);
});

test('[BUY-QUOTE-FRESH] a clear (a reconnect, an errata notice) drops every entry and every load in flight', async () => {
  const l = manualLoads();
  const map = new QuoteMap<string>(1000, () => 0, l.load);
  const a = map.get('a');
  l.finish('a1');
  await a;
  const b = map.get('b');
  map.clear();
  l.finish('b1');
  await b;
  const again = [map.get('a'), map.get('b')];
  assert.equal(l.loads, 4, 'both loaded again');
  l.finish('a2');
  l.finish('b2');
  assert.deepEqual(await Promise.all(again), ['a2', 'b2']);
});

test('[BUY-QUOTE-FRESH] past three quarters of the ttl an entry is served and refreshed behind; past the ttl it is not served', async () => {
  let now = 0;
  const l = manualLoads();
  const map = new QuoteMap<string>(1000, () => now, l.load);
  const first = map.get('k');
  l.finish('v1');
  await first;
  now = 800;
  assert.equal(await map.get('k'), 'v1', 'served at once');
  assert.equal(l.waiting, 1, 'and refreshed in the background');
  l.finish('v2');
  await tick();
  assert.equal(await map.get('k'), 'v2');
  now = 800 + 1000;
  const late = map.get('k');
  assert.equal(l.waiting, 1, 'too old to serve: the caller waits for a load');
  l.finish('v3');
  assert.equal(await late, 'v3');
});
