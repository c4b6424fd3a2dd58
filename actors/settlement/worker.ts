// Settlement: every `escrow_held` fact is settled with its edition's report by the buyer's principal actor, which
// decides released or auto-refunded against the order's floor and appends the outcome once (settling an order that
// is no longer held does nothing). Two paths lead there:
// - the actor itself, right after committing a purchase whose report its quote carried (a follow-up command in its
//   own mailbox, no bus round trip): nearly every order, within milliseconds;
// - the sweeper here, for held orders the first path did not settle: the report landed after the purchase, or the
//   actor host died between the two appends. It reads held orders from the orders projection.
// Both are idempotent by order id, so a crash anywhere repeats at most a command that then does nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { BusReply, Names, SettleCommand } from '../../contracts/index.ts';
import { settleableOrders, type Sql } from '../../storage/index.ts';
import { settleRequest } from '../principal/settlement.ts';
import { busRequest } from '../runtime/service.ts';

export interface SettlementDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  log: Logger;
  timeoutMs: number;
}

function settleCommand(d: SettlementDeps, principalId: string, c: SettleCommand): Promise<BusReply> {
  return busRequest(d.nc, d.names.actorSubject('principal', principalId), settleRequest(c), d.timeoutMs, d.log);
}

/**
 * The sweeper: every `intervalMs`, settles held orders at least that old whose report exists (one per deployment).
 */
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
    // Resolves early (with the AbortError swallowed) when the job stops; the timer removes its listener either way.
    await sleep(intervalMs, undefined, { signal }).catch(() => {});
  }
}
