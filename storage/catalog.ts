// Artifacts, editions and reports in PostgreSQL, and the search query over them.
import type { Sql } from './postgres.ts';

export interface ArtifactRow {
  id: string;
  catalog_seq: number;
  type: string;
  owner_principal_id: string;
  sandbox: boolean;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  created_at: Date;
  current_edition_id: string;
  current_content_hash: string;
  current_report_digest: string | null;
  current_mean_entailment: number | null;
  current_judge_version: string | null;
  live_listing_count: number;
  min_live_price_cents: number | null;
}

export interface EditionRow {
  id: string;
  artifact_id: string;
  number: number;
  content_hash: string;
  content: string;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  judge_version: string;
  report_digest: string | null;
  created_at: Date;
}

export interface NewEdition {
  id: string;
  artifactId: string;
  contentHash: string;
  content: string;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  judgeVersion: string;
  createdAt: string;
}

const artifactColumns = `id, catalog_seq, type, owner_principal_id, sandbox, title, topics, description, floor, created_at,
  current_edition_id, current_content_hash, current_report_digest, current_mean_entailment, current_judge_version,
  live_listing_count, min_live_price_cents`;

export async function getArtifact(sql: Sql, id: string): Promise<ArtifactRow | null> {
  const rows = await sql<ArtifactRow[]>`SELECT ${sql.unsafe(artifactColumns)} FROM artifacts WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function getEdition(sql: Sql, id: string): Promise<EditionRow | null> {
  const rows = await sql<EditionRow[]>`SELECT * FROM editions WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function currentEdition(sql: Sql, artifactId: string): Promise<EditionRow | null> {
  const rows = await sql<EditionRow[]>`
    SELECT e.* FROM editions e JOIN artifacts a ON a.current_edition_id = e.id WHERE a.id = ${artifactId}`;
  return rows[0] ?? null;
}

/**
 * What a purchase quote needs of an artifact's current edition: its judge version, report, and open errata. With a
 * report, the judge is the report's (model and version); while the report is pending, the version the edition is to
 * be judged with, and any open erratum naming that version counts (the model is not known until it answers).
 */
export async function purchaseEdition(sql: Sql, artifactId: string) {
  const rows = await sql<
    {
      id: string;
      judge_version: string;
      report_digest: string | null;
      mean_entailment: number | null;
      open_errata: boolean;
    }[]
  >`
    SELECT e.id, coalesce(r.judge_version, e.judge_version) AS judge_version, r.digest AS report_digest,
           r.mean_entailment,
           EXISTS (SELECT 1 FROM errata x WHERE x.state = 'open'
                   AND coalesce(r.judge_version, e.judge_version) = ANY(x.judge_versions)
                   AND (r.judge_model IS NULL OR x.judge_model = r.judge_model)) AS open_errata
    FROM artifacts a JOIN editions e ON e.id = a.current_edition_id
    LEFT JOIN reports r ON r.edition_id = e.id
    WHERE a.id = ${artifactId}`;
  return rows[0] ?? null;
}

/** Insert a new artifact and its first edition. Returns false when the artifact id exists already. */

export async function insertArtifact(
  tx: Sql,
  a: { id: string; ownerPrincipalId: string; sandbox: boolean },
  e: NewEdition,
): Promise<boolean> {
  const inserted = await tx`
    INSERT INTO artifacts (id, owner_principal_id, sandbox, title, topics, description, floor, created_at,
                           current_edition_id, current_content_hash, search_tsv)
    VALUES (${a.id}, ${a.ownerPrincipalId}, ${a.sandbox}, ${e.title}, ${e.topics}, ${e.description}, ${e.floor},
            ${e.createdAt}, ${e.id}, ${e.contentHash},
            to_tsvector('english'::regconfig, ${`${e.title} ${e.topics.join(' ')} ${e.description}`}))
    ON CONFLICT (id) DO NOTHING`;
  if (inserted.count === 0) return false;
  await insertEditionRow(tx, e, 1);
  await addSearchWords(tx, [a.id]);
  return true;
}

/** Add an edition as the artifact's current one (its report pending). Returns the edition number. */
export async function insertEdition(tx: Sql, e: NewEdition): Promise<number> {
  const [row] = await tx<{ n: number }[]>`
    SELECT coalesce(max(number), 0) + 1 AS n FROM editions WHERE artifact_id = ${e.artifactId}`;
  await insertEditionRow(tx, e, row!.n);
  await tx`
    UPDATE artifacts SET current_edition_id = ${e.id}, current_content_hash = ${e.contentHash}, title = ${e.title},
      topics = ${e.topics}, description = ${e.description}, floor = ${e.floor}, current_report_digest = NULL,
      current_mean_entailment = NULL, current_judge_version = NULL, search_rank = search_rank % 10000,
      search_tsv = to_tsvector('english'::regconfig, ${`${e.title} ${e.topics.join(' ')} ${e.description}`})
    WHERE id = ${e.artifactId}`;
  await addSearchWords(tx, [e.artifactId]);
  return row!.n;
}

/**
 * Add the words of artifacts to the vocabulary typo tolerance matches against (storage/migrations/025). Words are
 * never removed: one that no live artifact holds any more only widens a query to a term that matches nothing.
 */
async function addSearchWords(tx: Sql, artifactIds: string[]): Promise<void> {
  await tx`
    INSERT INTO search_words (word, lexeme)
    SELECT DISTINCT w.word, w.lexeme
    FROM artifacts a, search_words_of(a.title || ' ' || array_to_string(a.topics, ' ') || ' ' || a.description) w
    WHERE a.id = ANY(${tx.array(artifactIds, 2950)}::uuid[])
    ORDER BY 1
    ON CONFLICT DO NOTHING`;
}

async function insertEditionRow(tx: Sql, e: NewEdition, number: number): Promise<void> {
  await tx`
    INSERT INTO editions (id, artifact_id, number, content_hash, content, title, topics, description, floor,
                          judge_version, created_at)
    VALUES (${e.id}, ${e.artifactId}, ${number}, ${e.contentHash}, ${e.content}, ${e.title}, ${e.topics},
            ${e.description}, ${e.floor}, ${e.judgeVersion}, ${e.createdAt})`;
}

export interface StoredReportInput {
  digest: string;
  editionId: string;
  artifactId: string;
  sandbox: boolean;
  judgeModel: string;
  judgeVersion: string;
  meanEntailment: number;
  signingKeyId: string;
  body: string;
  createdAt: string;
  /** What judging the edition cost at a model endpoint (calls, tokens, cached claims); null for the built-in judge. */
  judgeUsage: object | null;
}

/**
 * Store an edition's report once: the first report for an edition wins (a second verifier's is dropped). Updates
 * the artifact's current report when the edition is still current. Returns whether this call stored it.
 */
export async function storeReport(tx: Sql, r: StoredReportInput): Promise<boolean> {
  const inserted = await tx`
    INSERT INTO reports (digest, edition_id, artifact_id, sandbox, judge_model, judge_version, mean_entailment,
                         signing_key_id, body, created_at, judge_usage)
    VALUES (${r.digest}, ${r.editionId}, ${r.artifactId}, ${r.sandbox}, ${r.judgeModel}, ${r.judgeVersion},
            ${r.meanEntailment}, ${r.signingKeyId}, ${r.body}, ${r.createdAt},
            ${r.judgeUsage === null ? null : JSON.stringify(r.judgeUsage)}::text::jsonb)
    ON CONFLICT DO NOTHING`;
  if (inserted.count === 0) return false;
  await tx`UPDATE editions SET report_digest = ${r.digest} WHERE id = ${r.editionId}`;
  await tx`
    UPDATE artifacts SET current_report_digest = ${r.digest}, current_mean_entailment = ${r.meanEntailment},
      current_judge_model = ${r.judgeModel}, current_judge_version = ${r.judgeVersion},
      search_rank = search_rank_of(${r.meanEntailment}, floor, (search_rank % 10000) / 1000.0)
    WHERE id = ${r.artifactId} AND current_edition_id = ${r.editionId}`;
  return true;
}

export async function getReport(sql: Sql, digest: string): Promise<{ body: string; sandbox: boolean } | null> {
  const rows = await sql<
    { body: string; sandbox: boolean }[]
  >`SELECT body, sandbox FROM reports WHERE digest = ${digest}`;
  return rows[0] ?? null;
}

export interface SearchFilters {
  sandbox: boolean;
  type?: string;
  floor?: number;
  maxPriceCents?: number;
  /** Rows to return: the page's limit plus one, to know whether another page follows. */
  limit: number;
}

/** One item of a search page, as stored: what the answer shows and where the item sits in the order. */
export interface SearchRow {
  /** The text-relevance tier (0 when browsing), then the rank and sequence: together, the keyset. */
  tier: number;
  search_rank: number;
  catalog_seq: number;
  /** The artifact part of the item, rendered when the artifact last changed (migration 025). */
  search_item: string;
  live_listing_ids: string[];
  /** Each live listing's terms (price, billing, formats) as the inside of a JSON object, in live_listing_ids' order. */
  live_offer_terms: string[];
  /** The judge version of the artifact's current report; null until it has one. */
  current_judge_version: string | null;
  /** The artifact's trust sums, or nulls without samples; the score is computed at read. */
  samples: number | null;
  passes: number | null;
  pass_weight: number | null;
  fail_weight: number | null;
}

/**
 * What a search statement returns per item. `stored`: what the service answers from (the rendered artifact part, the
 * live listing ids, the trust sums). `columns`: the artifact's own columns, for a caller that looks up listings and
 * trust itself and builds the item (the conventional peer the benchmark compares with).
 */
export type SearchShape = 'stored' | 'columns';

/** The most rows a search statement returns: the largest page and one more (contracts' pageLimits). */
const searchRowsMax = 201;

/**
 * A statement as text with numbered parameters. The search statements are built as plain text, not nested tagged
 * fragments: building and hashing one costs microseconds, and the same text is one prepared statement per
 * connection (one round trip per page).
 */
export interface Statement {
  text: string;
  params: (string | number | boolean)[];
}

class StatementText {
  readonly params: (string | number | boolean)[] = [];
  /** The placeholder of a new parameter. */
  p(value: string | number | boolean): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }
}

