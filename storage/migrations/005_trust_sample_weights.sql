-- Keep each sample's weight, so the aggregates can be recomputed from the samples alone (a projection rebuild
-- drops and replays the settlement samples without touching the verification ones).
ALTER TABLE trust_samples ADD COLUMN weight_at_epoch double precision NOT NULL DEFAULT 0;
