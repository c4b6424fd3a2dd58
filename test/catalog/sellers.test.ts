// Seller operations: publish, editions on changed content only, listings created, repriced and unlisted by their
// seller alone, idempotent under the same key, and bad input refused with a typed error that changes nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { artifactContent, publish, registerSeller, reportDigestOf } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
let other: Agent;

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
  other = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

const content = (n: number) => artifactContent(`Doc ${n}`, [['c1', `fact number ${n}`]], [`fact number ${n}`]);
/** The last fact on a listing's subject of the LISTINGS stream: its sequence, type and price. */
async function lastListingFact(listingId: string) {
  const jsm = await jetstreamManager(sys.nc);
  const m = await jsm.streams.getMessage(sys.names.streams.listings.name, {
    last_by_subj: sys.names.listingSubject(listingId),
  });
  const f = m!.json<{ type: string; priceCents?: number }>();
  return { seq: m!.seq, type: f.type, priceCents: f.priceCents };
}

const counts = async () =>
  (
    await sys.sql<{ a: number; e: number; l: number }[]>`
      SELECT (SELECT count(*)::int FROM artifacts) a, (SELECT count(*)::int FROM editions) e, (SELECT count(*)::int FROM listings) l`
  )[0]!;

test('[CAT-SELLER-OPS] publish replays under its key; a new edition only when the content changes', async () => {
  const first = await publish(sys, seller.token, { title: 'Doc', content: content(1) }, 's-1');
  assert.equal(first.currentEdition.number, 1);
  assert.equal(first.editionCreated, true);
  const replay = await sys.call('POST', '/v1/artifacts', {
    token: seller.token,
    body: { title: 'Doc', content: content(1) },
    key: 's-1',
  });
  assert.equal(replay.status, 201);
  assert.deepEqual(replay.body, first);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  const conflict = await sys.call('POST', '/v1/artifacts', {
    token: seller.token,
    body: { title: 'Other', content: content(1) },
    key: 's-1',
  });
  assert.equal(conflict.status, 422);
  assert.ok(isTypedError(conflict.body, 'idempotency_conflict'));

  const same = await sys.call('POST', `/v1/artifacts/${first.id}/editions`, {
    token: seller.token,
    body: { content: content(1) },
    key: 's-2',
  });
  assert.equal(same.status, 201);
  assert.equal(same.body.currentEdition.number, 1, 'same content, no new edition');
  assert.equal(same.body.editionCreated, false);
  const changed = await sys.call('POST', `/v1/artifacts/${first.id}/editions`, {
    token: seller.token,
    body: { content: content(2) },
    key: 's-3',
  });
  assert.equal(changed.body.currentEdition.number, 2);
  assert.equal(changed.body.editionCreated, true);
  assert.notEqual(changed.body.contentHash, first.contentHash);
  const digest = await reportDigestOf(sys, seller.token, first.id);
  const report = (await sys.call('GET', `/v1/reports/${digest}`, { token: seller.token })).body;
  assert.equal(report.subject.editionId, changed.body.currentEdition.id, 'the current edition gets its own report');
  const theirs = await sys.call('POST', `/v1/artifacts/${first.id}/editions`, {
    token: other.token,
    body: { content: content(3) },
    key: 's-4',
  });
  assert.equal(theirs.status, 404);
  assert.ok(isTypedError(theirs.body, 'not_found'));
});

