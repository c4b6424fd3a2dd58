-- Judges are named by model and version: an erratum names both, so it touches an artifact whose current report was
-- made by that model at one of its versions. Reports also keep what judging them cost at the endpoint.
ALTER TABLE artifacts ADD COLUMN current_judge_model text;
UPDATE artifacts a SET current_judge_model = r.judge_model FROM reports r WHERE r.digest = a.current_report_digest;
ALTER TABLE reports ADD COLUMN judge_usage jsonb;
