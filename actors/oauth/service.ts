// The oauth service: accounts and web sessions, and the OAuth 2.1 authorization server (docs/oauth.md). Stateless
// like every service (its records are in PostgreSQL, its revocations in the `<ns>_revoked` bucket): add workers to
// scale it.
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { Config, ServiceHandlers } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import { outboundOptionsOf } from '../shared/outbound-fetch.ts';
import { accountHandlers } from './accounts.ts';
import { apiKeyHandlers } from './api-keys.ts';
import { authorizationHandlers } from './authorization.ts';
import { ClientMetadataDocuments, metadataDocumentBytesMax } from './client-metadata.ts';
import { ensureFirstPartyClients } from './clients.ts';
import { RevocationList } from './revocations.ts';
import { tokenHandlers } from './token-endpoint.ts';
import { OAuthTokens } from './tokens.ts';

/** The service, once the deployment's own clients exist (made or brought up to date: every start does it). */
export async function oauthService(d: {
  sql: Sql;
  config: Config;
  clock: Clock;
  ids: IdSource;
  revoked: KV;
  log: Logger;
}): Promise<ServiceHandlers<'oauth'>> {
  await ensureFirstPartyClients(d.sql, d.clock.nowIso());
  const deps = {
    ...d,
    tokens: new OAuthTokens(
      d.sql,
      d.clock,
      d.config.baseUrl,
      d.config.oauthAccessTokenSeconds,
      d.config.oauthKeysTtlMs,
    ),
    revocations: new RevocationList(d.revoked),
    // One byte over the limit is read, so a document that is too large is told apart from one that fits.
    documents: new ClientMetadataDocuments(outboundOptionsOf(d.config, metadataDocumentBytesMax + 1), () =>
      d.clock.nowMs(),
    ),
  };
  return { ...accountHandlers(deps), ...apiKeyHandlers(deps), ...authorizationHandlers(deps), ...tokenHandlers(deps) };
}