test('[CAT-SELLER-OPS] listings: created by the owner only, repriced and unlisted by their seller only', async () => {
  const art = await publish(sys, seller.token, { title: 'Listed', content: content(10) }, 'l-a');
  const body = { artifact_id: art.id, price_cents: 1234, floor: 0.7, formats: ['md'] };
  const notOwner = await sys.call('POST', '/v1/listings', { token: other.token, body, key: 'l-x' });
  assert.equal(notOwner.status, 404);
  const created = await sys.call('POST', '/v1/listings', { token: seller.token, body, key: 'l-1' });
  assert.equal(created.status, 201);
  assert.equal(created.body.state, 'live');
  assert.equal(created.body.priceCents, 1234);
  const replay = await sys.call('POST', '/v1/listings', { token: seller.token, body, key: 'l-1' });
  assert.deepEqual(replay.body, created.body, 'same key, same listing');
  const id = created.body.id;
  // The listing actor's facts are the listing: a refused command must append none.
  const before = await lastListingFact(id);
  assert.equal(before.type, 'listing_created');
  const theirReprice = await sys.call('POST', `/v1/listings/${id}/reprice`, {
    token: other.token,
    body: { price_cents: 1 },
    key: 'l-y',
  });
  assert.equal(theirReprice.status, 404, JSON.stringify(theirReprice.body));
  assert.ok(isTypedError(theirReprice.body, 'not_found'));
  assert.deepEqual(await lastListingFact(id), before, "another seller's reprice changes nothing");
  const theirUnlist = await sys.call('POST', `/v1/listings/${id}/unlist`, { token: other.token, body: {}, key: 'l-z' });
  assert.equal(theirUnlist.status, 404, JSON.stringify(theirUnlist.body));
  assert.ok(isTypedError(theirUnlist.body, 'not_found'));
  assert.deepEqual(await lastListingFact(id), before, "another seller's unlisting changes nothing");
  const repriced = await sys.call('POST', `/v1/listings/${id}/reprice`, {
    token: seller.token,
    body: { price_cents: 999 },
    key: 'l-2',
  });
  assert.equal(repriced.status, 201);
  assert.equal(repriced.body.priceCents, 999);
  assert.equal(repriced.body.state, 'live', 'still live after the refused unlisting');
  const afterReprice = await lastListingFact(id);
  assert.deepEqual(
    { type: afterReprice.type, priceCents: afterReprice.priceCents },
    {
      type: 'listing_repriced',
      priceCents: 999,
    },
  );
  assert.ok(afterReprice.seq > before.seq);
  const unlisted = await sys.call('POST', `/v1/listings/${id}/unlist`, { token: seller.token, body: {}, key: 'l-3' });
  assert.equal(unlisted.status, 201);
  assert.equal(unlisted.body.state, 'unlisted');
  const again = await sys.call('POST', `/v1/listings/${id}/reprice`, {
    token: seller.token,
    body: { price_cents: 5 },
    key: 'l-4',
  });
  assert.equal(again.status, 404, 'unlisting is final');
  await eventually('the listing projection to follow', async () => {
    const r = await sys.call('GET', '/v1/listings', { token: seller.token });
    const l = r.body.items.find((x: any) => x.id === id);
    return l && l.state === 'unlisted' && l.priceCents === 999 ? true : undefined;
  });
});

test('[CAT-VALIDATION] bad input on every seller route gets a typed error and changes nothing', async () => {
  const art = await publish(sys, seller.token, { title: 'Valid', content: content(20) }, 'v-a');
  await reportDigestOf(sys, seller.token, art.id);
  const before = await counts();
  const cases: [string, string, unknown][] = [
    ['POST', '/v1/artifacts', { title: '', content: 'x' }],
    ['POST', '/v1/artifacts', { title: 'x' }],
    ['POST', '/v1/artifacts', { title: 'x', content: 'y', floor: 2 }],
    ['POST', '/v1/artifacts', { title: 'x', content: 'y', extra: 1 }],
    ['POST', '/v1/artifacts/not-a-uuid/editions', { content: 'x' }],
    ['POST', `/v1/artifacts/${art.id}/editions`, { content: '' }],
    ['POST', '/v1/listings', { artifact_id: art.id, price_cents: -1, floor: 0.5, formats: ['md'] }],
    ['POST', '/v1/listings', { artifact_id: art.id, price_cents: 1, floor: 0.5, formats: [] }],
    ['POST', '/v1/listings', { artifact_id: art.id, price_cents: 1, floor: 0.5, formats: ['docx'] }],
    ['POST', '/v1/listings', { artifact_id: art.id, price_cents: 1.5, floor: 0.5, formats: ['md'] }],
    [
      'POST',
      '/v1/listings',
      { artifact_id: art.id, price_cents: 1, floor: 0.5, formats: ['md'], billing: { interval_seconds: 0 } },
    ],
    ['POST', '/v1/listings/not-a-uuid/reprice', { price_cents: 1 }],
    ['POST', `/v1/listings/${art.id}/reprice`, { price_cents: 'cheap' }],
    ['POST', `/v1/listings/${art.id}/unlist`, { now: true }],
  ];
  for (const [method, path, body] of cases) {
    const r = await sys.call(method, path, {
      token: seller.token,
      body,
      key: `bad-${path}-${JSON.stringify(body)}`.slice(0, 200),
    });
    assert.equal(r.status, 422, `${path} ${JSON.stringify(body)}`);
    assert.ok(isTypedError(r.body, 'validation_failed'));
  }
  const buyer = await sys.register();
  const noScope = await sys.call('POST', '/v1/artifacts', {
    token: buyer.token,
    body: { title: 'x', content: 'y' },
    key: 'ns',
  });
  assert.equal(noScope.status, 403, 'publishing needs the publish scope');
  assert.ok(isTypedError(noScope.body, 'forbidden'));
  assert.deepEqual(await counts(), before);
});
