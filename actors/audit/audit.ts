// `assay audit` (docs/operations.md, Audit): replay the LEDGER and LISTINGS streams up to sequences fixed at the
// start, check the money and state invariants on the facts themselves, then check every projection row against the
// fact it comes from. The service keeps running: the streams are read with ordered consumers and PostgreSQL in one
// read-only snapshot, and facts appended after the start are outside the audit.
//
// This module only composes the parts, in the order they report: one pass over each stream builds the audit's
// state (state.ts) and checks each fact against the facts before it (ledger-facts.ts, listing-facts.ts); then the
// invariants of the facts alone (invariants.ts); then the projections' rows (rows.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import type { LedgerFact, ListingFact, Names } from '../../contracts/index.ts';
import {
  type AuditSnapshot,
  checkpointsNow,
  replayStream,
  type Sql,
  streamLastSeq,
  withAuditSnapshot,
} from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';
import {
  checkConservation,
  checkOrdersOnTheirListingsSide,
  checkPaidWithinAccrued,
  moneyTotals,
  orderCounts,
  type SideTotals,
} from './invariants.ts';
import { auditLedgerMessage } from './ledger-facts.ts';
import { auditListingMessage } from './listing-facts.ts';
import {
  checkEventRows,
  checkLedgerEntryRows,
  checkListingRows,
  checkOrderRows,
  checkPayoutRows,
  checkStandingRows,
  checkTransferRows,
  type RowTally,
} from './rows.ts';
import { newAuditState } from './state.ts';
import { Findings, type Violation } from './violations.ts';

export interface AuditReport {
  startedAt: string;
  tookMs: number;
  streams: { stream: string; throughSeq: number; factsRead: number }[];
  projections: { name: string; checkpoint: number; auditedThroughSeq: number }[];
  money: { sandbox: SideTotals; live: SideTotals };
  orders: { total: number; held: number; released: number; refunded: number };
  events: { expected: number; rowsChecked: number };
  listings: number;
  rowsChecked: Record<string, number>;
  violationCount: number;
  /** The first `violationsListedMax` violations (violationCount says how many there are). */
  violations: Violation[];
}

export interface AuditOptions {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  clock: Clock;
  /** How long to wait for each projection's checkpoint to reach the audited sequence. */
  waitForProjectionsMs: number;
  violationsListedMax?: number;
}

/** A projection the audit checks, and the stream sequence its rows are checked through. */
interface AuditedProjection {
  name: string;
  through: number;
}

