-- The OKF export (docs/contexts.md, The OKF export): public context files read in pages keyed by id, and the state
-- its ETag is made of.
CREATE INDEX context_files_public_id ON context_files (id) INCLUDE (content_bytes) WHERE is_public;

-- One row. `changes` counts the statements that changed the public files (added, changed, unpublished or deleted
-- one): it moves in the same transaction as the rows, so the same tag always means the same public files. `epoch`
-- is drawn anew when the table is emptied to be rebuilt, so a tag is never handed out again for other content.
-- Triggers keep it, whoever writes the table (the projection, an operator's repair, a volume test).
CREATE TABLE context_export_state (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  epoch uuid NOT NULL,
  changes bigint NOT NULL
);
INSERT INTO context_export_state (epoch, changes) VALUES (gen_random_uuid(), 0);

-- Statement triggers with transition tables: one look per statement at the rows it changed, not one per row.
-- The nested IFs matter: PL/pgSQL plans a statement only when it reaches it, and an INSERT has no old_rows.
CREATE FUNCTION context_files_public_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    IF EXISTS (SELECT 1 FROM old_rows WHERE is_public) THEN
      UPDATE context_export_state SET changes = changes + 1;
      RETURN NULL;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    IF EXISTS (SELECT 1 FROM new_rows WHERE is_public) THEN
      UPDATE context_export_state SET changes = changes + 1;
    END IF;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER context_files_public_inserted AFTER INSERT ON context_files
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION context_files_public_changed();
CREATE TRIGGER context_files_public_updated AFTER UPDATE ON context_files
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION context_files_public_changed();
CREATE TRIGGER context_files_public_deleted AFTER DELETE ON context_files
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION context_files_public_changed();

CREATE FUNCTION context_files_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE context_export_state SET epoch = gen_random_uuid(), changes = 0;
  RETURN NULL;
END
$$;
CREATE TRIGGER context_files_truncated AFTER TRUNCATE ON context_files
  FOR EACH STATEMENT EXECUTE FUNCTION context_files_emptied();
