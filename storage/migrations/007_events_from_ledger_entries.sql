-- Every event was a copy of a ledger entry (held, released, refunded, topped up) plus its order's listing and price:
-- two more rows per purchase for the projection to write. Events are now read from ledger_entries joined to orders
-- (storage/orders.ts, eventsPage); their ids and order are unchanged (`evt_<fact id>`, stream order).
DROP TABLE events;
