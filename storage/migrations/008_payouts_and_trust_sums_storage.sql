-- A payout is read by seller in stream order, and there is one per order (the money invariant: released = payouts
-- accrued); its own id is never looked up. Two indexes instead of three.
ALTER TABLE payouts DROP CONSTRAINT payouts_pkey, DROP CONSTRAINT payouts_order_id_key;
DROP INDEX payouts_seller;
ALTER TABLE payouts ADD PRIMARY KEY (order_id);
CREATE INDEX payouts_seller ON payouts (seller_principal_id, stream_seq DESC);

-- Trust sums are updated in place on every settlement: room on each page keeps those updates HOT (no new index
-- entry per update).
ALTER TABLE trust_sums SET (fillfactor = 50);
