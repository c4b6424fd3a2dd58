// Ledger reads from the PostgreSQL projection. A read waits (briefly) until the projection holds the principal's
// latest fact, so a client that just topped up sees its entry.
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  type BusReply,
  type BusRequest,
  errorReply,
  type LedgerPageT,
  type Names,
  okReply,
  pageLimits,
} from '../../contracts/index.ts';
import { ledgerProjection, projectionCheckpoint, readLedgerPage, type Sql } from '../../storage/index.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';

/** How long a ledger read waits for the projection to catch up before answering with what it has. */
const catchUpWaitMs = 1000;

export async function ledgerService(nc: NatsConnection, sql: Sql, names: Names) {
  const jsm = await jetstreamManager(nc);
  const projection = ledgerProjection(names);

  const waitForProjection = async (principalId: string) => {
    const last = await jsm.direct.getMessage(names.streams.ledger.name, {
      last_by_subj: names.ledgerSubject(principalId),
    });
    if (!last) return;
    const deadline = Date.now() + catchUpWaitMs;
    while ((await projectionCheckpoint(sql, projection)) < last.seq && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
  };

  return async (req: BusRequest): Promise<BusReply> => {
    if (req.op !== 'getLedger') return errorReply('not_found', `the ledger service has no operation ${req.op}`);
    const caller = req.caller!;
    const q = req.query as { cursor?: string; limit?: number };
    let beforeSeq: number | null = null;
    if (q.cursor !== undefined) {
      beforeSeq = decodeCursor('ledger', q.cursor);
      if (beforeSeq === null) return errorReply('validation_failed', 'cursor is not a ledger cursor from this API');
    }
    if (beforeSeq === null) await waitForProjection(caller.principalId);
    const page = await readLedgerPage(sql, {
      principalId: caller.principalId,
      beforeSeq,
      limit: q.limit ?? pageLimits.default,
    });
    const body: LedgerPageT = {
      items: page.items,
      next_cursor: page.nextBeforeSeq === null ? null : encodeCursor('ledger', page.nextBeforeSeq),
    };
    return okReply(200, body);
  };
}
