-- The cold tier of idempotency records (docs/architecture.md, Idempotency): a principal actor keeps only its most
-- recent keys in memory and finds older ones here. A purchase's key lives in its order row (the order id derives
-- from the key, so the primary key finds it); any other mutating call's key in idempotency_keys, dropped after the
-- retention window. Orders projected before this migration have no request hash (a replay of their key after it
-- left memory answers idempotency_conflict); `assay rebuild-projections` indexes them from the facts.
ALTER TABLE orders ADD COLUMN request_hash text;

CREATE TABLE idempotency_keys (
  principal_id uuid NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  stream_seq bigint NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (principal_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
