-- Clients no account registered (docs/oauth.md): the deployment's own command-line client, made at start-up, and
-- MCP clients known by a client ID metadata document, whose client_id is the document's https URL (kept in
-- metadata_url; the row's uuid is what grants, codes and device codes refer to, and the agent of its tokens).
-- Neither is an account's agent: principal_id is null and client_id is no agents row. Each grant still names the
-- principal who approved it, and every token carries that principal.
ALTER TABLE oauth_clients ALTER COLUMN principal_id DROP NOT NULL;
ALTER TABLE oauth_clients DROP CONSTRAINT oauth_clients_client_id_fkey;
ALTER TABLE oauth_clients ADD COLUMN kind text NOT NULL DEFAULT 'registered'
  CHECK (kind IN ('registered', 'first_party', 'metadata_document'));
ALTER TABLE oauth_clients ADD COLUMN metadata_url text UNIQUE;
ALTER TABLE oauth_clients ADD CONSTRAINT oauth_clients_kind_fits CHECK (
  (kind = 'registered') = (principal_id IS NOT NULL) AND (kind = 'metadata_document') = (metadata_url IS NOT NULL)
);
