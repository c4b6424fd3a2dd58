-- Live money (docs/money.md), projected from the principals' facts by the principal-facts projection: what each
-- person saved at the payment processor, their live top-ups and their sellers' transfers. The facts are the record;
-- these tables serve the account page, GET /v1/payouts, the payout run and the account export, and a rebuild
-- writes them again.
CREATE TABLE billing_profiles (
  principal_id uuid PRIMARY KEY,
  customer_id text,
  payment_method_id text,
  card_brand text,
  card_last4 text,
  card_saved_at timestamptz,
  connect_account_id text,
  payouts_enabled boolean NOT NULL DEFAULT false,
  updated_seq bigint NOT NULL
);
-- The payout run walks the sellers the processor lets receive transfers.
CREATE INDEX billing_profiles_payouts ON billing_profiles (principal_id) WHERE payouts_enabled;

CREATE TABLE topups (
  id text PRIMARY KEY,
  principal_id uuid NOT NULL,
  payment_intent_id text NOT NULL,
  amount_cents bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'credited', 'failed')),
  failure_code text,
  failure_message text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  stream_seq bigint NOT NULL
);
CREATE INDEX topups_principal ON topups (principal_id, stream_seq DESC);

-- A transfer covers the seller's live accruals with LEDGER sequence in (from_seq, through_seq]; ranges of transfers
-- that did not fail never overlap (the seller's actor checks it), so an accrual is paid by at most one.
CREATE TABLE payout_transfers (
  id uuid PRIMARY KEY,
  seller_principal_id uuid NOT NULL,
  account_id text NOT NULL,
  amount_cents bigint NOT NULL,
  from_seq bigint NOT NULL,
  through_seq bigint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'paid', 'failed')),
  processor_transfer_id text,
  failure text,
  started_at timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE INDEX payout_transfers_seller ON payout_transfers (seller_principal_id, through_seq DESC);
