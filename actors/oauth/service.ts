// The oauth service: accounts and web sessions, and the OAuth 2.1 authorization server (docs/oauth.md). Stateless
// like every service (its records are in PostgreSQL, its revocations in the `<ns>_revoked` bucket): add workers to
// scale it.
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { Config, ServiceHandlers } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import { accountHandlers } from './accounts.ts';
import { apiKeyHandlers } from './api-keys.ts';
import { authorizationHandlers } from './authorization.ts';
import { RevocationList } from './revocations.ts';
import { tokenHandlers } from './token-endpoint.ts';
import { OAuthTokens } from './tokens.ts';

export function oauthService(d: {
  sql: Sql;
  config: Config;
  clock: Clock;
  ids: IdSource;
  revoked: KV;
  log: Logger;
}): ServiceHandlers<'oauth'> {
  const deps = {
    ...d,
    tokens: new OAuthTokens(d.sql, d.clock, d.config.baseUrl, d.config.oauthAccessTokenSeconds),
    revocations: new RevocationList(d.revoked),
  };
  return { ...accountHandlers(deps), ...apiKeyHandlers(deps), ...authorizationHandlers(deps), ...tokenHandlers(deps) };
}
