// The x402 rail's tables (migration 044): payers (an address on a network is a live principal), the payments x402
// clients sent with what the facilitator answered, and each x402 order's bundle, issued once. What a paid resource
// offers is read here in one statement: the live listing with its artifact's current edition and report.
import type { Sql } from './postgres.ts';

export interface X402OfferRow {
  listing_id: string;
  artifact_id: string;
  price_cents: number;
  floor: number;
  formats: string[];
  sandbox: boolean;
  title: string;
  topics: string[];
  edition_id: string;
  content_hash: string;
  report_digest: string | null;
  mean_entailment: number | null;
  judge_model: string | null;
  judge_version: string | null;
}

const offerColumns = (sql: Sql) => sql`
  l.id AS listing_id, l.artifact_id, l.price_cents::float8 AS price_cents, l.floor, l.formats, l.sandbox,
  e.title, e.topics, e.id AS edition_id, e.content_hash, r.digest AS report_digest, r.mean_entailment,
  r.judge_model, r.judge_version`;

/** Live listings of the live side (the side x402 payers stand on), with what their 402 answer names. */
export async function x402Offers(sql: Sql, listingIds: readonly string[]): Promise<X402OfferRow[]> {
  if (listingIds.length === 0) return [];
  return sql<X402OfferRow[]>`
    SELECT ${offerColumns(sql)}
    FROM listings l
    JOIN artifacts a ON a.id = l.artifact_id
    JOIN editions e ON e.id = a.current_edition_id
    LEFT JOIN reports r ON r.edition_id = e.id
    WHERE l.id = ANY(${listingIds}::uuid[]) AND l.state = 'live' AND NOT l.sandbox`;
}

export interface X402Payer {
  principalId: string;
  agentId: string;
}

/** Record a payer principal (its principal and agent rows too); a known one is left as it is. */
export async function ensureX402Payer(
  sql: Sql,
  p: { network: string; address: string; principalId: string; agentId: string; at: string },
): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`INSERT INTO principals (id, sandbox, created_at) VALUES (${p.principalId}, false, ${p.at})
             ON CONFLICT (id) DO NOTHING`;
    await tx`INSERT INTO agents (id, principal_id, name, sandbox, created_at)
             VALUES (${p.agentId}, ${p.principalId}, ${`x402 ${p.address}`}, false, ${p.at})
             ON CONFLICT (id) DO NOTHING`;
    await tx`INSERT INTO x402_payers (network, address, principal_id, agent_id, created_at)
             VALUES (${p.network}, ${p.address}, ${p.principalId}, ${p.agentId}, ${p.at})
             ON CONFLICT (network, address) DO NOTHING`;
  });
}

export interface X402PaymentRow {
  payment_id: string;
  principal_id: string;
  listing_id: string;
  format: string;
  amount_atomic: string;
  payment_payload: unknown;
  requirements: unknown;
  verify_response: unknown;
  settle_response: unknown;
  order_id: string | null;
  created_at: Date;
  settled_at: Date | null;
}

export async function getX402Payment(sql: Sql, paymentId: string): Promise<X402PaymentRow | null> {
  const rows = await sql<X402PaymentRow[]>`SELECT * FROM x402_payments WHERE payment_id = ${paymentId}`;
  return rows[0] ?? null;
}

/** A verified payment, before it is settled; the first one recorded under an authorization stays. */
export async function recordX402Payment(
  sql: Sql,
  p: {
    paymentId: string;
    principalId: string;
    listingId: string;
    format: string;
    amountAtomic: string;
    paymentPayload: unknown;
    requirements: unknown;
    verifyResponse: unknown;
    at: string;
  },
): Promise<void> {
  await sql`
    INSERT INTO x402_payments (payment_id, principal_id, listing_id, format, amount_atomic, payment_payload,
                               requirements, verify_response, created_at)
    VALUES (${p.paymentId}, ${p.principalId}, ${p.listingId}, ${p.format}, ${p.amountAtomic},
            ${JSON.stringify(p.paymentPayload)}::text::json, ${JSON.stringify(p.requirements)}::text::json,
            ${JSON.stringify(p.verifyResponse)}::text::json, ${p.at})
    ON CONFLICT (payment_id) DO NOTHING`;
}

/** The facilitator settled the payment: its answer, once (a later settlement of the same row changes nothing). */
export async function recordX402Settlement(sql: Sql, paymentId: string, settle: unknown, at: string): Promise<void> {
  await sql`
    UPDATE x402_payments SET settle_response = ${JSON.stringify(settle)}::text::json, settled_at = ${at}
    WHERE payment_id = ${paymentId} AND settle_response IS NULL`;
}

export async function recordX402Order(sql: Sql, paymentId: string, orderId: string): Promise<void> {
  await sql`UPDATE x402_payments SET order_id = ${orderId} WHERE payment_id = ${paymentId}`;
}

export async function getReceipt(sql: Sql, receiptId: string): Promise<string | null> {
  const rows = await sql<{ receipt: string }[]>`SELECT receipt FROM delivery_receipts WHERE id = ${receiptId}`;
  return rows[0]?.receipt ?? null;
}

export async function getX402Bundle(sql: Sql, orderId: string): Promise<string | null> {
  const rows = await sql<{ bundle: string }[]>`SELECT bundle FROM x402_bundles WHERE order_id = ${orderId}`;
  return rows[0]?.bundle ?? null;
}

/** Store an order's x402 bundle; the first one stored stays, and is returned. */
export async function storeX402Bundle(
  sql: Sql,
  orderId: string,
  digest: string,
  bundle: string,
  at: string,
): Promise<string> {
  await sql`INSERT INTO x402_bundles (order_id, digest, bundle, issued_at) VALUES (${orderId}, ${digest}, ${bundle}, ${at})
            ON CONFLICT (order_id) DO NOTHING`;
  return (await getX402Bundle(sql, orderId)) ?? bundle;
}
