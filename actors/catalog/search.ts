// GET /v1/search and search_artifacts: one PostgreSQL statement per page built (and a small one per request, the
// search generation), and the answer assembled as text from parts stored with each artifact (docs/search.md). What a
// request does not need to recompute is kept, bounded: whole pages while the catalog's search generation has not
// moved (at most a few seconds), the words of recent topics with their typo alternatives (a minute), the catalog's
// size and word statistics (a minute). Trust is read as sums and scored at read; its part of the rank is refreshed on
// a timer, because decay changes it without any fact.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type BusReply,
  errorReply,
  JsonText,
  okReply,
  pageLimits,
  type ServiceHandlers,
  type TrustJudgeT,
} from '../../contracts/index.ts';
import {
  browseArtifacts,
  type CatalogTermStats,
  catalogTermStats,
  type RankedPosition,
  rankedArtifacts,
  refreshSearchRanks,
  type SearchFilters,
  searchGeneration,
  type SearchRow,
  type Sql,
  type TierLookUp,
  type TopicWord,
  topicQueries,
  topicWords,
} from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';
import { badCursor, decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';
import { trustDecay } from '../shared/trust-weight.ts';
import { judgeQualityOf } from '../verification/judges/quality.ts';
import { trustScore } from './trust.ts';

/** How long a topic's words and typo alternatives are reused: a catalog word newer than this may be missed. */
export const topicWordsTtlMs = 60_000;
/** Topics whose words are kept at once; the oldest is dropped first. */
export const topicWordsCachedMax = 1_000;
/** How often the trust part of the rank is brought up to date (the bound on its staleness). */
export const searchRankRefreshMs = 60_000;
/**
 * How long a built page is reused while no artifact was written (migration 028's generation): the bound on how stale
 * an item's inline trust score and the trust part of the order can be, since trust moves without writing artifacts.
 */
export const searchPageReuseMs = 2_000;
/** Pages kept at once (a page is 1 to 200 items, about 1 KB each); the oldest is dropped first. */
const searchPagesCachedMax = 256;
/** Fewest catalog rows a ranked tier walks before it looks its matches up in the index instead. */
const walkRowsMin = 500;

// Control characters (C0, DEL, C1) in a topic are a client's mistake, not words.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point of the pattern.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;

export interface SearchDeps {
  sql: Sql;
  clock: Clock;
  baseUrl: string;
  /** How long a page's statement may run: the gateway's request timeout, after which nobody waits for it. */
  statementMs?: number;
  log?: Logger;
}

type SearchHandler = ServiceHandlers<'catalog'>['searchArtifacts'];
type SearchRequest = Parameters<SearchHandler>[0];

export function searchHandler(d: SearchDeps): SearchHandler {
  const { sql } = d;
  // Offer URLs are the base URL's JSON text plus the listing id (a UUID, nothing to escape).
  const offerUrlOpen = JSON.stringify(`${d.baseUrl}/offers/`).slice(0, -1);
  const topics = new Map<string, { words: TopicWord[]; atMs: number }>();
  let catalogStats: CatalogTermStats & { atMs: number } = {
    rows: 0,
    shares: null,
    minShare: 1,
    atMs: Number.NEGATIVE_INFINITY,
  };
  let rankRefresh = { atMs: d.clock.nowMs(), running: false };
  // Built pages by query and sandbox side, all of one generation: a page answers every caller on its side of the
  // sandbox line (nothing in it depends on who asks), and concurrent requests for the same page share one build.
  const pages = new Map<string, { atMs: number; reply: Promise<BusReply> }>();
  let pagesGeneration = Number.NEGATIVE_INFINITY;

  async function wordsOf(topic: string, nowMs: number): Promise<TopicWord[]> {
    const cached = topics.get(topic);
    if (cached && nowMs - cached.atMs < topicWordsTtlMs) return cached.words;
    const words = await topicWords(sql, topic);
    topics.delete(topic);
    if (topics.size >= topicWordsCachedMax) topics.delete(topics.keys().next().value!);
    topics.set(topic, { words, atMs: nowMs });
    return words;
  }

  async function walkRowsMax(limit: number, nowMs: number): Promise<number> {
    if (nowMs - catalogStats.atMs >= topicWordsTtlMs) {
      catalogStats = { ...(await catalogTermStats(sql)), atMs: nowMs };
    }
    return walkCutOff(limit, catalogStats.rows);
  }

  function refreshRanksIfDue(nowMs: number): void {
    if (rankRefresh.running || nowMs - rankRefresh.atMs < searchRankRefreshMs) return;
    rankRefresh = { atMs: nowMs, running: true };
    refreshSearchRanks(sql, trustDecay(nowMs))
      .catch((err: unknown) => d.log?.error({ err }, 'search rank refresh failed'))
      .finally(() => {
        rankRefresh.running = false;
      });
  }

  function itemsJson(rows: SearchRow[], nowMs: number): string {
    const parts: string[] = [];
    for (const r of rows) {
      const trust = trustScore(
        r.samples === null
          ? undefined
          : {
              subject: '',
              samples: r.samples,
              passes: r.passes!,
              pass_weight: r.pass_weight!,
              fail_weight: r.fail_weight!,
            },
        nowMs,
      );
      const ids = r.live_listing_ids;
      // Written together by the listing projection (migration 043); apart, the page would not be JSON.
      if (r.live_offer_terms.length !== ids.length)
        throw new Error(`offer terms out of step with ids: ${r.search_item}`);
      let offers = '';
      for (let i = 0; i < ids.length; i++) {
        offers += `${i === 0 ? '' : ','}{"listing_id":"${ids[i]}","offer_url":${offerUrlOpen}${ids[i]}",${r.live_offer_terms[i]}}`;
      }
      parts.push(
        `{"artifact":${r.search_item},"trust":{"score":${trust.score},"sampleSize":${trust.sampleSize},"passRate":${trust.passRate},"judge":${trustJudgeJson(r.current_judge_version)}},"liveListingIds":${ids.length === 0 ? '[]' : `["${ids.join('","')}"]`},"offers":[${offers}]}`,
      );
    }
    return parts.join(',');
  }

  const page = (rows: SearchRow[], limit: number, nowMs: number, cursorOf: (last: SearchRow) => string): BusReply => {
    const shown = rows.length > limit ? rows.slice(0, limit) : rows;
    const last = shown.at(-1);
    const next = rows.length > limit && last ? JSON.stringify(cursorOf(last)) : 'null';
    return okReply(200, new JsonText(`{"items":[${itemsJson(shown, nowMs)}],"next_cursor":${next}}`));
  };

  return async (req) => {
    const nowMs = d.clock.nowMs();
    refreshRanksIfDue(nowMs);
    // Read before the page is: a write that commits after this read moves the generation, so a page stored under
    // it is never older than what the generation says (migration 028).
    const generation = await searchGeneration(sql);
    if (generation > pagesGeneration) {
      pages.clear();
      pagesGeneration = generation;
    } else if (generation < pagesGeneration) {
      // A read that lost a race with a newer one: answer without storing.
      return build(req, nowMs);
    }
    const { query: q, caller } = req;
    const key = JSON.stringify([caller.sandbox, q.topic, q.type, q.floor, q.max_price, q.limit, q.cursor]);
    const kept = pages.get(key);
    if (kept && nowMs - kept.atMs < searchPageReuseMs) return kept.reply;
    const reply = build(req, nowMs);
    pages.delete(key);
    if (pages.size >= searchPagesCachedMax) pages.delete(pages.keys().next().value!);
    const entry = { atMs: nowMs, reply };
    pages.set(key, entry);
    reply.catch(() => {
      if (pages.get(key) === entry) pages.delete(key);
    });
    return reply;
  };

  async function build({ query: q, caller }: SearchRequest, nowMs: number): Promise<BusReply> {
    const limit = q.limit ?? pageLimits.default;
    const filters: SearchFilters = {
      sandbox: caller.sandbox,
      ...(q.type === undefined ? {} : { type: q.type }),
      ...(q.floor === undefined ? {} : { floor: q.floor }),
      ...(q.max_price === undefined ? {} : { maxPriceCents: q.max_price }),
      limit: limit + 1,
    };

    if (q.topic === undefined) {
      let beforeSeq: number | null = null;
      if (q.cursor !== undefined) {
        beforeSeq = decodeNumberCursor('search', q.cursor);
        if (beforeSeq === null) return badCursor('search');
      }
      const rows = await browseArtifacts(sql, filters, beforeSeq, d.statementMs);
      return page(rows, limit, nowMs, (last) => encodeCursor('search', last.catalog_seq));
    }

    if (controlCharacters.test(q.topic)) {
      return errorReply('validation_failed', 'query/topic contains control characters; send words only');
    }
    // The cursor names the query it belongs to, so a cursor of one topic or filter set is refused by another.
    const queryKey = createHash('sha256')
      .update(JSON.stringify([caller.sandbox, q.topic, q.type ?? null, q.floor ?? null, q.max_price ?? null]))
      .digest('hex')
      .slice(0, 12);
    let after: RankedPosition | null = null;
    if (q.cursor !== undefined) {
      after = decodeRankedCursor(q.cursor, queryKey);
      if (after === null) return badCursor('search');
    }
    const words = await wordsOf(q.topic, nowMs);
    const queries = topicQueries(words);
    if (queries === null) {
      return errorReply('validation_failed', 'query/topic has no words to search for (only stop words or symbols)');
    }
    const walk = await walkRowsMax(limit + 1, nowMs);
    const rows = await rankedArtifacts(
      sql,
      filters,
      queries,
      after,
      walk,
      tierLookUp(words, catalogStats, walk),
      d.statementMs,
    );
    return page(rows, limit, nowMs, (last) =>
      encodeCursor('search-ranked', `${queryKey}.${last.tier}.${last.search_rank}.${last.catalog_seq}`),
    );
  }
}

/**
 * The most rows a ranked tier walks before looking its matches up. Walking costs about limit * size / matches rows,
 * looking up costs about matches: the cut-off that bounds the worse of the two is their geometric mean.
 */
const trustJudgeCache = new Map<string, string>();

/** The search item's `trust.judge`, as JSON: the report's judge version and its measured quality (a few versions). */
function trustJudgeJson(version: string | null): string {
  if (version === null) return 'null';
  let json = trustJudgeCache.get(version);
  if (json === undefined) {
    const judge: TrustJudgeT = { version, quality: judgeQualityOf(version) };
    json = JSON.stringify(judge);
    // Versions are few and fixed; a bound still keeps an odd stored value from growing the map.
    if (trustJudgeCache.size < 1000) trustJudgeCache.set(version, json);
  }
  return json;
}

export function walkCutOff(limit: number, catalogRows: number): number {
  return Math.max(walkRowsMin, Math.ceil(Math.sqrt(limit * catalogRows)));
}

/**
 * The most artifacts a topic's words can match, from PostgreSQL's statistics: every word must match (itself or,
 * with `typos`, one of its alternatives), so the rarest word bounds it. Infinite without statistics.
 */
function matchesAtMost(words: TopicWord[], stats: CatalogTermStats, typos: boolean): number {
  const { shares, minShare, rows } = stats;
  if (shares === null) return Number.POSITIVE_INFINITY;
  let least = 1;
  for (const w of words) {
    let share = 0;
    for (const lexeme of typos ? [w.lexeme, ...w.alternatives] : [w.lexeme]) share += shares.get(lexeme) ?? minShare;
    least = Math.min(least, share);
  }
  return least * rows;
}

/**
 * Which tiers skip the walk: those whose words cannot match as many artifacts as the walk's cut-off (a walk finds a
 * page only if matches are denser than that), so that a rare word or a typo costs its matches, not the cut-off.
 */
export function tierLookUp(words: TopicWord[], stats: CatalogTermStats, walkRows: number): TierLookUp {
  return {
    exact: matchesAtMost(words, stats, false) < walkRows,
    typos: matchesAtMost(words, stats, true) < walkRows,
  };
}

/** A ranked cursor: `<query key>.<tier>.<rank>.<catalog_seq>`; null if forged or of another query. */
function decodeRankedCursor(cursor: string, queryKey: string): RankedPosition | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const m = /^search-ranked:([0-9a-f]{12})\.(\d{1,2})\.(\d{1,9})\.(\d{1,16})$/.exec(text);
  if (!m || m[1] !== queryKey) return null;
  const seq = Number(m[4]);
  return Number.isSafeInteger(seq) ? { tier: Number(m[2]), rank: Number(m[3]), seq } : null;
}
