-- Verdicts of the model judge, by the sha256 of (requested model, answered model, prompt hash, passage chunk hash,
-- claim): re-verifying an unchanged claim against an unchanged passage costs nothing. A cache: entries may be
-- deleted at any time (an old `created_at` is the first to go) and are written again when needed.
CREATE TABLE judge_verdicts (
  key text PRIMARY KEY,
  verdict jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
