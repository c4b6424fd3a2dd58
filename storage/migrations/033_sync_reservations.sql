-- Device sync quota reservations (docs/sync.md, Quota and limits): an upload reserves its size when it begins, so
-- concurrent uploads of one owner cannot together pass the quota, and a refused one never reaches the blob store.
-- `reserved_bytes` is the sum of the owner's rows below, kept in the statement that adds or removes one; the quota
-- check at the start of an upload is one conditional update of the usage row (bytes + reserved_bytes + size).
ALTER TABLE sync_usage ADD COLUMN reserved_bytes bigint NOT NULL DEFAULT 0;

-- One row per upload under way. `touched_at` moves while the body arrives; the sweep releases rows whose upload
-- stopped touching them (its gateway died), and keeps the blob file of a digest with a row here.
CREATE TABLE sync_reservations (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL,
  digest text NOT NULL,
  size_bytes bigint NOT NULL,
  created_at timestamptz NOT NULL,
  touched_at timestamptz NOT NULL
);
CREATE INDEX sync_reservations_digest ON sync_reservations (digest);
CREATE INDEX sync_reservations_touched ON sync_reservations (touched_at);
