// The web face of the gateway: the OAuth 2.1 server's endpoints and the pages people use (sign-in, sign-up,
// account, consent, device verification), on the same listener as the agent API. Its own route table, its own
// answers (HTML pages, redirects, RFC 6749 JSON), and no state: accounts, sessions and grants live in the oauth
// service, reached over NATS like every other service.
import type { HttpRequest } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Config } from '../../contracts/index.ts';
import type { Authenticator } from '../authenticator.ts';
import type { GatewayBus } from '../bus.ts';
import Type from 'typebox';
import { AnyQuery, type Dialect, type Payload, paramsOf, type RouteRow } from '../door/route.ts';
import type { Exchange } from '../http/exchange.ts';
import type { Pipeline } from '../pipeline.ts';
import { page, type WebResponse, parseCookies, type WebRequest } from './http.ts';
import { messagePage } from './pages.ts';
import { oauthRoutes } from './oauth-routes.ts';
import { moneyRoutes } from './money-routes.ts';
import { pageRoutes } from './page-routes.ts';
import { landingRoutes } from './landing.ts';
import { testModeRoutes } from './test-mode-routes.ts';
import { webhookRoutes } from './webhook-routes.ts';
import type { WebContext, WebRoute, WebRouteDoc } from './route.ts';

const encoder = new TextEncoder();

export class WebFace {
  /** Every route this face serves, in the order they were declared (the OpenAPI document lists the documented ones). */
  readonly routes: readonly WebRoute[];
  private readonly ctx: WebContext;

  constructor(o: { config: Config; log: Logger; bus: GatewayBus; pipeline: Pipeline; auth: Authenticator }) {
    this.routes = webRoutes(o.config);
    this.ctx = {
      config: o.config,
      log: o.log,
      pipeline: o.pipeline,
      ask: (op, body, opts) => o.bus.ask(op, body, opts),
      auth: o.auth,
    };
  }

  /**
   * This face's routes as rows of the gateway's one router. `refuseProblem` answers a path parameter that is not
   * percent-encoded UTF-8; `clientAddress` reads the caller's address (behind the configured proxies).
   */
  rows(o: {
    refuseProblem: (x: Exchange, problem: string) => void;
    clientAddress: (x: Exchange, req: HttpRequest) => string;
  }): RouteRow[] {
    return this.routes.map((route) => ({
      method: route.method,
      path: route.path,
      face: 'web',
      dialect: webDialect(route),
      auth:
        route.auth ??
        (route.doc?.security === 'initialAccessToken'
          ? ['initial_access_token']
          : route.doc
            ? ['none']
            : ['session', 'none']),
      scope: null,
      rate: null,
      schemas: {
        params: paramsOf(route.path),
        query: AnyQuery,
        body:
          route.body === 'none'
            ? null
            : route.doc?.request
              ? route.doc.request.media === 'application/json'
                ? Type.Unsafe(route.doc.request.schema)
                : 'form'
              : 'form',
        responses: route.doc ? documentedAnswers(route.doc) : { 200: 'html', 303: 'redirect' },
      },
      dispatch: {
        kind: 'local',
        serve: (x, req, m) => {
          if (m.problem) o.refuseProblem(x, m.problem);
          else this.handle(x, req, route, m.params, o.clientAddress(x, req));
        },
      },
    }));
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
      r = unavailablePage(this.ctx.config.webUrl);
    }
    if (r.stream) return this.stream(x, r, r.stream);
    x.send(r.status, r.headers, r.contentType, r.body);
  }

  /** A streamed answer (the account export): chunks at the pace the client reads; cut short on a failure. */
  private async stream(x: Exchange, r: WebResponse, body: NonNullable<WebResponse['stream']>): Promise<void> {
    x.startStream(r.status, { ...r.headers, ...(r.contentType ? { 'content-type': r.contentType } : {}) }, '', true);
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

/** A protocol endpoint's answers as its document has them: pages, redirects, or JSON the RFC words. */
function documentedAnswers(doc: WebRouteDoc): Record<number, Payload> {
  const out: Record<number, Payload> = {};
  for (const [status, r] of Object.entries(doc.responses)) {
    const code = Number(status);
    out[code] = code >= 300 && code < 400 ? 'redirect' : r.media?.startsWith('text/html') ? 'html' : Type.Unknown();
  }
  return out;
}

/**
 * How a web route words its errors: RFC 6749 for the OAuth endpoints (the routes with a protocol document), the typed
 * error object for the JSON routes under /api/, an HTML page for the pages people use.
 */
export function webDialect(route: WebRoute): Extract<Dialect, 'oauth' | 'agent' | 'page'> {
  return route.dialect ?? (route.doc ? 'oauth' : route.path.startsWith('/api/') ? 'agent' : 'page');
}

/** The web face's route table: the OAuth server's endpoints, then the pages. */
export function webRoutes(config: Config): WebRoute[] {
  return [
    ...oauthRoutes(config),
    ...pageRoutes(config),
    ...moneyRoutes(),
    ...landingRoutes(),
    ...webhookRoutes(),
    ...testModeRoutes(),
  ];
}

/** What a person sees when the service could not answer: a page of the site, not a bare line of text. */
function unavailablePage(webUrl: string): WebResponse {
  const r = page(
    503,
    messagePage({
      webUrl,
      signedInAs: null,
      csrf: '',
      title: 'The service is busy',
      message:
        'Assay could not finish this request just now. Nothing was lost: go back and send it again in a moment (a form sent twice does its work once).',
      link: null,
    }),
  );
  r.headers['retry-after'] = '1';
  return r;
}
