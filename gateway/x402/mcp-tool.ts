// The x402 rail as an MCP tool (docs/x402.md, MCP): `buy_listing_x402` buys one listing's content the way the x402
// MCP transport pays for a tool. Called without a payment, its result is an error result whose structuredContent is
// the PaymentRequired object (and whose text is the same JSON); an x402-aware client pays and calls again with the
// PaymentPayload in `_meta["x402/payment"]`, and the result carries the settlement in `_meta["x402/payment-response"]`.
// The purchase is the payer's, as on the HTTP resource, whoever holds the session: the payment is the credential.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { isPaymentPayloadV2 } from '@x402/core/schemas';
import { type Config, type ErrorCode, errorBody, x402PathPrefix } from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';

export const x402ToolName = 'buy_listing_x402';
const paymentKey = 'x402/payment';
const paymentResponseKey = 'x402/payment-response';

export const x402ToolDefinition = {
  name: x402ToolName,
  title: 'Buy a listing with an x402 payment',
  description:
    'Buy one live listing\'s content with an x402 payment (no Assay credits needed). Without a payment the result is an error carrying the x402 PaymentRequired (price, asset, network, payTo, and a description naming the artifact, its content hash, report and verdict); pay and call again with the PaymentPayload in _meta["x402/payment"]. An edition whose report misses its floor is refunded to the payer\'s Assay credit balance.',
  inputSchema: {
    type: 'object' as const,
    properties: {
      listing_id: { type: 'string', format: 'uuid' },
      format: { type: 'string', enum: ['md', 'pdf'], default: 'md' },
    },
    required: ['listing_id'],
    additionalProperties: false,
  },
};

export class X402McpTool {
  constructor(private readonly d: { config: Config; bus: GatewayBus }) {}

  async call(
    args: Record<string, unknown>,
    meta: Record<string, unknown> | undefined,
    requestId: string,
  ): Promise<CallToolResult> {
    const listingId = typeof args.listing_id === 'string' ? args.listing_id : '';
    const format = args.format === 'pdf' ? 'pdf' : 'md';
    if (args.format !== undefined && args.format !== 'md' && args.format !== 'pdf') {
      return this.refusal('validation_failed', 'format must be md or pdf');
    }
    const resourceUrl = `${this.d.config.baseUrl}${x402PathPrefix}listings/${listingId}/content?format=${format}`;
    const payment = meta?.[paymentKey];
    if (payment === undefined) {
      const a = await this.d.bus.ask('x402.offer', { listingId, format, resourceUrl }, { requestId });
      if (!a.ok) return this.refusal(a.reply.error.code, a.reply.error.message);
      return paymentRequired(a.body.paymentRequired);
    }
    if (!isPaymentPayloadV2(payment)) {
      return this.refusal('validation_failed', `_meta["${paymentKey}"] is not an x402 v2 PaymentPayload`);
    }
    // The schema reads a network as any string; the header's type names it <namespace>:<reference>.
    const [ns = '', ref = ''] = payment.accepted.network.split(':');
    const { extensions, ...sent } = payment;
    const paymentSignature = encodePaymentSignatureHeader({
      ...sent,
      ...(extensions ? { extensions } : {}),
      accepted: { ...payment.accepted, network: `${ns}:${ref}`, extra: payment.accepted.extra ?? {} },
    });
    const a = await this.d.bus.ask(
      'x402.pay',
      { listingId, format, resourceUrl, paymentSignature },
      { requestId, timeoutMs: this.d.config.requestTimeoutMs * 4 },
    );
    if (!a.ok) return this.refusal(a.reply.error.code, a.reply.error.message);
    const r = a.body;
    if (r.status === 402) return paymentRequired(r.paymentRequired);
    const settled = r.paymentResponseHeader === null ? null : decodePaymentResponseHeader(r.paymentResponseHeader);
    const _meta = settled === null ? {} : { [paymentResponseKey]: settled };
    if (r.refusal) {
      const body = { ...errorBody(this.d.config.baseUrl, r.refusal.code, r.refusal.message), ...r.refusal.extra };
      return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }], _meta };
    }
    const delivery = isObject(r.delivery) ? r.delivery : {};
    return { structuredContent: delivery, content: [{ type: 'text', text: JSON.stringify(delivery) }], _meta };
  }

  private refusal(code: ErrorCode, message: string): CallToolResult {
    const body = errorBody(this.d.config.baseUrl, code, message);
    return { isError: true, structuredContent: { ...body }, content: [{ type: 'text', text: JSON.stringify(body) }] };
  }
}

/** The x402 MCP transport's payment-required result: PaymentRequired as structuredContent and as its text. */
function paymentRequired(pr: unknown): CallToolResult {
  const structured = isObject(pr) ? pr : {};
  return {
    isError: true,
    structuredContent: structured,
    content: [{ type: 'text', text: JSON.stringify(structured) }],
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
