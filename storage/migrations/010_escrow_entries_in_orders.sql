-- A purchase wrote three rows to project: its order and two ledger entries (held, then released or refunded), every
-- column of which the order row already had but the fact id, the stream sequence and the balance after. Those now
-- live in the order row, and the ledger is read through the `ledger` view: the credit entries that stay in
-- ledger_entries, and two entries derived from each order. Same rows, same ids, same order as before; a purchase
-- costs the projection one row and one index entry instead of three rows and three index entries.
ALTER TABLE orders
  ADD COLUMN held_fact_id uuid,
  ADD COLUMN held_balance_after_cents bigint,
  ADD COLUMN settled_seq bigint,
  ADD COLUMN settled_fact_id uuid,
  ADD COLUMN settled_balance_after_cents bigint;

UPDATE orders o SET held_fact_id = l.id, held_balance_after_cents = l.balance_after_cents
FROM ledger_entries l
WHERE l.principal_id = o.buyer_principal_id AND l.stream_seq = o.held_seq;

UPDATE orders o SET settled_seq = l.stream_seq, settled_fact_id = l.id, settled_balance_after_cents = l.balance_after_cents
FROM ledger_entries l
WHERE l.principal_id = o.buyer_principal_id AND l.run_id = o.id::text AND l.type IN ('escrow_released', 'escrow_refunded');

DELETE FROM ledger_entries WHERE type IN ('escrow_held', 'escrow_released', 'escrow_refunded');

-- Every order was projected with its held entry in the same transaction, so none lacks it.
ALTER TABLE orders ALTER COLUMN held_fact_id SET NOT NULL, ALTER COLUMN held_balance_after_cents SET NOT NULL;
-- A principal's settlement entries in stream order, for the ledger and the event outbox.
CREATE INDEX orders_buyer_settled ON orders (buyer_principal_id, settled_seq DESC) WHERE settled_seq IS NOT NULL;

-- An order's two entries, shaped like ledger_entries rows. A release spends what was held, so its entry moves 0
-- credits; a refund returns the price.
CREATE VIEW ledger_escrow_held AS
  SELECT held_seq AS stream_seq, held_fact_id AS id, buyer_principal_id AS principal_id, 'escrow_held'::text AS type,
         -escrow_cents AS amount_cents, held_balance_after_cents AS balance_after_cents, id::text AS reference,
         id::text AS run_id, sandbox, created_at
  FROM orders;
CREATE VIEW ledger_escrow_settled AS
  SELECT settled_seq AS stream_seq, settled_fact_id AS id, buyer_principal_id AS principal_id,
         CASE state WHEN 'released' THEN 'escrow_released' ELSE 'escrow_refunded' END AS type,
         CASE state WHEN 'released' THEN 0 ELSE escrow_cents END AS amount_cents,
         settled_balance_after_cents AS balance_after_cents, id::text AS reference, id::text AS run_id, sandbox,
         settled_at AS created_at
  FROM orders
  WHERE settled_seq IS NOT NULL;

-- The whole ledger, for audits and tests. Paged reads by principal (storage/ledger-projection.ts, ledgerEntries)
-- query the three sources one by one, each with its own index, order and limit, and merge: PostgreSQL cannot keep
-- a branch with a WHERE clause inside a UNION ALL view's merge, and would sort every settled order of the principal.
CREATE VIEW ledger AS
  SELECT stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, run_id, sandbox, created_at
  FROM ledger_entries
  UNION ALL SELECT * FROM ledger_escrow_held
  UNION ALL SELECT * FROM ledger_escrow_settled;
