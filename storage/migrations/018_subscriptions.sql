-- Subscriptions: a projection of the subscription records on the LEDGER stream (each fact carries the whole record,
-- so a row is an upsert of the newest), plus the scheduler's claim columns, which are not projected: a claim is a
-- lease on one cycle that only spares other schedulers the work; the buyer's actor is what makes a cycle run once.
CREATE TABLE subscriptions (
  id uuid PRIMARY KEY,
  buyer_principal_id uuid NOT NULL,
  seller_principal_id uuid NOT NULL,
  listing_id uuid NOT NULL,
  agent_id uuid NOT NULL,
  sandbox boolean NOT NULL,
  state text NOT NULL CHECK (state IN ('active', 'paused', 'canceled')),
  interval_seconds integer NOT NULL,
  -- The last cycle run, failed ones included.
  cycle integer NOT NULL,
  consecutive_failures integer NOT NULL,
  next_cycle_at timestamptz,
  last_cycle jsonb,
  canceled_by text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- LEDGER sequence of the fact the row is from: an older fact never overwrites a newer one.
  last_seq bigint NOT NULL,
  -- The cycle a scheduler claimed and until when; the claim is void once `cycle` reaches it or it expires.
  claimed_cycle integer,
  claimed_until timestamptz
);
CREATE INDEX subscriptions_buyer ON subscriptions (buyer_principal_id, created_at DESC, id DESC);
CREATE INDEX subscriptions_seller ON subscriptions (seller_principal_id, created_at DESC, id DESC);
CREATE INDEX subscriptions_due ON subscriptions (next_cycle_at) WHERE state = 'active';
CREATE INDEX subscriptions_open_by_listing ON subscriptions (listing_id) WHERE state <> 'canceled';
