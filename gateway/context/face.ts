// The context-file API (docs/contexts.md): served at `{web_url}/api/v1` on the gateway's listener and at
// `{api_url}/v1` on its own listener (ASSAY_API_PORT), so its `/v1` never shares a path space with the agent API.
// Not an agent route: its own errors (`{error, message}`, statuses 400/401/403/404/429/500), three ways to
// authenticate (an API key, an OAuth access token, the web session with CSRF), and the plan's hourly rate per
// principal, spent from the principal actor's `context` bucket like every other limit. The files themselves live in
// their owner's principal actor; another owner's public file is read from the projection.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import { type Caller, type Config, jsonValueProblem } from '../../contracts/index.ts';
import type { Authenticator } from '../authenticator.ts';
import { type GatewayBus, ownCaller } from '../bus.ts';
import type { TSchema } from 'typebox';
import Type from 'typebox';
import { NoQuery, paramsOf, type RouteRow } from '../door/route.ts';
import { clientAddressOf } from '../http/client-address.ts';
import type { Exchange } from '../http/exchange.ts';
import { parseJson } from '../http/json-body.ts';
import type { RateTaker } from '../rate-limiter.ts';
import { parseCookies } from '../web/http.ts';
import { csrfCookie } from '../web/session.ts';
import { type Answer, fail, fromRefusal, unavailable } from './answer.ts';
import { contextOpenApiDocument } from '../openapi/contexts.ts';
import {
  type ContextBase,
  type ContextCall,
  type ContextCaller,
  type ContextRoute,
  contextRoutes,
  intParam,
  isListAnswer,
  type ListName,
} from './routes.ts';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Default and largest page sizes of the two list envelopes. */
const pageSizes = { web: 20, api: 50, max: 100 } as const;

export interface ContextFaceDeps {
  config: Config;
  log: Logger;
  bus: GatewayBus;
  auth: Authenticator;
  /** The shared limiter, or `admitAll` under ASSAY_CONTEXT_RATE_LIMIT=off. */
  limiter: RateTaker;
}

/** A request as the gateway's router matched it: one of this API's routes, a path it does not have, or another method. */
export type ContextMatch =
  | { kind: 'found'; route: ContextRoute; params: Record<string, string>; problem: string | null }
  | { kind: 'wrong_method'; allow: string }
  | { kind: 'none' };

/** Where each base form is served: `{web_url}/api/v1` on the gateway's listener, `{api_url}/v1` on its own. */
export const contextPrefixes: Record<ContextBase, string> = { web: '/api/v1', api: '/v1' };

export class ContextFace {
  /** This API's OpenAPI document for each base form, served unauthenticated at `openapi.json`. */
  private readonly documents: Record<ContextBase, string>;

  constructor(private readonly d: ContextFaceDeps) {
    this.documents = {
      web: JSON.stringify(contextOpenApiDocument('web', `${d.config.webUrl}/api/v1`)),
      api: JSON.stringify(contextOpenApiDocument('api', `${d.config.apiUrl}/v1`)),
    };
  }

  /**
   * This API's routes under a base form's prefix, as rows of the gateway's router, and its OpenAPI document (public,
   * served before any check).
   */
  rows(base: ContextBase): RouteRow[] {
    const prefix = contextPrefixes[base];
    const rows: RouteRow[] = contextRoutes.map((route) => ({
      method: route.method,
      path: `${prefix}${route.path}`,
      face: 'context',
      dialect: 'context',
      auth: route.by === 'session' ? ['session'] : ['api_key', 'oauth_token', 'session'],
      // API keys and the session act with every right; an OAuth token needs the scope (read:context is implied by
      // write:context).
      scope: route.by === 'session' ? null : route.write ? 'write:context' : 'read:context',
      rate: { class: 'context', per: 'principal' },
      schemas: {
        params: paramsOf(route.path),
        query: Type.Object(
          Object.fromEntries(
            [...(route.query ?? []), ...listPaging(route, base)].map((q) => [q.name, Type.Optional(q.schema)]),
          ),
          { additionalProperties: false },
        ),
        body: route.body ?? null,
        responses: { [route.status]: isListAnswer(route.answer) ? Type.Array(route.answer.item) : route.answer },
      },
      dispatch: {
        kind: 'local',
        serve: (x, req, m) => this.handle(x, req, base, { kind: 'found', route, params: m.params, problem: m.problem }),
      },
    }));
    rows.push({
      method: 'GET',
      path: `${prefix}/openapi.json`,
      face: 'context',
      dialect: 'context',
      auth: ['none'],
      scope: null,
      rate: null,
      schemas: { params: paramsOf(''), query: NoQuery, body: null, responses: { 200: Type.Unknown() } },
      dispatch: {
        kind: 'local',
        serve: (x) => {
          if (x.admit()) x.send(200, {}, 'application/json', this.documents[base]);
        },
      },
    });
    return rows;
  }

