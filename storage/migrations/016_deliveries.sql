-- Delivery of what orders bought. `rendered_pdfs` caches the PDF of an edition per renderer version: rendering is
-- deterministic, so the cache can be dropped at any time and is rebuilt byte for byte; `renders` counts how often
-- a process actually rendered it (two processes racing on a cold entry both count). `delivery_receipts` holds the
-- signed receipt of each delivery: the receipt exactly as signed and served, listed per order newest first.
CREATE TABLE rendered_pdfs (
  edition_id uuid NOT NULL,
  renderer_version text NOT NULL,
  bytes bytea NOT NULL,
  digest text NOT NULL,
  renders integer NOT NULL DEFAULT 1,
  rendered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (edition_id, renderer_version)
);

CREATE TABLE delivery_receipts (
  id uuid PRIMARY KEY,
  seq bigserial NOT NULL UNIQUE,
  order_id uuid NOT NULL,
  buyer_principal_id uuid NOT NULL,
  format text NOT NULL CHECK (format IN ('md', 'pdf')),
  digest text NOT NULL,
  receipt text NOT NULL,
  delivered_at timestamptz NOT NULL
);
CREATE INDEX delivery_receipts_by_order ON delivery_receipts (order_id, seq DESC);
