// The payout run (docs/money.md): for each seller the processor lets receive transfers, one transfer of the live
// accruals released since the last one. Exactly once, through a crash at any point: the seller's actor records the
// transfer (its accruals' range and amount) before the processor is asked, the processor is asked with an
// idempotency key and transfer group that are the transfer's id, and the outcome is recorded after. A run that
// finds a transfer in flight finishes it first, looking it up at the processor before asking again. Accruals paid
// by a buyer whose funds are in dispute wait, and so does every payout of a seller whose own balance is negative
// (docs/money.md, Payouts held).
import { setTimeout as sleep } from 'node:timers/promises';
import type Stripe from 'stripe';
import {
  type InternalOpId,
  type PayoutInFlight,
  type PayoutRunSummary,
  processorCurrency,
  type RequestOf,
  internalRequest,
} from '../../contracts/index.ts';
import { payableAccruals, payoutCandidates, principalFactsCheckpoint } from '../../storage/index.ts';
import { askInternal } from '../runtime/service.ts';
import { isProcessorError, type Processor, processorOf } from './processor.ts';
import type { PaymentsDeps } from './deps.ts';

export async function runPayouts(
  d: PaymentsDeps & { processor: Processor },
  onlyPrincipalId?: string,
): Promise<PayoutRunSummary> {
  const summary: PayoutRunSummary = { sellers: 0, transfers: 0, paidCents: 0, resumed: 0, failed: [], held: [] };
  const checkpoint = principalFactsCheckpoint(d.names);
  const ask = <Id extends InternalOpId>(op: Id, principalId: string, body: RequestOf<Id>['body']) =>
    askInternal(
      d.nc,
      d.names.actorSubject('principal', principalId),
      internalRequest(op, body, { requestId: `payout-${principalId}` }),
      d.config.requestTimeoutMs,
      d.log,
    );
  const sellers = onlyPrincipalId ? [onlyPrincipalId] : await payoutCandidates(d.sql);
  for (const principalId of sellers) {
    summary.sellers++;
    const fail = (reason: string) => summary.failed.push({ principalId, reason });
    const hold = (reason: string) => summary.held.push({ principalId, reason });
    const position = await ask('billing.get', principalId, { principalId });
    if (!position.ok) {
      fail(position.reply.ok ? 'no answer' : position.reply.error.message);
      continue;
    }
    let transfer: PayoutInFlight | null = position.body.payoutInFlight;
    if (transfer) summary.resumed++;
    else {
      if (!position.body.payoutAccount?.payoutsEnabled) continue;
      const owed = await payableAccruals(d.sql, principalId, position.body.payoutThroughSeq, checkpoint);
      if (owed.held) {
        const h = owed.held;
        hold(
          `the accrual of order ${h.orderId} (LEDGER seq ${h.seq}) and those after it wait: its buyer ${h.buyer} has ${h.openDisputes} dispute(s) open and owes ${h.owedCents} cents after card top-ups taken back`,
        );
      }
      if (!owed.payable) continue;
      const begun = await ask('payout.begin', principalId, {
        principalId,
        fromSeq: position.body.payoutThroughSeq,
        throughSeq: owed.payable.throughSeq,
        amountCents: owed.payable.amountCents,
        checkedThroughSeq: owed.checkedThroughSeq,
      });
      if (!begun.ok) {
        // The seller's own balance is negative: the rule holds its payouts, nothing failed.
        if (!begun.reply.ok && begun.reply.error.code === 'insufficient_credits') hold(begun.reply.error.message);
        else fail(begun.reply.ok ? 'no answer' : begun.reply.error.message);
        continue;
      }
      transfer = begun.body.transfer;
      if (begun.body.resumed) summary.resumed++;
    }
    const outcome = await transferOnce(d.processor, principalId, transfer);
    if (outcome.kind === 'unknown') {
      // Left in flight: the next run asks the processor again with the same key.
      fail(`the processor did not confirm transfer ${transfer.transferId}: ${outcome.reason}`);
      continue;
    }
    const finished = await ask('payout.finish', principalId, {
      principalId,
      transferId: transfer.transferId,
      outcome: outcome.kind,
      processorTransferId: outcome.kind === 'paid' ? outcome.id : null,
      failure: outcome.kind === 'failed' ? outcome.reason : null,
    });
    if (!finished.ok) {
      fail(`transfer ${transfer.transferId} made, its record not yet: the next run records it`);
      continue;
    }
    if (outcome.kind === 'paid') {
      summary.transfers++;
      summary.paidCents += transfer.amountCents;
    } else fail(outcome.reason);
  }
  return summary;
}

type TransferOutcome =
  | { kind: 'paid'; id: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'unknown'; reason: string };

/** Make the transfer, or find the one an earlier attempt made (idempotency keys expire at the processor; groups do not). */
async function transferOnce(p: Processor, principalId: string, t: PayoutInFlight): Promise<TransferOutcome> {
  try {
    const made = await p.transfers.list({ transfer_group: t.transferId, limit: 1 });
    const existing = made.data[0];
    if (existing) return { kind: 'paid', id: existing.id };
    const transfer: Stripe.Transfer = await p.transfers.create(
      {
        amount: t.amountCents,
        currency: processorCurrency,
        destination: t.accountId,
        transfer_group: t.transferId,
        metadata: {
          principal_id: principalId,
          transfer_id: t.transferId,
          from_seq: String(t.fromSeq),
          through_seq: String(t.throughSeq),
        },
      },
      { idempotencyKey: `assay-payout-${t.transferId}` },
    );
    return { kind: 'paid', id: transfer.id };
  } catch (err) {
    // The processor refused the transfer itself (an account that cannot receive it): the accruals are owed again.
    if (isProcessorError(err) && err.type === 'StripeInvalidRequestError')
      return { kind: 'failed', reason: err.message };
    return { kind: 'unknown', reason: err instanceof Error ? err.message : String(err) };
  }
}

/** The scheduled payout run: one run per interval on the worker that holds the job's lease. */
export async function runPayoutSchedule(d: PaymentsDeps, intervalMs: number, signal: AbortSignal): Promise<void> {
  const processor = d.processor === undefined ? processorOf(d.config) : d.processor;
  if (!processor) return;
  while (!signal.aborted) {
    await sleep(intervalMs, undefined, { signal }).catch(() => {});
    if (signal.aborted) break;
    try {
      const summary = await runPayouts({ ...d, processor });
      d.log.info({ summary }, 'payout run finished');
    } catch (err) {
      d.log.error({ err }, 'payout run failed; the next run resumes what it left in flight');
    }
  }
}
