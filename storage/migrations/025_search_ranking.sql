-- Search by relevance (docs/search.md): what the ranked query reads, kept on the artifact row.
--
--   heading_tsv       title and topics alone, so "the words are in the heading" is a question a GIN index and the
--                     planner's statistics can answer (a weight-restricted query on search_tsv is estimated as if
--                     the restriction were not there).
--   search_item       the artifact part of a search item, rendered once per edition (artifact_search_item below),
--                     so a search page copies text instead of building objects.
--   live_listing_ids  the artifact's live listings, oldest first, kept by the listing projection beside the counts.
--   search_rank       the custom ranking rules after text relevance, as one integer (search_rank_of below):
--                     the report meets the artifact's floor, the report's mean entailment, the artifact's trust.
--   search_words      every word of the catalog, for typo tolerance: a query word is compared with them by
--                     trigram distance (pg_trgm) and edit distance (fuzzystrmatch).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;

ALTER TABLE artifacts
  ADD COLUMN heading_tsv tsvector,
  ADD COLUMN search_item text,
  ADD COLUMN live_listing_ids uuid[] NOT NULL DEFAULT '{}',
  ADD COLUMN search_rank integer NOT NULL DEFAULT 500;

-- The artifact summary of contracts/schemas.ts (ArtifactSummary), as the API serves it.
CREATE FUNCTION artifact_search_item(a artifacts) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', a.id,
    'type', a.type,
    'contentHash', a.current_content_hash,
    'manifest', json_build_object('title', a.title, 'topics', to_json(a.topics), 'description', a.description,
                                  'floor', a.floor),
    'ownerPrincipalId', a.owner_principal_id,
    'sandbox', a.sandbox,
    'createdAt', to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
$$;

-- meets floor (0 or 1) * 10,000,000 + mean entailment in hundredths (0 to 100) * 10,000 + trust score in thousandths
-- (0 to 1,000). Without a report the first two parts are 0. Trust comes from the caller (actors/catalog/trust.ts owns
-- its formula); `search_rank % 10000` is the trust part.
CREATE FUNCTION search_rank_of(mean_entailment double precision, floor double precision, trust double precision)
RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN mean_entailment IS NOT NULL AND mean_entailment >= floor THEN 10000000 ELSE 0 END)
       + coalesce(round(mean_entailment * 100)::integer, 0) * 10000
       + round(greatest(0, least(1, trust)) * 1000)::integer
$$;

-- Kept by a trigger rather than by each writer: every statement that changes what an item shows re-renders it, the
-- bulk corpus loader included.
CREATE FUNCTION artifacts_search_fields() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.heading_tsv := to_tsvector('english'::regconfig, NEW.title || ' ' || array_to_string(NEW.topics, ' '));
  NEW.search_item := artifact_search_item(NEW);
  RETURN NEW;
END $$;
CREATE TRIGGER artifacts_search_fields
  BEFORE INSERT OR UPDATE OF type, current_content_hash, title, topics, description, floor, owner_principal_id,
                             sandbox, created_at
  ON artifacts FOR EACH ROW EXECUTE FUNCTION artifacts_search_fields();

UPDATE artifacts SET title = title;
UPDATE artifacts a SET
  live_listing_ids = coalesce((SELECT array_agg(l.id ORDER BY l.created_at, l.id) FROM listings l
                               WHERE l.artifact_id = a.id AND l.state = 'live'), '{}'),
  search_rank = search_rank_of(a.current_mean_entailment, a.floor, 0.5);
ALTER TABLE artifacts ALTER COLUMN heading_tsv SET NOT NULL, ALTER COLUMN search_item SET NOT NULL;

-- Ranked topic search walks live artifacts best rank first (and stops after a page) or, for a rare term, sorts the
-- few matches found through a GIN index; browsing keeps artifacts_live_by_seq.
CREATE INDEX artifacts_live_by_rank ON artifacts (sandbox, search_rank DESC, catalog_seq DESC)
  WHERE live_listing_count > 0;
CREATE INDEX artifacts_heading ON artifacts USING gin (heading_tsv) WHERE live_listing_count > 0;

-- The catalog's words as written (lower-cased) with the lexeme each stems to. Typo tolerance compares a query word
-- with the written words (a misspelt word often stems differently from the word meant: "replicaton" stays as it is,
-- "replication" becomes "replic") and searches for the lexemes of those within its allowance.
CREATE TABLE search_words (word text PRIMARY KEY, lexeme text NOT NULL);
-- Nearest words by trigram distance (`ORDER BY word <-> $1 LIMIT n`), which a GiST index answers without a scan.
CREATE INDEX search_words_trgm ON search_words USING gist (word gist_trgm_ops);

-- Words worth a typo: three letters or more, with no digit (a typo in a number is another number).
CREATE FUNCTION search_words_of(body text) RETURNS TABLE (word text, lexeme text) LANGUAGE sql STABLE AS $$
  SELECT DISTINCT lower(d.token), d.lexemes[1] FROM ts_debug('english'::regconfig, body) d
  WHERE d.lexemes <> '{}' AND length(d.token) BETWEEN 3 AND 64 AND d.token !~ '[0-9]'
$$;
INSERT INTO search_words (word, lexeme)
SELECT DISTINCT w.word, w.lexeme
FROM artifacts a, search_words_of(a.title || ' ' || array_to_string(a.topics, ' ') || ' ' || a.description) w
ON CONFLICT DO NOTHING;
