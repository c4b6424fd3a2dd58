-- Test mode inside an account (docs/oauth.md, Test mode): each account may have one sandbox principal of its own,
-- made the first time the person issues a sandbox agent token on the account page. It is a principal like any
-- sandbox registration's (its own ledger subject, test credits, a test mandate), so sandbox credits never mix with
-- the account's live ones; this row is what ties it to the account, so the page can show its agents, credits,
-- orders and events beside the live ones.
CREATE TABLE account_sandboxes (
  principal_id uuid PRIMARY KEY REFERENCES accounts (principal_id),
  sandbox_principal_id uuid NOT NULL UNIQUE REFERENCES principals (id),
  created_at timestamptz NOT NULL
);
