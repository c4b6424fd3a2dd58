-- The events store: every event a principal can poll (`GET /v1/events`) or, later, receive by webhook, one row
-- each, written by the events projection of the LEDGER stream (storage/events.ts) with its own checkpoint. Events
-- were read from ledger entries since 007; facts that move no money (subscriptions) make events too, so they have a
-- table again. Rows depend only on the facts: a rebuild writes the same ids, sequences and data. An empty store
-- is filled by the projector replaying the stream from its first fact.
CREATE TABLE events (
  principal_id uuid NOT NULL,
  -- The principal's own order, 1, 2, 3, ...: allocated from event_heads in the projection's transaction.
  seq bigint NOT NULL,
  -- `evt_<fact id>`, and `evt_<fact id>.<n>` for a fact's further events: stable, receivers deduplicate by it.
  id text NOT NULL UNIQUE,
  type text NOT NULL,
  data jsonb NOT NULL,
  sandbox boolean NOT NULL,
  -- The LEDGER stream sequence of the fact: what cursors handed out before this store named (translated on read).
  source_seq bigint NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (principal_id, seq)
);
CREATE INDEX events_by_type ON events (principal_id, type, seq);

-- The last sequence given to each principal's events.
CREATE TABLE event_heads (
  principal_id uuid PRIMARY KEY,
  last_seq bigint NOT NULL
);
