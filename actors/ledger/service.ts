// The principal's read side, from the PostgreSQL projections of its LEDGER facts: ledger entries, orders,
// compliance bundles, payouts, subscriptions and events. A read waits (briefly) until the projection holds the principal's latest
// fact, so a client reads its own writes; another principal's records are simply not there (404).
import Type from 'typebox';
import {
  type ContextRecord,
  contextView,
  errorReply,
  idempotencyRetentionMs,
  type LedgerPageT,
  okfMediaType,
  okfPageContentBytesMax,
  okfPageRowsMax,
  okReply,
  pageLimits,
  schemas,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import {
  activeKey,
  agentNames,
  listingLabels,
  eventsPage,
  getBundle,
  getOrder,
  getReport,
  latestEvents,
  lookupIdempotencyKeys,
  okfExportTag,
  okfPageBytes,
  exportPage,
  syncExportFor,
  billingProfile,
  publicContextFile,
  type OrderRow,
  ordersPage,
  payoutsPage,
  type Projection,
  readLedgerPage,
  storeBundle,
  subscriptionParties,
  subscriptionRecordOf,
  subscriptionsPage,
} from '../../storage/index.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';
import {
  badCursor,
  decodeLedgerCursor,
  decodeNumberCursor,
  decodeTimeIdCursor,
  encodeCursor,
  encodeLedgerCursor,
  encodeTimeIdCursor,
} from '../shared/cursor.ts';
import { subscriptionResource } from '../shared/subscription-resource.ts';
import { purchaseOrderId } from '../shared/ids.ts';
import { signDocument } from '../shared/signed-document.ts';
import { storedJson } from '../shared/stored-json.ts';
import { eventResource, eventsCursor, eventsOf, eventsResumeAfter } from './events.ts';
import { principalFactsCaughtUp } from './caught-up.ts';
import { principalFactsOf } from './projection.ts';

/** The parts of a stored report a compliance bundle cites. */
const BundleReportParts = Type.Pick(schemas.VerificationReport, [
  'digest',
  'pipelineVersion',
  'createdAt',
  'signingKeyId',
  'signature',
  'judgeModel',
  'judgePromptVersion',
  'judgePromptHash',
]);

export type LedgerServiceDeps = WorkerServiceDeps;

export function orderResource(o: OrderRow) {
  return {
    id: o.id,
    listingId: o.listing_id,
    buyerPrincipalId: o.buyer_principal_id,
    buyerAgentId: o.buyer_agent_id,
    subscriptionId: o.subscription_id,
    state: o.state,
    escrowCents: o.escrow_cents,
    formats: o.formats,
    idempotencyKey: o.idempotency_key,
    priceSnapshotId: o.price_snapshot_id,
    runId: o.id,
    refundReason: o.refund_reason,
    sandbox: o.sandbox,
    createdAt: o.created_at.toISOString(),
    updatedAt: o.updated_at.toISOString(),
  };
}

export async function ledgerService(d: LedgerServiceDeps): Promise<ServiceHandlers<'ledger'>> {
  const { sql, names } = d;
  const projection = principalFactsOf(names, d.config) as Projection<unknown>;
  const caughtUp = await principalFactsCaughtUp(d.nc, sql, names, d.config);

  /**
   * Where a page starts: the stream sequence in its cursor, or null for the first page, which waits (briefly) for
   * the projection to hold the caller's latest fact, so a client reads its own writes. 'bad' for a forged cursor.
   */
  const pageStart = async (kind: string, cursor: string | undefined, principalId: string) => {
    if (cursor !== undefined) return decodeNumberCursor(kind, cursor) ?? ('bad' as const);
    await caughtUp(principalId);
    return null;
  };

  /**
   * The bundle of a settled order, issued once. An order refunded because no report arrived has no report to cite:
   * its body's `report` and `judge` are null and its outcome says `reason: "no_report"`.
   */
  async function bundleFor(order: OrderRow) {
    const stored = await getBundle(sql, order.id);
    if (stored) return JSON.parse(stored);
    const storedReport = order.report_digest === null ? null : await getReport(sql, order.report_digest);
    const report = storedReport
      ? storedJson(BundleReportParts, storedReport.body, `report ${order.report_digest}`)
      : null;
    const key = await activeKey(sql, 'report');
    if (!key) throw new Error('no report key to sign compliance bundles with');
    const issuedAt = d.clock.nowIso();
    const refunded = order.state !== 'released';
    const body = {
      bundle_version: 'compliance-bundle/1',
      order: {
        id: order.id,
        listing_id: order.listing_id,
        state: order.state,
        escrow_cents: order.escrow_cents,
        formats: order.formats,
        sandbox: order.sandbox,
        created_at: order.created_at.toISOString(),
        updated_at: order.updated_at.toISOString(),
      },
      report: report && {
        digest: report.digest,
        url: `${d.config.baseUrl}/v1/reports/${report.digest}`,
        pipeline_version: report.pipelineVersion,
        created_at: report.createdAt,
        signing_key_id: report.signingKeyId,
        signature: report.signature,
      },
      judge: report && {
        model: report.judgeModel,
        prompt_version: report.judgePromptVersion,
        prompt_hash: report.judgePromptHash,
      },
      outcome: refunded
        ? {
            kind: 'refunded_escrow',
            reason: order.refund_reason ?? 'floor_missed',
            recorded_at: order.settled_at!.toISOString(),
          }
        : { kind: 'cleared_escrow', recorded_at: order.settled_at!.toISOString() },
      issued_at: issuedAt,
    };
    const bundle = signDocument(body, key);
    // Issued once: a later fetch returns the very same bundle (same digest), even after a key rotation.
    return JSON.parse(await storeBundle(sql, order.id, bundle.digest, JSON.stringify(bundle), issuedAt));
  }

  return {
    async 'context.export_tag'() {
      return okReply(200, { tag: await okfExportTag(sql) });
    },

    async 'account.export_page'(req) {
      // Device sync's part is one object (folders, revisions, blob accounting), in one reply of parts.
      if (req.body.section === 'sync') {
        const sync = await syncExportFor(sql, req.body.principalId);
        const page = { items: [sync], next: null };
        return {
          ok: true,
          status: 200,
          body: new TextEncoder().encode(JSON.stringify(page)),
          mediaType: 'application/json',
        };
      }
      const section = req.body.section;
      // Context files are up to a megabyte each: fewer of them to a page.
      const limit = section === 'context_files' ? 16 : 500;
      const page = await exportPage(sql, req.body.principalId, section, req.body.after, limit);
      return {
        ok: true,
        status: 200,
        body: new TextEncoder().encode(JSON.stringify(page)),
        mediaType: 'application/json',
      };
    },

    async 'context.export_page'(req) {
      const body = await okfPageBytes(sql, req.body.after, okfPageRowsMax, okfPageContentBytesMax);
      return { ok: true, status: 200, body, mediaType: okfMediaType };
    },

    async 'context.public_get'(req) {
      const row = await publicContextFile(sql, req.body.id);
      if (!row) return errorReply('not_found', 'no context file of yours, or public, has this id');
      const record: ContextRecord = {
        id: row.id,
        name: row.name,
        slug: row.slug,
        description: row.description,
        isPublic: true,
        contentSha256: row.content_sha256,
        contentBytes: row.content_bytes,
        preview: row.preview,
        createdAt: row.created_at.toISOString(),
        updatedAt: row.updated_at.toISOString(),
      };
      const view = contextView(record, row.content, row.owner_principal_id === req.caller.principalId);
      return okReply(200, view);
    },

    async 'idempotency.lookup'(req) {
      const { keys } = req.body;
      const wanted = keys.map(([principalId, key]) => ({
        principalId,
        key,
        // A purchase's key is found through the order it made.
        orderId: purchaseOrderId(principalId, key),
      }));
      const usedAfter = new Date(d.clock.nowMs() - idempotencyRetentionMs(d.config)).toISOString();
      return okReply(200, await lookupIdempotencyKeys(sql, projection.checkpoint, wanted, usedAfter));
    },

    async getLedger({ query: q, caller }) {
      const before = q.cursor === undefined ? null : decodeLedgerCursor(q.cursor);
      if (q.cursor !== undefined && before === null) return badCursor('ledger');
      if (q.cursor === undefined) await caughtUp(caller.principalId);
      const page = await readLedgerPage(sql, {
        principalId: caller.principalId,
        before,
        limit: q.limit ?? pageLimits.default,
      });
      const body: LedgerPageT = {
        items: page.items,
        next_cursor: page.nextBefore === null ? null : encodeLedgerCursor(page.nextBefore),
      };
      return okReply(200, body);
    },

    async 'account.labels'({ body }) {
      const [listings, agents] = await Promise.all([
        listingLabels(sql, body.listingIds),
        agentNames(sql, body.principalIds, body.agentIds),
      ]);
      return okReply(200, {
        listings: listings.map((l) => ({
          id: l.id,
          artifactId: l.artifact_id,
          title: l.title,
          priceCents: Number(l.price_cents),
          floor: l.floor,
          report:
            l.mean_entailment === null || l.report_digest === null
              ? null
              : { meanEntailment: l.mean_entailment, digest: l.report_digest },
        })),
        agents,
      });
    },

    async getOrders({ query: q, caller }) {
      const beforeSeq = await pageStart('orders', q.cursor, caller.principalId);
      if (beforeSeq === 'bad') return badCursor('orders');
      const limit = q.limit ?? pageLimits.default;
      const rows = await ordersPage(sql, caller.principalId, beforeSeq, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return okReply(200, {
        items: page.map(orderResource),
        next_cursor: rows.length > limit && last ? encodeCursor('orders', last.held_seq) : null,
      });
    },

    async getOrder({ params, caller }) {
      let order = await getOrder(sql, params.order_id);
      // A released or refunded order is final; an absent or held one may be a projection behind the caller's writes.
      if (!order || order.state === 'held') {
        await caughtUp(caller.principalId);
        order = await getOrder(sql, params.order_id);
      }
      if (!order || order.buyer_principal_id !== caller.principalId) {
        return errorReply('not_found', 'no order with this id');
      }
      return okReply(200, orderResource(order));
    },

    async getComplianceBundle({ params, caller }) {
      await caughtUp(caller.principalId);
      const order = await getOrder(sql, params.order_id);
      if (!order || order.buyer_principal_id !== caller.principalId)
        return errorReply('not_found', 'no order with this id');
      if (order.state === 'held') {
        return errorReply('unavailable', 'the order is not settled yet; its bundle exists once settlement decides', 2);
      }
      return okReply(200, await bundleFor(order));
    },

    async getSubscriptions({ query: q, caller }) {
      const role = q.role ?? 'buyer';
      let after: { createdAt: Date; id: string } | null = null;
      if (q.cursor !== undefined) {
        after = decodeTimeIdCursor('subscriptions', q.cursor);
        if (!after) return badCursor('subscriptions');
      } else if (role === 'buyer') await caughtUp(caller.principalId);
      const limit = q.limit ?? pageLimits.default;
      const rows = await subscriptionsPage(sql, {
        principalId: caller.principalId,
        role,
        sandbox: caller.sandbox,
        after,
        limit: limit + 1,
      });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return okReply(200, {
        items: page.map((r) =>
          subscriptionResource(subscriptionRecordOf(r), r.buyer_principal_id, r.price_cents, caller.principalId),
        ),
        next_cursor: rows.length > limit && last ? encodeTimeIdCursor('subscriptions', last.created_at, last.id) : null,
      });
    },

    async 'subscription.parties'(req) {
      const p = await subscriptionParties(sql, req.body.subscriptionId);
      return okReply(
        200,
        p && { buyerPrincipalId: p.buyer_principal_id, sellerPrincipalId: p.seller_principal_id, sandbox: p.sandbox },
      );
    },

    async getPayouts({ query: q, caller }) {
      const beforeSeq = q.cursor === undefined ? null : decodeNumberCursor('payouts', q.cursor);
      if (beforeSeq === null && q.cursor !== undefined) return badCursor('payouts');
      const limit = q.limit ?? pageLimits.default;
      const [rows, profile] = await Promise.all([
        payoutsPage(sql, caller.principalId, beforeSeq, limit + 1),
        billingProfile(sql, caller.principalId),
      ]);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return okReply(200, {
        items: page.map((p) => ({
          id: p.id,
          order_id: p.order_id,
          listing_id: p.listing_id,
          amount_cents: p.amount_cents,
          state: p.transfer_state === 'paid' ? 'paid' : 'accrued',
          transfer_id: p.transfer_id,
          sandbox: p.sandbox,
          created_at: p.created_at.toISOString(),
        })),
        next_cursor: rows.length > limit && last ? encodeCursor('payouts', last.stream_seq) : null,
        // Sandbox sellers are never paid out: their accruals are test credits.
        payouts_enabled: !caller.sandbox && (profile?.payouts_enabled ?? false),
      });
    },

    async listEvents({ query: q, caller }) {
      const events = eventsOf(names);
      let afterSeq: number | null | 'bad' = 0;
      // The events store has its own checkpoint: the first page waits for that one.
      if (q.cursor === undefined) await caughtUp(caller.principalId, events as Projection<unknown>);
      else afterSeq = await eventsResumeAfter(sql, events, caller.principalId, q.cursor);
      if (afterSeq === 'bad') return badCursor('events');
      if (afterSeq === null) return okReply(200, { items: [], next_cursor: q.cursor ?? null });
      const rows = await eventsPage(sql, {
        principalId: caller.principalId,
        afterSeq,
        type: q.type,
        limit: q.limit ?? pageLimits.default,
      });
      // Events are oldest first and the store only grows: the cursor always resumes after the last one seen. An empty
      // page keeps the caller's place (a cursor from before the store comes back in the store's terms).
      const resumeAfter = rows.at(-1)?.seq ?? afterSeq;
      return okReply(200, {
        items: rows.map(eventResource),
        next_cursor: rows.length === 0 && q.cursor === undefined ? null : eventsCursor(resumeAfter),
      });
    },

    /**
     * The newest events instead of the oldest: a first page read from the other end (the gateway dispatches it with
     * GET /v1/events' scope and validation). The cursor resumes after the newest event returned, or from the start
     * when there is none, so a poller that read this page goes on with GET /v1/events and misses nothing.
     */
    async 'events.latest'({ query: q, caller }) {
      await caughtUp(caller.principalId, eventsOf(names) as Projection<unknown>);
      const rows = await latestEvents(sql, {
        principalId: caller.principalId,
        type: q.type,
        limit: q.limit ?? pageLimits.default,
      });
      return okReply(200, { items: rows.map(eventResource), next_cursor: eventsCursor(rows.at(-1)?.seq ?? 0) });
    },
  };
}
