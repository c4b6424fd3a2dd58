-- Built-in judge 3.0.0 supersedes 2.0.0: an erratum says so, so mandates with reject_open_judge_errata stop buying
-- what 2.0.0 judged (until a new edition is judged by a current version). The id is fixed, so every deployment has
-- the same erratum once (docs/verification.md, Judge versions and errata across drivers).
INSERT INTO errata (id, title, description, judge_model, judge_versions, state, opened_at)
VALUES (
  'c1f0e7a2-5b1d-5e43-9a57-2f0d3c8b6e45',
  'Judge 2.0.0 is superseded by 3.0.0',
  'assay-lexical-judge 2.0.0 verifies false claims too often for a verdict to be relied on: on the reference set (test/judge/reference.jsonl, never tuned on) it lets 10 of 84 false claims through (specificity 88.1%), and on new text a quarter of them. 3.0.0 verifies only on positive evidence (5 of 84, 94.0%). Reports 2.0.0 made stay valid signatures of what it decided; publish a new edition to be judged by 3.0.0.',
  'assay-lexical-judge',
  ARRAY['2.0.0'],
  'open',
  now()
)
ON CONFLICT (id) DO NOTHING;
