// The x402 rail (docs/x402.md): a listing sold to an agent that pays in the request, with Assay's verification and
// escrow in front of it. A paid request is verified by the operator's facilitator (only ever the URL the operator
// configured), checked against the purchase rules for the payer's principal, settled by the facilitator, credited to
// that principal as a fact, bought through the ordinary purchase path, and delivered as delivery delivers, with a
// signed receipt and a signed x402 bundle (the payment, the facilitator's answers, the report, the receipt). The
// wire format is the protocol's own package's (@x402/core); the rules are here and in the principal actor.
import { createHash } from 'node:crypto';
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  HTTPFacilitatorClient,
} from '@x402/core/http';
import { isPaymentPayloadV2 } from '@x402/core/schemas';
import {
  type PaymentPayload,
  type PaymentRequired,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  VerifyError,
  type VerifyResponse,
} from '@x402/core/types';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import {
  type BusReply,
  type Caller,
  canonicalJson,
  type ErrorCode,
  errorReply,
  errorTable,
  internalRequest,
  okReply,
  type RequestOf,
  type ServiceHandlers,
  schemas as S,
  type X402MandateT,
  type X402PayReplyT,
  x402Version,
} from '../../contracts/index.ts';
import {
  activeKey,
  ensureX402Payer,
  getReceipt,
  getReport,
  getX402Bundle,
  getX402Payment,
  recordX402Order,
  recordX402Payment,
  recordX402Settlement,
  storeX402Bundle,
  type X402OfferRow,
  x402Offers,
} from '../../storage/index.ts';
import { askInternal, busRequest } from '../runtime/service.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';
import { derivedId } from '../shared/ids.ts';
import { signDocument } from '../shared/signed-document.ts';

export type X402ServiceDeps = WorkerServiceDeps;

type Format = 'md' | 'pdf';

/** The EIP-3009 authorization the exact EVM scheme carries, checked before anything is asked of anyone. */
const Eip3009Payload = Compile(
  Type.Object({
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]+$' }),
    authorization: Type.Object({
      from: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
      to: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
      value: Type.String({ pattern: '^[0-9]{1,78}$' }),
      validAfter: Type.String({ pattern: '^[0-9]{1,20}$' }),
      validBefore: Type.String({ pattern: '^[0-9]{1,20}$' }),
      nonce: Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' }),
    }),
  }),
);
const orderContent = Compile(S.OrderContent);
const purchaseResult = Compile(S.PurchaseResult);
const searchPage = Compile(S.SearchPage);
const searchQuery = Compile(S.SearchQuery);

/** A payer's principal and agent, derived from its address so every process names the same ones. */
export function x402PayerIds(network: string, address: string): { principalId: string; agentId: string } {
  const a = address.toLowerCase();
  return { principalId: derivedId('x402-payer', network, a), agentId: derivedId('x402-payer-agent', network, a) };
}

