-- Lighter event rows (issue 19). Every purchase writes two events, and measured on the projection's own statements
-- (a purchase's rows, 100 a batch) the event rows were the largest part of PostgreSQL's work per purchase:
--
--   data as json, not jsonb  The text is stored as given (checked to be JSON, not converted to jsonb's binary form);
--                            an event's data is only ever sent on whole, never queried inside. About 5-10 µs of
--                            backend CPU a purchase. Keys keep the order the projection wrote them in.
--   events_by_type partial   `order.state_changed` rows, most of every store, leave the type index: a page of them
--                            reads the primary key in order and keeps every row but the rare other event, while a
--                            page of any other type still reads only its own rows. Queries that filter on another
--                            type say `type <> 'order.state_changed'` so the index's predicate is seen to hold.
--                            About 5 µs a purchase.
--
-- The first statement rewrites the table (an exclusive lock for as long as that takes: GET /v1/events waits).
ALTER TABLE events ALTER COLUMN data TYPE json USING data::json;
DROP INDEX events_by_type;
CREATE INDEX events_by_type ON events (principal_id, type, seq) WHERE type <> 'order.state_changed';
