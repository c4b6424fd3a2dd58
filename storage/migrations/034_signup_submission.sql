-- A sign-up form's submission id (docs/oauth.md, Accounts): the same form sent again after its answer was lost (a
-- timeout on a busy machine) signs in to the account it created, instead of being told the email is taken.
ALTER TABLE accounts ADD COLUMN signup_submission uuid UNIQUE;
