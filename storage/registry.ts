// Principals, agents and mandates in PostgreSQL.
import type { Sql } from './postgres.ts';

export interface NewSandboxPrincipal {
  principalId: string;
  agentId: string;
  agentName: string | null;
  at: string;
}

/** One transaction: a sandbox principal and its first agent. (Its mandate lives in the principal actor.) */
export async function insertSandboxPrincipal(sql: Sql, p: NewSandboxPrincipal): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`INSERT INTO principals (id, sandbox, created_at) VALUES (${p.principalId}, true, ${p.at})`;
    await tx`INSERT INTO agents (id, principal_id, name, sandbox, created_at)
             VALUES (${p.agentId}, ${p.principalId}, ${p.agentName}, true, ${p.at})`;
  });
}

const windowMs = 60_000;

/**
 * Count one hit in the fixed one-minute window of `bucket`: the count including it, and how many seconds remain
 * until the window ends (a refusal's Retry-After). One statement, so every process shares the same window; windows
 * older than the previous minute decide nothing any more and are deleted, so the table does not grow.
 */
export async function countThisMinute(
  sql: Sql,
  bucket: string,
  nowMs: number,
): Promise<{ count: number; retryAfterS: number }> {
  const windowStart = new Date(nowMs - (nowMs % windowMs));
  const [row] = await sql<{ count: number }[]>`
    INSERT INTO rate_windows (bucket, window_start, count) VALUES (${bucket}, ${windowStart}, 1)
    ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_windows.count + 1
    RETURNING count`;
  await sql`DELETE FROM rate_windows WHERE window_start < ${new Date(windowStart.getTime() - windowMs)}`;
  return { count: row!.count, retryAfterS: Math.ceil((windowStart.getTime() + windowMs - nowMs) / 1000) };
}

/** Which side of the sandbox line a principal or agent is on; null when it does not exist. */
export async function subjectSandbox(sql: Sql, kind: 'principal' | 'agent', id: string): Promise<boolean | null> {
  const rows =
    kind === 'principal'
      ? await sql<{ sandbox: boolean }[]>`SELECT sandbox FROM principals WHERE id = ${id}`
      : await sql<{ sandbox: boolean }[]>`SELECT sandbox FROM agents WHERE id = ${id}`;
  return rows[0]?.sandbox ?? null;
}

export async function ensurePrincipal(sql: Sql, id: string, sandbox: boolean, at: string): Promise<void> {
  await sql`INSERT INTO principals (id, sandbox, created_at) VALUES (${id}, ${sandbox}, ${at}) ON CONFLICT DO NOTHING`;
}

/** The sandbox principal of an account (its test mode), or null before the person first used it. */
export async function accountSandbox(sql: Sql, principalId: string): Promise<string | null> {
  const rows = await sql<{ sandbox_principal_id: string }[]>`
    SELECT sandbox_principal_id FROM account_sandboxes WHERE principal_id = ${principalId}`;
  return rows[0]?.sandbox_principal_id ?? null;
}

/**
 * The account's sandbox principal, made now (a sandbox principal row and its link, in one transaction) when it has
 * none. `newId` names it if it is made; two first uses at once make one: the loser's transaction rolls back and it
 * reads the winner's.
 */
export async function ensureAccountSandbox(sql: Sql, principalId: string, newId: string, at: string): Promise<string> {
  const existing = await accountSandbox(sql, principalId);
  if (existing !== null) return existing;
  try {
    await sql.begin(async (tx) => {
      await tx`INSERT INTO principals (id, sandbox, created_at) VALUES (${newId}, true, ${at})`;
      await tx`INSERT INTO account_sandboxes (principal_id, sandbox_principal_id, created_at)
               VALUES (${principalId}, ${newId}, ${at})`;
    });
    return newId;
  } catch (err) {
    const raced = await accountSandbox(sql, principalId);
    if (raced === null) throw err;
    return raced;
  }
}

/** A sandbox principal's agents, newest first (at most `limit`). */
export async function sandboxAgentsOf(
  sql: Sql,
  sandboxPrincipalId: string,
  limit: number,
): Promise<{ id: string; name: string | null; created_at: Date }[]> {
  return sql<{ id: string; name: string | null; created_at: Date }[]>`
    SELECT id, name, created_at FROM agents WHERE principal_id = ${sandboxPrincipalId} AND sandbox
    ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
}

/**
 * An agent of a sandbox principal, made unless its id exists already: the principal that id belongs to (this one
 * for a new agent or a form sent again; another for an id that is not this principal's to name).
 */
export async function insertSandboxAgent(
  sql: Sql,
  a: { agentId: string; principalId: string; name: string | null; at: string },
): Promise<{ principalId: string; name: string | null; made: boolean }> {
  const made = await sql<{ principal_id: string; name: string | null }[]>`
    INSERT INTO agents (id, principal_id, name, sandbox, created_at)
    VALUES (${a.agentId}, ${a.principalId}, ${a.name}, true, ${a.at})
    ON CONFLICT (id) DO NOTHING RETURNING principal_id, name`;
  if (made[0]) return { principalId: made[0].principal_id, name: made[0].name, made: true };
  const [row] = await sql<{ principal_id: string; name: string | null }[]>`
    SELECT principal_id, name FROM agents WHERE id = ${a.agentId}`;
  return { principalId: row!.principal_id, name: row!.name, made: false };
}
