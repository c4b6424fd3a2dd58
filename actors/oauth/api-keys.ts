// API keys of the context-file API: issued to a signed-in person (account page or the API's own route), shown once,
// stored as their SHA-256, revoked at once. The context face resolves a presented key here on every request, so a
// revoked key stops working with the next request.
import { credentialPrefixes, errorReply, isUuid, okReply, type ServiceHandlers } from '../../contracts/index.ts';
import { type ApiKeyRow, apiKeysOf, insertApiKey, revokeApiKey, useApiKey } from '../../storage/index.ts';
import type { OAuthDeps } from './deps.ts';
import { newSecret, secretHash } from './secrets.ts';

type Handlers = ServiceHandlers<'oauth'>;

const view = (r: ApiKeyRow) => ({
  id: r.id,
  name: r.name,
  hint: r.hint,
  created_at: r.created_at.toISOString(),
  revoked_at: r.revoked_at?.toISOString() ?? null,
  last_used_at: r.last_used_at?.toISOString() ?? null,
});

export function apiKeyHandlers(
  d: OAuthDeps,
): Pick<Handlers, 'oauth.apiKeyCreate' | 'oauth.apiKeyList' | 'oauth.apiKeyRevoke' | 'oauth.apiKeyResolve'> {
  const { sql } = d;
  return {
    async 'oauth.apiKeyCreate'({ body }) {
      const key = newSecret(credentialPrefixes.apiKey);
      const row = await insertApiKey(sql, {
        id: d.ids.uuid(),
        principalId: body.principalId,
        name: body.name,
        keySha256: key.hash,
        hint: key.value.slice(-4),
        at: d.clock.nowIso(),
      });
      return okReply(201, { ...view(row), key: key.value });
    },
    async 'oauth.apiKeyList'({ body }) {
      return okReply(200, (await apiKeysOf(sql, body.principalId)).map(view));
    },
    async 'oauth.apiKeyRevoke'({ body }) {
      const row = isUuid(body.id) ? await revokeApiKey(sql, body.principalId, body.id, d.clock.nowIso()) : null;
      return row ? okReply(200, view(row)) : errorReply('not_found', 'no API key of yours has this id');
    },
    async 'oauth.apiKeyResolve'({ body }) {
      const found = body.key.startsWith(credentialPrefixes.apiKey)
        ? await useApiKey(sql, secretHash(body.key), d.clock.nowIso())
        : null;
      if (!found) return errorReply('unauthorized', 'the API key is not valid (unknown or revoked)');
      return okReply(200, { principalId: found.principal_id, keyId: found.id });
    },
  };
}
