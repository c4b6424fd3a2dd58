// The invariants of the facts alone, checked once both streams are read (audit.ts), and the totals the report
// shows. Each check reads the state and answers its violations.
import { type AuditState, type Money, moneyKeys, noMoney } from './state.ts';
import type { Violation } from './violations.ts';

export interface SideTotals extends Money {
  principals: number;
  /** Released to sellers, by the facts. */
  releasedCents: number;
  /** Accrued to sellers, by the payouts rows. */
  accruedCents: number;
  /** Paid to sellers by finished transfers (live only). */
  paidCents: number;
}

/** Every cent a principal was credited is available, held, spent, withheld by a dispute or taken back. */
export function checkConservation(state: AuditState): Violation[] {
  const found: Violation[] = [];
  for (const [id, p] of state.principals) {
    const accounted = p.availableCents + p.heldCents + p.spentCents + p.withheldCents + p.reversedCents;
    if (p.creditedCents !== accounted)
      found.push({
        kind: 'conservation',
        subject: `principal ${id}`,
        message: `credits in ${p.creditedCents} cents, but available ${p.availableCents} + held ${p.heldCents} + spent ${p.spentCents} + withheld ${p.withheldCents} + reversed ${p.reversedCents} = ${accounted}`,
      });
  }
  return found;
}

/** No seller is paid more than it accrued. */
export function checkPaidWithinAccrued(state: AuditState): Violation[] {
  const found: Violation[] = [];
  for (const [id, s] of state.sellers) {
    const accrued = s.accruals.reduce((sum, [, cents]) => sum + cents, 0);
    if (s.paidCents > accrued)
      found.push({
        kind: 'payout_path',
        subject: `seller ${id}`,
        message: `paid ${s.paidCents} cents of ${accrued} accrued`,
      });
  }
  return found;
}

/** An order is on the same side of the sandbox line as its listing. */
export function checkOrdersOnTheirListingsSide(state: AuditState): Violation[] {
  const found: Violation[] = [];
  for (const [id, order] of state.orders) {
    const listing = state.listings.get(order.listingId);
    const listingSandbox =
      listing?.facts[0]?.fact.type === 'listing_created' ? listing.facts[0].fact.sandbox : undefined;
    if (listingSandbox !== undefined && listingSandbox !== order.sandbox)
      found.push({
        kind: 'sandbox_line',
        subject: `order ${id}`,
        message: `a ${order.sandbox ? 'sandbox' : 'live'} order of a ${listingSandbox ? 'sandbox' : 'live'} listing`,
      });
  }
  return found;
}

/** The money on each side of the sandbox line, by the facts (accruedCents comes from the payouts rows, later). */
export function moneyTotals(state: AuditState): { sandbox: SideTotals; live: SideTotals } {
  const side = (): SideTotals => ({ principals: 0, ...noMoney(), releasedCents: 0, accruedCents: 0, paidCents: 0 });
  const money = { sandbox: side(), live: side() };
  for (const p of state.principals.values()) {
    const t = p.sandbox ? money.sandbox : money.live;
    t.principals++;
    for (const key of moneyKeys) t[key] += p[key];
    t.releasedCents += p.spentCents;
  }
  for (const s of state.sellers.values()) money.live.paidCents += s.paidCents;
  return money;
}

/** Orders by where their facts left them. */
export function orderCounts(state: AuditState): { total: number; held: number; released: number; refunded: number } {
  const counts = { total: state.orders.size, held: 0, released: 0, refunded: 0 };
  for (const order of state.orders.values()) {
    const st = order.settlement?.row.state;
    if (st === 'released') counts.released++;
    else if (st === 'auto_refunded') counts.refunded++;
    else counts.held++;
  }
  return counts;
}
