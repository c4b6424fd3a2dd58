// Settlement: every `escrow_held` fact is settled with its edition's report, by a command to the buyer's
// principal actor, which decides released or auto-refunded against the order's floor and appends the outcome once
// (settling an order that is no longer held does nothing). Two paths lead there:
// - the settlement consumer follows the LEDGER stream and settles each held order whose report exists already;
// - the sweeper settles held orders whose report landed after they were bought.
// Both are idempotent by order id, so a crash anywhere repeats at most a command that then does nothing.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { BusReply, LedgerFact, Names } from '../../contracts/index.ts';
import { type Projection, reportForEdition, settleableOrders, type Sql } from '../../storage/index.ts';
import { principalOps, type SettleCommand } from '../principal/principal.ts';
import { busRequest } from '../runtime/service.ts';

const reportCacheMax = 200_000;

export interface SettlementDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  log: Logger;
  timeoutMs: number;
}

function settleCommand(d: SettlementDeps, principalId: string, c: SettleCommand): Promise<BusReply> {
  return busRequest(
    d.nc,
    d.names.actorSubject('principal', principalId),
    { op: principalOps.settle, requestId: `settle-${c.orderId}`, caller: null, params: {}, query: {}, body: c },
    d.timeoutMs,
  );
}

/**
 * The settlement consumer: reads the LEDGER stream from a checkpoint kept in PostgreSQL (an ordered consumer, no
 * per-message acknowledgement: most facts are not purchases), and for each batch sends the settle commands of its
 * held orders whose report exists, then advances the checkpoint. A crash before the checkpoint moves re-sends
 * commands that then do nothing. One per deployment (a singleton lease); the actors do the work it asks for.
 */
export function settlementProjection(d: SettlementDeps): Projection<LedgerFact> {
  // A report never changes once an edition has one, so known reports are cached for good (bounded).
  const reports = new Map<string, { digest: string; mean: number }>();
  const reportOf = async (editionId: string) => {
    const hit = reports.get(editionId);
    if (hit) return hit;
    const r = await reportForEdition(d.sql, editionId);
    if (!r) return null;
    if (reports.size >= reportCacheMax) reports.delete(reports.keys().next().value!);
    const value = { digest: r.digest, mean: r.mean_entailment };
    reports.set(editionId, value);
    return value;
  };
  return {
    checkpoint: `settlement:${d.names.streams.ledger.name}`,
    stream: d.names.streams.ledger.name,
    async apply(_tx, batch) {
      const commands = batch.flatMap(({ fact }) => (fact.type === 'escrow_held' ? [fact] : []));
      const replies = await Promise.all(
        commands.map(async (fact) => {
          const report = await reportOf(fact.editionId);
          // No report yet: the sweeper settles the order when it lands.
          if (!report) return null;
          return settleCommand(d, fact.principalId, {
            orderId: fact.orderId,
            reportDigest: report.digest,
            meanEntailment: report.mean,
          });
        }),
      );
      const failed = replies.find((r) => r && !r.ok);
      // Throwing rolls the checkpoint back: the batch is read again and its commands re-sent.
      if (failed && !failed.ok) throw new Error(`settlement command failed: ${failed.error.message}`);
    },
    async truncate() {},
  };
}

/** The sweeper: settles held orders whose report exists, every `intervalMs` (one per deployment). */
export async function runSettlementSweeper(d: SettlementDeps, signal: AbortSignal, intervalMs = 1000): Promise<void> {
  while (!signal.aborted) {
    try {
      for (;;) {
        const rows = await settleableOrders(d.sql, new Date(Date.now() - intervalMs), 500);
        await Promise.all(
          rows.map((r) =>
            settleCommand(d, r.buyer_principal_id, {
              orderId: r.id,
              reportDigest: r.digest,
              meanEntailment: r.mean_entailment,
            }),
          ),
        );
        if (rows.length < 500 || signal.aborted) break;
      }
    } catch (err) {
      d.log.error({ err }, 'settlement sweep failed');
    }
    await new Promise((resolve) => {
      const t = setTimeout(resolve, intervalMs);
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve(undefined);
      });
    });
  }
}
