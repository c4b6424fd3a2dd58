// The projections' rows against the facts (audit.ts): each table read in chunks from one read-only snapshot and
// compared with the rows the facts at or below the audited sequence make (`h`, each projection's horizon). A row
// written by a fact after the audited sequence is outside the audit. Each check yields its violations as it reads.
import { isDeepStrictEqual } from 'node:util';
import type { AuditSnapshot } from '../../storage/index.ts';
import { type AuditState, listingAt } from './state.ts';
import type { Violation } from './violations.ts';

/** What the row checks count besides violations: rows read per table, and the accruals the payouts rows hold. */
export interface RowTally {
  rowsChecked: Record<string, number>;
  accruedCents: { sandbox: number; live: number };
}

const counted = (tally: RowTally, table: string) => {
  tally.rowsChecked[table] = (tally.rowsChecked[table] ?? 0) + 1;
};

/** A row's value in the form expected values are kept in: dates as ISO strings. */
const plain = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/** The row_differs violation of a row whose columns are not what its fact says, if they differ. */
function rowDiffers(subject: string, want: Record<string, unknown>, row: object): Violation | null {
  const differences: { field: string; expected: unknown; actual: unknown }[] = [];
  for (const [field, expected] of Object.entries(want)) {
    const actual = plain(Reflect.get(row, field));
    if (!isDeepStrictEqual(expected, actual)) differences.push({ field, expected, actual });
  }
  if (differences.length === 0) return null;
  return {
    kind: 'row_differs',
    subject,
    message: `${differences.map((x) => `${x.field}: fact says ${JSON.stringify(x.expected)}, row has ${JSON.stringify(x.actual)}`).join('; ')}`,
    differences,
  };
}

/** ledger_entries: one row per credit or chargeback fact, as the fact makes it. */
export async function* checkLedgerEntryRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<number>();
  for await (const chunk of snap.ledgerEntries()) {
    for (const r of chunk) {
      if (r.stream_seq > h) continue;
      counted(tally, 'ledger_entries');
      const want = state.entries.get(r.stream_seq);
      const subject = `ledger_entries seq ${r.stream_seq}`;
      if (!want || seen.has(r.stream_seq)) {
        yield {
          kind: 'row_unexpected',
          subject,
          message: `no credit or chargeback fact at LEDGER seq ${r.stream_seq} makes it`,
        };
        continue;
      }
      seen.add(r.stream_seq);
      const d = rowDiffers(subject, want, r);
      if (d) yield d;
    }
  }
  for (const [seq, want] of state.entries) {
    if (seq <= h && !seen.has(seq))
      yield {
        kind: 'row_missing',
        subject: `ledger_entries seq ${seq}`,
        message: `the ${String(want.type)} fact ${String(want.id)} has no entry`,
      };
  }
}

/** Each principal's chargeback_standing row is its newest write at or below the audited sequence. */
export async function* checkStandingRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  for (const r of await snap.standing()) {
    const subject = `chargeback_standing ${r.principal_id}`;
    seen.add(r.principal_id);
    // Written by a fact after the audited sequence: outside the audit.
    if (r.updated_seq > h) continue;
    counted(tally, 'chargeback_standing');
    const want = state.principals
      .get(r.principal_id)
      ?.standing.filter((w) => w.seq <= h)
      .at(-1);
    if (!want) {
      yield {
        kind: 'row_unexpected',
        subject,
        message: 'no chargeback fact at or below the audited sequence makes it',
      };
      continue;
    }
    const d = rowDiffers(subject, want.row, r);
    if (d) yield d;
  }
  for (const [id, p] of state.principals) {
    const first = p.standing[0];
    if (first && first.seq <= h && !seen.has(id))
      yield {
        kind: 'row_missing',
        subject: `chargeback_standing ${id}`,
        message: `charged back at LEDGER seq ${first.seq}, no row`,
      };
  }
}

/** orders: each held order as held, and settled as its settlement says if that came at or below `h`. */
export async function* checkOrderRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  const heldState = {
    state: 'held',
    report_digest: null,
    refund_reason: null,
    settled_at: null,
    settled_seq: null,
    settled_fact_id: null,
    settled_balance_after_cents: null,
  };
  for await (const chunk of snap.orders()) {
    for (const r of chunk) {
      if (r.held_seq > h) continue;
      counted(tally, 'orders');
      const subject = `order ${r.id}`;
      const want = state.orders.get(r.id);
      if (!want || want.heldSeq > h) {
        yield { kind: 'row_unexpected', subject, message: 'no held fact at or below the audited sequence makes it' };
        continue;
      }
      seen.add(r.id);
      // The order as of the audited sequence; a row settled by a later fact is judged as held.
      const expected = want.settlement && want.settlement.seq <= h ? want.settlement.row : heldState;
      const asOf = r.settled_seq !== null && r.settled_seq > h ? { ...r, ...heldState } : r;
      const d = rowDiffers(subject, { ...want.row, ...expected }, asOf);
      if (d) yield d;
    }
  }
  for (const [id, want] of state.orders) {
    if (want.heldSeq <= h && !seen.has(id))
      yield { kind: 'row_missing', subject: `order ${id}`, message: `held at LEDGER seq ${want.heldSeq}, no row` };
  }
}

