// The web face of the gateway: the OAuth 2.1 server's endpoints and the pages people use (sign-in, sign-up,
// account, consent, device verification), on the same listener as the agent API. Its own route table, its own
// answers (HTML pages, redirects, RFC 6749 JSON), and no state: accounts, sessions and grants live in the oauth
// service, reached over NATS like every other service.
import type { HttpRequest } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { BusReply, Config, Names, OAuthBody, OAuthMessage, OAuthReply } from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import { type Exchange, type Reply, type TransportRefusal, transportRefusalMessage } from '../http/exchange.ts';
import type { Pipeline } from '../pipeline.ts';
import { compileRouter } from '../router.ts';
import { type WebResponse, parseCookies, type WebRequest } from './http.ts';
import { oauthRoutes } from './oauth-routes.ts';
import { moneyRoutes } from './money-routes.ts';
import { pageRoutes } from './page-routes.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface WebContext {
  config: Config;
  log: Logger;
  pipeline: Pipeline;
  /** One message to the oauth service; a refusal comes back as the BusReply it is. */
  oauth<M extends OAuthMessage>(
    message: M,
    body: OAuthBody<M>,
    requestId: string,
  ): Promise<{ ok: true; body: OAuthReply<M> } | { ok: false; reply: Extract<BusReply, { ok: false }> }>;
  /**
   * One internal operation on the signed-in person's own principal actor, as the principal itself (the way the
   * context-file API asks it): the account page's webhooks.
   */
  principal(op: string, principalId: string, body: unknown, requestId: string): Promise<BusReply>;
  /** One message to the payments service (the processor's hosted pages, its webhook events). */
  payments(op: string, body: unknown, requestId: string): Promise<BusReply>;
  /** One page of a section of the person's account export; null when it could not be read. */
  exportPage(
    principalId: string,
    section: string,
    after: string | null,
    requestId: string,
  ): Promise<{ items: unknown[]; next: string | null } | null>;
}

export interface WebRoute {
  method: 'GET' | 'POST';
  path: string;
  /** How the body is read: not at all, as text (a form or JSON). */
  body: 'none' | 'text';
  /** How /openapi.json describes the route; pages people use in a browser have none. */
  doc?: WebRouteDoc;
  handle(ctx: WebContext, req: WebRequest): Promise<WebResponse>;
}

/** A protocol endpoint in the OpenAPI document: its request and its answers, as the RFC it follows words them. */
export interface WebRouteDoc {
  summary: string;
  /** The RFC (and section) the endpoint follows. */
  rfc: string;
  /** The request body: its media type and JSON Schema (a form's fields are its properties). */
  request?: { media: 'application/x-www-form-urlencoded' | 'application/json'; schema: Record<string, unknown> };
  /** `initialAccessToken`: registration's `Authorization: Bearer asyi_...`; public otherwise. */
  security?: 'initialAccessToken';
  responses: Record<number, { description: string; media?: string }>;
}

export class WebFace {
  /** Every route this face serves, in the order they were declared (the OpenAPI document lists the documented ones). */
  readonly routes: readonly WebRoute[];
  private readonly match: ReturnType<typeof compileRouter<WebRoute>>;
  private readonly ctx: WebContext;

  constructor(o: { config: Config; log: Logger; bus: GatewayBus; names: Names; pipeline: Pipeline }) {
    this.routes = webRoutes(o.config);
    this.match = compileRouter([...this.routes]);
    const subject = o.names.serviceSubject('oauth');
    const ledger = o.names.serviceSubject('ledger');
    const payments = o.names.serviceSubject('payments');
    const system = (op: string, body: unknown, requestId: string) => ({
      op,
      requestId,
      caller: null,
      params: {},
      query: {},
      body,
    });
    this.ctx = {
      payments: (op, body, requestId) => o.bus.request(payments, system(op, body, requestId)),
      async exportPage(principalId, section, after, requestId) {
        // A page of context files can pass NATS's max_payload: it comes in parts.
        const { reply } = await o.bus.requestWire(
          ledger,
          system('account.export_page', { principalId, section, after }, requestId),
          true,
        );
        if (!reply.ok || !(reply.body instanceof Uint8Array)) return null;
        return JSON.parse(decoder.decode(reply.body));
      },
      config: o.config,
      log: o.log,
      pipeline: o.pipeline,
      async oauth(message, body, requestId) {
        const reply = await o.bus.request(subject, {
          op: `oauth.${message}`,
          requestId,
          caller: null,
          params: {},
          query: {},
          body,
        });
        return reply.ok ? { ok: true, body: reply.body as never } : { ok: false, reply };
      },
      principal(op, principalId, body, requestId) {
        return o.bus.request(o.names.actorSubject('principal', principalId), {
          op,
          requestId,
          caller: { principalId, agentId: principalId, scopes: [], sandbox: false },
          params: {},
          query: {},
          body,
        });
      },
    };
  }

