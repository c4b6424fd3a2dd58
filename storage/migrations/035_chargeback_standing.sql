-- Refunds and disputes of card top-ups (docs/money.md, Refunds and disputes), projected from the principals' facts:
-- for each principal the processor ever took money back from, its disputes still open and what it owes (the
-- negative part of its balance). The payout run reads it to hold a seller's accruals paid by such a buyer's credits
-- (docs/money.md, Payouts held). A principal's row is written by its chargeback facts and then kept by the facts
-- that can change what it owes (card top-ups credited, orders refunded); a purchase cannot, since none is allowed
-- while anything is owed.
CREATE TABLE chargeback_standing (
  principal_id uuid PRIMARY KEY,
  open_disputes integer NOT NULL CHECK (open_disputes >= 0),
  owed_cents bigint NOT NULL CHECK (owed_cents >= 0),
  updated_seq bigint NOT NULL
);
