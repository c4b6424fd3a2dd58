-- An initial access token registers one client and is then spent (docs/oauth.md, Registration): the registration
-- that spends it records when and which client, in the same transaction that inserts the client.
ALTER TABLE oauth_initial_access_tokens ADD COLUMN used_at timestamptz;
ALTER TABLE oauth_initial_access_tokens ADD COLUMN used_by_client uuid;
