-- The ledger projection writes about four rows per purchase; every index on them is paid for at that rate. Reads
-- are by principal in stream order, so that is the one index each table keeps (a fact's stream sequence is unique
-- in the stream, and a fact yields at most one ledger entry and at most one event).
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey, DROP CONSTRAINT ledger_entries_id_key;
DROP INDEX ledger_entries_principal;
ALTER TABLE ledger_entries ADD PRIMARY KEY (principal_id, stream_seq);

ALTER TABLE events DROP CONSTRAINT events_pkey;
DROP INDEX events_principal;
ALTER TABLE events ADD PRIMARY KEY (principal_id, stream_seq);

-- Trust sums per subject and source kind. Settlement samples come from a projection that applies each fact once
-- (its checkpoint commits with its rows), so they need no per-sample row to be idempotent: they add to the
-- 'settlement' sums directly, and a rebuild deletes those sums. Verification samples keep their rows.
CREATE TABLE trust_sums (
  subject text NOT NULL,
  source_kind text NOT NULL,
  samples integer NOT NULL,
  passes integer NOT NULL,
  pass_weight double precision NOT NULL,
  fail_weight double precision NOT NULL,
  PRIMARY KEY (subject, source_kind)
);
INSERT INTO trust_sums (subject, source_kind, samples, passes, pass_weight, fail_weight)
SELECT subject, source_kind, count(*)::int, (count(*) FILTER (WHERE pass))::int,
       coalesce(sum(weight_at_epoch) FILTER (WHERE pass), 0), coalesce(sum(weight_at_epoch) FILTER (WHERE NOT pass), 0)
FROM trust_samples GROUP BY subject, source_kind;
DELETE FROM trust_samples WHERE source_kind = 'settlement';
DROP TABLE trust_aggregates;
