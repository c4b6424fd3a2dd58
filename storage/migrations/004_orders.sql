-- Purchases: projections of the LEDGER stream's escrow facts (orders, the sellers' payout accruals, the pollable
-- event outbox), and the compliance bundles issued for settled orders. Mandates now live in the principal actors'
-- facts, so their table goes.
DROP TABLE mandates;

CREATE TABLE orders (
  id uuid PRIMARY KEY,
  buyer_principal_id uuid NOT NULL,
  buyer_agent_id uuid NOT NULL,
  listing_id uuid NOT NULL,
  artifact_id uuid NOT NULL,
  edition_id uuid NOT NULL,
  seller_principal_id uuid NOT NULL,
  subscription_id uuid,
  state text NOT NULL CHECK (state IN ('held', 'released', 'auto_refunded')),
  escrow_cents bigint NOT NULL,
  floor double precision NOT NULL,
  formats text[] NOT NULL,
  idempotency_key text NOT NULL,
  price_snapshot_id text NOT NULL,
  report_digest text,
  sandbox boolean NOT NULL,
  held_seq bigint NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  settled_at timestamptz
);
CREATE INDEX orders_buyer ON orders (buyer_principal_id, held_seq DESC);
-- The settlement sweeper looks for held orders whose edition has a report by now.
CREATE INDEX orders_held_by_edition ON orders (edition_id) WHERE state = 'held';

CREATE TABLE payouts (
  id uuid PRIMARY KEY,
  order_id uuid NOT NULL UNIQUE,
  seller_principal_id uuid NOT NULL,
  listing_id uuid NOT NULL,
  amount_cents bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('accrued', 'paid')),
  sandbox boolean NOT NULL,
  stream_seq bigint NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX payouts_seller ON payouts (seller_principal_id, stream_seq DESC);

CREATE TABLE events (
  id text PRIMARY KEY,
  principal_id uuid NOT NULL,
  type text NOT NULL,
  stream_seq bigint NOT NULL,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  -- For the webhook delivery pass (a later issue): when it was last armed for delivery.
  armed_at timestamptz
);
CREATE INDEX events_principal ON events (principal_id, stream_seq);
CREATE INDEX events_principal_type ON events (principal_id, type, stream_seq);

CREATE TABLE compliance_bundles (
  order_id uuid PRIMARY KEY,
  digest text NOT NULL,
  bundle text NOT NULL,
  issued_at timestamptz NOT NULL
);