const shapeColumns = (shape: SearchShape) =>
  shape === 'stored'
    ? 'id, search_rank, catalog_seq, search_item, live_listing_ids, live_offer_terms, current_judge_version'
    : `search_rank, ${artifactColumns}`;
const shapeOutput = (shape: SearchShape) =>
  shape === 'stored'
    ? `SELECT p.tier, p.search_rank, p.catalog_seq, p.search_item, p.live_listing_ids, p.live_offer_terms,
              p.current_judge_version,
              t.samples, t.passes, t.pass_weight, t.fail_weight
       FROM page p
       LEFT JOIN (
         SELECT subject, sum(samples)::int AS samples, sum(passes)::int AS passes, sum(pass_weight) AS pass_weight,
                sum(fail_weight) AS fail_weight
         FROM trust_sums WHERE subject = ANY(ARRAY(SELECT 'artifact:' || id FROM page))
         GROUP BY subject) t ON t.subject = 'artifact:' || p.id`
    : 'SELECT p.* FROM page p';

function filterText(st: StatementText, f: SearchFilters): string {
  return [
    f.type === undefined ? '' : `AND type = ${st.p(f.type)}`,
    f.floor === undefined ? '' : `AND current_mean_entailment >= ${st.p(f.floor)}`,
    f.maxPriceCents === undefined ? '' : `AND min_live_price_cents <= ${st.p(f.maxPriceCents)}`,
  ].join(' ');
}

