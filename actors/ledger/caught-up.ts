// Read-your-writes over the projections of the LEDGER stream: before answering, a read waits (briefly) until the
// projection it reads holds the caller's latest LEDGER fact, so a client that just bought or saw a settlement reads
// it. Each projection has its own checkpoint: principal facts (ledger entries, orders, payouts) unless the read
// names another (the events store).
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config, Names } from '../../contracts/index.ts';
import { type Projection, projectionCheckpoint, type Sql } from '../../storage/index.ts';
import { principalFactsOf } from './projection.ts';

/** How long a read waits for the projection to catch up before answering with what it has. */
const catchUpWaitMs = 1000;

/**
 * Resolves once `projection` (the principal-facts one if not given) holds the principal's latest fact, or after
 * catchUpWaitMs.
 */
export type CaughtUp = (principalId: string, projection?: Projection<unknown>) => Promise<void>;

export async function principalFactsCaughtUp(
  nc: NatsConnection,
  sql: Sql,
  names: Names,
  config: Config,
): Promise<CaughtUp> {
  const jsm = await jetstreamManager(nc);
  const principalFacts = principalFactsOf(names, config) as Projection<unknown>;
  return async (principalId, projection = principalFacts) => {
    const last = await jsm.direct.getMessage(names.streams.ledger.name, {
      last_by_subj: names.ledgerSubject(principalId),
    });
    if (!last) return;
    const deadline = Date.now() + catchUpWaitMs;
    while ((await projectionCheckpoint(sql, projection)) < last.seq && Date.now() < deadline) await sleep(10);
  };
}
