// The commerce projection of the LEDGER stream: orders, sellers' payout accruals, the pollable event outbox, and
// settlement trust samples, all written in the projector's transaction from the facts alone (no dual write).
import type { LedgerFact, Names } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';
import type { Projection } from './projector.ts';
import { type IdempotencyKeyRow, insertIdempotencyKeys, pruneIdempotencyKeys } from './idempotency.ts';
import { ledgerEntries, ledgerProjection } from './ledger-projection.ts';
import { addToTrustSums, dropTrustSamples, type TrustSample } from './trust.ts';

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
  held_fact_id: string;
  held_balance_after_cents: number;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
  settled_seq: number | null;
  settled_fact_id: string | null;
  settled_balance_after_cents: number | null;
}

interface HeldOrderRow {
  id: string;
  buyer: string;
  agent: string;
  listing: string;
  artifact: string;
  edition: string;
  seller: string;
  subscription: string | null;
  escrow: number;
  floor: number;
  formats: string[];
  key: string;
  hash: string;
  snapshot: string;
  sandbox: boolean;
  seq: number;
  fact: string;
  balance: number;
  at: string;
  state: 'held' | 'released' | 'auto_refunded';
  digest: string | null;
  settled_at: string | null;
  settled_seq: number | null;
  settled_fact: string | null;
  settled_balance: number | null;
}

/** What a settlement fact writes to its order: the outcome and the buyer's ledger entry for it. */
interface SettlementUpdate {
  state: 'released' | 'auto_refunded';
  digest: string;
  settled_at: string;
  settled_seq: number;
  settled_fact: string;
  settled_balance: number;
}

/** Idempotency keys are pruned at most this often, by fact time. */
const keyPruneEveryMs = 60_000;

/**
 * `weight` turns a settlement time into the trust weight the trust rule gives it (the rule lives in actors/);
 * `keyRetentionMs` is how long a key other than a purchase's stays in the idempotency index.
 */
