// What the principal actor's modules need from outside: names, time, ids, the idempotency index and the quotes.
import type { LedgerFact, Names, PlanName } from '../../contracts/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { IdempotencyIndex } from './idempotency-index.ts';
import type { Quotes } from './quotes.ts';

export interface PrincipalDeps {
  names: Names;
  clock: Clock;
  ids: IdSource;
  idempotencyRetentionMs: number;
  /** Idempotency records an actor keeps in memory; older ones are looked up in `index`. */
  hotKeysMax: number;
  index: IdempotencyIndex;
  /** A fact of this principal's by its LEDGER sequence, to replay its reply; null if it cannot be read. */
  loadFact(principalId: string, seq: number): Promise<LedgerFact | null>;
  quotes: Quotes;
  /** The plan of a principal no operator has put on one. */
  defaultPlan: PlanName;
  /** The plan of a sandbox principal no operator has set one for (ASSAY_SANDBOX_PLAN). */
  sandboxPlan: PlanName;
  /** How long a gateway spends a batch of rate-limit tokens (sizes the batches). */
  rateLeaseMs: number;
  /** How long a purchase above the approval threshold waits for the principal before it expires. */
  approvalTtlMs: number;
  /** Whether a payment processor is configured (STRIPE_SECRET_KEY): without one, live top-ups are unavailable. */
  processorConfigured: boolean;
}

/** The fields every ledger fact starts with. */
export function factBase(d: PrincipalDeps, principalId: string, sandbox: boolean, balanceAfterCents: number) {
  return { id: d.ids.uuid(), at: d.clock.nowIso(), principalId, sandbox, balanceAfterCents };
}
