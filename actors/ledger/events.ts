// The pollable events of a principal, read from its ledger entries: every change of an order's state (held,
// released, refunded) is an `order.state_changed` event, every landed top-up a `topup.credited` one. An event's id
// is its entry's, so it is stable across rebuilds of the projection.
import type { Static } from 'typebox';
import type { schemas } from '../../contracts/index.ts';
import type { EntryWithOrderRow } from '../../storage/index.ts';

type EventType = Static<typeof schemas.EventType>;
type Event = Static<typeof schemas.OutboxEvent>;

/** The ledger entry types each event type is read from. */
const entryTypesOf: Partial<Record<EventType, string[]>> = {
  'order.state_changed': ['escrow_held', 'escrow_released', 'escrow_refunded'],
  'topup.credited': ['topup_credited'],
};

/** The entry types to read for a list of events, all of them or one type's. */
export function eventEntryTypes(type: EventType | undefined): string[] {
  return type === undefined ? Object.values(entryTypesOf).flat() : (entryTypesOf[type] ?? []);
}

const orderStates: Record<string, 'held' | 'released' | 'auto_refunded'> = {
  escrow_held: 'held',
  escrow_released: 'released',
  escrow_refunded: 'auto_refunded',
};

/** One ledger entry (with its order's listing and price) as the event it stands for. */
export function eventOf(e: EntryWithOrderRow): Event {
  const base = { id: `evt_${e.id}`, created_at: e.created_at.toISOString() };
  if (e.type === 'topup_credited') {
    return {
      ...base,
      type: 'topup.credited',
      data: { topup_id: e.reference, amount_cents: e.amount_cents, sandbox: e.sandbox },
    };
  }
  const data: Record<string, unknown> = {
    order_id: e.run_id,
    state: orderStates[e.type],
    listing_id: e.listing_id,
    escrow_cents: e.escrow_cents,
  };
  // A refund says why: the report missed the floor, or no report came within the wait bound.
  if (e.type === 'escrow_refunded') data.reason = e.refund_reason ?? 'floor_missed';
  return { ...base, type: 'order.state_changed', data };
}
