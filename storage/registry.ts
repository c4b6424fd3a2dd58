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

/**
 * Count one hit in the fixed one-minute window of `bucket` and return the count including it. One statement, so
 * every gateway and service process shares the same window.
 */
export async function countRateWindow(sql: Sql, bucket: string, windowStart: Date): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    INSERT INTO rate_windows (bucket, window_start, count) VALUES (${bucket}, ${windowStart}, 1)
    ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_windows.count + 1
    RETURNING count`;
  return row!.count;
}

export async function pruneRateWindows(sql: Sql, before: Date): Promise<void> {
  await sql`DELETE FROM rate_windows WHERE window_start < ${before}`;
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
