// Facts: the durable records actors append to JetStream. A fact is never changed once written; state, projections
// and events are derived from them. Every fact carries a stable id (also its JetStream message id) and its time.

/** The result stored with a fact when the command that produced it carried an Idempotency-Key. */
export interface IdempotencyRecord {
  key: string;
  requestHash: string;
  agentId: string;
  reply: { status: number; body: unknown };
}

interface FactBase {
  id: string;
  /** ISO 8601 time the actor decided the fact. */
  at: string;
  principalId: string;
  sandbox: boolean;
  /** Available credits after this fact, in cents; written by the actor so projections need no fold. */
  balanceAfterCents: number;
  idempotency?: IdempotencyRecord;
}

/** Credits landed: a sandbox top-up, the sandbox grant at registration, or (later) a confirmed payment. */
export interface CreditedFact extends FactBase {
  type: 'credited';
  source: 'sandbox_topup' | 'sandbox_grant';
  amountCents: number;
  topupId: string;
}

/**
 * A mutating call whose effect lives elsewhere (an artifact, a listing) was completed: the fact stores only its
 * idempotency record, so the principal actor stays the one place that knows every key its principal used.
 */
export interface CallRecordedFact extends FactBase {
  type: 'call_recorded';
  op: string;
}

/** Facts on a principal's ledger subject (`<ns>.ledger.<principalId>`). */
export type LedgerFact = CreditedFact | CallRecordedFact;

interface ListingFactBase {
  id: string;
  at: string;
  listingId: string;
}

/** Facts on a listing's subject (`<ns>.listing.<listingId>`). */
export type ListingFact =
  | (ListingFactBase & {
      type: 'listing_created';
      artifactId: string;
      sellerPrincipalId: string;
      priceCents: number;
      floor: number;
      formats: ('md' | 'pdf')[];
      billing: { intervalSeconds: number } | null;
      sandbox: boolean;
    })
  | (ListingFactBase & { type: 'listing_repriced'; priceCents: number })
  | (ListingFactBase & { type: 'listing_unlisted' });
