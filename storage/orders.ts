// The commerce projection of the LEDGER stream: orders, sellers' payout accruals, the pollable event outbox, and
// settlement trust samples, all written in the projector's transaction from the facts alone (no dual write).
import type { LedgerFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';
import type { Projection } from './projector.ts';
import { addTrustSamples } from './trust.ts';

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
      for (const { seq, fact: f } of batch) {
        switch (f.type) {
          case 'credited':
            if (f.source === 'sandbox_topup') {
              await event(tx, f.id, f.principalId, 'topup.credited', seq, f.at, {
                topup_id: f.topupId,
                amount_cents: f.amountCents,
                sandbox: f.sandbox,
              });
            }
            break;
          case 'escrow_held':
            await tx`
              INSERT INTO orders (id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
                seller_principal_id, subscription_id, state, escrow_cents, floor, formats, idempotency_key,
                price_snapshot_id, sandbox, held_seq, created_at, updated_at)
              VALUES (${f.orderId}, ${f.principalId}, ${f.agentId}, ${f.listingId}, ${f.artifactId}, ${f.editionId},
                ${f.sellerPrincipalId}, ${f.subscriptionId}, 'held', ${f.priceCents}, ${f.floor}, ${f.formats},
                ${f.idempotency?.key ?? ''}, ${f.priceSnapshotId}, ${f.sandbox}, ${seq}, ${f.at}, ${f.at})
              ON CONFLICT (id) DO NOTHING`;
            await event(tx, f.id, f.principalId, 'order.state_changed', seq, f.at, {
              order_id: f.orderId,
              state: 'held',
              listing_id: f.listingId,
              escrow_cents: f.priceCents,
            });
            break;
          case 'escrow_released':
          case 'escrow_refunded': {
            const state = f.type === 'escrow_released' ? 'released' : 'auto_refunded';
            await tx`UPDATE orders SET state = ${state}, report_digest = ${f.reportDigest}, updated_at = ${f.at},
                                       settled_at = ${f.at}
                     WHERE id = ${f.orderId}`;
            if (f.type === 'escrow_released') {
              await tx`
                INSERT INTO payouts (id, order_id, seller_principal_id, listing_id, amount_cents, state, sandbox,
                                     stream_seq, created_at)
                VALUES (${f.id}, ${f.orderId}, ${f.sellerPrincipalId}, ${f.listingId}, ${f.priceCents}, 'accrued',
                        ${f.sandbox}, ${seq}, ${f.at})
                ON CONFLICT (order_id) DO NOTHING`;
            }
            await event(tx, f.id, f.principalId, 'order.state_changed', seq, f.at, {
              order_id: f.orderId,
              state,
              listing_id: f.listingId,
              escrow_cents: f.priceCents,
            });
            // A settlement is a trust sample for the artifact, its seller and the buying agent.
            const pass = f.type === 'escrow_released';
            const w = weight(Date.parse(f.at));
            await addTrustSamples(
              tx,
              [`artifact:${f.artifactId}`, `principal:${f.sellerPrincipalId}`, `agent:${f.agentId}`].map((subject) => ({
                subject,
                sourceKind: 'settlement',
                sourceId: f.orderId,
                pass,
                at: f.at,
                weightAtEpoch: w,
              })),
            );
            break;
          }
          default:
            break;
        }
      }
    },
    async truncate(tx) {
      await tx`TRUNCATE orders, payouts, events`;
      await tx`DELETE FROM trust_aggregates WHERE subject IN (SELECT DISTINCT subject FROM trust_samples WHERE source_kind = 'settlement')`;
      await tx`DELETE FROM trust_samples WHERE source_kind = 'settlement'`;
    },
  };
}

async function event(
  tx: Sql,
  factId: string,
  principalId: string,
  type: string,
  seq: number,
  at: string,
  data: object,
) {
  await tx`INSERT INTO events (id, principal_id, type, stream_seq, data, created_at)
           VALUES (${`evt_${factId}`}, ${principalId}, ${type}, ${seq}, ${tx.json(data as never)}, ${at})
           ON CONFLICT (id) DO NOTHING`;
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

export async function reportForEdition(sql: Sql, editionId: string) {
  const rows = await sql<{ digest: string; mean_entailment: number; body: string }[]>`
    SELECT digest, mean_entailment, body FROM reports WHERE edition_id = ${editionId}`;
  return rows[0] ?? null;
}