  /** Whether this face serves the path (with some method): the agent API's 404 answers everything else. */
  serves(method: string, path: string): ReturnType<WebFace['match']> {
    return this.match(method, path);
  }

  /**
   * Serve one request this face routes. Everything needed from uWS is copied before the first await (its request
   * object is only valid until then).
   */
  handle(x: Exchange, req: HttpRequest, route: WebRoute, params: Record<string, string>, clientAddress: string): void {
    const rawQuery = req.getQuery() ?? '';
    const query = new URLSearchParams(rawQuery);
    const seen = new Set<string>();
    const repeatedQuery: string[] = [];
    for (const k of query.keys()) {
      if (seen.has(k)) repeatedQuery.push(k);
      else seen.add(k);
    }
    const request: WebRequest = {
      method: x.method === 'HEAD' ? 'GET' : x.method,
      target: rawQuery ? `${req.getUrl()}?${rawQuery}` : req.getUrl(),
      path: req.getUrl(),
      query,
      repeatedQuery,
      params,
      cookies: parseCookies(req.getHeader('cookie')),
      authorization: req.getHeader('authorization'),
      contentType: req.getHeader('content-type'),
      stripeSignature: req.getHeader('stripe-signature'),
      origin: req.getHeader('origin'),
      clientAddress,
      body: null,
      requestId: x.requestId,
    };
    // The protocol endpoints' documents promise RFC 6749 error bodies, for a body the layer refused too.
    if (route.doc) x.refusalWords = oauthTransportRefusal;
    if (!x.admit()) return;
    if (route.body === 'none') {
      void this.run(x, route, request);
      return;
    }
    x.readText(req, (text) => {
      if (text === null) return;
      request.body = text;
      void this.run(x, route, request);
    });
  }

  private async run(x: Exchange, route: WebRoute, req: WebRequest): Promise<void> {
    let r: WebResponse;
    try {
      r = await route.handle(this.ctx, req);
    } catch (err) {
      this.ctx.log.error({ err, requestId: req.requestId, path: req.path }, 'web request failed');
      r = {
        status: 503,
        headers: { 'retry-after': '1', 'cache-control': 'no-store' },
        contentType: 'text/plain; charset=utf-8',
        body: 'The service could not complete the request. Try again in a moment.',
      };
    }
    if (r.stream) return this.stream(x, r, r.stream);
    x.send(r.status, r.headers, r.contentType, r.body);
  }

  /** A streamed answer (the account export): chunks at the pace the client reads; cut short on a failure. */
  private async stream(x: Exchange, r: WebResponse, body: NonNullable<WebResponse['stream']>): Promise<void> {
    x.startStream(
      r.status,
      { ...r.headers, ...(r.contentType ? { 'content-type': r.contentType } : {}) } as Record<string, string>,
      '',
      true,
    );
    try {
      const complete = await body((chunk) => x.writePaced(encoder.encode(chunk)));
      if (complete) x.endStream();
      else x.abortStream();
    } catch (err) {
      this.ctx.log.error({ err, requestId: r.headers['x-request-id'] }, 'streamed web answer failed');
      x.abortStream();
    }
  }
}

/** The HTTP layer's refusals on the OAuth endpoints, as RFC 6749 5.2 error bodies. */
export function oauthTransportRefusal(r: TransportRefusal): Reply {
  const [status, error] =
    r.kind === 'at_capacity'
      ? [503, 'temporarily_unavailable']
      : r.kind === 'body_too_large'
        ? [413, 'invalid_request']
        : [400, 'invalid_request'];
  return {
    status,
    headers: { 'cache-control': 'no-store', ...(r.kind === 'at_capacity' ? { 'retry-after': '1' } : {}) },
    contentType: 'application/json',
    body: JSON.stringify({ error, error_description: transportRefusalMessage(r) }),
  };
}

/** The web face's route table: the OAuth server's endpoints, then the pages. */
export function webRoutes(config: Config): WebRoute[] {
  return [...oauthRoutes(config), ...pageRoutes(config), ...moneyRoutes()];
}
