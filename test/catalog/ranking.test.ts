// Relevance ranking, typo tolerance and the ranked cursor (docs/search.md), on a small catalog made for each case:
// the expected order follows from the ranking rules and what each artifact says, never from reading the database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { trustDecay } from '../../actors/shared/trust-weight.ts';
import { rankedArtifacts, refreshSearchRanks, runStatement, topicQueries, topicWords } from '../../storage/index.ts';
import { artifactContent, publish, registerSeller, reportDigestOf } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome } from '../support/mcp.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
let buyer: Agent;

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
  buyer = await sys.register();
});
after(async () => {
  await sys.stop();
});

const passage = 'Autovacuum reclaims dead tuples so that tables do not grow without bound.';
/** A report that meets the floor (its one claim is the source's words) or misses it (two of three unsupported). */
const claims = (good: boolean): [string, string][] =>
  good
    ? [['c1', passage]]
    : [
        ['c1', passage],
        ['c2', 'Zeta eta theta iota kappa lambda.'],
        ['c3', 'Omicron pi rho sigma tau upsilon.'],
      ];

/** Publish, list, and wait until search can see the artifact with its report: its place in the order is final. */
async function listed(key: string, o: { title: string; description: string; topics?: string[]; good: boolean }) {
  const a = await publish(
    sys,
    seller.token,
    {
      title: o.title,
      description: o.description,
      topics: o.topics ?? ['notes'],
      content: artifactContent(o.title, claims(o.good), [passage]),
    },
    `a-${key}`,
  );
  await reportDigestOf(sys, seller.token, a.id);
  const l = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: { artifact_id: a.id, price_cents: 100, floor: 0.5, formats: ['md'] },
    key: `l-${key}`,
  });
  assert.equal(l.status, 201);
  await eventually(`${key} to be listed`, async () => {
    const [row] = await sys.sql<{ n: number }[]>`SELECT live_listing_count AS n FROM artifacts WHERE id = ${a.id}`;
    return row && row.n > 0 ? true : undefined;
  });
  return a.id as string;
}

