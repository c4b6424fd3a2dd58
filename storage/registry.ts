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
