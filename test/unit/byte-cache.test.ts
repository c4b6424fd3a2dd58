// The delivery cache holds at most its byte budget, evicting the least recently used first, so a worker's memory
// stays bounded however many editions it delivers (ASSAY_DELIVERY_CACHE_BYTES).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteBudgetCache } from '../../actors/delivery/byte-cache.ts';

test('the cache stays within its byte budget and evicts the least recently used first', () => {
  const cache = new ByteBudgetCache<string>(100);
  cache.set('a', 'A', 40);
  cache.set('b', 'B', 40);
  assert.equal(cache.get('a'), 'A'); // a is now the most recently used
  cache.set('c', 'C', 40);
  assert.equal(cache.get('b'), undefined, 'b was the least recently used');
  assert.equal(cache.get('a'), 'A');
  assert.equal(cache.get('c'), 'C');
  assert.equal(cache.bytes, 80);
  cache.set('huge', 'H', 101);
  assert.equal(cache.get('huge'), undefined, 'a value over the whole budget is not kept');
  assert.equal(cache.bytes, 80);
  cache.set('a', 'A2', 10);
  assert.equal(cache.bytes, 50, 'replacing a key replaces its bytes');
  assert.equal(new ByteBudgetCache<string>(0).get('x'), undefined);
});
