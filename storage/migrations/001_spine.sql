-- Principals, agents and mandates: who may act, and under which spending policy.
CREATE TABLE principals (
  id uuid PRIMARY KEY,
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE agents (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL REFERENCES principals (id),
  name text,
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX agents_principal ON agents (principal_id);

CREATE TABLE mandates (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL REFERENCES principals (id),
  per_item_cap_cents bigint NOT NULL CHECK (per_item_cap_cents >= 0),
  min_trust double precision NOT NULL CHECK (min_trust >= 0 AND min_trust <= 1),
  min_judge_version text,
  reject_open_judge_errata boolean NOT NULL,
  revoked boolean NOT NULL DEFAULT false,
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX mandates_principal ON mandates (principal_id);

-- ES256 signing keys. Old keys stay (retired) so what they signed still verifies.
CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('token', 'report')),
  private_jwk jsonb NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  retired_at timestamptz
);
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (purpose) WHERE retired_at IS NULL;

-- Fixed-window counters for public routes (per client address), shared by every gateway.
CREATE TABLE rate_windows (
  bucket text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

-- Projection of the LEDGER stream: one row per fact, keyed by stream sequence, rebuilt by replay.
CREATE TABLE ledger_entries (
  stream_seq bigint PRIMARY KEY,
  id uuid NOT NULL UNIQUE,
  principal_id uuid NOT NULL,
  type text NOT NULL,
  amount_cents bigint NOT NULL,
  balance_after_cents bigint NOT NULL,
  reference text,
  run_id text,
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX ledger_entries_principal ON ledger_entries (principal_id, stream_seq DESC);
