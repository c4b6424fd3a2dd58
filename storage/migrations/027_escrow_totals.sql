-- Running totals of the money in orders, by state and side of the sandbox line, for the metrics
-- (assay_escrow_cents, docs/operations.md): kept by the principal-facts projection in each batch's transaction, so
-- a scrape reads six rows instead of summing every order.
CREATE TABLE escrow_totals (
  state text NOT NULL CHECK (state IN ('held', 'released', 'auto_refunded')),
  sandbox boolean NOT NULL,
  cents bigint NOT NULL,
  PRIMARY KEY (state, sandbox)
);
INSERT INTO escrow_totals (state, sandbox, cents)
  SELECT state, sandbox, sum(escrow_cents) FROM orders GROUP BY state, sandbox;