  /** Serve one request of this API as the router matched it (a miss is answered after authentication, as a route). */
  handle(x: Exchange, req: HttpRequest, base: ContextBase, m: ContextMatch): void {
    const rawQuery = req.getQuery() ?? '';
    const cookies = parseCookies(req.getHeader('cookie'));
    const authorization = req.getHeader('authorization');
    const csrfHeader = req.getHeader('x-csrf-token');
    const origin = req.getHeader('origin');
    const contentType = req.getHeader('content-type');
    // Read now (the request is gone once this returns): a caller nobody can identify is limited by its address.
    const address = clientAddressOf(x.res, req, this.d.config.trustProxy);
    if (!x.admit()) return;
    const run = (text: string | null) =>
      void this.answer(base, m, {
        rawQuery,
        cookies,
        authorization,
        csrfHeader,
        origin,
        contentType,
        address,
        text,
        x,
      }).then(
        (a) => x.send(a.status, a.headers, 'application/json', JSON.stringify(a.body)),
        (err) => {
          this.d.log.error({ err, requestId: x.requestId }, 'context API request failed');
          const a = fail(500, 'the service could not complete the request; retry');
          x.send(a.status, a.headers, 'application/json', JSON.stringify(a.body));
        },
      );
    if (m.kind === 'found' && m.route.method !== 'GET' && m.route.method !== 'DELETE') {
      x.readText(req, (text) => {
        if (text !== null) run(text);
      });
    } else run(null);
  }

  private async answer(
    base: ContextBase,
    m: ContextMatch,
    r: {
      rawQuery: string;
      cookies: Record<string, string>;
      authorization: string;
      csrfHeader: string;
      origin: string;
      contentType: string;
      address: string;
      text: string | null;
      x: Exchange;
    },
  ): Promise<Answer> {
    const who = await this.authenticate(r.authorization, r.cookies, r.x.requestId);
    const known = !('status' in who);
    // Every request spends from an hourly allowance, refused ones included, and says so in its X-RateLimit-* headers
    // (the spec: every response): an identified one from its principal's, any other (401, or 500 while credentials
    // cannot be checked) from its client address's, under the default plan.
    const verdict = await this.d.limiter.take(
      known ? ownCaller(who.principalId) : addressCaller(r.address),
      'context',
      'principal',
    );
    const limited = (a: Answer): Answer => ({ ...a, headers: { ...verdict.headers, ...a.headers } });
    if (!verdict.ok) {
      const whose = known
        ? "this principal's context-file API requests are over its plan's"
        : 'requests from this address without valid credentials are over the';
      return limited(
        fail(429, `${whose} hourly rate; retry in ${verdict.retryAfterS} s`, {
          'retry-after': String(verdict.retryAfterS),
        }),
      );
    }
    if (!known) return limited(who);
    if (m.kind === 'none') return limited(fail(404, 'no such route in the context-file API'));
    if (m.kind === 'wrong_method') {
      return limited(fail(404, `this path accepts ${m.allow}`, { allow: m.allow }));
    }
    if (m.problem) return limited(fail(400, m.problem));
    const route = m.route;
    if (route.by === 'session' && who.via !== 'session') {
      return limited(
        fail(403, 'API keys are managed by a signed-in person (the account page, or this route with the session)'),
      );
    }
    if (route.write ? !who.canWrite : !who.canRead) {
      return limited(fail(403, `this token needs the scope ${route.write ? 'write:context' : 'read:context'}`));
    }
    // A browser's session writes only with the CSRF token of its cookie, from our own origin (double submit).
    if (who.via === 'session' && route.write) {
      const expected = r.cookies[csrfCookie];
      const foreign = r.origin !== '' && r.origin !== new URL(this.d.config.webUrl).origin;
      if (!expected || r.csrfHeader !== expected || foreign) {
        return limited(fail(403, 'a write with the session cookie needs X-CSRF-Token equal to the assay_csrf cookie'));
      }
    }
    return limited(await this.dispatch(base, route, m.params, r.rawQuery, r.text, r.contentType, who));
  }

  /** The caller: an API key, an OAuth access token, or the web session cookie, in that order. */
  private async authenticate(
    authorization: string,
    cookies: Record<string, string>,
    requestId: string,
  ): Promise<ContextCaller | Answer> {
    const r = await this.d.auth.identify({ authorization, cookies, requestId }, ['api_key', 'token', 'session']);
    if (!r.ok) {
      switch (r.failure.kind) {
        case 'unavailable':
          return unavailable();
        case 'malformed':
          return fail(401, 'send Authorization: Bearer <API key or access token>');
        case 'invalid':
          if (r.failure.credential === 'api_key') return fail(401, 'the API key is not valid (unknown or revoked)');
          if (r.failure.credential === 'token') {
            return fail(401, 'the bearer token is not a valid API key or access token');
          }
          return fail(401, 'send Authorization: Bearer <API key or access token>, or sign in');
        case 'missing':
          return fail(401, 'send Authorization: Bearer <API key or access token>, or sign in');
      }
    }
    const { caller, via } = r.who;
    // Sandbox tokens have no context files: the context-file API is for accounts.
    if (caller.sandbox) return fail(401, 'the bearer token is not a valid API key or access token');
    // An API key and the session act as the principal itself, with every right; a token, with its scopes.
    const full = via !== 'token';
    return {
      principalId: caller.principalId,
      requestId,
      via: via === 'token' ? 'oauth' : via,
      canRead: full || caller.scopes.includes('read:context') || caller.scopes.includes('write:context'),
      canWrite: full || caller.scopes.includes('write:context'),
    };
  }