/** payouts: one accrual per release, as the release makes it; the accrued totals are summed from these rows. */
export async function* checkPayoutRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  for await (const chunk of snap.payouts()) {
    for (const r of chunk) {
      if (r.stream_seq > h) continue;
      counted(tally, 'payouts');
      tally.accruedCents[r.sandbox ? 'sandbox' : 'live'] += r.amount_cents;
      const subject = `payout of order ${r.order_id}`;
      const want = state.payouts.get(r.order_id);
      if (!want || want.seq > h) {
        yield { kind: 'row_unexpected', subject, message: 'no release at or below the audited sequence accrues it' };
        continue;
      }
      seen.add(r.order_id);
      const d = rowDiffers(subject, want.row, r);
      if (d) yield d;
    }
  }
  for (const [orderId, want] of state.payouts) {
    if (want.seq <= h && !seen.has(orderId))
      yield {
        kind: 'row_missing',
        subject: `payout of order ${orderId}`,
        message: `released at LEDGER seq ${want.seq}, nothing accrued to the seller`,
      };
  }
}

/**
 * payout_transfers: one row per transfer started, in the state its finish (at or below `h`) left it.
 * `snapshotPastEnd`: the snapshot holds facts after the audited sequence, so a row no fact read explains may be
 * one of theirs.
 */
export async function* checkTransferRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  snapshotPastEnd: boolean,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  for await (const chunk of snap.transfers()) {
    for (const r of chunk) {
      const subject = `payout_transfers ${r.id}`;
      const want = state.transfers.get(r.id);
      if (!want) {
        // Its fact may come after the audited sequence (a row does not say where its fact is).
        if (!snapshotPastEnd) yield { kind: 'row_unexpected', subject, message: 'no payout_started fact makes it' };
        continue;
      }
      if (want.seq > h) continue;
      counted(tally, 'payout_transfers');
      seen.add(r.id);
      const finished = want.finished && want.finished.seq <= h ? want.finished : null;
      const expected: Record<string, unknown> = { ...want.row };
      // A transfer still in flight at the audited sequence may have finished since.
      if (finished || r.state === 'pending') {
        expected.state = finished?.state ?? 'pending';
        expected.processor_transfer_id = finished?.processorTransferId ?? null;
      }
      const d = rowDiffers(subject, expected, r);
      if (d) yield d;
    }
  }
  for (const [id, want] of state.transfers) {
    if (want.seq <= h && !seen.has(id))
      yield {
        kind: 'row_missing',
        subject: `payout_transfers ${id}`,
        message: `started at LEDGER seq ${want.seq}, no row`,
      };
  }
}

/** events: each event the facts make, once, numbered 1, 2, 3, ... per principal in stream order. */
export async function* checkEventRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  let principal = '';
  let next = 1;
  let lastSource = 0;
  for await (const chunk of snap.events()) {
    for (const r of chunk) {
      if (r.principal_id !== principal) {
        principal = r.principal_id;
        next = 1;
        lastSource = 0;
      }
      if (r.source_seq > h) continue;
      counted(tally, 'events');
      const subject = `event ${r.id}`;
      // Numbered 1, 2, 3, ... per principal in stream order: the events at or below the audited sequence come first.
      if (r.seq !== next || r.source_seq < lastSource)
        yield {
          kind: 'event_sequence',
          subject,
          message: `principal ${r.principal_id}'s event ${r.seq} (from LEDGER seq ${r.source_seq}) should be number ${next}, after seq ${lastSource}`,
        };
      next = r.seq + 1;
      lastSource = r.source_seq;
      if (seen.has(r.id)) {
        yield { kind: 'event_id_duplicate', subject, message: 'the events store holds it twice' };
        continue;
      }
      seen.add(r.id);
      const want = state.events.get(r.id);
      if (!want || want.sourceSeq > h) {
        yield { kind: 'row_unexpected', subject, message: `no fact at or below the audited sequence makes it` };
        continue;
      }
      const d = rowDiffers(subject, want.row, r);
      if (d) yield d;
    }
  }
  for (const [id, want] of state.events) {
    if (want.sourceSeq <= h && !seen.has(id))
      yield { kind: 'row_missing', subject: `event ${id}`, message: `LEDGER seq ${want.sourceSeq} makes it; no row` };
  }
}

/** listings: each listing as its facts at or below `h` make it. */
export async function* checkListingRows(
  state: AuditState,
  snap: AuditSnapshot,
  h: number,
  tally: RowTally,
): AsyncGenerator<Violation> {
  const seen = new Set<string>();
  for await (const chunk of snap.listings()) {
    for (const r of chunk) {
      const subject = `listing ${r.id}`;
      const history = state.listings.get(r.id);
      const want = history ? listingAt(history, h) : null;
      if (!want) {
        // Created after the audited sequence, or by no fact at all.
        if (r.last_seq <= h)
          yield {
            kind: 'row_unexpected',
            subject,
            message: 'no listing_created fact at or below the audited sequence makes it',
          };
        continue;
      }
      counted(tally, 'listings');
      seen.add(r.id);
      // Changed by a fact after the audited sequence: what that fact set is outside the audit.
      const expected: Record<string, unknown> =
        r.last_seq > h
          ? Object.fromEntries(
              Object.entries(want).filter(([k]) => !['price_cents', 'state', 'updated_at', 'last_seq'].includes(k)),
            )
          : want;
      const d = rowDiffers(subject, expected, r);
      if (d) yield d;
    }
  }
  for (const [id, history] of state.listings) {
    if (!seen.has(id) && listingAt(history, h))
      yield { kind: 'row_missing', subject: `listing ${id}`, message: 'created, no row' };
  }
}
