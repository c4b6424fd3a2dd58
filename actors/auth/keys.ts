// ES256 key management and agent tokens. The private keys live in PostgreSQL (signing_keys); the gateway only ever
// sees the public JWK Set, which it fetches over the bus.
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import type { AgentTokenClaims } from '../../contracts/index.ts';
import { activateKey, activeKey, allKeys, type KeyPurpose, type Sql, type StoredKey } from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';

export async function newKey(purpose: KeyPurpose, clock: Clock): Promise<Omit<StoredKey, 'retiredAt'>> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = `${purpose}-${(await calculateJwkThumbprint(publicJwk)).slice(0, 16)}`;
  return {
    kid,
    purpose,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' } as JsonWebKey,
    publicJwk: { ...publicJwk, kid, alg: 'ES256', use: 'sig' } as JsonWebKey,
    createdAt: new Date(clock.nowMs()),
  };
}

/** The active key of a purpose, creating the first one if there is none (exactly one wins a concurrent start). */
export async function ensureActiveKey(sql: Sql, purpose: KeyPurpose, clock: Clock): Promise<StoredKey> {
  const existing = await activeKey(sql, purpose);
  if (existing) return existing;
  await activateKey(sql, await newKey(purpose, clock), true);
  return (await activeKey(sql, purpose))!;
}

export async function rotateKey(sql: Sql, purpose: KeyPurpose, clock: Clock): Promise<StoredKey> {
  await activateKey(sql, await newKey(purpose, clock), false);
  return (await activeKey(sql, purpose))!;
}

/** The public keys of one purpose as a JWK set, each naming its key id (verifiers pick a key by `kid`). */
export async function publicJwks(
  sql: Sql,
  purpose: KeyPurpose,
): Promise<{ keys: (JWK & { kid: string; kty: string })[] }> {
  return {
    keys: (await allKeys(sql, purpose)).map((k) => ({ ...k.publicJwk, kid: k.kid, kty: k.publicJwk.kty ?? 'EC' })),
  };
}

export interface TokenRequest {
  principalId: string;
  agentId: string;
  scopes: string[];
  sandbox: boolean;
  issuer: string;
  ttlSeconds: number;
  jti: string;
}

export async function signAgentToken(
  key: StoredKey,
  t: TokenRequest,
  clock: Clock,
): Promise<{ token: string; exp: number }> {
  const iat = Math.floor(clock.nowMs() / 1000);
  const exp = iat + t.ttlSeconds;
  const claims: Omit<AgentTokenClaims, 'iss' | 'aud' | 'exp' | 'iat' | 'jti' | 'sub'> = {
    principal_id: t.principalId,
    agent_id: t.agentId,
    scope: t.scopes.join(' '),
    sandbox: t.sandbox,
  };
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
    .setSubject(t.agentId)
    .setIssuer(t.issuer)
    .setAudience(t.issuer)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(t.jti)
    .sign(await importJWK(key.privateJwk as JWK, 'ES256'));
  return { token, exp };
}
