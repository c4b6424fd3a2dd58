// ES256 signing keys (private and public JWK) in PostgreSQL. One active key per purpose; rotation retires the old
// one, which stays listed so tokens and reports it signed still verify.
import type { Sql } from './postgres.ts';

export type KeyPurpose = 'token' | 'report';

export interface StoredKey {
  kid: string;
  purpose: KeyPurpose;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  createdAt: Date;
  retiredAt: Date | null;
}

type KeyRow = {
  kid: string;
  purpose: KeyPurpose;
  private_jwk: JsonWebKey;
  public_jwk: JsonWebKey;
  created_at: Date;
  retired_at: Date | null;
};

const toKey = (r: KeyRow): StoredKey => ({
  kid: r.kid,
  purpose: r.purpose,
  privateJwk: r.private_jwk,
  publicJwk: r.public_jwk,
  createdAt: r.created_at,
  retiredAt: r.retired_at,
});

export async function activeKey(sql: Sql, purpose: KeyPurpose): Promise<StoredKey | null> {
  const rows = await sql<KeyRow[]>`SELECT * FROM signing_keys WHERE purpose = ${purpose} AND retired_at IS NULL`;
  return rows[0] ? toKey(rows[0]) : null;
}

export async function allKeys(sql: Sql, purpose: KeyPurpose): Promise<StoredKey[]> {
  const rows = await sql<KeyRow[]>`SELECT * FROM signing_keys WHERE purpose = ${purpose} ORDER BY created_at`;
  return rows.map(toKey);
}

/**
 * Make `key` the active key of its purpose, retiring the current one. With `onlyIfNone`, do nothing when an active
 * key exists (first start of several processes at once: exactly one key wins, the unique index sees to it).
 */
export async function activateKey(sql: Sql, key: Omit<StoredKey, 'retiredAt'>, onlyIfNone: boolean): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext(${`assay.keys.${key.purpose}`}))`;
    const current = await tx`SELECT kid FROM signing_keys WHERE purpose = ${key.purpose} AND retired_at IS NULL`;
    if (current.length > 0 && onlyIfNone) return;
    await tx`UPDATE signing_keys SET retired_at = now() WHERE purpose = ${key.purpose} AND retired_at IS NULL`;
    await tx`INSERT INTO signing_keys (kid, purpose, private_jwk, public_jwk, created_at)
             VALUES (${key.kid}, ${key.purpose}, ${tx.json(key.privateJwk as never)}, ${tx.json(key.publicJwk as never)}, ${key.createdAt})`;
  });
}
