// Live money in PostgreSQL (migration 024, docs/money.md): the projection's writes of billing facts (saved cards,
// connected accounts, top-ups, transfers) and the reads of the account page, GET /v1/payouts, the payout run and
// the account export. These facts are rare (a person's, not a purchase's), so each row is its own statement, in
// stream order.
import { jsonRows, type Sql } from './postgres.ts';

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

export const billingTables = 'billing_profiles, topups, payout_transfers, chargeback_standing';

/**
 * A principal's standing after a fact of the batch (migration 035): from a chargeback fact, its open disputes and
 * what it owes; from a fact that only changes what it owes (`openDisputes` null: a card top-up credited, an order
 * refunded), written only where the principal has a row already.
 */
export interface StandingRow {
  principal: string;
  seq: number;
  openDisputes: number | null;
  owedCents: number;
}

/** One statement per kind, the newest row per principal (the caller keeps one per principal per batch). */
export async function writeChargebackStanding(tx: Sql, rows: StandingRow[]): Promise<void> {
  const full = rows.filter((r) => r.openDisputes !== null);
  const owedOnly = rows.filter((r) => r.openDisputes === null);
  if (full.length > 0) {
    await tx`
      INSERT INTO chargeback_standing (principal_id, open_disputes, owed_cents, updated_seq)
      SELECT r.principal, r."openDisputes", r."owedCents", r.seq
      FROM json_to_recordset(${jsonRows(full)}::text::json)
        AS r(principal uuid, seq bigint, "openDisputes" integer, "owedCents" bigint)
      ON CONFLICT (principal_id) DO UPDATE SET open_disputes = excluded.open_disputes,
        owed_cents = excluded.owed_cents, updated_seq = excluded.updated_seq
      WHERE chargeback_standing.updated_seq < excluded.updated_seq`;
  }
  if (owedOnly.length > 0) {
    await tx`
      UPDATE chargeback_standing s SET owed_cents = r."owedCents", updated_seq = r.seq
      FROM json_to_recordset(${jsonRows(owedOnly)}::text::json) AS r(principal uuid, seq bigint, "owedCents" bigint)
      WHERE s.principal_id = r.principal AND s.updated_seq < r.seq`;
  }
}

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

/** A seller's accrual that waits: the buyer whose credits paid it has funds in dispute (docs/money.md, Payouts held). */
export interface HeldAccrual {
  seq: number;
  orderId: string;
  buyer: string;
  openDisputes: number;
  owedCents: number;
}

export interface PayableAccruals {
  /** The principal-facts projection's checkpoint the snapshot holds the facts through. */
  checkedThroughSeq: number;
  /** The accruals payable now, in (afterSeq, throughSeq]; null when there are none. */
  payable: { amountCents: number; throughSeq: number } | null;
  /** The first accrual after afterSeq that waits, if any: it and every later one wait. */
  held: HeldAccrual | null;
}

/**
 * What a payout run may pay a seller, read in one snapshot with the principal-facts projection's checkpoint
 * (`checkpoint` names it): the live accruals after `afterSeq` up to the first one whose buyer had a dispute open or
 * owed a chargeback as of that checkpoint (their sum and the sequence of the last one; null when there are none),
 * and that first held one. The projection writes rows and checkpoint in one transaction, in stream order, so the
 * snapshot is the stream's facts through the checkpoint: nothing at or below it is missing.
 */
export async function payableAccruals(
  sql: Sql,
  seller: string,
  afterSeq: number,
  checkpoint: string,
): Promise<PayableAccruals> {
  return (await sql.begin('isolation level repeatable read read only', async (tx) => {
    const t = tx as unknown as Sql;
    const [cp] = await t<{ last_seq: string }[]>`
      SELECT last_seq FROM projection_checkpoints WHERE name = ${checkpoint}`;
    const [held] = await t<
      { seq: string; order_id: string; buyer: string; open_disputes: number; owed_cents: string }[]
    >`
      SELECT p.stream_seq AS seq, p.order_id, o.buyer_principal_id AS buyer, s.open_disputes, s.owed_cents
      FROM payouts p
      JOIN orders o ON o.id = p.order_id
      JOIN chargeback_standing s ON s.principal_id = o.buyer_principal_id
      WHERE p.seller_principal_id = ${seller} AND NOT p.sandbox AND p.stream_seq > ${afterSeq}
        AND (s.open_disputes > 0 OR s.owed_cents > 0)
      ORDER BY p.stream_seq LIMIT 1`;
    const heldSeq = held ? Number(held.seq) : null;
    const [row] = await t<{ amount: string | null; through: string | null }[]>`
      SELECT sum(amount_cents) AS amount, max(stream_seq) AS through FROM payouts
      WHERE seller_principal_id = ${seller} AND NOT sandbox AND stream_seq > ${afterSeq}
        AND stream_seq < ${heldSeq ?? Number.MAX_SAFE_INTEGER}`;
    return {
      checkedThroughSeq: Number(cp?.last_seq ?? 0),
      payable: row?.amount && row.through ? { amountCents: Number(row.amount), throughSeq: Number(row.through) } : null,
      held: held
        ? {
            seq: heldSeq!,
            orderId: held.order_id,
            buyer: held.buyer,
            openDisputes: held.open_disputes,
            owedCents: Number(held.owed_cents),
          }
        : null,
    };
  })) as PayableAccruals;
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
