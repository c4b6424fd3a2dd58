-- Accounts (live principals who sign in on the web) and the OAuth 2.1 server's records (docs/oauth.md). Every
-- secret is stored as its sha256 (hex), never in the clear: a database dump hands out no working credential.

CREATE TABLE accounts (
  principal_id uuid PRIMARY KEY REFERENCES principals (id),
  -- Lower-cased and trimmed; the unique key of sign-in.
  email text NOT NULL UNIQUE,
  -- scrypt$N$r$p$<salt b64>$<hash b64>
  password_hash text NOT NULL,
  -- The agent the person acts as on the web (the account page's own calls, such as setting the mandate).
  web_agent_id uuid NOT NULL REFERENCES agents (id),
  created_at timestamptz NOT NULL
);

CREATE TABLE web_sessions (
  token_hash text PRIMARY KEY,
  principal_id uuid NOT NULL REFERENCES principals (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX web_sessions_principal ON web_sessions (principal_id);

CREATE TABLE oauth_initial_access_tokens (
  id uuid PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  principal_id uuid NOT NULL REFERENCES principals (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX oauth_iat_principal ON oauth_initial_access_tokens (principal_id);

-- A registered client is an agent of its principal: client_id = agents.id.
CREATE TABLE oauth_clients (
  client_id uuid PRIMARY KEY REFERENCES agents (id),
  principal_id uuid NOT NULL REFERENCES principals (id),
  client_name text,
  redirect_uris text[] NOT NULL,
  grant_types text[] NOT NULL,
  scopes text[] NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX oauth_clients_principal ON oauth_clients (principal_id);

-- What a person approved for a client (consent or device approval): the tokens issued under it carry its id
-- (`gid`), and revoking it ends all of them.
CREATE TABLE oauth_grants (
  id uuid PRIMARY KEY,
  principal_id uuid NOT NULL REFERENCES principals (id),
  client_id uuid NOT NULL REFERENCES oauth_clients (client_id),
  scopes text[] NOT NULL,
  resource text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX oauth_grants_principal ON oauth_grants (principal_id, created_at DESC);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

CREATE TABLE oauth_codes (
  code_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants (id),
  client_id uuid NOT NULL,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);

-- Refresh tokens rotate: each use marks the token used and issues its successor in the same grant. A used token
-- presented again is a replay, and revokes the grant (the whole family).
CREATE TABLE oauth_refresh_tokens (
  token_hash text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

-- Access tokens are JWTs checked without a lookup; this list is for the account page and revocation by id.
CREATE TABLE oauth_access_tokens (
  jti uuid PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants (id),
  scopes text[] NOT NULL,
  audience text NOT NULL,
  exchanged boolean NOT NULL,
  issued_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX oauth_access_tokens_grant ON oauth_access_tokens (grant_id, expires_at);

CREATE TABLE oauth_device_codes (
  device_code_hash text PRIMARY KEY,
  user_code text NOT NULL UNIQUE,
  client_id uuid NOT NULL REFERENCES oauth_clients (client_id),
  scopes text[] NOT NULL,
  resource text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  interval_seconds integer NOT NULL,
  last_polled_at timestamptz,
  -- pending, approved (grant_id set), denied; used_at once tokens were issued.
  state text NOT NULL CHECK (state IN ('pending', 'approved', 'denied')),
  principal_id uuid REFERENCES principals (id),
  grant_id uuid REFERENCES oauth_grants (id),
  used_at timestamptz
);
