// Delivery's tables (migration 016): the PDF cache by (edition, renderer version) and the signed receipts of
// deliveries, paged per order newest first.
import { jsonRows, type Sql } from './postgres.ts';

export interface RenderedPdf {
  bytes: Uint8Array;
  digest: string;
  renders: number;
}

export async function getRenderedPdf(sql: Sql, editionId: string, rendererVersion: string) {
  const rows = await sql<RenderedPdf[]>`
    SELECT bytes, digest, renders FROM rendered_pdfs
    WHERE edition_id = ${editionId} AND renderer_version = ${rendererVersion}`;
  return rows[0] ?? null;
}

/**
 * Store a fresh render. Another process may have stored the same (deterministic) bytes meanwhile: the first row
 * stays and the render is counted on it.
 */
export async function storeRenderedPdf(
  sql: Sql,
  editionId: string,
  rendererVersion: string,
  bytes: Uint8Array,
  digest: string,
): Promise<void> {
  await sql`
    INSERT INTO rendered_pdfs (edition_id, renderer_version, bytes, digest)
    VALUES (${editionId}, ${rendererVersion}, ${bytes}, ${digest})
    ON CONFLICT (edition_id, renderer_version) DO UPDATE SET renders = rendered_pdfs.renders + 1`;
}

export interface ReceiptRow {
  seq: number;
  receipt: string;
}

export interface NewReceipt {
  id: string;
  orderId: string;
  buyerPrincipalId: string;
  format: string;
  digest: string;
  receipt: string;
  deliveredAt: string;
}

/** Store receipts in one statement (one commit for a batch of deliveries). */
export async function insertReceipts(sql: Sql, rows: readonly NewReceipt[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    INSERT INTO delivery_receipts (id, order_id, buyer_principal_id, format, digest, receipt, delivered_at)
    SELECT r."id", r."orderId", r."buyerPrincipalId", r."format", r."digest", r."receipt", r."deliveredAt"
    FROM json_to_recordset(${jsonRows(rows)}::text::json)
      AS r("id" uuid, "orderId" uuid, "buyerPrincipalId" uuid, "format" text, "digest" text, "receipt" text,
           "deliveredAt" timestamptz)
    ORDER BY r."deliveredAt"`;
}

/** An order's receipts, newest first, before the cursor's sequence (null: from the newest). */
export async function receiptsPage(
  sql: Sql,
  orderId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<ReceiptRow[]> {
  return sql<ReceiptRow[]>`
    SELECT seq, receipt FROM delivery_receipts WHERE order_id = ${orderId}
      ${beforeSeq === null ? sql`` : sql`AND seq < ${beforeSeq}`}
    ORDER BY seq DESC LIMIT ${limit}`;
}
