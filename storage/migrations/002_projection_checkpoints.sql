-- Where each projection stands in its stream, committed in the same transaction as the rows it covers, so a
-- projection is exactly-once without acknowledgements. A rebuild resets it to 0. The name includes the stream's,
-- so a database shared by several namespaces (tests) keeps one checkpoint per stream.
CREATE TABLE projection_checkpoints (
  name text PRIMARY KEY,
  last_seq bigint NOT NULL
);
