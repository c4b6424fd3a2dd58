-- Facts a projection could not write (PostgreSQL refused their rows): set aside with the error, so one bad fact never
-- stops the projection for everyone. The fact is kept as its JSON text (escaped, so any fact fits a text column).
-- A rebuild of the projection removes its rows and tries each fact again.
CREATE TABLE parked_facts (
  projection text NOT NULL,
  stream_seq bigint NOT NULL,
  error text NOT NULL,
  fact text NOT NULL,
  parked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, stream_seq)
);
