// What the audit reports (audit.ts): each broken invariant as a violation of a closed kind, about one subject.
export type ViolationKind =
  /** A stream message that is not JSON. */
  | 'fact_unreadable'
  /** Two facts of one stream with the same id. */
  | 'fact_id_duplicate'
  /** Two events (from the facts, or rows of the events store) with the same id. */
  | 'event_id_duplicate'
  /** A principal's facts on both sides of the sandbox line, or an order across it. */
  | 'sandbox_line'
  /**
   * A fact's balanceAfterCents is not the balance before it plus what it moves, or a balance went negative other
   * than by the processor taking money back (or fell further, or bought, while negative).
   */
  | 'balance'
  /** A principal's credits in differ from available + held + spent + withheld + reversed. */
  | 'conservation'
  /**
   * A refund or dispute of a card top-up that takes back more than its charge, refunds other than the processor's
   * increments, withholds a dispute twice, closes one that is not open, or miscounts the open disputes.
   */
  | 'chargeback_path'
  /** An order's facts are not held, then released or auto_refunded once, with the held order's terms. */
  | 'order_path'
  /**
   * A transfer of a seller's accruals that is not the next range, not their sum, or finished out of turn, or that
   * pays an accrual whose buyer had funds in dispute at the sequence the run checked (docs/money.md, Payouts held).
   */
  | 'payout_path'
  /** A listing's facts are not created, repriced while live, unlisted once. */
  | 'listing_path'
  /** A fact at or below the audited sequence has no row where its projection puts one. */
  | 'row_missing'
  /** A row no fact at or below the audited sequence explains. */
  | 'row_unexpected'
  /** A row whose columns differ from its fact's. */
  | 'row_differs'
  /** A principal's events are not numbered 1, 2, 3, ... in stream order. */
  | 'event_sequence'
  /** A projection set a fact aside (assay parked-facts). */
  | 'parked_fact'
  /** A projection's checkpoint did not reach the audited sequence within the wait. */
  | 'projection_behind';

export interface Violation {
  kind: ViolationKind;
  /** What it is about: `order <id>`, `principal <id>`, `ledger_entries seq <n>`, ... */
  subject: string;
  message: string;
  /** For row_differs: each column that differs. */
  differences?: { field: string; expected: unknown; actual: unknown }[];
}

/** A stream message that is not a fact: its text (or what it parsed to), cut short. */
export function notAFact(stream: 'LEDGER' | 'LISTINGS', seq: number, parsed: unknown, raw: string): Violation {
  return {
    kind: 'fact_unreadable',
    subject: `${stream} seq ${seq}`,
    message: `not a fact: ${(raw || JSON.stringify(parsed)).slice(0, 200)}`,
  };
}

/**
 * Every violation the checks return, counted; the first `listedMax` kept. A projection wiped of a column makes a
 * violation per row, so the count is exact and the list is bounded.
 */
export class Findings {
  count = 0;
  readonly listed: Violation[] = [];

  constructor(private readonly listedMax: number) {}

  add(violations: Iterable<Violation>): void {
    for (const v of violations) this.one(v);
  }

  async addAsync(violations: AsyncIterable<Violation>): Promise<void> {
    for await (const v of violations) this.one(v);
  }

  private one(v: Violation): void {
    this.count++;
    if (this.listed.length < this.listedMax) this.listed.push(v);
  }
}
