// What the audit knows of the facts (audit.ts), explicit: built by one pass over the LEDGER stream (ledger-facts.ts)
// and one over LISTINGS (listing-facts.ts), then read by the checks of the facts alone (invariants.ts) and of the
// projections' rows (rows.ts). Expected rows are kept in the form the row checks compare: dates as ISO strings.
import type { LedgerFact, ListingFact, SettledOrder } from '../../contracts/index.ts';

/** The terms of an order as its held fact has them (a settlement must repeat them), and its settlement once read. */
export interface ExpectedOrder extends Omit<SettledOrder, 'orderId'> {
  row: Record<string, unknown>;
  heldSeq: number;
  settlement: { seq: number; row: Record<string, unknown> } | null;
}

/** Where credits are (docs/money.md): every cent credited is available, held, spent, withheld or reversed. */
export interface Money {
  creditedCents: number;
  availableCents: number;
  heldCents: number;
  spentCents: number;
  /** Withheld by open disputes of card top-ups. */
  withheldCents: number;
  /** Taken back for good: refunds and lost disputes. */
  reversedCents: number;
}

export const moneyKeys = [
  'creditedCents',
  'availableCents',
  'heldCents',
  'spentCents',
  'withheldCents',
  'reversedCents',
] as const satisfies readonly (keyof Money)[];

export const noMoney = (): Money => ({
  creditedCents: 0,
  availableCents: 0,
  heldCents: 0,
  spentCents: 0,
  withheldCents: 0,
  reversedCents: 0,
});

export interface PrincipalMoney extends Money {
  sandbox: boolean;
  /** Card top-up charges the processor took money back from, by charge id; null until the first. */
  charges: Map<string, ChargeRecord> | null;
  openDisputes: number;
  /**
   * From its first chargeback on: [seq, in dispute] at each change of whether its funds are in dispute (a dispute
   * open, or a negative balance), for the payout-hold rule; and each write of its chargeback_standing row.
   */
  disputedLog: [number, boolean][];
  standing: { seq: number; row: Record<string, unknown> }[];
}

export interface ChargeRecord {
  paymentIntentId: string;
  chargeCents: number;
  refundedCents: number;
  disputes: Map<string, { amountCents: number; state: 'open' | 'won' | 'lost' }>;
}

export interface SellerPayouts {
  /** Live accruals as [stream seq, cents, buyer], in stream order. */
  accruals: [number, number, string][];
  throughSeq: number;
  inFlight: { transferId: string; amountCents: number; fromSeq: number } | null;
  paidCents: number;
}

export interface ExpectedTransfer {
  seq: number;
  row: Record<string, unknown>;
  finished: { seq: number; state: string; processorTransferId: string | null } | null;
}

export interface ListingHistory {
  facts: { seq: number; fact: ListingFact }[];
}

export type ExpectedEvent = { sourceSeq: number; row: Record<string, unknown> };

export interface AuditState {
  /** Each principal's money by its facts, by principal id. */
  principals: Map<string, PrincipalMoney>;
  /** Each order as held, with its settlement, by order id. */
  orders: Map<string, ExpectedOrder>;
  /** The ledger_entries rows the facts make (credits and chargebacks), by stream sequence. */
  entries: Map<number, Record<string, unknown>>;
  /** The payouts row each release accrues, by order id. */
  payouts: Map<string, { seq: number; row: Record<string, unknown> }>;
  /** Each seller's live accruals and transfers, by principal id. */
  sellers: Map<string, SellerPayouts>;
  transfers: Map<string, ExpectedTransfer>;
  /** The events store's rows the facts make (eventRows), by event id. */
  events: Map<string, ExpectedEvent>;
  ledgerFactIds: Set<string>;
  listings: Map<string, ListingHistory>;
  listingFactIds: Set<string>;
}

export function newAuditState(): AuditState {
  return {
    principals: new Map(),
    orders: new Map(),
    entries: new Map(),
    payouts: new Map(),
    sellers: new Map(),
    transfers: new Map(),
    events: new Map(),
    ledgerFactIds: new Set(),
    listings: new Map(),
    listingFactIds: new Set(),
  };
}

export function sellerOf(state: AuditState, id: string): SellerPayouts {
  let s = state.sellers.get(id);
  if (!s) {
    s = { accruals: [], throughSeq: 0, inFlight: null, paidCents: 0 };
    state.sellers.set(id, s);
  }
  return s;
}

/** Whether a principal's funds were in dispute after the facts through `seq`. */
export function disputedAt(state: AuditState, principalId: string, seq: number): boolean {
  let disputed = false;
  for (const [at, d] of state.principals.get(principalId)?.disputedLog ?? []) {
    if (at > seq) break;
    disputed = d;
  }
  return disputed;
}

export const iso = (s: string) => (s.length === 24 && s.endsWith('Z') ? s : new Date(s).toISOString());

/** A listing's row as its facts at or below `through` make it (storage/listings.ts), or null before it was created. */
export function listingAt(h: ListingHistory, through: number): Record<string, unknown> | null {
  let row: Record<string, unknown> | null = null;
  for (const { seq, fact: f } of h.facts) {
    if (seq > through) break;
    if (f.type === 'listing_created') {
      row = {
        id: f.listingId,
        artifact_id: f.artifactId,
        seller_principal_id: f.sellerPrincipalId,
        price_cents: f.priceCents,
        floor: f.floor,
        formats: f.formats,
        billing_interval_seconds: f.billing?.intervalSeconds ?? null,
        state: 'live',
        sandbox: f.sandbox,
        created_at: iso(f.at),
        updated_at: iso(f.at),
        last_seq: seq,
      };
      continue;
    }
    if (!row) continue;
    if (f.type === 'listing_repriced') row.price_cents = f.priceCents;
    else row.state = 'unlisted';
    row.updated_at = iso(f.at);
    row.last_seq = seq;
  }
  return row;
}

/** The chargeback facts: a refund or dispute of a card top-up. */
export type ChargebackFact = Extract<
  LedgerFact,
  { type: 'topup_refunded' | 'topup_disputed' | 'topup_dispute_closed' }
>;
