// Live money in PostgreSQL (migration 024, docs/money.md): the projection's writes of billing facts (saved cards,
// connected accounts, top-ups, transfers) and the reads of the account page, GET /v1/payouts, the payout run and
// the account export. These facts are rare (a person's, not a purchase's), so each row is its own statement, in
// stream order.
import type { Sql } from './postgres.ts';

/** One billing change, in stream order, as the principal-facts projection writes it. */
export type BillingRow =
  | {
      kind: 'card';
      principal: string;
      seq: number;
      customer: string;
      paymentMethod: string;
      brand: string;
      last4: string;
      at: string;
    }
  | { kind: 'account'; principal: string; seq: number; account: string; enabled: boolean }
  | {
      kind: 'topup';
      principal: string;
      seq: number;
      id: string;
      paymentIntent: string;
      amount: number;
      state: 'pending' | 'credited' | 'failed';
      failureCode: string | null;
      failureMessage: string | null;
      at: string;
    }
  | {
      kind: 'transfer_started';
      principal: string;
      id: string;
      account: string;
      amount: number;
      fromSeq: number;
      throughSeq: number;
      at: string;
    }
  | {
      kind: 'transfer_finished';
      id: string;
      state: 'paid' | 'failed';
      processorTransfer: string | null;
      failure: string | null;
      at: string;
    };

export async function writeBillingRows(tx: Sql, rows: BillingRow[]): Promise<void> {
  for (const r of rows) {
    switch (r.kind) {
      case 'card':
        await tx`
          INSERT INTO billing_profiles (principal_id, customer_id, payment_method_id, card_brand, card_last4,
                                        card_saved_at, updated_seq)
          VALUES (${r.principal}, ${r.customer}, ${r.paymentMethod}, ${r.brand}, ${r.last4}, ${r.at}, ${r.seq})
          ON CONFLICT (principal_id) DO UPDATE SET customer_id = excluded.customer_id,
            payment_method_id = excluded.payment_method_id, card_brand = excluded.card_brand,
            card_last4 = excluded.card_last4, card_saved_at = excluded.card_saved_at, updated_seq = excluded.updated_seq`;
        break;
      case 'account':
        await tx`
          INSERT INTO billing_profiles (principal_id, connect_account_id, payouts_enabled, updated_seq)
          VALUES (${r.principal}, ${r.account}, ${r.enabled}, ${r.seq})
          ON CONFLICT (principal_id) DO UPDATE SET connect_account_id = excluded.connect_account_id,
            payouts_enabled = excluded.payouts_enabled, updated_seq = excluded.updated_seq`;
        break;
      case 'topup':
        // The processor's confirmation can be recorded before the request's own fact (its webhook raced the
        // answer): a pending row never replaces a settled one.
        await tx`
          INSERT INTO topups (id, principal_id, payment_intent_id, amount_cents, state, failure_code, failure_message,
                              created_at, updated_at, stream_seq)
          VALUES (${r.id}, ${r.principal}, ${r.paymentIntent}, ${r.amount}, ${r.state}, ${r.failureCode},
                  ${r.failureMessage}, ${r.at}, ${r.at}, ${r.seq})
          ON CONFLICT (id) DO UPDATE SET
            state = CASE WHEN excluded.state = 'pending' THEN topups.state ELSE excluded.state END,
            failure_code = coalesce(excluded.failure_code, topups.failure_code),
            failure_message = coalesce(excluded.failure_message, topups.failure_message),
            updated_at = greatest(topups.updated_at, excluded.updated_at)`;
        break;
      case 'transfer_started':
        await tx`
          INSERT INTO payout_transfers (id, seller_principal_id, account_id, amount_cents, from_seq, through_seq,
                                        state, started_at)
          VALUES (${r.id}, ${r.principal}, ${r.account}, ${r.amount}, ${r.fromSeq}, ${r.throughSeq}, 'pending', ${r.at})
          ON CONFLICT (id) DO NOTHING`;
        break;
      case 'transfer_finished':
        await tx`
          UPDATE payout_transfers SET state = ${r.state}, processor_transfer_id = ${r.processorTransfer},
            failure = ${r.failure}, finished_at = ${r.at}
          WHERE id = ${r.id}`;
        break;
    }
  }
}

export const billingTables = 'billing_profiles, topups, payout_transfers';

export interface BillingProfileRow {
  principal_id: string;
  customer_id: string | null;
  payment_method_id: string | null;
  card_brand: string | null;
  card_last4: string | null;
  card_saved_at: Date | null;
  connect_account_id: string | null;
  payouts_enabled: boolean;
}

export async function billingProfile(sql: Sql, principalId: string): Promise<BillingProfileRow | null> {
  const rows = await sql<BillingProfileRow[]>`SELECT * FROM billing_profiles WHERE principal_id = ${principalId}`;
  return rows[0] ?? null;
}

/** Sellers a payout run visits: payouts enabled, or a transfer left unfinished (it is resumed). */
export async function payoutCandidates(sql: Sql): Promise<string[]> {
  const rows = await sql<{ principal_id: string }[]>`
    SELECT principal_id FROM billing_profiles WHERE payouts_enabled
    UNION
    SELECT seller_principal_id FROM payout_transfers WHERE state = 'pending'`;
  return rows.map((r) => r.principal_id);
}

/**
 * A seller's live accruals after `afterSeq`, through the newest the projection has written: their sum and the
 * sequence of the last one. The projection writes in stream order, so nothing at or below that sequence is missing.
 */
export async function owedAccruals(
  sql: Sql,
  seller: string,
  afterSeq: number,
): Promise<{ amountCents: number; throughSeq: number } | null> {
  const [row] = await sql<{ amount: string | null; through: string | null }[]>`
    SELECT sum(amount_cents) AS amount, max(stream_seq) AS through FROM payouts
    WHERE seller_principal_id = ${seller} AND NOT sandbox AND stream_seq > ${afterSeq}`;
  if (!row?.amount || !row.through) return null;
  return { amountCents: Number(row.amount), throughSeq: Number(row.through) };
}

export interface TransferRow {
  id: string;
  account_id: string;
  amount_cents: number;
  from_seq: number;
  through_seq: number;
  state: 'pending' | 'paid' | 'failed';
  processor_transfer_id: string | null;
  failure: string | null;
  started_at: Date;
  finished_at: Date | null;
}

export async function sellerTransfers(sql: Sql, seller: string): Promise<TransferRow[]> {
  return sql<TransferRow[]>`
    SELECT id, account_id, amount_cents::float8 AS amount_cents, from_seq::float8 AS from_seq, through_seq::float8 AS through_seq,
           state, processor_transfer_id, failure, started_at, finished_at
    FROM payout_transfers WHERE seller_principal_id = ${seller} ORDER BY through_seq DESC`;
}

export interface TopupRow {
  id: string;
  payment_intent_id: string;
  amount_cents: number;
  state: 'pending' | 'credited' | 'failed';
  failure_code: string | null;
  failure_message: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function principalTopups(sql: Sql, principalId: string): Promise<TopupRow[]> {
  return sql<TopupRow[]>`
    SELECT id, payment_intent_id, amount_cents::float8 AS amount_cents, state, failure_code, failure_message, created_at,
           updated_at
    FROM topups WHERE principal_id = ${principalId} ORDER BY stream_seq DESC`;
}
