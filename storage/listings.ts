// Listings in PostgreSQL: a projection of the LISTINGS stream (the listing actors own the state), plus the
// per-artifact aggregates search filters on (live listing count, cheapest live price).
import type { ListingFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';
import type { Projection } from './projector.ts';

export interface ListingRow {
  id: string;
  artifact_id: string;
  seller_principal_id: string;
  price_cents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  billing_interval_seconds: number | null;
  state: 'live' | 'unlisted';
  sandbox: boolean;
  created_at: Date;
  updated_at: Date;
  last_seq: number;
}

export function listingProjection(n: Names): Projection<ListingFact> {
  return {
    checkpoint: `listings:${n.streams.listings.name}`,
    stream: n.streams.listings.name,
    async apply(tx, batch) {
      // Fold the batch first: a listing created here is inserted once, in its final state, with one statement for
      // all of them; changes to listings created earlier are applied one by one (they are rare).
      const created = new Map<string, ListingRowInput>();
      const later: { seq: number; fact: Exclude<ListingFact, { type: 'listing_created' }> }[] = [];
      for (const { seq, fact } of batch) {
        if (fact.type === 'listing_created') {
          created.set(fact.listingId, {
            id: fact.listingId,
            artifact_id: fact.artifactId,
            seller_principal_id: fact.sellerPrincipalId,
            price_cents: fact.priceCents,
            floor: fact.floor,
            formats: fact.formats,
            billing_interval_seconds: fact.billing?.intervalSeconds ?? null,
            state: 'live',
            sandbox: fact.sandbox,
            created_at: fact.at,
            updated_at: fact.at,
            last_seq: seq,
          });
          continue;
        }
        const row = created.get(fact.listingId);
        if (!row) {
          later.push({ seq, fact });
          continue;
        }
        if (fact.type === 'listing_repriced') row.price_cents = fact.priceCents;
        else row.state = 'unlisted';
        row.updated_at = fact.at;
        row.last_seq = seq;
      }
      const touched = new Set<string>([...created.values()].map((r) => r.artifact_id));
      if (created.size > 0) await insertListings(tx, [...created.values()]);
      for (const { seq, fact } of later) {
        const [row] = await tx<{ artifact_id: string }[]>`
          UPDATE listings SET
            price_cents = ${fact.type === 'listing_repriced' ? tx`${fact.priceCents}` : tx`price_cents`},
            state = ${fact.type === 'listing_unlisted' ? 'unlisted' : tx`state`},
            updated_at = ${fact.at}, last_seq = ${seq}
          WHERE id = ${fact.listingId} AND last_seq < ${seq}
          RETURNING artifact_id`;
        if (row) touched.add(row.artifact_id);
      }
      if (touched.size > 0) await refreshArtifactAggregates(tx, [...touched].sort());
    },
    async truncate(tx) {
      await tx`TRUNCATE listings`;
      await tx`UPDATE artifacts SET live_listing_count = 0, min_live_price_cents = NULL, live_listing_ids = '{}',
                 live_offer_terms = '{}'`;
    },
  };
}

type ListingRowInput = Omit<ListingRow, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string };

async function insertListings(tx: Sql, rows: ListingRowInput[]): Promise<void> {
  const col = <K extends keyof ListingRowInput>(k: K, oid: number) => tx.array(rows.map((r) => r[k]) as never[], oid);
  await tx`
    INSERT INTO listings (id, artifact_id, seller_principal_id, price_cents, floor, formats, billing_interval_seconds,
                          state, sandbox, created_at, updated_at, last_seq)
    SELECT r.id, r.artifact_id, r.seller, r.price, r.floor, string_to_array(r.formats, ','), r.billing, r.state,
           r.sandbox, r.created_at, r.updated_at, r.last_seq
    FROM unnest(${col('id', 2950)}::uuid[], ${col('artifact_id', 2950)}::uuid[], ${col('seller_principal_id', 2950)}::uuid[],
                ${col('price_cents', 20)}::bigint[], ${col('floor', 701)}::float8[],
                ${tx.array(rows.map((r) => r.formats.join(',')) as never[], 25)}::text[],
                ${col('billing_interval_seconds', 23)}::int[], ${col('state', 25)}::text[], ${col('sandbox', 16)}::boolean[],
                ${col('created_at', 1184)}::timestamptz[], ${col('updated_at', 1184)}::timestamptz[], ${col('last_seq', 20)}::bigint[])
         AS r(id, artifact_id, seller, price, floor, formats, billing, state, sandbox, created_at, updated_at, last_seq)
    ON CONFLICT (id) DO NOTHING`;
}

async function refreshArtifactAggregates(tx: Sql, artifactIds: string[]): Promise<void> {
  await tx`
    UPDATE artifacts a SET live_listing_count = coalesce(s.n, 0), min_live_price_cents = s.min_price,
      live_listing_ids = coalesce(s.ids, '{}'), live_offer_terms = coalesce(s.terms, '{}')
    FROM (SELECT id FROM unnest(${tx.array(artifactIds, 2950)}::uuid[]) AS id) ids
    LEFT JOIN (SELECT artifact_id, count(*)::int AS n, min(price_cents) AS min_price,
                      array_agg(id ORDER BY created_at, id) AS ids,
                      array_agg(listing_offer_terms(price_cents, billing_interval_seconds, formats)
                                ORDER BY created_at, id) AS terms
               FROM listings WHERE state = 'live' AND artifact_id = ANY(${tx.array(artifactIds, 2950)}::uuid[])
               GROUP BY artifact_id) s ON s.artifact_id = ids.id
    WHERE a.id = ids.id`;
}

export type LiveListingTerms = Pick<
  ListingRow,
  'id' | 'artifact_id' | 'price_cents' | 'billing_interval_seconds' | 'formats'
>;

export async function liveListingsFor(sql: Sql, artifactIds: string[]): Promise<LiveListingTerms[]> {
  if (artifactIds.length === 0) return [];
  return sql<LiveListingTerms[]>`
    SELECT id, artifact_id, price_cents::int AS price_cents, billing_interval_seconds, formats FROM listings
    WHERE artifact_id = ANY(${sql.array(artifactIds, 2950)}::uuid[]) AND state = 'live'
    ORDER BY created_at, id`;
}

export async function getListingRow(sql: Sql, id: string): Promise<ListingRow | null> {
  const rows = await sql<ListingRow[]>`SELECT * FROM listings WHERE id = ${id}`;
  return rows[0] ?? null;
}

/** A seller's listings, newest first; the cursor is (created_at, id) of the last row. */
export async function sellerListings(
  sql: Sql,
  sellerId: string,
  after: { createdAt: Date; id: string } | null,
  limit: number,
): Promise<ListingRow[]> {
  return sql<ListingRow[]>`
    SELECT * FROM listings WHERE seller_principal_id = ${sellerId}
      ${after === null ? sql`` : sql`AND (created_at, id) < (${after.createdAt}, ${after.id})`}
    ORDER BY created_at DESC, id DESC
    LIMIT ${limit}`;
}