  /** The checks every route shares (its id, its body's text, its query), then the route's own handler. */
  private async dispatch(
    base: ContextBase,
    route: ContextRoute,
    params: Record<string, string>,
    rawQuery: string,
    text: string | null,
    contentType: string,
    who: ContextCaller,
  ): Promise<Answer> {
    const query = new URLSearchParams(rawQuery);
    const id = params.id;
    if (id !== undefined && !uuidPattern.test(id)) return fail(404, `no ${resourceOf(route)} has this id`);
    // A route that takes no body (rotating a secret) may be sent none.
    const bodyless = text === null || (route.body === undefined && text === '');
    if (!bodyless && !/^application\/json\b/i.test(contentType)) {
      return fail(400, 'send the body as application/json');
    }
    const body = bodyless ? null : parseJson(text);
    if (body instanceof Error) return fail(400, body.message);
    // Text PostgreSQL cannot hold (NUL, lone surrogates) is refused, not mangled.
    const textProblem = body === null ? null : jsonValueProblem(body, 'body');
    if (textProblem) return fail(400, textProblem);
    const unknownQuery = [...query.keys()].filter((k) => !allowedQuery(route, base).includes(k));
    if (unknownQuery.length > 0) return fail(400, `unknown query parameter ${unknownQuery.join(', ')}`);
    const caller = ownCaller(who.principalId);
    const call: ContextCall = {
      base,
      who,
      id: id ?? '',
      query,
      ask: (op, askBody, o = {}) =>
        this.d.bus.ask(op, askBody, { requestId: who.requestId, caller, actorId: who.principalId, ...o }),
      list: (what) => this.list(call, what),
      skillWaitMs: this.d.config.skillTimeoutMs + this.d.config.requestTimeoutMs,
    };
    return route.run(call, body);
  }

  /** A list in the base form's envelope: `{data, meta}` paged by `page`, or `{<what>, pagination}` by `offset`. */
  private async list(c: ContextCall, what: ListName): Promise<Answer> {
    const { base, query } = c;
    const limit = intParam(query, 'limit', base === 'web' ? pageSizes.web : pageSizes.api, 1, pageSizes.max);
    if (typeof limit === 'string') return fail(400, limit);
    let offset: number;
    let page = 1;
    if (base === 'web') {
      const p = intParam(query, 'page', 1, 1, 1_000_000);
      if (typeof p === 'string') return fail(400, p);
      page = p;
      offset = (p - 1) * limit;
    } else {
      const o = intParam(query, 'offset', 0, 0, 100_000_000);
      if (typeof o === 'string') return fail(400, o);
      offset = o;
    }
    const paging = { offset, limit };
    const r =
      what === 'contexts'
        ? await c.ask('context.list', paging)
        : what === 'skills'
          ? await c.ask('skill.list', paging)
          : await c.ask('webhook.list', paging);
    if (!r.ok) return fromRefusal(r.reply);
    const { items, total } = r.body;
    if (base === 'web') return { status: 200, body: { data: items, meta: { total, page, limit } }, headers: {} };
    return {
      status: 200,
      body: { [what]: items, pagination: { total, limit, offset, hasMore: offset + items.length < total } },
      headers: {},
    };
  }
}

const resourceOf = (route: ContextRoute) =>
  route.path.startsWith('/api-keys')
    ? 'API key'
    : route.path.startsWith('/skills')
      ? 'skill'
      : route.path.startsWith('/webhooks')
        ? 'webhook'
        : 'context file';

/** The query parameters a route takes: its own, and a list's paging in the base form's words. */
function allowedQuery(route: ContextRoute, base: ContextBase): string[] {
  return [...(route.query ?? []), ...listPaging(route, base)].map((q) => q.name);
}

/** A list's paging parameters in the base form's words: `page` and `limit`, or `offset` and `limit`. */
function listPaging(route: ContextRoute, base: ContextBase): { name: string; schema: TSchema }[] {
  if (!isListAnswer(route.answer)) return [];
  const limit = { name: 'limit', schema: Type.Integer({ minimum: 1, maximum: pageSizes.max }) };
  return base === 'web'
    ? [{ name: 'page', schema: Type.Integer({ minimum: 1 }) }, limit]
    : [{ name: 'offset', schema: Type.Integer({ minimum: 0 }) }, limit];
}

/**
 * The limiter's caller for requests from `address` that no credential identifies: a principal id no account can
 * have (a name-based UUID, version 8, where every principal's is random, version 4), so its allowance is the
 * address's alone, shared by every gateway like a principal's.
 */
export function addressCaller(address: string): Caller {
  const h = createHash('sha256').update(`assay context-file API address\n${address}`).digest('hex');
  const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return ownCaller(
    `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`,
  );
}
