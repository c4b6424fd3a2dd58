-- Approval requests: purchases above a mandate's approval threshold, waiting for the principal. A projection of the
-- approval facts on the LEDGER stream (the principal actor holds the requests themselves); the sweep reads it to
-- expire pending requests past their time.
CREATE TABLE approvals (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'approved', 'declined', 'expired')),
  expires_at timestamptz NOT NULL,
  -- LEDGER sequence of the fact the row is from: an older fact never overwrites a newer one.
  last_seq bigint NOT NULL
);
CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE state = 'pending';
