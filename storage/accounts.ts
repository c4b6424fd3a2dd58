// Accounts of live principals and their web sessions (migration 017). Secrets arrive here already hashed.
import type { Sql } from './postgres.ts';

export interface AccountRow {
  principal_id: string;
  email: string;
  password_hash: string;
  web_agent_id: string;
  /** The sign-up form submission that created the account (migration 034); null for older accounts. */
  signup_submission: string | null;
  created_at: Date;
}

/**
 * One transaction: the live principal, the agent the person acts as on the web, and the account. False when the
 * email is taken (nothing is written).
 */
export async function insertAccount(
  sql: Sql,
  a: {
    principalId: string;
    webAgentId: string;
    email: string;
    passwordHash: string;
    /** The sign-up form's submission id, so the same form sent again is known (or null). */
    submission: string | null;
    at: string;
  },
): Promise<boolean> {
  return sql
    .begin(async (tx) => {
      await tx`INSERT INTO principals (id, sandbox, created_at) VALUES (${a.principalId}, false, ${a.at})`;
      await tx`INSERT INTO agents (id, principal_id, name, sandbox, created_at)
             VALUES (${a.webAgentId}, ${a.principalId}, 'web', false, ${a.at})`;
      const inserted = await tx`
      INSERT INTO accounts (principal_id, email, password_hash, web_agent_id, signup_submission, created_at)
      VALUES (${a.principalId}, ${a.email}, ${a.passwordHash}, ${a.webAgentId}, ${a.submission}, ${a.at})
      ON CONFLICT DO NOTHING RETURNING 1`;
      if (inserted.length === 0) throw new AccountEmailTaken();
      return true;
    })
    .catch((err: unknown) => {
      if (err instanceof AccountEmailTaken) return false;
      throw err;
    });
}

/** The email is taken (perhaps by a sign-up racing this one): the transaction rolls back its principal and agent. */
class AccountEmailTaken extends Error {}

export async function accountByEmail(sql: Sql, email: string): Promise<AccountRow | null> {
  const rows = await sql<AccountRow[]>`SELECT * FROM accounts WHERE email = ${email}`;
  return rows[0] ?? null;
}

export async function accountByPrincipal(sql: Sql, principalId: string): Promise<AccountRow | null> {
  const rows = await sql<AccountRow[]>`SELECT * FROM accounts WHERE principal_id = ${principalId}`;
  return rows[0] ?? null;
}

export async function insertWebSession(
  sql: Sql,
  s: { tokenHash: string; principalId: string; at: string; expiresAt: string },
): Promise<void> {
  await sql`INSERT INTO web_sessions (token_hash, principal_id, created_at, expires_at)
            VALUES (${s.tokenHash}, ${s.principalId}, ${s.at}, ${s.expiresAt})`;
}

/** The live session of a token hash, with its account; null when unknown, expired or ended. */
export async function webSession(sql: Sql, tokenHash: string, now: string) {
  const rows = await sql<{ principal_id: string; email: string; web_agent_id: string }[]>`
    SELECT s.principal_id, a.email, a.web_agent_id FROM web_sessions s JOIN accounts a USING (principal_id)
    WHERE s.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > ${now}`;
  return rows[0] ?? null;
}

export async function endWebSession(sql: Sql, tokenHash: string, now: string): Promise<void> {
  await sql`UPDATE web_sessions SET revoked_at = ${now} WHERE token_hash = ${tokenHash} AND revoked_at IS NULL`;
}