/** Run a search statement, prepared (the plan is cached per connection, see rankedStatement). */
/**
 * Run a search statement; with `cancelAfterMs`, PostgreSQL is asked to cancel it once that has passed. The gateway
 * stops waiting for a page after its request timeout, and without this the statement ran on to its end (a misspelt
 * word at a million artifacts once ran 27 s after its caller had been answered 503).
 */
export async function runStatement(sql: Sql, st: Statement, cancelAfterMs?: number): Promise<SearchRow[]> {
  const query = sql.unsafe<SearchRow[]>(st.text, st.params as never[], { prepare: true });
  if (!cancelAfterMs) return query;
  const timer = setTimeout(() => void query.cancel(), cancelAfterMs);
  try {
    return await query;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Browsing (no topic): artifacts with at least one live listing, newest first, on one side of the sandbox line.
 * Keyset on catalog_seq. One statement: the page, its items' stored parts and their trust sums.
 */
export function browseStatement(f: SearchFilters, beforeSeq: number | null, shape: SearchShape = 'stored'): Statement {
  const st = new StatementText();
  // The inner LIMIT is a constant so that the plan PostgreSQL caches for the prepared statement (a generic plan,
  // which estimates `LIMIT $n` as a tenth of the table) still walks the index; the outer LIMIT stops the walk.
  const text = `
    WITH page AS (
      SELECT * FROM (
        SELECT 0 AS tier, ${shapeColumns(shape)} FROM artifacts
        WHERE sandbox = ${st.p(f.sandbox)} AND live_listing_count > 0 ${filterText(st, f)}
          ${beforeSeq === null ? '' : `AND catalog_seq < ${st.p(beforeSeq)}`}
        ORDER BY catalog_seq DESC
        LIMIT ${searchRowsMax}) first
      LIMIT ${st.p(f.limit)})
    ${shapeOutput(shape)}
    ORDER BY p.catalog_seq DESC`;
  return { text, params: st.params };
}

export async function browseArtifacts(
  sql: Sql,
  f: SearchFilters,
  beforeSeq: number | null,
  cancelAfterMs?: number,
): Promise<SearchRow[]> {
  return runStatement(sql, browseStatement(f, beforeSeq), cancelAfterMs);
}

/** A topic as the ranked query uses it: its words (lexemes, in query order) and each one's typo alternatives. */
export interface TopicWord {
  /** The word's lexeme: what an exact match is. */
  lexeme: string;
  /** Lexemes of the catalog words within the word's typo allowance, nearest first. */
  alternatives: string[];
}

/**
 * How many catalog words a query word is compared with by edit distance: its nearest by trigram distance. A word
 * within the allowance but further than this many others in trigram terms is missed (documented in docs/search.md).
 */
const typoCandidatesMax = 24;

/**
 * The topic's words as PostgreSQL's English configuration parses them (stemmed, stop words dropped), and for each the
 * lexemes of catalog words within its typo allowance as written: none under 5 letters, 1 edit from 5, 2 from 9
 * (Meilisearch's defaults). Words with digits get no alternatives: a typo in a number is another number.
 */
export async function topicWords(sql: Sql, topic: string): Promise<TopicWord[]> {
  return sql<TopicWord[]>`
    SELECT q.lexeme,
           CASE WHEN q.edits = 0 THEN '{}'::text[] ELSE ARRAY(
             SELECT c.lexeme FROM (SELECT word, lexeme FROM search_words
                                   ORDER BY word <-> q.word LIMIT ${typoCandidatesMax}) c
             WHERE c.lexeme <> q.lexeme AND levenshtein_less_equal(c.word, q.word, q.edits) <= q.edits
             GROUP BY c.lexeme
             ORDER BY min(levenshtein(c.word, q.word)), c.lexeme) END AS alternatives
    FROM (SELECT DISTINCT ON (d.lexemes[1]) lower(d.token) AS word, d.lexemes[1] AS lexeme, d.at,
                 CASE WHEN d.token ~ '[0-9]' OR length(d.token) > 64 THEN 0
                      WHEN length(d.token) >= 9 THEN 2 WHEN length(d.token) >= 5 THEN 1 ELSE 0 END AS edits
          FROM ts_debug('english'::regconfig, ${topic}) WITH ORDINALITY AS d(alias, description, token, dictionaries,
                                                                          dictionary, lexemes, at)
          WHERE d.lexemes <> '{}'
          ORDER BY d.lexemes[1], d.at) q
    ORDER BY q.at`;
}

/** The four text queries of a topic (tsquery text): exact and with typos, all words and words near each other. */
export interface TopicQueries {
  /** Every word. */
  all: string;
  /** Every pair of consecutive query words in order, at most one word apart. */
  near: string;
  /** Every word or one of its typo alternatives; null when no word has one. */
  allTypos: string | null;
  nearTypos: string | null;
  /** Number of words: with one, `near` is `all` and the proximity tiers are left out. */
  words: number;
}

const lexemeText = (w: string) => `'${w.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

export function topicQueries(words: TopicWord[]): TopicQueries | null {
  if (words.length === 0) return null;
  const exact = words.map((w) => lexemeText(w.lexeme));
  const typos = words.map((w) => `(${[w.lexeme, ...w.alternatives].map(lexemeText).join(' | ')})`);
  const near = (terms: string[]) =>
    terms.length === 1
      ? terms[0]!
      : terms
          .slice(1)
          .map((t, i) => `(${terms[i]} <-> ${t} | ${terms[i]} <2> ${t})`)
          .join(' & ');
  const hasTypos = words.some((w) => w.alternatives.length > 0);
  return {
    all: exact.join(' & '),
    near: near(exact),
    allTypos: hasTypos ? typos.join(' & ') : null,
    nearTypos: hasTypos ? near(typos) : null,
    words: words.length,
  };
}

type TextQuery = 'a' | 'n' | 'ta' | 'tn';
interface Tier {
  /** The condition on an index a rare term is found through. */
  indexed: string;
  /** The rest of what places an artifact in this tier and in no earlier one. */
  rest: string[];
}
const m = (column: 'heading_tsv' | 'search_tsv', q: TextQuery) => `${column} @@ (SELECT ${q} FROM q)`;

/**
 * The text-relevance tiers of docs/search.md, best first: exact words before typos, words near each other before
 * scattered ones, words in the heading (title and topics) before words elsewhere. Each tier excludes the earlier
 * ones, so an artifact is in exactly one.
 */
export function relevanceTiers(q: TopicQueries): Tier[] {
  const exact: Tier[] = [
    { indexed: m('heading_tsv', 'n'), rest: [] },
    { indexed: m('search_tsv', 'n'), rest: [`NOT ${m('heading_tsv', 'n')}`] },
    { indexed: m('heading_tsv', 'a'), rest: [`NOT ${m('search_tsv', 'n')}`] },
    { indexed: m('search_tsv', 'a'), rest: [`NOT ${m('heading_tsv', 'a')}`, `NOT ${m('search_tsv', 'n')}`] },
  ];
  const typos: Tier[] = [
    { indexed: m('heading_tsv', 'tn'), rest: [] },
    { indexed: m('search_tsv', 'tn'), rest: [`NOT ${m('heading_tsv', 'tn')}`] },
    { indexed: m('heading_tsv', 'ta'), rest: [`NOT ${m('search_tsv', 'tn')}`] },
    { indexed: m('search_tsv', 'ta'), rest: [`NOT ${m('heading_tsv', 'ta')}`, `NOT ${m('search_tsv', 'tn')}`] },
  ].map((t) => ({ ...t, rest: [...t.rest, `NOT ${m('search_tsv', 'a')}`] }));
  // With one word, "near" is "all": the tiers of scattered words are empty.
  const shape = (ts: Tier[]) => (q.words === 1 ? [ts[0]!, ts[1]!] : ts);
  return [...shape(exact), ...(q.allTypos === null ? [] : shape(typos))];
}

/**
 * Which of a topic's tiers skip the walk and go straight to their GIN index: the exact tiers, the typo tiers. The
 * caller decides from the words' frequencies (catalogTermStats): a tier that cannot hold more matches than the walk's
 * cut-off would only walk that far to find it has too few.
 */
export interface TierLookUp {
  exact: boolean;
  typos: boolean;
}
const walkEveryTier: TierLookUp = { exact: false, typos: false };

export interface RankedPosition {
  tier: number;
  rank: number;
  seq: number;
}

/**
 * Topic search, best first: text-relevance tier, then search_rank, then newest. One statement. Each tier is read
 * one of two ways and the statement picks at run time: walking live artifacts in rank order and keeping matches,
 * which stops after a page when the tier is common, but is cut off after `walkRowsMax` rows; if that did not fill
 * the page, the tier's GIN index finds every match and they are sorted (a rare term). A tier is read only while
 * the tiers before it have not filled the page. The text queries reach the planner through a CTE, so every
 * execution uses the same plan and the choice is the statement's own, not the planner's guess of a term's
 * frequency. `after` is the keyset cursor: tiers before it are skipped. Plans in docs/search.md.
 */
export function rankedStatement(
  f: SearchFilters,
  q: TopicQueries,
  after: RankedPosition | null,
  walkRowsMax: number,
  shape: SearchShape = 'stored',
  lookUp: TierLookUp = walkEveryTier,
): Statement | null {
  const exactTiers = q.words === 1 ? 2 : 4;
  const tiers = relevanceTiers(q).map((t, i) => ({ ...t, i }));
  const from = after === null ? tiers : tiers.filter((t) => t.i >= after.tier);
  if (from.length === 0) return null;
  const st = new StatementText();
  const columns = shapeColumns(shape);
  const texts = `
    WITH q AS MATERIALIZED (
      SELECT ${st.p(q.all)}::tsquery AS a, ${st.p(q.near)}::tsquery AS n,
             ${st.p(q.allTypos ?? q.all)}::tsquery AS ta, ${st.p(q.nearTypos ?? q.near)}::tsquery AS tn)`;
  const sandbox = st.p(f.sandbox);
  const n = st.p(f.limit);
  // A constant, for the same reason as browseStatement's (a power of two, so there are few statements).
  const walk = 2 ** Math.ceil(Math.log2(Math.max(2, walkRowsMax)));
  const filters = filterText(st, f);
  const cursorRank = after === null ? '' : st.p(after.rank);
  const cursorSeq = after === null ? '' : st.p(after.seq);
  const ctes = from.map((t, k) => {
    const keyset =
      after !== null && t.i === after.tier ? `AND (search_rank, catalog_seq) < (${cursorRank}, ${cursorSeq})` : '';
    const cond = [t.indexed, ...t.rest].join(' AND ');
    const earlier = from
      .slice(0, k)
      .map((e) => `(SELECT count(*) FROM r${e.i})`)
      .join(' + ');
    const gate = k === 0 ? 'true' : `${earlier} < ${n}`;
    return `
      w${t.i} AS MATERIALIZED (
        SELECT ${t.i} AS tier, ${columns}
        FROM (SELECT * FROM artifacts
              WHERE sandbox = ${sandbox} AND live_listing_count > 0 ${keyset}
              ORDER BY search_rank DESC, catalog_seq DESC
              LIMIT ${lookUp[t.i < exactTiers ? 'exact' : 'typos'] ? 0 : walk}) walk
        WHERE (${cond}) IS TRUE ${filters}
        ORDER BY search_rank DESC, catalog_seq DESC
        LIMIT ${n}),
      ${
        lookUp[t.i < exactTiers ? 'exact' : 'typos']
          ? // A tier known to be rare: collect its matches first, unordered, then sort them. With `ORDER BY ...
            // LIMIT` in the same query the planner, which cannot see the text query, may walk the rank index for
            // the few matches instead (at a million artifacts it did: 1,000,000 rows, 4.6 s for one title's word).
            `m${t.i} AS MATERIALIZED (
        SELECT ${t.i} AS tier, ${columns}
        FROM artifacts
        WHERE sandbox = ${sandbox} AND live_listing_count > 0 AND ${cond} ${filters} ${keyset}),
      b${t.i} AS MATERIALIZED (
        SELECT * FROM m${t.i} ORDER BY search_rank DESC, catalog_seq DESC LIMIT ${n}),`
          : // A walked tier whose walk found nothing is rare whatever its estimate said (a misspelt word the
            // statistics cannot tell from a common one): collect its matches unordered, as above. One whose walk
            // found some, but not a page, goes on in rank order, which stops at a page.
            `m${t.i} AS MATERIALIZED (
        SELECT ${t.i} AS tier, ${columns}
        FROM artifacts
        WHERE sandbox = ${sandbox} AND live_listing_count > 0 AND ${cond} ${filters} ${keyset}),
      b${t.i} AS MATERIALIZED (
        (SELECT * FROM m${t.i} WHERE (SELECT count(*) FROM w${t.i}) = 0
         ORDER BY search_rank DESC, catalog_seq DESC LIMIT ${n})
        UNION ALL
        (SELECT ${t.i} AS tier, ${columns}
         FROM artifacts
         WHERE (SELECT count(*) FROM w${t.i}) > 0
           AND sandbox = ${sandbox} AND live_listing_count > 0 AND ${cond} ${filters} ${keyset}
         ORDER BY search_rank DESC, catalog_seq DESC
         LIMIT ${n})),`
      }
      r${t.i} AS MATERIALIZED (
        SELECT * FROM w${t.i} WHERE CASE WHEN ${gate} THEN (SELECT count(*) FROM w${t.i}) >= ${n} ELSE false END
        UNION ALL
        SELECT * FROM b${t.i} WHERE CASE WHEN ${gate} THEN (SELECT count(*) FROM w${t.i}) < ${n} ELSE false END)`;
  });
  const text = `${texts},${ctes.join(',')},
    page AS (
      SELECT * FROM (${from.map((t) => `SELECT * FROM r${t.i}`).join(' UNION ALL ')}) u
      ORDER BY tier, search_rank DESC, catalog_seq DESC LIMIT ${n})
    ${shapeOutput(shape)}
    ORDER BY p.tier, p.search_rank DESC, p.catalog_seq DESC`;
  return { text, params: st.params };
}

export async function rankedArtifacts(
  sql: Sql,
  f: SearchFilters,
  q: TopicQueries,
  after: RankedPosition | null,
  walkRowsMax: number,
  lookUp: TierLookUp = walkEveryTier,
  cancelAfterMs?: number,
): Promise<SearchRow[]> {
  const st = rankedStatement(f, q, after, walkRowsMax, 'stored', lookUp);
  return st === null ? [] : runStatement(sql, st, cancelAfterMs);
}

/**
 * Bring the trust part of search_rank up to date for every artifact with trust samples, where it changed. Trust
 * decays with time and no fact marks that, so this runs on a timer (docs/search.md); `decay` is the factor the
 * sums are multiplied by now (actors/catalog/trust.ts), the score (1 + passes) / (2 + all) over the decayed sums.
 * One runner at a time across processes. Returns the number of artifacts whose rank changed.
 */
export async function refreshSearchRanks(sql: Sql, decay: number): Promise<number> {
  return sql.begin(async (tx) => {
    const [lock] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(hashtext('assay.search_rank')) AS ok`;
    if (!lock!.ok) return 0;
    const updated = await tx`
      UPDATE artifacts a SET search_rank = s.rank
      FROM (SELECT a2.id, search_rank_of(a2.current_mean_entailment, a2.floor,
                                        (1 + t.pass * ${decay}) / (2 + (t.pass + t.fail) * ${decay})) AS rank
            FROM (SELECT subject, sum(pass_weight) AS pass, sum(fail_weight) AS fail
                  FROM trust_sums WHERE subject LIKE 'artifact:%' GROUP BY subject) t
            JOIN artifacts a2 ON 'artifact:' || a2.id = t.subject) s
      WHERE a.id = s.id AND a.search_rank <> s.rank`;
    return updated.count;
  });
}

