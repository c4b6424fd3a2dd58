-- Why an order was refunded: `floor_missed` (its edition's report missed the floor) or `no_report` (no report
-- arrived within ASSAY_REPORT_WAIT_SECONDS: the judge was unreachable, nothing was judged). Orders refunded before
-- this migration were all refunded for their floor.
ALTER TABLE orders ADD COLUMN refund_reason text CHECK (refund_reason IN ('floor_missed', 'no_report'));
UPDATE orders SET refund_reason = 'floor_missed' WHERE state = 'auto_refunded';
-- The settlement sweeper looks for held orders that have waited too long for a report.
CREATE INDEX orders_held_since ON orders (created_at) WHERE state = 'held';
