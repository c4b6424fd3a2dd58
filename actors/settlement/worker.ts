// Settlement: every `escrow_held` fact is settled with its edition's report by the buyer's principal actor, which
// decides released or auto-refunded against the order's floor and appends the outcome once (settling an order that
// is no longer held does nothing). Two paths lead there:
// - the actor itself, right after committing a purchase whose report its quote carried (a follow-up command in its
//   own mailbox, no bus round trip): nearly every order, within milliseconds;
// - the sweeper here, for held orders the first path did not settle: the report landed after the purchase, or the
//   actor host died between the two appends. It reads held orders from the orders projection.
// Both are idempotent by order id, so a crash anywhere repeats at most a command that then does nothing.
// No buyer's money waits on a judge for ever: an order whose edition still has no report after
// ASSAY_REPORT_WAIT_SECONDS (its judge unreachable) is refunded by the sweeper, with the reason `no_report`.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { BusReply, Names, SettleCommand } from '../../contracts/index.ts';
import { ordersWithoutReport, settleableOrders, type Sql } from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';
import { settleRequest } from '../principal/settlement.ts';
import { busRequest } from '../runtime/service.ts';

export interface SettlementDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  log: Logger;
  clock: Clock;
  timeoutMs: number;
  /** How long an order may wait for its edition's report before it is refunded without one. */
  reportWaitMs: number;
}

function settleCommand(d: SettlementDeps, principalId: string, c: SettleCommand): Promise<BusReply> {
  return busRequest(d.nc, d.names.actorSubject('principal', principalId), settleRequest(c), d.timeoutMs, d.log);
}

/**
 * The sweeper (one per deployment): every `intervalMs`, settles held orders at least that old whose report exists,
 * and refunds held orders that have waited longer than `reportWaitMs` for one.
 */
export async function runSettlementSweeper(d: SettlementDeps, signal: AbortSignal, intervalMs = 1000): Promise<void> {
  while (!signal.aborted) {
    try {
      for (;;) {
        const rows = await settleableOrders(d.sql, new Date(d.clock.nowMs() - intervalMs), 500);
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
      for (;;) {
        const now = d.clock.nowMs();
        const overdue = await ordersWithoutReport(d.sql, new Date(now - d.reportWaitMs), 500);
        await Promise.all(
          overdue.map((r) =>
            settleCommand(d, r.buyer_principal_id, {
              orderId: r.id,
              noReportAfterSeconds: Math.floor((now - r.created_at.getTime()) / 1000),
            }),
          ),
        );
        if (overdue.length > 0) d.log.warn({ orders: overdue.length }, 'orders refunded: no report within the wait');
        if (overdue.length < 500 || signal.aborted) break;
      }
    } catch (err) {
      d.log.error({ err }, 'settlement sweep failed');
    }
    // Resolves early (with the AbortError swallowed) when the job stops; the timer removes its listener either way.
    await sleep(intervalMs, undefined, { signal }).catch(() => {});
  }
}
