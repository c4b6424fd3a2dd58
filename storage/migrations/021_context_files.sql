-- Context files: a projection of the `context_saved` and `context_deleted` facts on the LEDGER stream (the owner's
-- principal actor is their one writer). Public ones are read from here by other principals and the OKF export.
CREATE TABLE context_files (
  id uuid PRIMARY KEY,
  owner_principal_id uuid NOT NULL,
  name text NOT NULL,
  slug text NOT NULL,
  description text NOT NULL,
  content text NOT NULL,
  content_sha256 text NOT NULL,
  content_bytes integer NOT NULL,
  preview text NOT NULL,
  is_public boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- LEDGER sequence of the fact the row is from: an older fact never overwrites a newer one.
  last_seq bigint NOT NULL
);
CREATE INDEX context_files_owner ON context_files (owner_principal_id, created_at DESC, id DESC);
CREATE INDEX context_files_public ON context_files (updated_at, id) WHERE is_public;

-- API keys of the context-file API: `asyk_` + 32 random bytes, stored as the SHA-256 of the whole key.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL,
  name text NOT NULL,
  key_sha256 text NOT NULL UNIQUE,
  -- The key's last four characters, to tell keys apart on the account page.
  hint text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_principal ON api_keys (principal_id, created_at DESC);
