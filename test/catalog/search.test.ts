// Search, offers and the sandbox line, against the synthetic corpus. Expected results are computed from the
// corpus generator itself (what was published, at which prices, and what the judge makes of it), not read back
// from the database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildReport, builtinJudge, corpusArtifact, currentJudgeVersion } from '../../actors/index.ts';
import { artifactContent, publish, registerSeller, reportDigestOf } from '../support/catalog.ts';
import { waitForCorpus } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

const corpusSize = 300;
let sys: TestSystem;
let buyer: Agent;
let liveToken: string;

interface Expected {
  id: string;
  mean: number;
  minPrice: number;
  topics: string[];
  listingIds: string[];
  /** Each listing's terms as a search offer states them, by listing id. */
  terms: Map<string, { price_cents: number; billing: { interval_seconds: number } | null; formats: string[] }>;
}
const expected: Expected[] = [];

before(async () => {
  sys = await startSystem({ ASSAY_SANDBOX_CORPUS_ARTIFACTS: String(corpusSize) });
  await waitForCorpus(sys, corpusSize);
  buyer = await sys.register();
  liveToken = await mintToken(sys.config, {
    sandbox: false,
    scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'],
  });
  for (let i = 0; i < corpusSize; i++) {
    const a = corpusArtifact(sys.config.sandboxCorpusSeed, i);
    const { report } = await buildReport(
      {
        artifactId: a.id,
        editionId: a.editionId,
        contentHash: '',
        content: a.content,
        floor: a.floor,
        judgeVersion: a.judgeVersion,
        createdAt: '',
      },
      builtinJudge,
    );
    expected.push({
      id: a.id,
      mean: report.summary.meanEntailment,
      minPrice: Math.min(...a.listings.map((l) => l.priceCents)),
      topics: a.topics,
      listingIds: a.listings.map((l) => l.id),
      terms: new Map(
        a.listings.map((l) => [
          l.id,
          {
            price_cents: l.priceCents,
            billing: l.billing && { interval_seconds: l.billing.intervalSeconds },
            formats: l.formats,
          },
        ]),
      ),
    });
  }
});
after(async () => {
  await sys.stop();
});