export function x402Service(d: X402ServiceDeps): ServiceHandlers<'x402'> {
  const { config, sql } = d;
  // Only the operator's URL is ever called; with none, the rail does not exist (the gateway answers 404 first).
  const facilitator =
    config.x402FacilitatorUrl === ''
      ? null
      : new HTTPFacilitatorClient({ url: config.x402FacilitatorUrl, timeoutMs: config.requestTimeoutMs });
  const off = errorReply('not_found', 'the x402 rail is not configured on this deployment');
  const mandate: X402MandateT = {
    perItemCapCents: config.x402MandateCapCents,
    minTrust: config.x402MandateMinTrust,
    minFloor: config.x402MandateMinFloor,
  };
  // Discovery searches as a reader of the live side; the principal is a name, it holds nothing.
  const discoveryCaller: Caller = {
    principalId: derivedId('x402-discovery'),
    agentId: derivedId('x402-discovery-agent'),
    scopes: ['read:artifact'],
    sandbox: false,
  };

  /** Payer principals this process has recorded (their rows exist), so a payer's next payment skips the insert. */
  const knownPayers = new Set<string>();
  const atomicOf = (cents: number) => (BigInt(cents) * BigInt(config.x402AtomicPerCent)).toString();

  function requirementsOf(o: X402OfferRow): PaymentRequirements {
    return {
      scheme: 'exact',
      network: networkOf(config.x402Network),
      asset: config.x402Asset,
      amount: atomicOf(o.price_cents),
      payTo: config.x402PayTo,
      maxTimeoutSeconds: config.x402MaxTimeoutSeconds,
      extra: { name: config.x402AssetName, version: config.x402AssetVersion },
    };
  }

  /** What the buyer can check before it pays: the artifact, its content hash, report, verdict, and the refund rule. */
  function descriptionOf(o: X402OfferRow, format: Format): string {
    const verdict =
      o.report_digest === null || o.mean_entailment === null
        ? 'not judged yet: the payment is held in escrow until the report lands, refunded if it misses the floor'
        : `${o.mean_entailment >= o.floor ? 'meets' : 'misses'} the listing's floor ${o.floor} (mean entailment ${o.mean_entailment.toFixed(3)}, judge ${o.judge_model} ${o.judge_version})`;
    return [
      `"${o.title}" (artifact ${o.artifact_id}, edition ${o.edition_id}) as ${format}.`,
      o.report_digest === null
        ? `Content hash ${o.content_hash}; report pending; judge's verdict: ${verdict}.`
        : `Content hash ${o.content_hash}; signed report ${o.report_digest}, readable without an account at ${config.baseUrl}/x402/reports/${o.report_digest} (keys at ${config.webUrl}/.well-known/report-keys); judge's verdict: ${verdict}.`,
      "Refunds: an order whose report misses the floor is refunded to the payer's Assay credit balance (the principal derived from the paying address), withdrawn to that address on request as docs/x402.md says; the payment itself is not reversed on chain.",
    ].join(' ');
  }

  function paymentRequiredOf(o: X402OfferRow, format: Format, resourceUrl: string, error?: string): PaymentRequired {
    return {
      x402Version,
      ...(error === undefined ? {} : { error }),
      resource: { url: resourceUrl, description: descriptionOf(o, format), mimeType: 'application/json' },
      accepts: [requirementsOf(o)],
    };
  }

  async function offerFor(listingId: string, format: Format): Promise<X402OfferRow | BusReply<never>> {
    if (!isUuid(listingId)) return errorReply('not_found', 'no live listing with this id');
    const [o] = await x402Offers(sql, [listingId]);
    if (!o) return errorReply('not_found', 'no live listing with this id');
    if (!o.formats.includes(format)) {
      return errorReply('validation_failed', `this listing offers ${o.formats.join(', ')}, not ${format}`);
    }
    return o;
  }

  const refused = (
    status: number,
    code: ErrorCode,
    message: string,
    o: { paymentResponse?: SettleResponse; orderId?: string; extra?: Record<string, unknown>; retryAfterS?: number },
  ): BusReply<X402PayReplyT> =>
    okReply(200, {
      status,
      paymentRequiredHeader: null,
      paymentResponseHeader: o.paymentResponse ? encodePaymentResponseHeader(o.paymentResponse) : null,
      orderId: o.orderId ?? null,
      paymentRequired: null,
      refusal: {
        code,
        message,
        ...(o.retryAfterS === undefined ? {} : { retryAfterS: o.retryAfterS }),
        extra: o.extra ?? {},
      },
      delivery: null,
    });

  /** 402 again: the payment was not accepted, and the requirements say what would be (with the reason). */
  const paymentRequired = (o: X402OfferRow, format: Format, url: string, error: string): BusReply<X402PayReplyT> => {
    const pr = paymentRequiredOf(o, format, url, error);
    return okReply(200, {
      status: 402,
      paymentRequiredHeader: encodePaymentRequiredHeader(pr),
      paymentResponseHeader: null,
      orderId: null,
      paymentRequired: pr,
      refusal: null,
      delivery: null,
    });
  };

  /** The facilitator's verdict on a payment, or null when it could not be asked (down, timed out, garbled). */
  async function verify(payload: PaymentPayload, req: PaymentRequirements): Promise<VerifyResponse | null> {
    if (!facilitator) return null;
    try {
      return await facilitator.verify(payload, req);
    } catch (err) {
      if (err instanceof VerifyError) {
        return { isValid: false, invalidReason: err.invalidReason, invalidMessage: err.invalidMessage };
      }
      d.log?.warn({ err }, 'x402 facilitator verify failed');
      return null;
    }
  }

  async function settle(payload: PaymentPayload, req: PaymentRequirements): Promise<SettleResponse | null> {
    if (!facilitator) return null;
    try {
      return await facilitator.settle(payload, req);
    } catch (err) {
      const r = settleErrorResponse(err);
      if (r) return r;
      d.log?.warn({ err }, 'x402 facilitator settle failed');
      return null;
    }
  }

  function ask(op: string, caller: Caller, extra: Partial<Parameters<typeof busRequest>[2]>, subject: string) {
    return busRequest(
      d.nc,
      subject,
      { op, requestId: `x402-${op}`, caller, params: {}, query: {}, body: null, ...extra },
      config.requestTimeoutMs,
      d.log,
    );
  }

  /** Deliver an order the payment bought: the delivery, its signed receipt and the order's x402 bundle. */
  async function deliver(
    payer: Caller,
    paymentId: string,
    orderId: string,
    format: Format,
    paymentResponse: SettleResponse,
  ): Promise<BusReply<X402PayReplyT>> {
    const r = await ask(
      'getOrderContent',
      payer,
      { params: { order_id: orderId }, query: { format } },
      d.names.serviceSubject('delivery'),
    );
    if (!r.ok) {
      const extra: Record<string, unknown> = { order_id: orderId };
      if (r.error.code === 'order_refunded') {
        const b = await ask('getBalance', payer, {}, d.names.actorSubject('principal', payer.principalId));
        if (b.ok && isRecord(b.body)) extra.balance_cents = b.body.balance_cents;
        extra.bundle = await bundleFor(payer, paymentId, orderId, null);
      }
      return refused(errorTable[r.error.code].status, r.error.code, r.error.message, {
        paymentResponse,
        orderId,
        extra,
        ...(r.error.retryAfterS === undefined ? {} : { retryAfterS: r.error.retryAfterS }),
      });
    }
    if (!orderContent.Check(r.body)) throw new Error('delivery answered a body that is not OrderContent');
    const receiptText = r.body.receipt_id === null ? null : await getReceipt(sql, r.body.receipt_id);
    const receipt = receiptText === null ? null : JSON.parse(receiptText);
    const bundle = await bundleFor(payer, paymentId, orderId, receipt);
    return okReply(200, {
      status: 200,
      paymentRequiredHeader: null,
      paymentResponseHeader: encodePaymentResponseHeader(paymentResponse),
      orderId,
      paymentRequired: null,
      refusal: null,
      delivery: { ...r.body, receipt, bundle },
    });
  }

  /**
   * The order's x402 bundle, issued once: the payment as sent, the requirements, both facilitator answers, the
   * order's own compliance bundle, the signed report and the first receipt, signed like every bundle (assay
   * verify-report checks it and what it embeds, offline).
   */
  async function bundleFor(payer: Caller, paymentId: string, orderId: string, receipt: unknown) {
    const stored = await getX402Bundle(sql, orderId);
    if (stored) return JSON.parse(stored);
    const payment = await getX402Payment(sql, paymentId);
    if (!payment) throw new Error(`x402 payment ${paymentId} is not recorded`);
    const cb = await ask(
      'getComplianceBundle',
      payer,
      { params: { order_id: orderId } },
      d.names.serviceSubject('ledger'),
    );
    const compliance = cb.ok ? cb.body : null;
    const reportDigest =
      isRecord(compliance) && isRecord(compliance.body) && isRecord(compliance.body.report)
        ? compliance.body.report.digest
        : null;
    const report = typeof reportDigest === 'string' ? await getReport(sql, reportDigest) : null;
    const key = await activeKey(sql, 'report');
    if (!key) throw new Error('no report key to sign x402 bundles with');
    const issuedAt = d.clock.nowIso();
    const body = {
      bundle_version: 'x402-bundle/1',
      order_id: orderId,
      payer_principal_id: payer.principalId,
      payment_id: paymentId,
      payment_payload: payment.payment_payload,
      payment_requirements: payment.requirements,
      facilitator: { url: config.x402FacilitatorUrl, verify: payment.verify_response, settle: payment.settle_response },
      compliance_bundle: compliance,
      report: report === null ? null : JSON.parse(report.body),
      receipt,
      issued_at: issuedAt,
    };
    const signed = signDocument(body, key);
    return JSON.parse(await storeX402Bundle(sql, orderId, signed.digest, JSON.stringify(signed), issuedAt));
  }

  async function pay(req: RequestOf<'x402.pay'>): Promise<BusReply<X402PayReplyT>> {
    if (!facilitator) return off;
    const b = req.body;
    const found = await offerFor(b.listingId, b.format);
    if ('ok' in found) return found;
    const offer = found;
    const requirements = requirementsOf(offer);
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(b.paymentSignature);
    } catch {
      return paymentRequired(offer, b.format, b.resourceUrl, 'invalid_payload: PAYMENT-SIGNATURE is not base64 JSON');
    }
    if (!isPaymentPayloadV2(payload) || payload.x402Version !== x402Version) {
      return paymentRequired(offer, b.format, b.resourceUrl, 'invalid_payload: not an x402 v2 payment payload');
    }
    const accepted = payload.accepted;
    // What the payment says it pays must be what this resource asks, before the facilitator is asked anything.
    if (accepted.scheme !== 'exact') return paymentRequired(offer, b.format, b.resourceUrl, 'unsupported_scheme');
    if (accepted.network !== requirements.network) {
      return paymentRequired(
        offer,
        b.format,
        b.resourceUrl,
        `invalid_network: this resource is paid on ${requirements.network}`,
      );
    }
    const auth = payload.payload;
    if (!Eip3009Payload.Check(auth)) {
      return paymentRequired(offer, b.format, b.resourceUrl, 'invalid_payload: not an EIP-3009 authorization');
    }
    const a = auth.authorization;
    if (
      accepted.asset.toLowerCase() !== requirements.asset.toLowerCase() ||
      accepted.payTo.toLowerCase() !== requirements.payTo.toLowerCase() ||
      a.to.toLowerCase() !== requirements.payTo.toLowerCase()
    ) {
      return paymentRequired(offer, b.format, b.resourceUrl, 'invalid_payload: pays another asset or recipient');
    }
    // Exact: the price, no less (underpaid) and no more (what is credited is the price; more would be lost).
    if (BigInt(a.value) !== BigInt(requirements.amount) || BigInt(accepted.amount) !== BigInt(requirements.amount)) {
      return paymentRequired(
        offer,
        b.format,
        b.resourceUrl,
        `invalid_exact_evm_payload_authorization_value: ${a.value} is not the price ${requirements.amount}`,
      );
    }
    const payerAddress = a.from.toLowerCase();
    const paymentId = [requirements.network, requirements.asset, payerAddress, a.nonce].join(':').toLowerCase();
    const ids = x402PayerIds(requirements.network, payerAddress);
    const payer: Caller = { ...ids, scopes: ['purchase'], sandbox: false };
    // The facilitator is given the requirements as this resource states them, never the client's copy.
    const known = await getX402Payment(sql, paymentId);
    if (known && known.listing_id !== offer.listing_id) {
      return paymentRequired(
        offer,
        b.format,
        b.resourceUrl,
        'invalid_payload: this payment was made for another listing',
      );
    }
    if (known?.order_id && isSettled(known.settle_response)) {
      // A replayed (or retried) signature: it bought its order once; answer that order again, buying nothing.
      return deliver(payer, paymentId, known.order_id, b.format, known.settle_response);
    }
    let settled: SettleResponse | null = known && isSettled(known.settle_response) ? known.settle_response : null;
    const priceCents = offer.price_cents;
    if (!settled) {
      const verdict = await verify(payload, requirements);
      if (verdict === null) return facilitatorDown();
      if (!verdict.isValid) {
        const why = [verdict.invalidReason, verdict.invalidMessage].filter(Boolean).join(': ');
        return paymentRequired(offer, b.format, b.resourceUrl, why || 'invalid_payment');
      }
      if (!knownPayers.has(ids.principalId)) {
        await ensureX402Payer(sql, {
          network: requirements.network,
          address: payerAddress,
          ...ids,
          at: d.clock.nowIso(),
        });
        // Bounded: forgetting a payer only costs one more idempotent insert.
        if (knownPayers.size >= knownPayersMax) knownPayers.clear();
        knownPayers.add(ids.principalId);
      }
      // The rules first: nothing is settled for a purchase they would refuse.
      const check = await askInternal(
        d.nc,
        d.names.actorSubject('principal', ids.principalId),
        internalRequest(
          'x402.check',
          { listingId: offer.listing_id, format: b.format, paymentCents: priceCents, mandate },
          { requestId: req.requestId },
        ),
        config.requestTimeoutMs,
        d.log,
      );
      if (!check.ok) {
        const e = check.reply.error;
        return refused(errorTable[e.code].status, e.code, `${e.message}; nothing was settled`, {
          ...(e.retryAfterS === undefined ? {} : { retryAfterS: e.retryAfterS }),
        });
      }
      await recordX402Payment(sql, {
        paymentId,
        principalId: ids.principalId,
        listingId: offer.listing_id,
        format: b.format,
        amountAtomic: a.value,
        paymentPayload: payload,
        requirements,
        verifyResponse: verdict,
        at: d.clock.nowIso(),
      });
      const answer = await settle(payload, requirements);
      if (answer === null) return facilitatorDown();
      if (!answer.success) {
        // Two copies of one signature racing: the one that lost finds the winner's settlement and goes on with it.
        const again = await getX402Payment(sql, paymentId);
        if (!again || !isSettled(again.settle_response)) {
          const why = [answer.errorReason, answer.errorMessage].filter(Boolean).join(': ');
          return paymentRequired(offer, b.format, b.resourceUrl, `settlement_failed: ${why || 'refused'}`);
        }
        settled = again.settle_response;
      } else {
        await recordX402Settlement(sql, paymentId, answer, d.clock.nowIso());
        settled = answer;
      }
    }
    // The payment is money now: credit it to the payer's principal, once per authorization.
    const credit = await askInternal(
      d.nc,
      d.names.actorSubject('principal', ids.principalId),
      internalRequest(
        'x402.credit',
        {
          paymentId,
          amountCents: priceCents,
          network: requirements.network,
          payer: payerAddress,
          transaction: settled.transaction,
          mandate,
        },
        { requestId: req.requestId },
      ),
      config.requestTimeoutMs,
      d.log,
    );
    if (!credit.ok) {
      const e = credit.reply.error;
      return refused(errorTable[e.code].status, e.code, e.message, { paymentResponse: settled, retryAfterS: 1 });
    }
    // The ordinary purchase, keyed by the authorization: a retry finds the same order.
    const purchaseBody = { listing_id: offer.listing_id, formats: [b.format], max_price_cents: priceCents };
    const key = `x402:${paymentId}`;
    const bought = await ask(
      'purchaseArtifact',
      payer,
      {
        body: purchaseBody,
        idempotency: { key, requestHash: sha256Hex(canonicalJson({ op: 'purchaseArtifact', body: purchaseBody })) },
      },
      d.names.actorSubject('principal', ids.principalId),
    );
    if (!bought.ok) {
      // Settled and credited, but the rules refused in the meantime (a reprice, an unlisting): the credits stay.
      return refused(
        errorTable[bought.error.code].status,
        bought.error.code,
        `${bought.error.message}; the payment was credited to the payer's balance (${credit.body.balance_cents} cents)`,
        { paymentResponse: settled, extra: { balance_cents: credit.body.balance_cents } },
      );
    }
    if (!purchaseResult.Check(bought.body)) throw new Error('the purchase answered a body that is not PurchaseResult');
    await recordX402Order(sql, paymentId, bought.body.order_id);
    return deliver(payer, paymentId, bought.body.order_id, b.format, settled);
  }

  return {
    async 'x402.offer'(req) {
      if (!facilitator) return off;
      const found = await offerFor(req.body.listingId, req.body.format);
      if ('ok' in found) return found;
      const pr = paymentRequiredOf(found, req.body.format, req.body.resourceUrl);
      return okReply(200, { paymentRequiredHeader: encodePaymentRequiredHeader(pr), paymentRequired: pr });
    },

    'x402.pay': pay,

    async 'x402.report'(req) {
      if (!facilitator) return off;
      const found = /^sha256:[0-9a-f]{64}$/.test(req.body.digest) ? await getReport(sql, req.body.digest) : null;
      // The live side's reports only: what the rail sells. A sandbox report stays behind its line.
      if (!found || found.sandbox) return errorReply('not_found', 'no report with this digest');
      return okReply(200, JSON.parse(found.body));
    },

    async 'x402.discovery'(req) {
      if (!facilitator) return off;
      const q = Value.Convert(S.SearchQuery, { ...req.body });
      if (!searchQuery.Check(q)) return errorReply('validation_failed', 'the query does not fit the search rules');
      const r = await ask('searchArtifacts', discoveryCaller, { query: q }, d.names.serviceSubject('catalog'));
      if (!r.ok) return r;
      if (!searchPage.Check(r.body)) throw new Error('search answered a body that is not SearchPage');
      const page = r.body;
      const offers = await x402Offers(
        sql,
        page.items.flatMap((i) => i.offers.map((o) => o.listing_id)),
      );
      const items = offers.flatMap((o) =>
        o.formats
          .filter((f): f is Format => f === 'md' || f === 'pdf')
          .map((format) => {
            const url = `${config.baseUrl}/x402/listings/${o.listing_id}/content?format=${format}`;
            return {
              resource: url,
              type: 'http',
              x402Version,
              accepts: [requirementsOf(o)],
              lastUpdated: d.clock.nowIso(),
              metadata: {
                description: descriptionOf(o, format),
                title: o.title,
                topics: o.topics,
                artifact_id: o.artifact_id,
                listing_id: o.listing_id,
                content_hash: o.content_hash,
                report_digest: o.report_digest,
                price_cents: o.price_cents,
              },
            };
          }),
      );
      return okReply(200, { x402Version, items, next_cursor: page.next_cursor });
    },
  };
}

const knownPayersMax = 10_000;

const facilitatorDown = (): BusReply<never> =>
  errorReply('unavailable', 'the x402 facilitator could not be reached; nothing was charged or bought, retry', 2);

function isSettled(v: unknown): v is SettleResponse {
  return isRecord(v) && v.success === true && typeof v.transaction === 'string' && typeof v.network === 'string';
}

/** A settle the facilitator refused answers a SettleResponse in its error; anything else is not an answer. */
function settleErrorResponse(err: unknown): SettleResponse | null {
  if (!(err instanceof SettleError)) return null;
  return {
    success: false,
    ...(err.errorReason === undefined ? {} : { errorReason: err.errorReason }),
    ...(err.errorMessage === undefined ? {} : { errorMessage: err.errorMessage }),
    transaction: err.transaction,
    network: err.network,
  };
}

function networkOf(n: string): `${string}:${string}` {
  const [ns, ref] = n.split(':');
  return `${ns}:${ref}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
