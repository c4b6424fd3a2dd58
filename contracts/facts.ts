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

/** Facts on a principal's ledger subject (`<ns>.ledger.<principalId>`). */
export type LedgerFact = CreditedFact;
