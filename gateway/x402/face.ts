// The x402 rail's HTTP face (docs/x402.md): `GET /x402/listings/{listing_id}/content?format=md|pdf`, a resource an
// agent pays for in the request (x402 v2 HTTP transport: 402 with PAYMENT-REQUIRED, a retry with
// PAYMENT-SIGNATURE, PAYMENT-RESPONSE on the answer), and `GET /x402/discovery/resources`, the listings as x402
// discovery ("bazaar") items. No bearer token: the payment is the credential. The face decides nothing; the x402
// service (actors/x402/) verifies, buys, settles and encodes the protocol's headers, and this copies them out.
// With no facilitator configured every route answers 404, as if the rail did not exist.
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  type Config,
  type ErrorCode,
  errorBody,
  errorTable,
  type X402PayReplyT,
  x402PathPrefix,
} from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import Type from 'typebox';
import { AnyQuery, paramsOf, type RouteRow } from '../door/route.ts';
import type { Exchange } from '../http/exchange.ts';

export interface X402FaceDeps {
  config: Config;
  log: Logger;
  bus: GatewayBus;
}

const routes = [
  { name: 'content', method: 'GET', path: `${x402PathPrefix}listings/{listing_id}/content` },
  { name: 'discovery', method: 'GET', path: `${x402PathPrefix}discovery/resources` },
  { name: 'report', method: 'GET', path: `${x402PathPrefix}reports/{digest}` },
] as const;

/** The x402 headers a browser-based client may read across origins (the transport names them). */
const exposed = 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, Assay-Order-Id';

type X402Route = (typeof routes)[number];

export class X402Face {
  private readonly on: boolean;

  constructor(private readonly d: X402FaceDeps) {
    this.on = d.config.x402FacilitatorUrl !== '';
  }

  /**
   * The rail's routes as rows of the gateway's router: none without a facilitator (every path of the rail is then
   * the agent API's typed 404, as if it did not exist). No bearer token: the payment is the credential.
   */
  rows(): RouteRow[] {
    if (!this.on) return [];
    return routes.map((route) => ({
      method: route.method,
      path: route.path,
      face: 'x402',
      dialect: 'agent',
      auth: ['none'],
      scope: null,
      rate: null,
      schemas: {
        params: paramsOf(route.path),
        query: AnyQuery,
        body: null,
        responses: { 200: Type.Unknown(), 402: Type.Unknown() },
      },
      dispatch: { kind: 'local', serve: (x, req, m) => this.handle(x, req, route, m.params) },
    }));
  }

  handle(x: Exchange, req: HttpRequest, route: X402Route, params: Record<string, string>): void {
    const m = { route, params };
    const query = new URLSearchParams(req.getQuery() ?? '');
    const signature = req.getHeader('payment-signature');
    if (!x.admit()) return;
    const work =
      m.route.name === 'discovery'
        ? this.discovery(x, query)
        : m.route.name === 'report'
          ? this.report(x, m.params.digest ?? '')
          : this.content(x, m.params.listing_id ?? '', query, signature);
    void work.catch((err: unknown) => {
      this.d.log.error({ err, requestId: x.requestId }, 'x402 request failed');
      this.refuse(x, 'unavailable', 'the x402 rail could not answer; retry', { 'retry-after': '1' });
    });
  }

  private async content(x: Exchange, listingId: string, query: URLSearchParams, signature: string): Promise<void> {
    const format = query.get('format') ?? 'md';
    if (format !== 'md' && format !== 'pdf') {
      return this.refuse(x, 'validation_failed', 'format must be md or pdf');
    }
    const resourceUrl = `${this.d.config.baseUrl}${x402PathPrefix}listings/${listingId}/content?format=${format}`;
    const o = { requestId: x.requestId };
    // A HEAD hands nothing over, so it never pays either: it gets the head of the 402.
    if (signature === '' || x.head) {
      const a = await this.d.bus.ask('x402.offer', { listingId, format, resourceUrl }, o);
      if (x.closed) return;
      if (!a.ok) return this.refuseReply(x, a.reply);
      return x.sendJson(
        402,
        { 'payment-required': a.body.paymentRequiredHeader, 'access-control-expose-headers': exposed },
        a.body.paymentRequired,
      );
    }
    // Verification, purchase, settlement and delivery take several round trips: the service has its own deadlines.
    const timeoutMs = this.d.config.requestTimeoutMs * 4;
    const a = await this.d.bus.ask(
      'x402.pay',
      { listingId, format, resourceUrl, paymentSignature: signature },
      { ...o, timeoutMs },
    );
    if (x.closed) return;
    if (!a.ok) return this.refuseReply(x, a.reply);
    this.sendPaid(x, a.body);
  }

  private sendPaid(x: Exchange, r: X402PayReplyT): void {
    const headers: Record<string, string> = { 'access-control-expose-headers': exposed, 'cache-control': 'no-store' };
    if (r.paymentRequiredHeader !== null) headers['payment-required'] = r.paymentRequiredHeader;
    if (r.paymentResponseHeader !== null) headers['payment-response'] = r.paymentResponseHeader;
    if (r.orderId !== null) headers['assay-order-id'] = r.orderId;
    if (r.status === 402) x.sendJson(402, headers, r.paymentRequired);
    else if (r.refusal) {
      const { code, message, retryAfterS, extra } = r.refusal;
      if (retryAfterS !== undefined) headers['retry-after'] = String(retryAfterS);
      x.sendJson(r.status, headers, { ...errorBody(this.d.config.baseUrl, code, message), ...extra });
    } else x.sendJson(r.status, headers, r.delivery);
  }

  private async discovery(x: Exchange, query: URLSearchParams): Promise<void> {
    const a = await this.d.bus.ask('x402.discovery', Object.fromEntries(query), { requestId: x.requestId });
    if (x.closed) return;
    if (!a.ok) return this.refuseReply(x, a.reply);
    x.sendJson(200, { 'cache-control': 'no-cache' }, a.body);
  }

  /** A signed report, public on the rail so a buyer with no account checks it before it pays. */
  private async report(x: Exchange, digest: string): Promise<void> {
    const a = await this.d.bus.ask('x402.report', { digest }, { requestId: x.requestId });
    if (x.closed) return;
    if (!a.ok) return this.refuseReply(x, a.reply);
    x.sendJson(200, { 'cache-control': 'public, max-age=31536000, immutable' }, a.body);
  }

  private refuseReply(x: Exchange, r: { error: { code: ErrorCode; message: string; retryAfterS?: number } }): void {
    const headers: Record<string, string> = {};
    if (r.error.retryAfterS !== undefined) headers['retry-after'] = String(r.error.retryAfterS);
    this.refuse(x, r.error.code, r.error.message, headers);
  }

  private refuse(x: Exchange, code: ErrorCode, message: string, headers: Record<string, string> = {}): void {
    if (x.closed) return;
    x.sendJson(errorTable[code].status, headers, errorBody(this.d.config.baseUrl, code, message));
  }
}
