// The peer `bench:catalog` compares Assay's search with: a conventional service as one would write it in an hour,
// node:http and postgres.js on Assay's own database, no caching. Per request it runs the same statements Assay's
// catalog used to (the topic's words, the ranked page with the artifacts' own columns, their live listings, their
// trust sums: the ranked page statement is Assay's, so both return the same artifacts in the same order) and builds
// the same JSON with objects and JSON.stringify.
//   DATABASE_URL=... PORT=... BASE_URL=... TOKENS_FILE=... node --import tsx test/bench/search-peer.ts
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { trustScore } from '../../actors/catalog/trust.ts';
import {
  type ArtifactRow,
  browseStatement,
  catalogSizeEstimate,
  liveListingsFor,
  openPool,
  rankedStatement,
  runStatement,
  type SearchFilters,
  topicQueries,
  topicWords,
  trustAggregates,
} from '../../storage/index.ts';

const sql = openPool(process.env.DATABASE_URL!, 10);
const baseUrl = process.env.BASE_URL!;
// Sandbox agents' tokens, known up front: the peer's token check is a set lookup (Assay's gateway caches verified
// tokens the same way).
const tokens = new Set(readFileSync(process.env.TOKENS_FILE!, 'utf8').split('\n').filter(Boolean));
const catalogRows = await catalogSizeEstimate(sql);

type Row = ArtifactRow & { tier: number; search_rank: number };

async function search(params: URLSearchParams): Promise<{ status: number; body: unknown }> {
  const limit = Number(params.get('limit') ?? 50);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) return { status: 422, body: { code: 'validation_failed' } };
  const f: SearchFilters = { sandbox: true, limit: limit + 1 };
  if (params.has('type')) f.type = params.get('type')!;
  if (params.has('floor')) f.floor = Number(params.get('floor'));
  if (params.has('max_price')) f.maxPriceCents = Number(params.get('max_price'));
  const topic = params.get('topic');
  let rows: Row[];
  if (topic === null) {
    rows = (await runStatement(sql, browseStatement(f, null, 'columns'))) as unknown as Row[];
  } else {
    const q = topicQueries(await topicWords(sql, topic));
    if (q === null) return { status: 422, body: { code: 'validation_failed' } };
    const walk = Math.max(500, Math.ceil(Math.sqrt((limit + 1) * catalogRows)));
    const st = rankedStatement(f, q, null, walk, 'columns');
    rows = (st === null ? [] : await runStatement(sql, st)) as unknown as Row[];
  }
  const page = rows.slice(0, limit);
  const ids = page.map((r) => r.id);
  const [listings, trust] = await Promise.all([
    liveListingsFor(sql, ids),
    trustAggregates(
      sql,
      ids.map((id) => `artifact:${id}`),
    ),
  ]);
  const byArtifact = new Map<string, typeof listings>();
  for (const l of listings) byArtifact.set(l.artifact_id, [...(byArtifact.get(l.artifact_id) ?? []), l]);
  const now = Date.now();
  const items = page.map((r) => {
    const live = byArtifact.get(r.id) ?? [];
    return {
      artifact: {
        id: r.id,
        type: r.type,
        contentHash: r.current_content_hash,
        manifest: { title: r.title, topics: r.topics, description: r.description, floor: r.floor },
        ownerPrincipalId: r.owner_principal_id,
        sandbox: r.sandbox,
        createdAt: r.created_at.toISOString(),
      },
      trust: trustScore(trust.get(`artifact:${r.id}`), now),
      liveListingIds: live.map((l) => l.id),
      offers: live.map((l) => ({
        listing_id: l.id,
        offer_url: `${baseUrl}/offers/${l.id}`,
        price_cents: l.price_cents,
        billing: l.billing_interval_seconds === null ? null : { interval_seconds: l.billing_interval_seconds },
        formats: l.formats,
      })),
    };
  });
  const last = page.at(-1);
  const next = rows.length > limit && last ? `${last.tier}.${last.search_rank}.${last.catalog_seq}` : null;
  return { status: 200, body: { items, next_cursor: next && Buffer.from(next).toString('base64url') } };
}

const server = createServer((req, res) => {
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const url = new URL(req.url ?? '/', 'http://peer');
  if (req.method !== 'GET' || url.pathname !== '/v1/search') return send(404, { code: 'not_found' });
  if (!tokens.has((req.headers.authorization ?? '').replace(/^Bearer /, '')))
    return send(401, { code: 'unauthorized' });
  search(url.searchParams).then(
    (r) => send(r.status, r.body),
    (err) => send(500, { code: 'internal', message: String(err) }),
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('search peer listening'));
process.on('SIGTERM', () => {
  server.close();
  void sql.end({ timeout: 1 }).then(() => process.exit(0));
});
