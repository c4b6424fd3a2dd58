// The commerce projection of the LEDGER stream: orders, sellers' payout accruals, the pollable event outbox, and
// settlement trust samples, all written in the projector's transaction from the facts alone (no dual write).
import type { LedgerFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';
import type { Projection } from './projector.ts';
import { ledgerProjection } from './ledger-projection.ts';
import { addTrustSamplesBulk, dropTrustSamples, type TrustSample } from './trust.ts';

export interface OrderRow {
  id: string;
  buyer_principal_id: string;
  buyer_agent_id: string;
  listing_id: string;
  artifact_id: string;
  edition_id: string;
  seller_principal_id: string;
  subscription_id: string | null;
  state: 'held' | 'released' | 'auto_refunded';
  escrow_cents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  idempotency_key: string;
  price_snapshot_id: string;
  report_digest: string | null;
  sandbox: boolean;
  held_seq: number;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
}

/** `weight` turns a settlement time into the trust weight the trust rule gives it (the rule lives in actors/). */
export function commerceProjection(n: Names, weight: (atMs: number) => number): Projection<LedgerFact> {
  return {
    checkpoint: `commerce:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      // Fold the batch into rows, then write each table with one statement of fixed shape (arrays unnested):
      // orders held, orders settled, events, payouts, trust samples.
      // An order held and settled within one batch (the usual case: the actor settles right after the purchase)
      // is inserted in its final state rather than inserted and then updated.
      const held = new Map<string, unknown[]>();
      const settled: { id: string; state: string; digest: string; at: string }[] = [];
      const events: { id: string; principal: string; type: string; seq: number; data: string; at: string }[] = [];
      const payouts: unknown[][] = [];
      const samples: TrustSample[] = [];
      for (const { seq, fact: f } of batch) {
        const event = (type: string, data: object) =>
          events.push({ id: `evt_${f.id}`, principal: f.principalId, type, seq, data: JSON.stringify(data), at: f.at });
        switch (f.type) {
          case 'credited':
            if (f.source === 'sandbox_topup') {
              event('topup.credited', { topup_id: f.topupId, amount_cents: f.amountCents, sandbox: f.sandbox });
            }
            break;
          case 'escrow_held':
            held.set(f.orderId, [
              f.orderId,
              f.principalId,
              f.agentId,
              f.listingId,
              f.artifactId,
              f.editionId,
              f.sellerPrincipalId,
              f.subscriptionId,
              f.priceCents,
              f.floor,
              f.formats.join(','),
              f.idempotency?.key ?? '',
              f.priceSnapshotId,
              f.sandbox,
              seq,
              f.at,
              'held',
              null,
              null,
            ]);
            event('order.state_changed', {
              order_id: f.orderId,
              state: 'held',
              listing_id: f.listingId,
              escrow_cents: f.priceCents,
            });
            break;
          case 'escrow_released':
          case 'escrow_refunded': {
            const state = f.type === 'escrow_released' ? 'released' : 'auto_refunded';
            const heldNow = held.get(f.orderId);
            if (heldNow) heldNow.splice(16, 3, state, f.reportDigest, f.at);
            else settled.push({ id: f.orderId, state, digest: f.reportDigest, at: f.at });
            if (f.type === 'escrow_released') {
              payouts.push([f.id, f.orderId, f.sellerPrincipalId, f.listingId, f.priceCents, f.sandbox, seq, f.at]);
            }
            event('order.state_changed', {
              order_id: f.orderId,
              state,
              listing_id: f.listingId,
              escrow_cents: f.priceCents,
            });
            // A settlement is a trust sample for the artifact, its seller and the buying agent.
            const w = weight(Date.parse(f.at));
            for (const subject of [
              `artifact:${f.artifactId}`,
              `principal:${f.sellerPrincipalId}`,
              `agent:${f.agentId}`,
            ]) {
              samples.push({
                subject,
                sourceKind: 'settlement',
                sourceId: f.orderId,
                pass: state === 'released',
                at: f.at,
                weightAtEpoch: w,
              });
            }
            break;
          }
          default:
            break;
        }
      }
      const arr = (rows: unknown[][], i: number, oid: number) => tx.array(rows.map((r) => r[i]) as never[], oid);
      if (held.size > 0) {
        const h = [...held.values()];
        await tx`
          INSERT INTO orders (id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
            seller_principal_id, subscription_id, state, escrow_cents, floor, formats, idempotency_key,
            price_snapshot_id, sandbox, held_seq, created_at, report_digest, updated_at, settled_at)
          SELECT r.id, r.buyer, r.agent, r.listing, r.artifact, r.edition, r.seller, r.subscription, r.state, r.escrow,
                 r.floor, string_to_array(r.formats, ','), r.key, r.snapshot, r.sandbox, r.seq, r.at, r.digest,
                 coalesce(r.settled_at, r.at), r.settled_at
          FROM unnest(${arr(h, 0, 2950)}::uuid[], ${arr(h, 1, 2950)}::uuid[], ${arr(h, 2, 2950)}::uuid[],
                      ${arr(h, 3, 2950)}::uuid[], ${arr(h, 4, 2950)}::uuid[], ${arr(h, 5, 2950)}::uuid[],
                      ${arr(h, 6, 2950)}::uuid[], ${arr(h, 7, 2950)}::uuid[], ${arr(h, 8, 20)}::bigint[],
                      ${arr(h, 9, 701)}::float8[], ${arr(h, 10, 25)}::text[], ${arr(h, 11, 25)}::text[],
                      ${arr(h, 12, 25)}::text[], ${arr(h, 13, 16)}::boolean[], ${arr(h, 14, 20)}::bigint[],
                      ${arr(h, 15, 1184)}::timestamptz[], ${arr(h, 16, 25)}::text[], ${arr(h, 17, 25)}::text[],
                      ${arr(h, 18, 1184)}::timestamptz[])
               AS r(id, buyer, agent, listing, artifact, edition, seller, subscription, escrow, floor, formats, key,
                    snapshot, sandbox, seq, at, state, digest, settled_at)
          ON CONFLICT (id) DO NOTHING`;
      }

      if (settled.length > 0) {
        await tx`
          UPDATE orders o SET state = u.state, report_digest = u.digest, updated_at = u.at, settled_at = u.at
          FROM unnest(${tx.array(settled.map((r) => r.id) as never[], 2950)}::uuid[],
                      ${tx.array(settled.map((r) => r.state) as never[], 25)}::text[],
                      ${tx.array(settled.map((r) => r.digest) as never[], 25)}::text[],
                      ${tx.array(settled.map((r) => r.at) as never[], 1184)}::timestamptz[]) AS u(id, state, digest, at)
          WHERE o.id = u.id`;
      }
      if (events.length > 0) {
        await tx`
          INSERT INTO events (id, principal_id, type, stream_seq, data, created_at)
          SELECT e.id, e.principal, e.type, e.seq, e.data::jsonb, e.at
          FROM unnest(${tx.array(events.map((e) => e.id) as never[], 25)}::text[],
                      ${tx.array(events.map((e) => e.principal) as never[], 2950)}::uuid[],
                      ${tx.array(events.map((e) => e.type) as never[], 25)}::text[],
                      ${tx.array(events.map((e) => e.seq) as never[], 20)}::bigint[],
                      ${tx.array(events.map((e) => e.data) as never[], 25)}::text[],
                      ${tx.array(events.map((e) => e.at) as never[], 1184)}::timestamptz[]) AS e(id, principal, type, seq, data, at)
          ON CONFLICT (id) DO NOTHING`;
      }
      if (payouts.length > 0) {
        await tx`
          INSERT INTO payouts (id, order_id, seller_principal_id, listing_id, amount_cents, state, sandbox, stream_seq,
                               created_at)
          SELECT p.id, p.order_id, p.seller, p.listing, p.amount, 'accrued', p.sandbox, p.seq, p.at
          FROM unnest(${arr(payouts, 0, 2950)}::uuid[], ${arr(payouts, 1, 2950)}::uuid[], ${arr(payouts, 2, 2950)}::uuid[],
                      ${arr(payouts, 3, 2950)}::uuid[], ${arr(payouts, 4, 20)}::bigint[], ${arr(payouts, 5, 16)}::boolean[],
                      ${arr(payouts, 6, 20)}::bigint[], ${arr(payouts, 7, 1184)}::timestamptz[])
               AS p(id, order_id, seller, listing, amount, sandbox, seq, at)
          ON CONFLICT (order_id) DO NOTHING`;
      }
      if (samples.length > 0) await addTrustSamplesBulk(tx, samples);
    },
    async truncate(tx) {
      await tx`TRUNCATE orders, payouts, events`;
      await dropTrustSamples(tx, 'settlement');
    },
  };
}

export async function ordersPage(
  sql: Sql,
  buyer: string,
  beforeSeq: number | null,
  limit: number,
): Promise<OrderRow[]> {
  return sql<OrderRow[]>`
    SELECT * FROM orders WHERE buyer_principal_id = ${buyer}
      ${beforeSeq === null ? sql`` : sql`AND held_seq < ${beforeSeq}`}
    ORDER BY held_seq DESC LIMIT ${limit}`;
}

export async function getOrder(sql: Sql, id: string): Promise<OrderRow | null> {
  const rows = await sql<OrderRow[]>`SELECT * FROM orders WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function payoutsPage(sql: Sql, seller: string, beforeSeq: number | null, limit: number) {
  return sql<
    {
      id: string;
      order_id: string;
      listing_id: string;
      amount_cents: number;
      state: 'accrued' | 'paid';
      sandbox: boolean;
      stream_seq: number;
      created_at: Date;
    }[]
  >`
    SELECT * FROM payouts WHERE seller_principal_id = ${seller}
      ${beforeSeq === null ? sql`` : sql`AND stream_seq < ${beforeSeq}`}
    ORDER BY stream_seq DESC LIMIT ${limit}`;
}

export async function eventsPage(sql: Sql, principal: string, type: string | null, afterSeq: number, limit: number) {
  return sql<{ id: string; type: string; stream_seq: number; data: object; created_at: Date }[]>`
    SELECT id, type, stream_seq, data, created_at FROM events
    WHERE principal_id = ${principal} ${type === null ? sql`` : sql`AND type = ${type}`} AND stream_seq > ${afterSeq}
    ORDER BY stream_seq LIMIT ${limit}`;
}

/** Held orders whose edition has a report by now: what the settlement sweeper settles. */
export async function settleableOrders(sql: Sql, olderThan: Date, limit: number) {
  return sql<{ id: string; buyer_principal_id: string; sandbox: boolean; digest: string; mean_entailment: number }[]>`
    SELECT o.id, o.buyer_principal_id, o.sandbox, r.digest, r.mean_entailment
    FROM orders o JOIN reports r ON r.edition_id = o.edition_id
    WHERE o.state = 'held' AND o.created_at < ${olderThan}
    LIMIT ${limit}`;
}

export async function purchasedArtifactIds(sql: Sql, buyer: string): Promise<string[]> {
  const rows = await sql<
    { artifact_id: string }[]
  >`SELECT DISTINCT artifact_id FROM orders WHERE buyer_principal_id = ${buyer}`;
  return rows.map((r) => r.artifact_id);
}

export async function getBundle(sql: Sql, orderId: string): Promise<string | null> {
  const rows = await sql<{ bundle: string }[]>`SELECT bundle FROM compliance_bundles WHERE order_id = ${orderId}`;
  return rows[0]?.bundle ?? null;
}

export async function storeBundle(sql: Sql, orderId: string, digest: string, bundle: string, issuedAt: string) {
  await sql`INSERT INTO compliance_bundles (order_id, digest, bundle, issued_at)
            VALUES (${orderId}, ${digest}, ${bundle}, ${issuedAt}) ON CONFLICT (order_id) DO NOTHING`;
  return (await getBundle(sql, orderId))!;
}

/**
 * Everything projected from the LEDGER stream, in one pass and one transaction per batch: ledger entries, then
 * orders, payouts, events and settlement trust samples. One reader of the stream instead of two.
 */
export function principalFactsProjection(n: Names, weight: (atMs: number) => number): Projection<LedgerFact> {
  const ledger = ledgerProjection(n);
  const commerce = commerceProjection(n, weight);
  return {
    checkpoint: `principal_facts:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      await ledger.apply(tx, batch);
      await commerce.apply(tx, batch);
    },
    async truncate(tx) {
      await ledger.truncate(tx);
      await commerce.truncate(tx);
    },
  };
}
