// What the workers role (cli/roles.ts) hands the services it serves and the loops it runs, from the one NATS
// connection, PostgreSQL pool and clock of its process. Each service or loop adds what it alone needs.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Config, Names } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import type { Clock } from './clock.ts';

/** What a service on the bus is built with. */
export interface WorkerServiceDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  config: Config;
  clock: Clock;
  log?: Logger;
}

/** What a loop run by every worker needs that reads what is due from a projection and sends it to the actors. */
export interface DueWorkLoopDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  clock: Clock;
  log: Logger;
  /** How long the loop waits after a pass that did not fill its batch. */
  pollMs: number;
  /** Deadline of one command sent to an actor. */
  timeoutMs: number;
}
