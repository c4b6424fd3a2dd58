// What the payments service and its payout runs need from outside: the bus, the database, configuration and the
// processor.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Config, Names } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import type { Processor } from './processor.ts';

export interface PaymentsDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  config: Config;
  log: Logger;
  /** Defaults to the configured processor; null when STRIPE_SECRET_KEY is unset. */
  processor?: Processor | null;
}
