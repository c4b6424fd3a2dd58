-- Model prompt 2.2.0 supersedes 2.1.0, whose quotes a passage could close and write its own verdict after
-- (docs/verification.md, The prompt): an erratum for each model that judged with 2.1.0 here, so mandates with
-- reject_open_judge_errata stop buying what 2.1.0 judged until a new edition is judged by 2.2.0. An erratum names a
-- model, and only this deployment's reports say which models answered. Each id is derived from its model, so a
-- model has this erratum once.
INSERT INTO errata (id, title, description, judge_model, judge_versions, state, opened_at)
SELECT md5('assay.errata.model-prompt-2.1.0-superseded:' || m.judge_model)::uuid,
       'Judge 2.1.0 is superseded by 2.2.0',
       'Model prompt 2.1.0 quoted the passage and the claim between <<< and >>>, which the artifact''s own text could '
       || 'contain: a passage could end its quote and write a verdict for its claims where the prompt''s instructions '
       || 'stand. 2.2.0 quotes them between fences no quoted text can hold. Reports 2.1.0 made stay valid signatures '
       || 'of what it decided; publish a new edition to be judged by 2.2.0.',
       m.judge_model,
       ARRAY['2.1.0'],
       'open',
       now()
FROM (SELECT DISTINCT judge_model FROM reports WHERE judge_version = '2.1.0') m
ON CONFLICT (id) DO NOTHING;
