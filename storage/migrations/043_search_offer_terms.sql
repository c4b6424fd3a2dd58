-- Search offers carry their terms (docs/search.md, "Offers"): an agent reads a live listing's price, billing and
-- formats in the search answer itself instead of fetching every offer document to learn them.
--
--   live_offer_terms  one entry per live listing, in the order of live_listing_ids (oldest first): the listing's
--                     terms as the inside of a JSON object ("price_cents":500,"billing":null,"formats":["md"]),
--                     which the catalog service copies into the offer beside listing_id and offer_url. Kept by the
--                     listing projection with the ids, the count and the cheapest price, so a reprice reaches
--                     search with the same write (and moves search_generation, migration 028).
CREATE FUNCTION listing_offer_terms(price_cents bigint, billing_interval_seconds integer, formats text[])
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT '"price_cents":' || price_cents
      || ',"billing":' || CASE WHEN billing_interval_seconds IS NULL THEN 'null'
                              ELSE '{"interval_seconds":' || billing_interval_seconds || '}' END
      || ',"formats":' || to_json(formats)::text
$$;

ALTER TABLE artifacts ADD COLUMN live_offer_terms text[] NOT NULL DEFAULT '{}';

UPDATE artifacts a SET live_offer_terms = s.terms
FROM (SELECT artifact_id,
             array_agg(listing_offer_terms(price_cents, billing_interval_seconds, formats) ORDER BY created_at, id)
               AS terms
      FROM listings WHERE state = 'live' GROUP BY artifact_id) s
WHERE a.id = s.artifact_id;
