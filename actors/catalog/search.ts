// GET /v1/search and search_artifacts: one PostgreSQL statement per page, and the answer assembled as text from parts
// stored with each artifact (docs/search.md). What a request does not need to recompute is kept, bounded: the words of
// recent topics with their typo alternatives (a minute), the catalog's size (a minute). Trust is read as sums and
// scored at read; its part of the rank is refreshed on a timer, because decay changes it without any fact.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type BusReply,
  errorReply,
  JsonText,
  okReply,
  pageLimits,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import {
  browseArtifacts,
  catalogSizeEstimate,
  type RankedPosition,
  rankedArtifacts,
  refreshSearchRanks,
  type SearchFilters,
  type SearchRow,
  type Sql,
  type TopicWord,
  topicQueries,
  topicWords,
} from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';
import { badCursor, decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';
import { trustDecay, trustScore } from './trust.ts';

/** How long a topic's words and typo alternatives are reused: a catalog word newer than this may be missed. */
export const topicWordsTtlMs = 60_000;
/** Topics whose words are kept at once; the oldest is dropped first. */
export const topicWordsCachedMax = 1_000;
/** How often the trust part of the rank is brought up to date (the bound on its staleness). */
export const searchRankRefreshMs = 60_000;
/** Fewest catalog rows a ranked tier walks before it looks its matches up in the index instead. */
const walkRowsMin = 500;

// Control characters (C0, DEL, C1) in a topic are a client's mistake, not words.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point of the pattern.
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;

export interface SearchDeps {
  sql: Sql;
  clock: Clock;
  baseUrl: string;
  log?: Logger;
}

type SearchHandler = ServiceHandlers<'catalog'>['searchArtifacts'];

export function searchHandler(d: SearchDeps): SearchHandler {
  const { sql } = d;
  // Offer URLs are the base URL's JSON text plus the listing id (a UUID, nothing to escape).
  const offerUrlOpen = JSON.stringify(`${d.baseUrl}/offers/`).slice(0, -1);
  const topics = new Map<string, { words: TopicWord[]; atMs: number }>();
  let catalogSize = { rows: 0, atMs: Number.NEGATIVE_INFINITY };
  let rankRefresh = { atMs: d.clock.nowMs(), running: false };

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
    if (nowMs - catalogSize.atMs >= topicWordsTtlMs) {
      catalogSize = { rows: await catalogSizeEstimate(sql), atMs: nowMs };
    }
    // Walking costs about limit * size / matches rows, looking up costs about matches: the cut-off that bounds the
    // worse of the two is their geometric mean.
    return Math.max(walkRowsMin, Math.ceil(Math.sqrt(limit * catalogSize.rows)));
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
      let offers = '';
      for (let i = 0; i < ids.length; i++) {
        offers += `${i === 0 ? '' : ','}{"listing_id":"${ids[i]}","offer_url":${offerUrlOpen}${ids[i]}"}`;
      }
      parts.push(
        `{"artifact":${r.search_item},"trust":{"score":${trust.score},"sampleSize":${trust.sampleSize},"passRate":${trust.passRate}},"liveListingIds":${ids.length === 0 ? '[]' : `["${ids.join('","')}"]`},"offers":[${offers}]}`,
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

  return async ({ query: q, caller }) => {
    const nowMs = d.clock.nowMs();
    refreshRanksIfDue(nowMs);
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
      const rows = await browseArtifacts(sql, filters, beforeSeq);
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
    const queries = topicQueries(await wordsOf(q.topic, nowMs));
    if (queries === null) {
      return errorReply('validation_failed', 'query/topic has no words to search for (only stop words or symbols)');
    }
    const rows = await rankedArtifacts(sql, filters, queries, after, await walkRowsMax(limit + 1, nowMs));
    return page(rows, limit, nowMs, (last) =>
      encodeCursor('search-ranked', `${queryKey}.${last.tier}.${last.search_rank}.${last.catalog_seq}`),
    );
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
