// Read-your-writes over the principal facts projection: before answering, a read waits (briefly) until the
// projection holds the caller's latest LEDGER fact, so a client that just bought or saw a settlement reads it.
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config, Names } from '../../contracts/index.ts';
import { type Projection, projectionCheckpoint, type Sql } from '../../storage/index.ts';
import { principalFactsOf } from './projection.ts';

/** How long a read waits for the projection to catch up before answering with what it has. */
const catchUpWaitMs = 1000;

/** Resolves once the projection holds the principal's latest fact, or after catchUpWaitMs. */
export type CaughtUp = (principalId: string) => Promise<void>;

export async function principalFactsCaughtUp(
  nc: NatsConnection,
  sql: Sql,
  names: Names,
  config: Config,
): Promise<CaughtUp> {
  const jsm = await jetstreamManager(nc);
  // Ledger entries, orders, payouts and events are one projection: one checkpoint to wait for.
  const projection = principalFactsOf(names, config) as Projection<unknown>;
  return async (principalId) => {
    const last = await jsm.direct.getMessage(names.streams.ledger.name, {
      last_by_subj: names.ledgerSubject(principalId),
    });
    if (!last) return;
    const deadline = Date.now() + catchUpWaitMs;
    while ((await projectionCheckpoint(sql, projection)) < last.seq && Date.now() < deadline) await sleep(10);
  };
}
