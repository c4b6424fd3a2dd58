-- The x402 rail (docs/x402.md). A payer's address on a network is a live principal of its own (ids derived from
-- the address, so every process agrees); each payment an x402 client sent is kept with what the facilitator
-- answered (the evidence of its bundle), keyed by the authorization it carries; an order's x402 bundle is issued
-- once and never changes. Money is not here: credits and orders are facts on the payer principal's ledger.
CREATE TABLE x402_payers (
  network text NOT NULL,
  -- Lower-case hex, so one address is one payer however a client writes it.
  address text NOT NULL,
  principal_id uuid NOT NULL REFERENCES principals (id),
  agent_id uuid NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (network, address)
);

CREATE TABLE x402_payments (
  -- <network>:<asset>:<payer>:<nonce>, lower-case: one EIP-3009 authorization.
  payment_id text PRIMARY KEY,
  principal_id uuid NOT NULL,
  listing_id uuid NOT NULL,
  format text NOT NULL,
  amount_atomic text NOT NULL,
  payment_payload json NOT NULL,
  requirements json NOT NULL,
  verify_response json NOT NULL,
  settle_response json,
  order_id uuid,
  created_at timestamptz NOT NULL,
  settled_at timestamptz
);
CREATE INDEX x402_payments_order ON x402_payments (order_id) WHERE order_id IS NOT NULL;

CREATE TABLE x402_bundles (
  order_id uuid PRIMARY KEY,
  digest text NOT NULL,
  bundle text NOT NULL,
  issued_at timestamptz NOT NULL
);
