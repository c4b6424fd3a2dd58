-- The catalog: artifacts and their editions, signed reports, listings (a projection of the LISTINGS stream),
-- judge errata, trust, and the transactional outbox that feeds the verification queue.

CREATE TABLE artifacts (
  id uuid PRIMARY KEY,
  -- Search order and cursor: new artifacts get higher numbers, so a cursor walk is stable while they arrive.
  catalog_seq bigserial NOT NULL UNIQUE,
  type text NOT NULL DEFAULT 'context_file',
  owner_principal_id uuid NOT NULL,
  sandbox boolean NOT NULL,
  title text NOT NULL,
  topics text[] NOT NULL,
  description text NOT NULL,
  floor double precision NOT NULL,
  created_at timestamptz NOT NULL,
  current_edition_id uuid,
  current_content_hash text NOT NULL,
  current_report_digest text,
  current_mean_entailment double precision,
  current_judge_version text,
  live_listing_count integer NOT NULL DEFAULT 0,
  min_live_price_cents bigint,
  search_tsv tsvector NOT NULL
);
-- Browsing and filtered search walk this index newest first and stop after a page.
CREATE INDEX artifacts_live_by_seq ON artifacts (sandbox, catalog_seq DESC) WHERE live_listing_count > 0;
-- Topic search: full text over title, topics and description.
CREATE INDEX artifacts_search ON artifacts USING gin (search_tsv) WHERE live_listing_count > 0;
CREATE INDEX artifacts_owner ON artifacts (owner_principal_id);
CREATE INDEX artifacts_judge_version ON artifacts (current_judge_version);

CREATE TABLE editions (
  id uuid PRIMARY KEY,
  artifact_id uuid NOT NULL REFERENCES artifacts (id),
  number integer NOT NULL,
  content_hash text NOT NULL,
  content text NOT NULL,
  title text NOT NULL,
  topics text[] NOT NULL,
  description text NOT NULL,
  floor double precision NOT NULL,
  judge_version text NOT NULL,
  report_digest text,
  created_at timestamptz NOT NULL,
  UNIQUE (artifact_id, number)
);

CREATE TABLE reports (
  digest text PRIMARY KEY,
  edition_id uuid NOT NULL UNIQUE REFERENCES editions (id),
  artifact_id uuid NOT NULL,
  sandbox boolean NOT NULL,
  judge_model text NOT NULL,
  judge_version text NOT NULL,
  mean_entailment double precision NOT NULL,
  signing_key_id text NOT NULL,
  -- The report exactly as signed and served.
  body text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE listings (
  id uuid PRIMARY KEY,
  artifact_id uuid NOT NULL REFERENCES artifacts (id),
  seller_principal_id uuid NOT NULL,
  price_cents bigint NOT NULL,
  floor double precision NOT NULL,
  formats text[] NOT NULL,
  billing_interval_seconds integer,
  state text NOT NULL CHECK (state IN ('live', 'unlisted')),
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- Sequence of the listing's last fact in its stream: the version offers and ETags derive from.
  last_seq bigint NOT NULL
);
CREATE INDEX listings_live_by_artifact ON listings (artifact_id) WHERE state = 'live';
CREATE INDEX listings_seller ON listings (seller_principal_id, created_at DESC, id DESC);

CREATE TABLE errata (
  id uuid PRIMARY KEY,
  title text NOT NULL,
  description text NOT NULL,
  judge_model text NOT NULL,
  judge_versions text[] NOT NULL,
  state text NOT NULL CHECK (state IN ('open', 'closed')),
  opened_at timestamptz NOT NULL,
  closed_at timestamptz
);

-- One row per outcome sample; the aggregate holds the sums the score is computed from.
CREATE TABLE trust_samples (
  subject text NOT NULL,
  source_kind text NOT NULL,
  source_id text NOT NULL,
  pass boolean NOT NULL,
  at timestamptz NOT NULL,
  PRIMARY KEY (subject, source_kind, source_id)
);
-- Weights are anchored at a fixed epoch (2^((t - epoch) / half-life)), so adding a sample is one addition and
-- reading a score is one multiplication by 2^(-(now - epoch) / half-life). See actors/catalog/trust.ts.
CREATE TABLE trust_aggregates (
  subject text PRIMARY KEY,
  samples integer NOT NULL,
  passes integer NOT NULL,
  pass_weight double precision NOT NULL,
  fail_weight double precision NOT NULL
);

-- Messages to publish to NATS, written in the same transaction as the change they announce.
CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  subject text NOT NULL,
  msg_id text NOT NULL,
  payload text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE corpus_loads (
  namespace text PRIMARY KEY,
  seed text NOT NULL,
  artifacts integer NOT NULL,
  loaded_at timestamptz NOT NULL
);