/**
 * The catalog's search generation (migration 028): a number that grows with every committed transaction that wrote
 * artifacts. A search page read after seeing a generation stays right while the generation has not moved.
 */
export async function searchGeneration(sql: Sql): Promise<number> {
  const [row] = await sql<{ g: number }[]>`SELECT coalesce(sum(writes), 0)::float8 AS g FROM search_generation`;
  return row!.g;
}

/**
 * What PostgreSQL's statistics say about the catalog's words: the number of artifacts, and for the most common
 * lexemes of `search_tsv` the share of artifacts holding each (pg_stats' most_common_elems, gathered by ANALYZE), and
 * the most a lexeme not listed can hold (`minShare`). Null shares when the table has not been analysed yet.
 */
export interface CatalogTermStats {
  rows: number;
  shares: Map<string, number> | null;
  minShare: number;
}

export async function catalogTermStats(sql: Sql): Promise<CatalogTermStats> {
  const [row] = await sql<{ rows: number; elems: string[] | null; freqs: number[] | null; target: number }[]>`
    SELECT greatest(c.reltuples, 0)::float8 AS rows, s.most_common_elems::text::text[] AS elems,
           s.most_common_elem_freqs::float8[] AS freqs,
           coalesce(nullif(a.attstattarget, -1), current_setting('default_statistics_target')::int) AS target
    FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'search_tsv'
    LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'artifacts' AND s.attname = 'search_tsv'
    WHERE c.oid = 'artifacts'::regclass`;
  const elems = row?.elems ?? null;
  const freqs = row?.freqs ?? null;
  if (!row || elems === null || freqs === null) return { rows: row?.rows ?? 0, shares: null, minShare: 1 };
  // The frequencies array has one entry per element, then the least and greatest of them (and more, by version).
  const shares = new Map<string, number>();
  for (let i = 0; i < elems.length; i++) shares.set(elems[i]!, freqs[i]!);
  const leastListed = freqs[elems.length] ?? Math.min(...freqs.slice(0, elems.length));
  // ANALYZE lists up to 10 x the statistics target lexemes, every one above its cut-off (9 x the sample's lexemes
  // / ((10 x target + 10) x 1000 / 7): about 0.2% of artifacts for 30 lexemes each at the default target). A full list
  // may have left out lexemes as common as its least; one that is not full left out only those under the cut-off.
  const full = elems.length >= 10 * row.target;
  return { rows: row.rows, shares, minShare: full ? leastListed : Math.min(leastListed, unlistedShareMax) };
}

