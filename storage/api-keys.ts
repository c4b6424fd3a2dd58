// API keys of the context-file API, stored as the SHA-256 of the whole key (the key itself is shown once).
import type { Sql } from './postgres.ts';

export interface ApiKeyRow {
  id: string;
  principal_id: string;
  name: string;
  hint: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

export async function insertApiKey(
  sql: Sql,
  k: { id: string; principalId: string; name: string; keySha256: string; hint: string; at: string },
): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    INSERT INTO api_keys (id, principal_id, name, key_sha256, hint, created_at)
    VALUES (${k.id}, ${k.principalId}, ${k.name}, ${k.keySha256}, ${k.hint}, ${k.at})
    RETURNING id, principal_id, name, hint, created_at, revoked_at, last_used_at`;
  return row!;
}

export function apiKeysOf(sql: Sql, principalId: string) {
  return sql<ApiKeyRow[]>`
    SELECT id, principal_id, name, hint, created_at, revoked_at, last_used_at FROM api_keys
    WHERE principal_id = ${principalId} ORDER BY created_at DESC, id DESC`;
}

/** Revoke one of the principal's keys (revoking twice keeps the first time); null when it has no such key. */
export async function revokeApiKey(sql: Sql, principalId: string, id: string, at: string): Promise<ApiKeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${at})
    WHERE id = ${id} AND principal_id = ${principalId}
    RETURNING id, principal_id, name, hint, created_at, revoked_at, last_used_at`;
  return row ?? null;
}

/**
 * The live key with this hash, marking it used. `last_used_at` is written at most once a minute per key, so a busy
 * key does not turn every request into a write.
 */
export async function useApiKey(
  sql: Sql,
  keySha256: string,
  at: string,
): Promise<{ id: string; principal_id: string } | null> {
  const [row] = await sql<{ id: string; principal_id: string; last_used_at: Date | null }[]>`
    SELECT id, principal_id, last_used_at FROM api_keys WHERE key_sha256 = ${keySha256} AND revoked_at IS NULL`;
  if (!row) return null;
  if (!row.last_used_at || Date.parse(at) - row.last_used_at.getTime() > 60_000) {
    await sql`UPDATE api_keys SET last_used_at = ${at} WHERE id = ${row.id}`;
  }
  return { id: row.id, principal_id: row.principal_id };
}
