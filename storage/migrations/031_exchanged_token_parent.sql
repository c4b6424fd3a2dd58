-- Token exchange (RFC 8693): the access token an exchanged token was made from, so revoking a token revokes what was
-- exchanged from it, and so on down (docs/oauth.md, Revocation).
ALTER TABLE oauth_access_tokens ADD COLUMN parent_jti uuid;
CREATE INDEX oauth_access_tokens_parent ON oauth_access_tokens (parent_jti) WHERE parent_jti IS NOT NULL;
