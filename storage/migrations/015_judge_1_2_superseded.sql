-- Built-in judge 2.0.0 supersedes 1.2.0: an erratum says so, so mandates with reject_open_judge_errata stop buying
-- what 1.2.0 judged (until a new edition is judged by a current version). The id is fixed, so every deployment has
-- the same erratum once. 1.0.0 and 1.1.0 have errata of their own already where they were ever used.
INSERT INTO errata (id, title, description, judge_model, judge_versions, state, opened_at)
VALUES (
  '9e6dc517-7316-5c19-b7bf-784483917cf9',
  'Judge 1.2.0 is superseded by 2.0.0',
  'assay-lexical-judge 1.2.0 scores 55% balanced accuracy on the shipped labelled set (2.0.0: 91%): it misses faithful paraphrases and numbers written in words, and verifies claims whose roles, comparison direction or unit are swapped. Reports it made stay valid signatures of what it decided; publish a new edition to be judged by 2.0.0.',
  'assay-lexical-judge',
  ARRAY['1.2.0'],
  'open',
  now()
)
ON CONFLICT (id) DO NOTHING;
