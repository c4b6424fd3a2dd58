// What the oauth service's handlers share.
import type { Logger } from 'pino';
import type { Config } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { ClientMetadataDocuments } from './client-metadata.ts';
import type { RevocationList } from './revocations.ts';
import type { OAuthTokens } from './tokens.ts';

export interface OAuthDeps {
  sql: Sql;
  config: Config;
  clock: Clock;
  ids: IdSource;
  tokens: OAuthTokens;
  revocations: RevocationList;
  /** Client ID metadata documents, fetched and kept. */
  documents: ClientMetadataDocuments;
  log: Logger;
}