export async function runAudit(o: AuditOptions): Promise<AuditReport> {
  const startedMs = performance.now();
  const startedAt = o.clock.nowIso();
  const found = new Findings(o.violationsListedMax ?? 1000);

  const ledgerStream = o.names.streams.ledger.name;
  const listingsStream = o.names.streams.listings.name;
  // The audit's end, fixed now: facts appended while it runs are outside it.
  const ledgerThrough = await streamLastSeq(o.nc, ledgerStream);
  const listingsThrough = await streamLastSeq(o.nc, listingsStream);

  // ---- The streams, each read once.
  const state = newAuditState();
  const ledgerRead = await replayStream<LedgerFact>(o.nc, ledgerStream, ledgerThrough, (seq, f, raw) =>
    found.add(auditLedgerMessage(state, seq, f, raw)),
  );
  const listingsRead = await replayStream<ListingFact>(o.nc, listingsStream, listingsThrough, (seq, f, raw) =>
    found.add(auditListingMessage(state, seq, f, raw)),
  );

  // ---- The facts alone: conservation per principal, transfers per seller, orders across the sandbox line.
  found.add(checkConservation(state));
  found.add(checkPaidWithinAccrued(state));
  found.add(checkOrdersOnTheirListingsSide(state));
  const money = moneyTotals(state);

  // ---- The projections: wait (briefly) until each has reached the audited sequence, then read one snapshot.
  const facts: AuditedProjection = { name: `principal_facts:${ledgerStream}`, through: ledgerThrough };
  const events: AuditedProjection = { name: `events:${ledgerStream}`, through: ledgerThrough };
  const listings: AuditedProjection = { name: `listings:${listingsStream}`, through: listingsThrough };
  const projections = [facts, events, listings];
  const waitUntil = performance.now() + o.waitForProjectionsMs;
  for (;;) {
    const now = await checkpointsNow(o.sql);
    if (projections.every((p) => (now.get(p.name) ?? 0) >= p.through)) break;
    if (performance.now() >= waitUntil) break;
    await sleep(100);
  }

  const tally: RowTally = { rowsChecked: {}, accruedCents: { sandbox: 0, live: 0 } };
  const projected = await withAuditSnapshot(o.sql, async (snap) => {
    found.add(projectionsBehind(snap, projections, o.waitForProjectionsMs));
    found.add(await parkedFacts(snap, projections));
    const horizon = (p: AuditedProjection) => Math.min(p.through, snap.checkpoints.get(p.name) ?? 0);
    const factsH = horizon(facts);
    // Everything after the audited sequence is outside the audit: facts appended since it started.
    const snapshotPastEnd = (snap.checkpoints.get(facts.name) ?? 0) > ledgerThrough;
    await found.addAsync(checkLedgerEntryRows(state, snap, factsH, tally));
    await found.addAsync(checkStandingRows(state, snap, factsH, tally));
    await found.addAsync(checkOrderRows(state, snap, factsH, tally));
    await found.addAsync(checkPayoutRows(state, snap, factsH, tally));
    await found.addAsync(checkTransferRows(state, snap, factsH, snapshotPastEnd, tally));
    await found.addAsync(checkEventRows(state, snap, horizon(events), tally));
    await found.addAsync(checkListingRows(state, snap, horizon(listings), tally));
    return projections.map((p) => {
      const checkpoint = snap.checkpoints.get(p.name) ?? 0;
      return { name: p.name, checkpoint, auditedThroughSeq: Math.min(checkpoint, p.through) };
    });
  });
  money.sandbox.accruedCents = tally.accruedCents.sandbox;
  money.live.accruedCents = tally.accruedCents.live;

  const tookMs = Math.round(performance.now() - startedMs);
  return {
    startedAt,
    tookMs,
    streams: [
      { stream: ledgerStream, throughSeq: ledgerThrough, factsRead: ledgerRead },
      { stream: listingsStream, throughSeq: listingsThrough, factsRead: listingsRead },
    ],
    projections: projected,
    money,
    orders: orderCounts(state),
    events: { expected: state.events.size, rowsChecked: tally.rowsChecked.events ?? 0 },
    listings: state.listings.size,
    rowsChecked: tally.rowsChecked,
    violationCount: found.count,
    violations: found.listed,
  };
}

/** Each projection's checkpoint reached the audited sequence within the wait; its rows are checked through it. */
function projectionsBehind(snap: AuditSnapshot, projections: AuditedProjection[], waitedMs: number): Violation[] {
  const found: Violation[] = [];
  for (const p of projections) {
    const checkpoint = snap.checkpoints.get(p.name) ?? 0;
    if (checkpoint < p.through)
      found.push({
        kind: 'projection_behind',
        subject: `projection ${p.name}`,
        message: `its checkpoint ${checkpoint} did not reach the audited sequence ${p.through} within ${waitedMs} ms; its rows are checked through ${checkpoint}`,
      });
  }
  return found;
}

/** No projection set aside a fact at or below the audited sequence (assay parked-facts). */
async function parkedFacts(snap: AuditSnapshot, projections: AuditedProjection[]): Promise<Violation[]> {
  const found: Violation[] = [];
  for (const parked of await snap.parked()) {
    const p = projections.find((x) => x.name === parked.projection);
    if (!p || parked.stream_seq > p.through) continue;
    found.push({
      kind: 'parked_fact',
      subject: `projection ${parked.projection}`,
      message: `the fact at seq ${parked.stream_seq} was set aside: ${parked.error}`,
    });
  }
  return found;
}