export function commerceProjection(
  n: Names,
  weight: (atMs: number) => number,
  keyRetentionMs: number,
): Projection<LedgerFact> {
  let prunedAtMs = 0;
  return {
    checkpoint: `commerce:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      // Fold the batch into rows, then write each table with one statement of fixed shape whatever the batch (rows
      // passed as one JSON array, which PostgreSQL parses in C): orders, order settlements, payouts, and settlement
      // trust samples. An order row carries the buyer's two ledger entries for it (held, then settled: fact id,
      // sequence, balance after), read back through the `ledger` view; events are read from that view too.
      // An order held and settled within one batch (the usual case: the actor settles right after the purchase)
      // is inserted in its final state rather than inserted and then updated.
      const held = new Map<string, HeldOrderRow>();
      const settled: (SettlementUpdate & { id: string })[] = [];
      const payouts: object[] = [];
      const samples: TrustSample[] = [];
      const keys: IdempotencyKeyRow[] = [];
      for (const { seq, fact: f } of batch) {
        // A purchase's key is indexed in its order row; every other call's here.
        if (f.idempotency && f.type !== 'escrow_held') {
          keys.push({
            principal_id: f.principalId,
            key: f.idempotency.key,
            request_hash: f.idempotency.requestHash,
            stream_seq: seq,
            created_at: f.at,
          });
        }
        switch (f.type) {
          case 'escrow_held':
            held.set(f.orderId, {
              id: f.orderId,
              buyer: f.principalId,
              agent: f.agentId,
              listing: f.listingId,
              artifact: f.artifactId,
              edition: f.editionId,
              seller: f.sellerPrincipalId,
              subscription: f.subscriptionId,
              escrow: f.priceCents,
              floor: f.floor,
              formats: f.formats,
              key: f.idempotency?.key ?? '',
              hash: f.idempotency?.requestHash ?? '',
              snapshot: f.priceSnapshotId,
              sandbox: f.sandbox,
              seq,
              fact: f.id,
              balance: f.balanceAfterCents,
              at: f.at,
              state: 'held',
              digest: null,
              settled_at: null,
              settled_seq: null,
              settled_fact: null,
              settled_balance: null,
            });
            break;
          case 'escrow_released':
          case 'escrow_refunded': {
            const outcome: SettlementUpdate = {
              state: f.type === 'escrow_released' ? 'released' : 'auto_refunded',
              digest: f.reportDigest,
              settled_at: f.at,
              settled_seq: seq,
              settled_fact: f.id,
              settled_balance: f.balanceAfterCents,
            };
            const { state } = outcome;
            const heldNow = held.get(f.orderId);
            if (heldNow) Object.assign(heldNow, outcome);
            else settled.push({ id: f.orderId, ...outcome });
            if (f.type === 'escrow_released') {
              payouts.push({
                id: f.id,
                order_id: f.orderId,
                seller: f.sellerPrincipalId,
                listing: f.listingId,
                amount: f.priceCents,
                sandbox: f.sandbox,
                seq,
                at: f.at,
              });
            }
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
      // Every statement is sent at once (pipelined on the transaction's connection) and PostgreSQL runs them in
      // order: one round trip for the batch rather than one per table.
      const writes: Promise<unknown>[] = [];
      if (held.size > 0) {
        writes.push(
          tx`
          INSERT INTO orders (id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
            seller_principal_id, subscription_id, state, escrow_cents, floor, formats, idempotency_key, request_hash,
            price_snapshot_id, sandbox, held_seq, held_fact_id, held_balance_after_cents, created_at, report_digest,
            updated_at, settled_at, settled_seq, settled_fact_id, settled_balance_after_cents)
          SELECT r.id, r.buyer, r.agent, r.listing, r.artifact, r.edition, r.seller, r.subscription, r.state, r.escrow,
                 r.floor, r.formats, r.key, r.hash, r.snapshot, r.sandbox, r.seq, r.fact, r.balance, r.at, r.digest,
                 coalesce(r.settled_at, r.at), r.settled_at, r.settled_seq, r.settled_fact, r.settled_balance
          FROM json_to_recordset(${JSON.stringify([...held.values()])}::text::json)
               AS r(id uuid, buyer uuid, agent uuid, listing uuid, artifact uuid, edition uuid, seller uuid,
                    subscription uuid, escrow bigint, floor float8, formats text[], key text, hash text, snapshot text,
                    sandbox boolean, seq bigint, fact uuid, balance bigint, at timestamptz, state text, digest text,
                    settled_at timestamptz, settled_seq bigint, settled_fact uuid, settled_balance bigint)
          ON CONFLICT (id) DO NOTHING`.execute(),
        );
      }
      if (settled.length > 0) {
        writes.push(
          tx`
          UPDATE orders o SET state = u.state, report_digest = u.digest, updated_at = u.settled_at,
            settled_at = u.settled_at, settled_seq = u.settled_seq, settled_fact_id = u.settled_fact,
            settled_balance_after_cents = u.settled_balance
          FROM json_to_recordset(${JSON.stringify(settled)}::text::json)
               AS u(id uuid, state text, digest text, settled_at timestamptz, settled_seq bigint, settled_fact uuid,
                    settled_balance bigint)
          WHERE o.id = u.id
            -- Names the rows for the planner: joined to a function's rows alone, it chose to scan every order.
            AND o.id = ANY(${settled.map((r) => r.id)}::uuid[])`.execute(),
        );
      }
      if (payouts.length > 0) {
        writes.push(
          tx`
          INSERT INTO payouts (id, order_id, seller_principal_id, listing_id, amount_cents, state, sandbox, stream_seq,
                               created_at)
          SELECT p.id, p.order_id, p.seller, p.listing, p.amount, 'accrued', p.sandbox, p.seq, p.at
          FROM json_to_recordset(${JSON.stringify(payouts)}::text::json)
               AS p(id uuid, order_id uuid, seller uuid, listing uuid, amount bigint, sandbox boolean, seq bigint,
                    at timestamptz)
          ON CONFLICT (order_id) DO NOTHING`.execute(),
        );
      }
      // Each settlement fact is applied once (the checkpoint commits with this transaction): sums only, no rows.
      if (samples.length > 0) writes.push(addToTrustSums(tx, samples));
      writes.push(insertIdempotencyKeys(tx, keys));
      const lastAtMs = Date.parse(batch.at(-1)!.fact.at);
      if (lastAtMs - prunedAtMs >= keyPruneEveryMs) {
        writes.push(pruneIdempotencyKeys(tx, new Date(lastAtMs - keyRetentionMs).toISOString()));
        prunedAtMs = lastAtMs;
      }
      await Promise.all(writes);
    },
    async truncate(tx) {
      await tx`TRUNCATE orders, payouts, idempotency_keys`;
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

/** The ledger entry types each event type is read from. */
const eventEntryTypes: Record<string, string[]> = {
  'order.state_changed': ['escrow_held', 'escrow_released', 'escrow_refunded'],
  'topup.credited': ['topup_credited'],
};

/**
 * A principal's events after a stream sequence, oldest first: one per ledger entry (the `ledger` view) that is an
 * order's state change or a top-up, with the order's listing and price from its row.
 */
export async function eventsPage(sql: Sql, principal: string, type: string | null, afterSeq: number, limit: number) {
  const types = type === null ? Object.values(eventEntryTypes).flat() : (eventEntryTypes[type] ?? []);
  const entries = ledgerEntries(sql, { principalId: principal, afterSeq, types, newestFirst: false, limit });
  return sql<{ id: string; type: string; stream_seq: number; data: object; created_at: Date }[]>`
    SELECT 'evt_' || l.id AS id, l.stream_seq, l.created_at,
      CASE WHEN l.type = 'topup_credited' THEN 'topup.credited' ELSE 'order.state_changed' END AS type,
      CASE WHEN l.type = 'topup_credited'
        THEN json_build_object('topup_id', l.reference, 'amount_cents', l.amount_cents, 'sandbox', l.sandbox)
        ELSE json_build_object('order_id', l.run_id,
                               'state', CASE l.type WHEN 'escrow_held' THEN 'held' WHEN 'escrow_released' THEN 'released'
                                                    ELSE 'auto_refunded' END,
                               'listing_id', o.listing_id, 'escrow_cents', o.escrow_cents)
      END AS data
    FROM (${entries}) l LEFT JOIN orders o ON o.id = l.run_id::uuid
    ORDER BY l.stream_seq`;
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
 * Everything projected from the LEDGER stream, in one pass and one transaction per batch: credit ledger entries,
 * then orders (with their escrow entries), payouts and settlement trust samples (events are read from the `ledger`
 * view). One reader of the stream.
 */
export function principalFactsProjection(
  n: Names,
  weight: (atMs: number) => number,
  keyRetentionMs: number,
): Projection<LedgerFact> {
  const ledger = ledgerProjection(n);
  const commerce = commerceProjection(n, weight, keyRetentionMs);

  return {
    checkpoint: `principal_facts:${n.streams.ledger.name}`,
    stream: n.streams.ledger.name,
    async apply(tx, batch) {
      await Promise.all([ledger.apply(tx, batch), commerce.apply(tx, batch)]);
    },
    async truncate(tx) {
      await ledger.truncate(tx);
      await commerce.truncate(tx);
    },
  };
}
