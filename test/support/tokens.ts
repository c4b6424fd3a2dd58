// Tokens minted with the service's own signing key, for cases registration cannot produce (missing scopes,
// expired tokens, live tokens).
import { randomUUID } from 'node:crypto';
import { ensureActiveKey, signAgentToken } from '../../actors/index.ts';
import type { Config } from '../../contracts/index.ts';
import { openPool } from '../../storage/index.ts';

export async function mintToken(
  config: Config,
  o: {
    principalId?: string;
    agentId?: string;
    scopes?: string[];
    sandbox?: boolean;
    ttlSeconds?: number;
    issuedAtMs?: number;
  },
): Promise<string> {
  const sql = openPool(config.databaseUrl, 1);
  try {
    const key = await ensureActiveKey(sql, 'token', {
      nowMs: () => Date.now(),
      nowIso: () => new Date().toISOString(),
    });
    const at = o.issuedAtMs ?? Date.now();
    const { token } = await signAgentToken(
      key,
      {
        principalId: o.principalId ?? randomUUID(),
        agentId: o.agentId ?? randomUUID(),
        scopes: o.scopes ?? ['read:artifact', 'read:trust', 'purchase'],
        sandbox: o.sandbox ?? true,
        issuer: config.baseUrl,
        ttlSeconds: o.ttlSeconds ?? 3600,
        jti: randomUUID(),
      },
      { nowMs: () => at, nowIso: () => new Date(at).toISOString() },
    );
    return token;
  } finally {
    await sql.end({ timeout: 1 });
  }
}
