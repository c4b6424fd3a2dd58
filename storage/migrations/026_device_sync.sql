-- Device sync (docs/sync.md). Blob bytes live in the blob directory (ASSAY_SYNC_DIR), named by digest; these tables
-- say which owner holds which blob (the quota counts those), which folders (locators) an owner syncs, and each
-- folder's revisions with their file lists. Nothing here is a projection of a stream: sync data is written by the
-- gateway's sync face in one transaction per request.
CREATE TABLE sync_blobs (
  digest text PRIMARY KEY,
  size_bytes bigint NOT NULL,
  created_at timestamptz NOT NULL,
  -- The injection scan of the content, once done: null for binary content, a list of findings (maybe empty)
  -- for text. Content is global, so one scan serves every owner and every later commit.
  scan jsonb,
  scanned boolean NOT NULL DEFAULT false
);

CREATE TABLE sync_blob_owners (
  principal_id uuid NOT NULL,
  digest text NOT NULL REFERENCES sync_blobs (digest),
  size_bytes bigint NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (principal_id, digest)
);

-- One row per owner: what its blobs add up to, kept in the transaction that adds one (the quota check locks it).
CREATE TABLE sync_usage (
  principal_id uuid PRIMARY KEY,
  bytes bigint NOT NULL DEFAULT 0,
  blobs bigint NOT NULL DEFAULT 0
);

CREATE TABLE sync_locators (
  principal_id uuid NOT NULL,
  locator text NOT NULL,
  created_at timestamptz NOT NULL,
  last_number integer NOT NULL DEFAULT 0,
  PRIMARY KEY (principal_id, locator)
);

CREATE TABLE sync_revisions (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL,
  locator text NOT NULL,
  number integer NOT NULL,
  created_at timestamptz NOT NULL,
  file_count integer NOT NULL,
  total_bytes bigint NOT NULL,
  -- [{path, type?, mode, size, digest} | {path, type: 'symlink', target, mode?}], sorted by path.
  files jsonb NOT NULL,
  findings jsonb NOT NULL,
  UNIQUE (principal_id, locator, number),
  FOREIGN KEY (principal_id, locator) REFERENCES sync_locators (principal_id, locator)
);

-- Idempotency-Key of snapshot commits, per owner: the request it was used with and the answer it got.
CREATE TABLE sync_commit_keys (
  principal_id uuid NOT NULL,
  idempotency_key text NOT NULL,
  request_hash text NOT NULL,
  status integer NOT NULL,
  response jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (principal_id, idempotency_key)
);
