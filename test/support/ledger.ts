// The ledger the spec's money rules say a principal's facts make, written here from those rules (not from the
// projection's code), so a test can compare what was projected with what should have been: a credit adds its
// amount, a purchase holds the price (a debit), a release spends the held price (moves 0 available credits), a
// refund returns it. Facts that move no money make no entry.
import type { LedgerFact } from '../../contracts/index.ts';
import type { LedgerRow } from '../../storage/index.ts';

export type ExpectedEntry = LedgerRow;

export function expectedLedger(facts: { seq: number; fact: LedgerFact }[]): ExpectedEntry[] {
  const out: ExpectedEntry[] = [];
  for (const { seq, fact: f } of facts) {
    const entry = (type: LedgerRow['type'], amount: number, reference: string, runId: string | null) =>
      out.push({
        stream_seq: seq,
        id: f.id,
        principal_id: f.principalId,
        type,
        amount_cents: amount,
        balance_after_cents: f.balanceAfterCents,
        reference,
        run_id: runId,
        sandbox: f.sandbox,
        created_at: f.at,
      });
    if (f.type === 'credited')
      entry(f.source === 'sandbox_grant' ? 'sandbox_grant' : 'topup_credited', f.amountCents, f.topupId, null);
    else if (f.type === 'escrow_held') entry('escrow_held', -f.priceCents, f.orderId, f.orderId);
    else if (f.type === 'escrow_released') entry('escrow_released', 0, f.orderId, f.orderId);
    else if (f.type === 'escrow_refunded') entry('escrow_refunded', f.priceCents, f.orderId, f.orderId);
  }
  return out;
}