/** What a lexeme missing from a list that is not full is taken to hold at most (see catalogTermStats). */
const unlistedShareMax = 0.002;

/** How many artifacts the catalog holds, as PostgreSQL last counted them (for sizing the ranked query's walk). */
export async function catalogSizeEstimate(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class
                                          WHERE oid = 'artifacts'::regclass`;
  return row?.n ?? 0;
}

/**
 * Insert many new artifacts, each with its first edition, in three statements (arrays unnested), skipping ids
 * that exist. Used by the corpus loader, where one statement per row would dominate the load time.
 */
export async function insertArtifactsBulk(
  tx: Sql,
  rows: { artifact: { id: string; ownerPrincipalId: string; sandbox: boolean }; edition: NewEdition }[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const col = <T>(f: (r: (typeof rows)[number]) => T, oid: number) => tx.array(rows.map(f) as never[], oid);
  const text = 25;
  const uuid = 2950;
  const created = await tx<{ id: string }[]>`
    INSERT INTO artifacts (id, owner_principal_id, sandbox, title, topics, description, floor, created_at,
                           current_edition_id, current_content_hash, search_tsv)
    SELECT r.id, r.owner, r.sandbox, r.title, string_to_array(r.topics, E'\\x1f'), r.description, r.floor, r.created_at,
           r.edition_id, r.content_hash,
           to_tsvector('english'::regconfig, r.title || ' ' || replace(r.topics, E'\\x1f', ' ') || ' ' || r.description)
    FROM unnest(${col((r) => r.artifact.id, uuid)}::uuid[], ${col((r) => r.artifact.ownerPrincipalId, uuid)}::uuid[],
                ${col((r) => r.artifact.sandbox, 16)}::boolean[], ${col((r) => r.edition.title, text)}::text[],
                ${col((r) => r.edition.topics.join('\u001f'), text)}::text[], ${col((r) => r.edition.description, text)}::text[],
                ${col((r) => r.edition.floor, 701)}::float8[], ${col((r) => r.edition.createdAt, 1184)}::timestamptz[],
                ${col((r) => r.edition.id, uuid)}::uuid[], ${col((r) => r.edition.contentHash, text)}::text[])
         AS r(id, owner, sandbox, title, topics, description, floor, created_at, edition_id, content_hash)
    ON CONFLICT (id) DO NOTHING
    RETURNING id`;
  const createdIds = new Set(created.map((r) => r.id));
  const fresh = rows.filter((r) => createdIds.has(r.artifact.id));
  if (fresh.length === 0) return [];
  await addSearchWords(
    tx,
    fresh.map((r) => r.artifact.id),
  );
  const fcol = <T>(f: (r: (typeof rows)[number]) => T, oid: number) => tx.array(fresh.map(f) as never[], oid);
  await tx`
    INSERT INTO editions (id, artifact_id, number, content_hash, content, title, topics, description, floor,
                          judge_version, created_at)
    SELECT r.id, r.artifact_id, 1, r.content_hash, r.content, r.title, string_to_array(r.topics, E'\\x1f'),
           r.description, r.floor, r.judge_version, r.created_at
    FROM unnest(${fcol((r) => r.edition.id, uuid)}::uuid[], ${fcol((r) => r.artifact.id, uuid)}::uuid[],
                ${fcol((r) => r.edition.contentHash, text)}::text[], ${fcol((r) => r.edition.content, text)}::text[],
                ${fcol((r) => r.edition.title, text)}::text[], ${fcol((r) => r.edition.topics.join('\u001f'), text)}::text[],
                ${fcol((r) => r.edition.description, text)}::text[], ${fcol((r) => r.edition.floor, 701)}::float8[],
                ${fcol((r) => r.edition.judgeVersion, text)}::text[], ${fcol((r) => r.edition.createdAt, 1184)}::timestamptz[])
         AS r(id, artifact_id, content_hash, content, title, topics, description, floor, judge_version, created_at)`;
  return fresh.map((r) => r.artifact.id);
}