async function walk(query: string, token = buyer.token, onPage?: (n: number) => Promise<void>, limit = 37) {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: any = await sys.call('GET', `/v1/search?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, {
      token,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    items.push(...r.body.items);
    cursor = r.body.next_cursor;
    pages++;
    await onPage?.(pages);
  } while (cursor);
  return items;
}

const ids = (items: any[]) => items.map((i) => i.artifact.id);
const sorted = (xs: string[]) => [...xs].sort();

describe('search filters against the corpus', () => {
  test('[CAT-SEARCH-FILTERS] no filter: every corpus artifact, newest first, each once', async () => {
    const items = await walk('');
    assert.equal(items.length, corpusSize);
    assert.equal(new Set(ids(items)).size, corpusSize);
    assert.deepEqual(ids(items), expected.map((e) => e.id).reverse());
  });

  test('[CAT-SEARCH-FILTERS] floor, max_price, topic and type select exactly the matching artifacts', async () => {
    const cases: [string, (e: Expected) => boolean][] = [
      ['floor=0.8', (e) => e.mean >= 0.8],
      ['floor=0.7', (e) => e.mean >= 0.7],
      ['max_price=500', (e) => e.minPrice <= 500],
      ['topic=kubernetes', (e) => e.topics.includes('kubernetes')],
      ['topic=vacuum', (e) => e.topics.some((t) => t.includes('vacuum'))],
      [
        'topic=postgresql&floor=0.75&max_price=2000',
        (e) => e.topics.includes('postgresql') && e.mean >= 0.75 && e.minPrice <= 2000,
      ],
      ['type=context_file', () => true],
      ['type=dataset', () => false],
    ];
    for (const [query, match] of cases) {
      const want = expected.filter(match).map((e) => e.id);
      const got = ids(await walk(query));
      assert.equal(new Set(got).size, got.length, `${query}: duplicates`);
      assert.deepEqual(sorted(got), sorted(want), query);
      if (!query.startsWith('type=dataset')) assert.ok(want.length > 0, `${query} matches something`);
    }
  });

  test('[CAT-SEARCH-OFFERS] every item has inline trust and exactly one offer per live listing, with its price, billing and formats', async () => {
    const items = await walk('');
    const byId = new Map(expected.map((e) => [e.id, e]));
    for (const item of items) {
      const e = byId.get(item.artifact.id)!;
      assert.deepEqual(sorted(item.liveListingIds), sorted(e.listingIds));
      assert.equal(item.offers.length, item.liveListingIds.length);
      for (const o of item.offers) {
        assert.ok(item.liveListingIds.includes(o.listing_id));
        assert.deepEqual(o, {
          listing_id: o.listing_id,
          offer_url: `${sys.baseUrl}/offers/${o.listing_id}`,
          ...e.terms.get(o.listing_id),
        });
      }
      assert.equal(item.trust.sampleSize, 1, 'one verification sample');
      assert.equal(item.trust.passRate, e.mean >= 0.7 ? 1 : 0);
      assert.equal(item.artifact.sandbox, true);
      assert.match(item.artifact.contentHash, /^sha256:[0-9a-f]{64}$/);
    }
  });

  test('[CAT-SEARCH-CURSOR] walking the cursor visits every match exactly once while artifacts are added', async () => {
    // A term no corpus artifact contains, so every match is one this test published.
    const term = 'zorblatt';
    for (let i = 0; i < corpusSize; i++) {
      const a = corpusArtifact(sys.config.sandboxCorpusSeed, i);
      const text = [a.title, a.description, a.content, ...a.topics].join(' ').toLowerCase();
      assert.ok(!text.includes(term), `corpus artifact ${i} mentions ${term}`);
    }
    assert.deepEqual(await walk(`topic=${term}`), [], 'nothing matches before the test publishes');
    const seller = await registerSeller(sys);
    /** Publish and list a matching artifact, and wait until search can see it (its listing projected). */
    const addMatch = async (name: string) => {
      const a = await publish(
        sys,
        seller.token,
        {
          title: `${term} ${name}`,
          content: artifactContent(`${term} ${name}`, [['c1', 'x']], ['x']),
          topics: [term],
        },
        `walk-${name}`,
      );
      const l = await sys.call('POST', '/v1/listings', {
        token: seller.token,
        body: { artifact_id: a.id, price_cents: 100, floor: 0.5, formats: ['md'] },
        key: `walk-l-${name}`,
      });
      assert.equal(l.status, 201);
      await eventually(`${name} to be listed`, async () => {
        const [row] = await sys.sql<{ n: number }[]>`SELECT live_listing_count AS n FROM artifacts WHERE id = ${a.id}`;
        return row && row.n > 0 ? true : undefined;
      });
      return a.id as string;
    };
    const existing: string[] = [];
    for (let i = 0; i < 10; i++) existing.push(await addMatch(`before-${i}`));
    // Pages of 3: four pages or more, and between pages a new match arrives.
    const added: string[] = [];
    const got = ids(
      await walk(
        `topic=${term}`,
        buyer.token,
        async (page) => {
          added.push(await addMatch(`during-${page}`));
        },
        3,
      ),
    );
    assert.equal(new Set(got).size, got.length, `no artifact twice: ${got.join(' ')}`);
    // Every match that existed when the walk began, once; an arrival at most once (docs/search.md: ranked by
    // relevance, an arrival may sort after the cursor).
    for (const id of existing) assert.ok(got.includes(id), `${id} visited`);
    for (const id of got) assert.ok(existing.includes(id) || added.includes(id), `${id} is a match`);
    assert.ok(added.length >= 4, 'one arrival after each page');
    // A walk that begins now visits every match once, the arrivals included.
    const again = ids(await walk(`topic=${term}`, buyer.token, undefined, 3));
    assert.equal(new Set(again).size, again.length);
    assert.deepEqual(sorted(again), sorted([...existing, ...added]));
  });

  test('[CAT-VALIDATION] bad search input gets a typed 422', async () => {
    for (const q of [
      'floor=2',
      'floor=abc',
      'max_price=-1',
      'limit=0',
      'limit=201',
      'cursor=bm9wZQ',
      'colour=red',
      `topic=${'x'.repeat(201)}`,
    ]) {
      const r = await sys.call('GET', `/v1/search?${q}`, { token: buyer.token });
      assert.equal(r.status, 422, q);
      assert.ok(isTypedError(r.body, 'validation_failed'), q);
    }
  });
});

describe('offers', () => {
  test('[CAT-OFFER-ETAG] an offer has a strong ETag; If-None-Match that matches gives 304; a reprice changes it', async () => {
    const seller = await registerSeller(sys);
    const a = await publish(
      sys,
      seller.token,
      { title: 'Offer me', content: artifactContent('o', [['c1', 'alpha beta']], ['alpha beta']) },
      'offer-a',
    );
    const l = await sys.call('POST', '/v1/listings', {
      token: seller.token,
      body: {
        artifact_id: a.id,
        price_cents: 700,
        floor: 0.6,
        formats: ['md', 'pdf'],
        billing: { interval_seconds: 30 },
      },
      key: 'offer-l',
    });
    const digest = await reportDigestOf(sys, seller.token, a.id);
    const offer = await eventually('the offer to carry its report', async () => {
      const r = await sys.call('GET', `/offers/${l.body.id}`, { token: buyer.token });
      return r.status === 200 && r.body.report ? r : undefined;
    });
    const etag = offer.headers.get('etag')!;
    assert.match(etag, /^"[A-Za-z0-9_-]{32}"$/, 'a strong tag (no W/ prefix)');
    assert.equal(offer.body.report.digest, digest);
    assert.equal(offer.body.judge.version, currentJudgeVersion);
    assert.deepEqual(offer.body.billing, { interval_seconds: 30 });
    const same = await sys.call('GET', `/offers/${l.body.id}`, { token: buyer.token });
    assert.equal(same.headers.get('etag'), etag, 'same document, same tag');
    const notModified = await sys.call('GET', `/offers/${l.body.id}`, {
      token: buyer.token,
      headers: { 'if-none-match': etag },
    });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.body, '');
    const other = await sys.call('GET', `/offers/${l.body.id}`, {
      token: buyer.token,
      headers: { 'if-none-match': '"nope"' },
    });
    assert.equal(other.status, 200);
    const repriced = await sys.call('POST', `/v1/listings/${l.body.id}/reprice`, {
      token: seller.token,
      body: { price_cents: 900 },
      key: 'offer-r',
    });
    assert.equal(repriced.status, 201);
    const changed = await eventually('the offer to show the new price', async () => {
      const r = await sys.call('GET', `/offers/${l.body.id}`, {
        token: buyer.token,
        headers: { 'if-none-match': etag },
      });
      return r.status === 200 && r.body.price_cents === 900 ? r : undefined;
    });
    assert.notEqual(changed.headers.get('etag'), etag);
    const unlisted = await sys.call('POST', `/v1/listings/${l.body.id}/unlist`, {
      token: seller.token,
      body: {},
      key: 'offer-u',
    });
    assert.equal(unlisted.status, 201);
    await eventually('the unlisted offer to be gone', async () => {
      const r = await sys.call('GET', `/offers/${l.body.id}`, { token: buyer.token });
      return r.status === 404 && isTypedError(r.body, 'not_found') ? true : undefined;
    });
  });

  test('[CAT-SEARCH-OFFER-TERMS] a search offer states the terms its offer document states, and a reprice reaches search', async () => {
    const term = 'quillwort';
    const seller = await registerSeller(sys);
    const a = await publish(
      sys,
      seller.token,
      { title: `${term} terms`, content: artifactContent(`${term} terms`, [['c1', 'x']], ['x']), topics: [term] },
      'terms-a',
    );
    const l = await sys.call('POST', '/v1/listings', {
      token: seller.token,
      body: {
        artifact_id: a.id,
        price_cents: 450,
        floor: 0.5,
        formats: ['md', 'pdf'],
        billing: { interval_seconds: 60 },
      },
      key: 'terms-l',
    });
    assert.equal(l.status, 201, JSON.stringify(l.body));
    const offerOf = async (price: number) =>
      eventually(`search to offer the listing at ${price}`, async () => {
        const r = await sys.call('GET', `/v1/search?topic=${term}`, { token: buyer.token });
        const o = r.body.items?.[0]?.offers?.find((x: any) => x.listing_id === l.body.id);
        return o?.price_cents === price ? o : undefined;
      });
    const offer = await offerOf(450);
    assert.deepEqual(offer, {
      listing_id: l.body.id,
      offer_url: `${sys.baseUrl}/offers/${l.body.id}`,
      price_cents: 450,
      billing: { interval_seconds: 60 },
      formats: ['md', 'pdf'],
    });
    // The same terms as the offer document, which the search answer saves a call to.
    const doc = (await sys.call('GET', offer.offer_url.slice(sys.baseUrl.length), { token: buyer.token })).body;
    assert.deepEqual(
      { price_cents: offer.price_cents, billing: offer.billing, formats: offer.formats },
      { price_cents: doc.price_cents, billing: doc.billing, formats: doc.formats },
    );
    const repriced = await sys.call('POST', `/v1/listings/${l.body.id}/reprice`, {
      token: seller.token,
      body: { price_cents: 525 },
      key: 'terms-r',
    });
    assert.equal(repriced.status, 201);
    assert.equal((await offerOf(525)).price_cents, 525);
  });

  test('[CAT-OFFER-SCHEMA] every served offer validates against /schemas/offer-v1.json (ajv, draft 2020-12)', async () => {
    const schemaReply = await sys.call('GET', '/schemas/offer-v1.json');
    assert.equal(schemaReply.status, 200);
    assert.equal(schemaReply.body.$schema, 'https://json-schema.org/draft/2020-12/schema');
    const ajv = new Ajv2020.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(schemaReply.body);
    const items = await walk('');
    let checked = 0;
    for (const item of items.slice(0, 60)) {
      for (const o of item.offers) {
        const r = await sys.call('GET', `/offers/${o.listing_id}`, { token: buyer.token });
        assert.equal(r.status, 200);
        assert.ok(validate(r.body), JSON.stringify(validate.errors));
        checked++;
      }
    }
    assert.ok(checked > 60);
    assert.equal(validate({ offer_version: 'offer-v1' }), false, 'the schema rejects a partial offer');
  });
});

describe('the sandbox line', () => {
  test('[CAT-SANDBOX-LINE] live tokens never see sandbox artifacts, reports or offers', async () => {
    const items = await walk('', liveToken);
    assert.equal(items.filter((i) => i.artifact.sandbox).length, 0);
    const sandboxItem = (await sys.call('GET', '/v1/search?limit=1', { token: buyer.token })).body.items[0];
    const offer = await sys.call('GET', `/offers/${sandboxItem.offers[0].listing_id}`, { token: liveToken });
    assert.equal(offer.status, 404);
    const digest = (await sys.call('GET', `/v1/artifacts/${sandboxItem.artifact.id}`, { token: buyer.token })).body
      .currentEdition.reportDigest;
    assert.equal((await sys.call('GET', `/v1/reports/${digest}`, { token: liveToken })).status, 404);
    assert.equal((await sys.call('GET', `/v1/reports/${digest}`, { token: buyer.token })).status, 200);
    assert.equal((await sys.call('GET', `/v1/artifacts/${sandboxItem.artifact.id}`, { token: liveToken })).status, 404);
    assert.equal(
      (await sys.call('GET', `/v1/trust/artifact:${sandboxItem.artifact.id}`, { token: liveToken })).status,
      404,
    );
  });

  test('[CAT-SANDBOX-LINE] sandbox tokens never see live artifacts, reports or offers', async () => {
    const a = await publish(
      sys,
      liveToken,
      {
        title: 'A live artifact',
        content: artifactContent('live', [['c1', 'gamma']], ['gamma']),
        topics: ['livezone'],
      },
      'live-a',
    );
    assert.equal(a.sandbox, false);
    const l = await sys.call('POST', '/v1/listings', {
      token: liveToken,
      body: { artifact_id: a.id, price_cents: 100, floor: 0.5, formats: ['md'] },
      key: 'live-l',
    });
    assert.equal(l.status, 201);
    const digest = await reportDigestOf(sys, liveToken, a.id);
    await eventually('the live artifact to be searchable by live tokens', async () =>
      (await walk('topic=livezone', liveToken)).length === 1 ? true : undefined,
    );
    assert.equal((await walk('topic=livezone', buyer.token)).length, 0);
    assert.equal((await sys.call('GET', `/offers/${l.body.id}`, { token: buyer.token })).status, 404);
    assert.equal((await sys.call('GET', `/offers/${l.body.id}`, { token: liveToken })).status, 200);
    assert.equal((await sys.call('GET', `/v1/reports/${digest}`, { token: buyer.token })).status, 404);
  });
});