async function search(query: string, token = buyer.token) {
  const r = await sys.call('GET', `/v1/search?${query}`, { token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as { items: any[]; next_cursor: string | null };
}
const ids = (items: any[]) => items.map((i) => i.artifact.id);

describe('ranking', () => {
  test('[CAT-SEARCH-RANK] the title that is the phrase comes before words scattered in a description', async () => {
    // The phrase's artifact has the worse report and is older: only text relevance puts it first.
    const phrase = await listed('phrase', {
      title: 'Vacuum bloat in busy tables',
      description: 'How autovacuum keeps up.',
      good: false,
    });
    const scattered = await listed('scattered', {
      title: 'Table maintenance',
      description: 'Vacuum runs nightly; afterwards the job lists the bloat of every index.',
      good: true,
    });
    const page = await search('topic=vacuum%20bloat');
    assert.deepEqual(ids(page.items), [phrase, scattered]);
  });

  test('[CAT-SEARCH-RANK] at equal text relevance the better report and higher trust come first, not the newer', async () => {
    // The better artifact is the older here: a rank that favoured the newest would put the worse one first.
    const better = await listed('quorum-good', {
      title: 'Quorum replication handbook',
      description: 'Majorities and leases.',
      good: true,
    });
    const worse = await listed('quorum-poor', {
      title: 'Quorum replication handbook',
      description: 'Majorities and leases.',
      good: false,
    });
    const page = await search('topic=quorum%20replication');
    assert.deepEqual(ids(page.items), [better, worse]);
    const [b, w] = page.items;
    assert.ok(b.trust.score > w.trust.score, `trust ${b.trust.score} > ${w.trust.score}`);
    // The same once the trust part of the rank has been refreshed (as the catalog does every minute).
    await refreshSearchRanks(sys.sql, trustDecay(Date.now()));
    assert.deepEqual(ids((await search('topic=quorum%20replication')).items), [better, worse]);
  });

  test('[CAT-SEARCH-RANK] at equal text relevance the better report comes first when it is the newer too, not the older', async () => {
    // The other way round: a rank that favoured the oldest would put the worse one first.
    const worse = await listed('snapshot-poor', {
      title: 'Raft snapshot compaction',
      description: 'Logs and installs.',
      good: false,
    });
    const better = await listed('snapshot-good', {
      title: 'Raft snapshot compaction',
      description: 'Logs and installs.',
      good: true,
    });
    assert.deepEqual(ids((await search('topic=raft%20snapshot')).items), [better, worse]);
    await refreshSearchRanks(sys.sql, trustDecay(Date.now()));
    assert.deepEqual(ids((await search('topic=raft%20snapshot')).items), [better, worse]);
  });

  test('[CAT-SEARCH-TYPOS] a misspelt query finds the artifact, and exact matches rank above typo matches', async () => {
    const pg = await listed('postgres', {
      title: 'PostgreSQL connection pooling',
      description: 'Pools in front of the server.',
      good: true,
    });
    // Two edits for a word of nine letters or more, one from five: "postgress" is two from "postgresql".
    assert.deepEqual(ids((await search('topic=postgress')).items), [pg]);
    assert.deepEqual(ids((await search('topic=postgress%20poolng')).items), [pg]);
    // Under five letters no typo is forgiven.
    assert.deepEqual(ids((await search('topic=pols')).items), []);
    // A catalog word spelt wrong is found by the right spelling, after every exact match, whatever its report.
    const misspelt = await listed('misspelt', {
      title: 'Replicaton pitfalls',
      description: 'Lag and split brain.',
      good: true,
    });
    const got = ids((await search('topic=replication')).items);
    assert.equal(got.at(-1), misspelt, 'the typo match is last');
    assert.equal(got.length, 3, 'the two quorum handbooks, then the typo match');
    assert.deepEqual(ids((await search('topic=replicaton')).items)[0], misspelt, 'its own spelling is exact');
  });

  test('[CAT-SEARCH-RANK] a walk cut off after two rows gives the page a whole walk gives, whether it found some matches or none', async () => {
    // The statement walks each tier in rank order up to a cut-off; a tier the walk left short is finished another
    // way: in rank order when the walk found some matches, by its index and a sort when it found none (a word the
    // statistics took for common, such as a misspelling). Every way must give the same page.
    await listed('walk-a', { title: 'Vacuum tuning notes', description: 'Autovacuum thresholds.', good: true });
    await listed('walk-b', { title: 'Index bloat', description: 'Vacuum and reindexing.', good: false });
    for (const topic of [
      'vacuum',
      'postgress poolng',
      'replication',
      'vacuum bloat',
      'bloat',
      'nothing matches this',
    ]) {
      const q = topicQueries(await topicWords(sys.sql, topic));
      if (q === null) continue;
      const page = async (walkRowsMax: number, lookUp = { exact: false, typos: false }) =>
        (await rankedArtifacts(sys.sql, { sandbox: true, limit: 51 }, q, null, walkRowsMax, lookUp)).map(
          (r) => `${r.tier}:${r.catalog_seq}`,
        );
      const whole = await page(1_000_000);
      if (topic !== 'nothing matches this') assert.ok(whole.length > 0, `"${topic}" matches something`);
      assert.deepEqual(await page(2), whole, `"${topic}": a walk of two rows`);
      assert.deepEqual(await page(2, { exact: true, typos: true }), whole, `"${topic}": every tier looked up`);
    }
  });

  test('[CAT-SEARCH-DEADLINE] a search statement past its deadline is cancelled in PostgreSQL, not left running', async () => {
    const marker = `deadline-${Date.now()}`;
    await assert.rejects(
      runStatement(sys.sql, { text: `SELECT pg_sleep(30), '${marker}' AS tag`, params: [] }, 200),
      (err: any) => err.code === '57014',
    );
    const [running] = await sys.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker}%`}
        AND pid <> pg_backend_pid()`;
    assert.equal(running!.n, 0, 'the statement no longer runs');
    // The pool goes on serving.
    assert.equal((await runStatement(sys.sql, { text: 'SELECT 1 AS one', params: [] }, 200)).length, 1);
  });

  test('[CAT-SEARCH-CURSOR] a walk in relevance order visits every match once while artifacts are published', async () => {
    const shapes = [
      { title: 'Lighthouse keeping', description: 'Lamps and logs.' },
      { title: 'Coastal notes', description: 'The lighthouse keeper writes it down.' },
      { title: 'Lighthouse lenses', description: 'Fresnel rings.' },
      { title: 'Harbour pilots', description: 'A lighthouse marks the channel.' },
    ];
    const existing: string[] = [];
    for (let i = 0; i < 9; i++) {
      const s = shapes[i % shapes.length]!;
      existing.push(await listed(`lh-${i}`, { ...s, good: i % 3 !== 0 }));
    }
    // Settle every trust part now, so that the walk sees no refresh move an artifact that existed when it began.
    await refreshSearchRanks(sys.sql, trustDecay(Date.now()));
    const added: string[] = [];
    const got: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await search(`topic=lighthouse&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      got.push(...ids(page.items));
      cursor = page.next_cursor;
      pages++;
      // Arrivals of every tier: in a heading and in a description only.
      const s = shapes[pages % shapes.length]!;
      added.push(await listed(`lh-new-${pages}`, { ...s, good: true }));
    } while (cursor);
    assert.ok(pages >= 5, `${pages} pages`);
    assert.equal(new Set(got).size, got.length, `no artifact twice: ${got.join(' ')}`);
    for (const id of existing) assert.ok(got.includes(id), `${id} existed when the walk began and was visited`);
    for (const id of got) assert.ok(existing.includes(id) || added.includes(id), `${id} is a match`);
    // The walk met the artifacts that existed in the order of one page holding everything.
    const whole = ids((await search('topic=lighthouse&limit=200')).items);
    assert.deepEqual(
      got.filter((id) => existing.includes(id)),
      whole.filter((id) => existing.includes(id)),
    );
    // Headings before descriptions: the first matches all carry the word in their title.
    const titles = (await search('topic=lighthouse&limit=200')).items.map((i: any) => i.artifact.manifest.title);
    const firstDescriptionOnly = titles.findIndex((t: string) => !/lighthouse/i.test(t));
    assert.ok(firstDescriptionOnly > 0);
    assert.ok(titles.slice(firstDescriptionOnly).every((t: string) => !/lighthouse/i.test(t)));
  });

  test('[CAT-SEARCH-RANK] the MCP tool search_artifacts returns the same order as GET /v1/search', async () => {
    const { client } = await connectMcp(sys.baseUrl, buyer.token);
    try {
      for (const topic of ['lighthouse', 'replication', 'postgress', 'vacuum bloat']) {
        const rest = await search(`topic=${encodeURIComponent(topic)}&limit=5`);
        const mcp = outcome(await client.callTool({ name: 'search_artifacts', arguments: { topic, limit: 5 } }));
        assert.equal(mcp.isError, false, JSON.stringify(mcp.body));
        assert.deepEqual(mcp.body, rest, topic);
      }
    } finally {
      await client.close();
    }
  });
});

describe('pages reused while the catalog is unchanged', () => {
  test('[CAT-SEARCH-OFFERS] the same query right after a listing arrives or leaves shows it, never a kept page', async () => {
    const id = await listed('gannet', { title: 'Gannet colonies', description: 'Cliffs.', good: true });
    const offersOf = async () => {
      const page = await search('topic=gannet');
      assert.deepEqual(ids(page.items), [id]);
      return page.items[0].offers.map((o: any) => o.listing_id as string);
    };
    const liveCount = async (n: number) =>
      eventually(`${n} live listings`, async () => {
        const [row] = await sys.sql<{ n: number }[]>`SELECT live_listing_count AS n FROM artifacts WHERE id = ${id}`;
        return row && row.n === n ? true : undefined;
      });
    const first = await offersOf();
    assert.equal(first.length, 1);
    // Asked again and again while nothing changes: the kept page, the same answer.
    assert.deepEqual(await offersOf(), first);
    const l = await sys.call('POST', '/v1/listings', {
      token: seller.token,
      body: { artifact_id: id, price_cents: 300, floor: 0.5, formats: ['md'] },
      key: 'l-gannet-2',
    });
    assert.equal(l.status, 201);
    await liveCount(2);
    // At once: the listing projection's commit moved the search generation.
    const both = await offersOf();
    assert.deepEqual(both, [...first, l.body.id]);
    const u = await sys.call('POST', `/v1/listings/${first[0]}/unlist`, {
      token: seller.token,
      body: {},
      key: 'u-gannet',
    });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    await liveCount(1);
    assert.deepEqual(await offersOf(), [l.body.id]);
  });
});

describe('bad search input', () => {
  test('[CAT-VALIDATION] bad topics, cursors and limits get the typed validation_failed, never 503', async () => {
    const topicPage = await search('topic=lighthouse&limit=1');
    const browsePage = await search('limit=1');
    assert.ok(topicPage.next_cursor && browsePage.next_cursor);
    const cases = [
      'topic=',
      `topic=${'x'.repeat(10_000)}`,
      `topic=${'lighthouse '.repeat(1000)}`,
      'topic=light%01house',
      'topic=lighthouse%7F',
      'topic=tab%09separated',
      'topic=%C2%85',
      'topic=the%20and%20of',
      'topic=%20%20%20',
      'topic=%40%40%40',
      'topic=lighthouse&cursor=bm9wZQ',
      `topic=lighthouse&cursor=${Buffer.from('search-ranked:0123456789ab.0.1.1').toString('base64url')}`,
      `topic=lighthouse&cursor=${Buffer.from('search-ranked:zz.99.99999999999.1').toString('base64url')}`,
      `topic=lighthouse&cursor=${browsePage.next_cursor}`,
      `topic=replication&cursor=${topicPage.next_cursor}`,
      `topic=lighthouse&floor=0.5&cursor=${topicPage.next_cursor}`,
      `cursor=${topicPage.next_cursor}`,
      'topic=lighthouse&limit=0',
      'topic=lighthouse&limit=201',
      'topic=lighthouse&limit=-1',
      'topic=lighthouse&limit=abc',
    ];
    for (const q of cases) {
      const r = await sys.call('GET', `/v1/search?${q}`, { token: buyer.token });
      assert.equal(r.status, 422, `${q.slice(0, 80)}: ${JSON.stringify(r.body).slice(0, 200)}`);
      assert.ok(isTypedError(r.body, 'validation_failed'), q.slice(0, 80));
    }
    // The same topic and filters take their own cursor.
    const next = await search(`topic=lighthouse&limit=1&cursor=${topicPage.next_cursor}`);
    assert.equal(next.items.length, 1);
  });
});
