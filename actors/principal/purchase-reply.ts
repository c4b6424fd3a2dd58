// The reply of a purchase, rebuilt from its `escrow_held` fact when a key replays (the fact does not store it).

export type StoredReply = { status: number; body: unknown };

/** What a purchase answers, whether first run or replayed from its `escrow_held` fact. */
export function purchaseReply(orderId: string, escrowCents: number, formats: ('md' | 'pdf')[]): StoredReply {
  return {
    status: 201,
    body: {
      order_id: orderId,
      state: 'held',
      escrow_cents: escrowCents,
      formats,
      poll: `GET /v1/orders, or watch order.state_changed events for order ${orderId}`,
    },
  };
}
