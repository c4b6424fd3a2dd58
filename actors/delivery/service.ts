// Delivery of what an order bought (docs/purchases.md, "Delivery"): the content of the edition pinned at purchase,
// in a format the order paid for, once its escrow is released. Markdown is the edition's stored text, whose UTF-8
// bytes hash to the content hash the signed report names; a PDF is rendered from it once per (edition, renderer
// version) and cached. Every delivery that hands bytes over records a signed receipt.
import { createHash } from 'node:crypto';
import {
  type BusReply,
  type Caller,
  errorReply,
  etagMatches,
  okReply,
  pageLimits,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import {
  activeKey,
  allKeys,
  type EditionRow,
  getEdition,
  getOrder,
  getRenderedPdf,
  type OrderRow,
  receiptsPage,
  type StoredKey,
  storeRenderedPdf,
} from '../../storage/index.ts';
import { principalFactsCaughtUp } from '../ledger/caught-up.ts';
import type { IdSource } from '../runtime/clock.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';
import { badCursor, decodeNumberCursor, encodeCursor } from '../shared/cursor.ts';
import { signDocument } from '../shared/signed-document.ts';
import { ByteBudgetCache } from './byte-cache.ts';
import { checkLink, type LinkCheck, linkKeyOf, signLink } from './download-link.ts';
import { pdfRendererVersion, renderPdf } from './pdf-input.ts';
import { ReceiptWriter } from './receipt-writer.ts';

export interface DeliveryServiceDeps extends WorkerServiceDeps {
  ids: IdSource;
}

type Format = 'md' | 'pdf';
const signingKeyTtlMs = 5000;
const mediaTypes: Record<Format, string> = { md: 'text/markdown; charset=utf-8', pdf: 'application/pdf' };

/** The bytes of one format of one edition. */
interface Delivered {
  bytes: Buffer;
  /** `sha256:<hex>` of the bytes. */
  digest: string;
  renderer: string | null;
}

/** What a refused signed link is told: how to get one that works. */
const linkRefusals: Record<Exclude<LinkCheck, { ok: true }>['reason'], string> = {
  incomplete: 'a signed download link carries expires, agent, key and signature; use download_url as it was given',
  unknown_key:
    'the download link names a key this service does not have; ask GET /v1/orders/{order_id}/content for a new link',
  bad_signature:
    'the download link does not match its signature (it was changed or is for another order or format); ask GET /v1/orders/{order_id}/content for a new link',
  expired: 'the download link has expired; ask GET /v1/orders/{order_id}/content for a new one',
};

/** An order that may be delivered in the asked format, with its edition; or the refusal. */
type Deliverable = { ok: true; order: OrderRow; edition: EditionRow } | { ok: false; reply: BusReply };

export async function deliveryService(d: DeliveryServiceDeps): Promise<ServiceHandlers<'delivery'>> {
  const { sql } = d;
  const caughtUp = await principalFactsCaughtUp(d.nc, sql, d.names, d.config);
  // Editions never change, so what they deliver is cached in process; the PDF also in PostgreSQL for every process.
  const cache = new ByteBudgetCache<Delivered>(d.config.deliveryCacheBytes);
  const rendering = new Map<string, Promise<Delivered>>();
  const receipts = new ReceiptWriter(sql);
  // The signing key, re-read at most every few seconds: a receipt signed with a key retired meanwhile still verifies
  // (retired keys stay published), and a query per delivery would cost more than the signature.
  let signingKey: { key: StoredKey; readAtMs: number } | null = null;
  const receiptKey = async () => {
    const now = d.clock.nowMs();
    if (!signingKey || now - signingKey.readAtMs > signingKeyTtlMs) {
      const key = await activeKey(sql, 'report');
      if (!key) throw new Error('no report key to sign delivery receipts with');
      signingKey = { key, readAtMs: now };
    }
    return signingKey.key;
  };
  // Link keys by signing key id, derived once each. A link naming a key not known here reloads the list, at most
  // every few seconds, so links made with a key another process created just now work, and made-up ids cost nothing.
  const linkKeys = new Map<string, Buffer>();
  let linkKeysReadAtMs = Number.NEGATIVE_INFINITY;
  const linkKeyKnown = async (kid: string) => {
    const now = d.clock.nowMs();
    if (linkKeys.has(kid) || now - linkKeysReadAtMs < signingKeyTtlMs) return;
    linkKeysReadAtMs = now;
    for (const k of await allKeys(sql, 'report')) if (!linkKeys.has(k.kid)) linkKeys.set(k.kid, linkKeyOf(k));
  };

  /** The caller's order, read after the projection holds the caller's latest fact when it looks stale. */
  async function callersOrder(caller: Caller, orderId: string): Promise<OrderRow | null> {
    let order = await getOrder(sql, orderId);
    // A released or refunded order is final; an absent or held one may be a projection behind the caller's writes.
    if (!order || order.state === 'held') {
      await caughtUp(caller.principalId);
      order = await getOrder(sql, orderId);
    }
    return order && order.buyer_principal_id === caller.principalId ? order : null;
  }

  /** The caller's order in `format`, or the refusal. */
  async function deliverable(caller: Caller, orderId: string, format: Format): Promise<Deliverable> {
    return deliverableOrder(await callersOrder(caller, orderId), format);
  }

  async function deliverableOrder(order: OrderRow | null, format: Format): Promise<Deliverable> {
    if (!order) return { ok: false, reply: errorReply('not_found', 'no order with this id') };
    if (order.state === 'held') {
      return {
        ok: false,
        reply: errorReply(
          'unavailable',
          'the order is held in escrow until its edition is judged; its content is delivered once the escrow is released',
          2,
        ),
      };
    }
    if (order.state === 'auto_refunded') {
      const why =
        order.refund_reason === 'no_report'
          ? 'no report arrived within the wait bound'
          : "the edition's report missed the order's floor";
      return {
        ok: false,
        reply: errorReply('order_refunded', `the order was refunded (${why}), so it delivers nothing`),
      };
    }
    if (!order.formats.includes(format)) {
      return {
        ok: false,
        reply: errorReply(
          'validation_failed',
          `this order bought ${order.formats.join(' and ')}; format ${format} was not bought`,
        ),
      };
    }
    const edition = await getEdition(sql, order.edition_id);
    if (!edition) throw new Error(`order ${order.id} names edition ${order.edition_id}, which is not stored`);
    return { ok: true, order, edition };
  }

  function markdownOf(edition: EditionRow): Delivered {
    const key = `md:${edition.id}`;
    let md = cache.get(key);
    if (!md) {
      const bytes = Buffer.from(edition.content, 'utf8');
      md = { bytes, digest: sha256(bytes), renderer: null };
      // The stored hash is what the report signed; bytes that hash otherwise must never be handed over as judged.
      if (md.digest !== edition.content_hash) {
        throw new Error(`edition ${edition.id}: content hashes to ${md.digest}, not ${edition.content_hash}`);
      }
      cache.set(key, md, bytes.length);
    }
    return md;
  }

  /** The PDF from the process cache, else PostgreSQL, else rendered (once per process at a time). */
  function pdfOf(edition: EditionRow): Promise<Delivered> {
    const key = `pdf:${edition.id}:${pdfRendererVersion}`;
    const cached = cache.get(key);
    if (cached) return Promise.resolve(cached);
    let pending = rendering.get(key);
    if (!pending) {
      pending = (async () => {
        const stored = await getRenderedPdf(sql, edition.id, pdfRendererVersion);
        let pdf: Delivered;
        if (stored) pdf = { bytes: Buffer.from(stored.bytes), digest: stored.digest, renderer: pdfRendererVersion };
        else {
          const started = performance.now();
          const bytes = await renderPdf({
            markdown: edition.content,
            title: edition.title,
            contentHash: edition.content_hash,
            reportDigest: edition.report_digest,
            editionId: edition.id,
            createdAt: edition.created_at.toISOString(),
          });
          pdf = { bytes, digest: sha256(bytes), renderer: pdfRendererVersion };
          await storeRenderedPdf(sql, edition.id, pdfRendererVersion, bytes, pdf.digest);
          d.log?.info(
            { editionId: edition.id, bytes: bytes.length, ms: Math.round(performance.now() - started) },
            'pdf rendered',
          );
        }
        cache.set(key, pdf, pdf.bytes.length);
        return pdf;
      })().finally(() => rendering.delete(key));
      rendering.set(key, pending);
    }
    return pending;
  }

  function contentOf(edition: EditionRow, format: Format): Promise<Delivered> {
    return format === 'md' ? Promise.resolve(markdownOf(edition)) : pdfOf(edition);
  }

  /** Sign and store the receipt of a delivery; returns its id. */
  async function recordReceipt(
    agentId: string,
    order: OrderRow,
    edition: EditionRow,
    format: Format,
    content: Delivered,
    via: 'api' | 'download',
  ): Promise<string> {
    const key = await receiptKey();
    const id = d.ids.uuid();
    const deliveredAt = d.clock.nowIso();
    const receipt = signDocument(
      {
        receipt_version: 'delivery-receipt/1' as const,
        receipt_id: id,
        order_id: order.id,
        listing_id: order.listing_id,
        artifact_id: order.artifact_id,
        edition_id: edition.id,
        buyer_principal_id: order.buyer_principal_id,
        agent_id: agentId,
        format,
        media_type: mediaTypes[format],
        content_hash: edition.content_hash,
        report_digest: edition.report_digest,
        delivered_digest: content.digest,
        byte_length: content.bytes.length,
        renderer: content.renderer,
        via,
        delivered_at: deliveredAt,
      },
      key,
    );
    await receipts.write({
      id,
      orderId: order.id,
      buyerPrincipalId: order.buyer_principal_id,
      format,
      digest: receipt.digest,
      receipt: JSON.stringify({ id, ...receipt }),
      deliveredAt,
    });
    return id;
  }

  /** A signed link to the raw bytes, for the agent that asked: valid for ASSAY_DOWNLOAD_LINK_TTL_SECONDS. */
  const downloadUrl = async (orderId: string, format: Format, agentId: string) => {
    const key = await receiptKey();
    let linkKey = linkKeys.get(key.kid);
    if (!linkKey) {
      linkKey = linkKeyOf(key);
      linkKeys.set(key.kid, linkKey);
    }
    const expiresS = Math.floor(d.clock.nowMs() / 1000) + d.config.downloadLinkTtlSeconds;
    const query = signLink({ orderId, format, agentId, expiresS }, key.kid, linkKey);
    return `${d.config.webUrl}/api/orders/${orderId}/content?${query}`;
  };

  return {
    async getOrderContent({ params, query, caller, head }) {
      const found = await deliverable(caller, params.order_id, query.format);
      if (!found.ok) return found.reply;
      const { order, edition } = found;
      const content = await contentOf(edition, query.format);
      const receiptId = head ? null : await recordReceipt(caller.agentId, order, edition, query.format, content, 'api');
      return okReply(200, {
        order_id: order.id,
        edition_id: edition.id,
        format: query.format,
        media_type: mediaTypes[query.format],
        content_hash: edition.content_hash,
        report_digest: edition.report_digest,
        ...(query.format === 'md'
          ? { content: edition.content }
          : { content_base64: content.bytes.toString('base64') }),
        delivered_digest: content.digest,
        byte_length: content.bytes.length,
        renderer: content.renderer,
        download_url: await downloadUrl(order.id, query.format, caller.agentId),
        receipt_id: receiptId,
      });
    },

    async downloadOrderContent({ params, query, caller, head, ifNoneMatch }) {
      let found: Deliverable;
      let agentId: string;
      if (caller === null) {
        // A signed link (the pipeline dispatches one with no caller): checked before anything about the order is read.
        if (query.key !== undefined) await linkKeyKnown(query.key);
        const nowS = Math.floor(d.clock.nowMs() / 1000);
        const link = checkLink(params.order_id, query.format, query, (kid) => linkKeys.get(kid) ?? null, nowS);
        if (!link.ok) return errorReply('unauthorized', linkRefusals[link.reason]);
        found = await deliverableOrder(await getOrder(sql, params.order_id), query.format);
        agentId = link.grant.agentId;
      } else {
        found = await deliverable(caller, params.order_id, query.format);
        agentId = caller.agentId;
      }
      if (!found.ok) return found.reply;
      const { order, edition } = found;
      const content = await contentOf(edition, query.format);
      const etag = `"${content.digest.slice('sha256:'.length)}"`;
      // A conditional GET that matches gets 304 from the gateway: the client already holds these bytes.
      const notModified = ifNoneMatch !== undefined && etagMatches(ifNoneMatch, etag);
      const headers: Record<string, string> = {
        'content-digest': `sha-256=:${Buffer.from(content.digest.slice(7), 'hex').toString('base64')}:`,
        'content-disposition': `inline; filename="${order.id}.${query.format}"`,
      };
      if (!head && !notModified) {
        headers['assay-receipt-id'] = await recordReceipt(agentId, order, edition, query.format, content, 'download');
      }
      return { ok: true, status: 200, body: content.bytes, etag, mediaType: mediaTypes[query.format], headers };
    },

    async getOrderReceipts({ params, query: q, caller }) {
      const order = await callersOrder(caller, params.order_id);
      if (!order) return errorReply('not_found', 'no order with this id');
      const beforeSeq = q.cursor === undefined ? null : decodeNumberCursor('receipts', q.cursor);
      if (beforeSeq === null && q.cursor !== undefined) return badCursor('receipts');
      const limit = q.limit ?? pageLimits.default;
      const rows = await receiptsPage(sql, order.id, beforeSeq, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return okReply(200, {
        items: page.map((r) => JSON.parse(r.receipt)),
        next_cursor: rows.length > limit && last ? encodeCursor('receipts', last.seq) : null,
      });
    },
  };
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}
