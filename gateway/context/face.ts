// The context-file API (docs/contexts.md): served at `{web_url}/api/v1` on the gateway's listener and at
// `{api_url}/v1` on its own listener (ASSAY_API_PORT), so its `/v1` never shares a path space with the agent API.
// Not an agent route: its own errors (`{error, message}`, statuses 400/401/403/404/429/500), three ways to
// authenticate (an API key, an OAuth access token, the web session with CSRF), and the plan's hourly rate per
// principal, spent from the principal actor's `context` bucket like every other limit. The files themselves live in
// their owner's principal actor; another owner's public file is read from the projection.
import { Compile } from 'typebox/compile';
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  type BusReply,
  type Caller,
  type Config,
  ContextCreateBody,
  ContextPatchBody,
  ContextPublishBody,
  credentialPrefixes,
  jsonValueProblem,
  type Names,
  SkillCreateBody,
  SkillExecuteBody,
  SkillPatchBody,
  WebhookCreateBody,
  WebhookPatchBody,
} from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import { type Exchange, type Reply, type TransportRefusal, transportRefusalMessage } from '../http/exchange.ts';
import type { RateTaker } from '../rate-limiter.ts';
import { compileRouter } from '../router.ts';
import type { TokenVerifier } from '../tokens.ts';
import { parseCookies } from '../web/http.ts';
import { csrfCookie, sessionCookie } from '../web/session.ts';
import { contextOpenApiDocument } from './openapi.ts';
import { ApiKeyCreateBody, type ContextRoute, contextErrorNames, contextRoutes, type ListName } from './routes.ts';
import { parseJson, schemaProblem } from '../http/json-body.ts';

/** Which base form a request came in on: it decides the list envelope (docs/contexts.md, Lists). */
export type ContextBase = 'web' | 'api';

type Status = keyof typeof contextErrorNames;

interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

const fail = (status: Status, message: string, headers: Record<string, string> = {}): Answer => ({
  status,
  body: { error: contextErrorNames[status], message },
  headers,
});

/** Who is calling: the owner principal, how it proved it, and what it may do. */
interface ContextCaller {
  principalId: string;
  /** The request's id, carried to every service it asks (logs line up). */
  requestId: string;
  via: 'api_key' | 'oauth' | 'session';
  canRead: boolean;
  canWrite: boolean;
}

const createCheck = Compile(ContextCreateBody);
const patchCheck = Compile(ContextPatchBody);
const publishCheck = Compile(ContextPublishBody);
const skillCreateCheck = Compile(SkillCreateBody);
const skillPatchCheck = Compile(SkillPatchBody);
const skillExecuteCheck = Compile(SkillExecuteBody);
const apiKeyCreateCheck = Compile(ApiKeyCreateBody);
const webhookCreateCheck = Compile(WebhookCreateBody);
const webhookPatchCheck = Compile(WebhookPatchBody);
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Default and largest page sizes of the two list envelopes. */
const pageSizes = { web: 20, api: 50, max: 100 } as const;

export interface ContextFaceDeps {
  config: Config;
  log: Logger;
  bus: GatewayBus;
  names: Names;
  verifier: TokenVerifier;
  /** The shared limiter, or `admitAll` under ASSAY_CONTEXT_RATE_LIMIT=off. */
  limiter: RateTaker;
}

export class ContextFace {
  private readonly match = compileRouter(contextRoutes);

  /** This API's OpenAPI document for each base form, served unauthenticated at `openapi.json`. */
  private readonly documents: Record<ContextBase, string>;

  constructor(private readonly d: ContextFaceDeps) {
    this.documents = {
      web: JSON.stringify(contextOpenApiDocument('web', `${d.config.webUrl}/api/v1`)),
      api: JSON.stringify(contextOpenApiDocument('api', `${d.config.apiUrl}/v1`)),
    };
  }

  /** Serve one request whose path (after the base form's prefix) is `path`. */
  handle(x: Exchange, req: HttpRequest, base: ContextBase, path: string): void {
    const m = this.match(x.method === 'HEAD' ? 'GET' : x.method, path);
    const rawQuery = req.getQuery() ?? '';
    const cookies = parseCookies(req.getHeader('cookie'));
    const authorization = req.getHeader('authorization');
    const csrfHeader = req.getHeader('x-csrf-token');
    const origin = req.getHeader('origin');
    const contentType = req.getHeader('content-type');
    // On the gateway's own listener too, a refused body is this API's 400, not the agent API's 413.
    x.refusalWords = contextTransportRefusal;
    if (!x.admit()) return;
    if (path === '/openapi.json' && (x.method === 'GET' || x.method === 'HEAD')) {
      x.send(200, {}, 'application/json', this.documents[base]);
      return;
    }
    const run = (text: string | null) =>
      void this.answer(base, m, { rawQuery, cookies, authorization, csrfHeader, origin, contentType, text, x }).then(
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
    m: ReturnType<ContextFace['match']>,
    r: {
      rawQuery: string;
      cookies: Record<string, string>;
      authorization: string;
      csrfHeader: string;
      origin: string;
      contentType: string;
      text: string | null;
      x: Exchange;
    },
  ): Promise<Answer> {
    const who = await this.authenticate(r.authorization, r.cookies, r.x.requestId);
    if ('status' in who) return who;
    // Every authenticated request spends from the principal's hourly allowance, refused ones included.
    const verdict = await this.d.limiter.take(rateCaller(who.principalId), 'context');
    const limited = (a: Answer): Answer => ({ ...a, headers: { ...verdict.headers, ...a.headers } });
    if (!verdict.ok) {
      return limited(
        fail(
          429,
          `this principal's context-file API requests are over its plan's hourly rate; retry in ${verdict.retryAfterS} s`,
          {
            'retry-after': String(verdict.retryAfterS),
          },
        ),
      );
    }
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
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    if (authorization !== '' && bearer === undefined) {
      return fail(401, 'send Authorization: Bearer <API key or access token>');
    }
    if (bearer?.startsWith(credentialPrefixes.apiKey)) {
      const r = await this.oauth('oauth.apiKeyResolve', { key: bearer }, requestId);
      if (!r.ok) return r.error.code === 'unauthorized' ? fail(401, r.error.message) : unavailable();
      const body = r.body as { principalId: string };
      return { principalId: body.principalId, requestId, via: 'api_key', canRead: true, canWrite: true };
    }
    if (bearer !== undefined) {
      let caller: Caller | null;
      try {
        caller = await this.d.verifier.verify(bearer, 'api');
      } catch {
        return unavailable();
      }
      // Sandbox tokens have no context files: the context-file API is for accounts.
      if (!caller || caller.sandbox) return fail(401, 'the bearer token is not a valid API key or access token');
      return {
        principalId: caller.principalId,
        requestId,
        via: 'oauth',
        canRead: caller.scopes.includes('read:context') || caller.scopes.includes('write:context'),
        canWrite: caller.scopes.includes('write:context'),
      };
    }
    const session = cookies[sessionCookie];
    if (session) {
      const r = await this.oauth('oauth.session', { sessionToken: session }, requestId);
      if (r.ok) {
        return {
          principalId: (r.body as { principalId: string }).principalId,
          requestId,
          via: 'session',
          canRead: true,
          canWrite: true,
        };
      }
      if (r.error.code !== 'unauthorized') return unavailable();
    }
    return fail(401, 'send Authorization: Bearer <API key or access token>, or sign in');
  }

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
    const key = `${route.method} ${route.path}`;
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
    const unknownQuery = [...query.keys()].filter((k) => !allowedQuery(key, base).includes(k));
    if (unknownQuery.length > 0) return fail(400, `unknown query parameter ${unknownQuery.join(', ')}`);
    switch (key) {
      case 'GET /contexts':
        return this.list(base, 'contexts', query, who);
      case 'POST /contexts': {
        if (!createCheck.Check(body)) return fail(400, schemaProblem(createCheck, body));
        return this.actor('context.create', who, body, (v) => ({ status: 201, body: { data: v } }));
      }
      case 'GET /contexts/{id}': {
        const own = await this.ask('context.get', who, { id });
        if (own.ok) return { status: 200, body: { data: own.body }, headers: {} };
        if (own.error.code !== 'not_found') return fromBus(own);
        // Not the caller's: another owner's file, if it is public.
        return this.actor('context.public_get', who, { id }, (v) => ({ status: 200, body: { data: v } }), 'ledger');
      }
      case 'PATCH /contexts/{id}': {
        if (!patchCheck.Check(body)) return fail(400, schemaProblem(patchCheck, body));
        return this.actor('context.update', who, { id, patch: body }, (v) => ({ status: 200, body: { data: v } }));
      }
      case 'POST /contexts/{id}/publish': {
        if (!publishCheck.Check(body)) return fail(400, schemaProblem(publishCheck, body));
        const r = await this.ask('context.publish', who, { id, publish: body });
        return r.ok ? { status: r.status, body: { data: r.body }, headers: {} } : fromBus(r);
      }
      case 'DELETE /contexts/{id}':
        return this.actor('context.delete', who, { id }, (v) => ({ status: 200, body: { data: v } }));
      case 'GET /skills':
        return this.list(base, 'skills', query, who);
      case 'POST /skills': {
        if (!skillCreateCheck.Check(body)) return fail(400, schemaProblem(skillCreateCheck, body));
        return this.actor('skill.create', who, body, (v) => ({ status: 201, body: { data: v } }));
      }
      case 'GET /skills/{id}': {
        const version = query.get('version');
        if (version !== null && !/^[1-9]\d{0,8}$/.test(version))
          return fail(400, 'version must be a whole number from 1');
        const ask = { id, ...(version === null ? {} : { version: Number(version) }) };
        return this.actor('skill.get', who, ask, (v) => ({ status: 200, body: { data: v } }));
      }
      case 'PATCH /skills/{id}': {
        if (!skillPatchCheck.Check(body)) return fail(400, schemaProblem(skillPatchCheck, body));
        return this.actor('skill.update', who, { id, patch: body }, (v) => ({ status: 200, body: { data: v } }));
      }
      case 'DELETE /skills/{id}':
        return this.actor('skill.delete', who, { id }, (v) => ({ status: 200, body: { data: v } }));
      case 'POST /skills/{id}/execute': {
        if (!skillExecuteCheck.Check(body)) return fail(400, schemaProblem(skillExecuteCheck, body));
        return this.execute(id!, body, who);
      }
      case 'GET /webhooks':
        return this.list(base, 'webhooks', query, who);
      case 'POST /webhooks': {
        if (!webhookCreateCheck.Check(body)) return fail(400, schemaProblem(webhookCreateCheck, body));
        return this.actor('webhook.create', who, body, (v) => ({ status: 201, body: { data: v } }));
      }
      case 'GET /webhooks/{id}':
        return this.actor('webhook.get', who, { id }, (v) => ({ status: 200, body: { data: v } }));
      case 'PATCH /webhooks/{id}': {
        if (!webhookPatchCheck.Check(body)) return fail(400, schemaProblem(webhookPatchCheck, body));
        return this.actor('webhook.update', who, { id, patch: body }, (v) => ({ status: 200, body: { data: v } }));
      }
      case 'DELETE /webhooks/{id}':
        return this.actor('webhook.delete', who, { id }, (v) => ({ status: 200, body: { data: v } }));
      case 'POST /webhooks/{id}/rotate-secret': {
        if (body !== null && (typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length > 0)) {
          return fail(400, 'send no body, or an empty JSON object');
        }
        return this.actor('webhook.rotate', who, { id }, (v) => ({ status: 200, body: { data: v } }));
      }
      case 'GET /webhooks/{id}/attempts': {
        const limit = intParam(query, 'limit', 50, 1, 100);
        if (typeof limit === 'string') return fail(400, limit);
        // The owner's actor answers 404 for another's id; the attempts come from the webhooks service.
        const own = await this.ask('webhook.get', who, { id });
        if (!own.ok) return fromBus(own);
        const r = await this.ask('webhook.attempts', who, { id, limit }, 'webhooks');
        return r.ok ? { status: 200, body: { data: (r.body as { items: unknown[] }).items }, headers: {} } : fromBus(r);
      }
      case 'GET /api-keys': {
        const r = await this.oauth('oauth.apiKeyList', { principalId: who.principalId }, who.requestId);
        return r.ok ? { status: 200, body: { data: r.body }, headers: {} } : fromBus(r);
      }
      case 'POST /api-keys': {
        if (!apiKeyCreateCheck.Check(body)) return fail(400, schemaProblem(apiKeyCreateCheck, body));
        const { name } = body;
        const r = await this.oauth('oauth.apiKeyCreate', { principalId: who.principalId, name }, who.requestId);
        return r.ok ? { status: 201, body: { data: r.body }, headers: {} } : fromBus(r);
      }
      case 'DELETE /api-keys/{id}': {
        const r = await this.oauth('oauth.apiKeyRevoke', { principalId: who.principalId, id }, who.requestId);
        return r.ok ? { status: 200, body: { data: r.body }, headers: {} } : fromBus(r);
      }
    }
    return fail(404, 'no such route in the context-file API');
  }

  /** A list in the base form's envelope: `{data, meta}` paged by `page`, or `{<what>, pagination}` by `offset`. */
  private async list(base: ContextBase, what: ListName, query: URLSearchParams, who: ContextCaller): Promise<Answer> {
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
    const op = { contexts: 'context.list', skills: 'skill.list', webhooks: 'webhook.list' }[what];
    const r = await this.ask(op, who, { offset, limit });
    if (!r.ok) return fromBus(r);
    const { items, total } = r.body as { items: unknown[]; total: number };
    if (base === 'web') return { status: 200, body: { data: items, meta: { total, page, limit } }, headers: {} };
    return {
      status: 200,
      body: { [what]: items, pagination: { total, limit, offset, hasMore: offset + items.length < total } },
      headers: {},
    };
  }

  /**
   * Run a skill on the skills service. The answer may be larger than one NATS message (a skill brings up to 20
   * files), so it comes in parts; the wait covers the execution's own time limit.
   */
  private async execute(id: string, body: SkillExecuteBody, who: ContextCaller): Promise<Answer> {
    const { reply } = await this.d.bus.requestWire(
      this.d.names.serviceSubject('skills'),
      {
        op: 'skill.execute',
        requestId: who.requestId,
        caller: ownerCaller(who.principalId),
        params: {},
        query: {},
        body: { id, input: body.input, variables: body.variables ?? {}, version: body.version },
      },
      true,
      this.d.config.skillTimeoutMs + this.d.config.requestTimeoutMs,
    );
    return reply.ok ? { status: 200, body: { data: reply.body }, headers: {} } : fromBus(reply);
  }

  private async actor(
    op: string,
    who: ContextCaller,
    body: unknown,
    ok: (v: unknown) => { status: number; body: unknown },
    service?: 'ledger' | 'webhooks',
  ): Promise<Answer> {
    const r = await this.ask(op, who, body, service);
    if (!r.ok) return fromBus(r);
    return { ...ok(r.body), headers: {} };
  }

  private ask(op: string, who: ContextCaller, body: unknown, service?: 'ledger' | 'webhooks'): Promise<BusReply> {
    const subject = service
      ? this.d.names.serviceSubject(service)
      : this.d.names.actorSubject('principal', who.principalId);
    return this.d.bus.request(subject, {
      op,
      requestId: who.requestId,
      caller: ownerCaller(who.principalId),
      params: {},
      query: {},
      body,
    });
  }

  private oauth(op: string, body: unknown, requestId: string): Promise<BusReply> {
    return this.d.bus.request(this.d.names.serviceSubject('oauth'), {
      op,
      requestId,
      caller: null,
      params: {},
      query: {},
      body,
    });
  }
}

/** A principal acting on its own files and skills. */
const ownerCaller = (principalId: string): Caller => ({
  principalId,
  agentId: principalId,
  scopes: [],
  sandbox: false,
});

const resourceOf = (route: ContextRoute) =>
  route.path.startsWith('/api-keys')
    ? 'API key'
    : route.path.startsWith('/skills')
      ? 'skill'
      : route.path.startsWith('/webhooks')
        ? 'webhook'
        : 'context file';

/** The rate-limit key of a principal calling as itself (actors/principal/rate.ts: principalOnly). */
const rateCaller = (principalId: string): Caller => ({ principalId, agentId: '*', scopes: [], sandbox: false });

const unavailable = () => fail(500, 'the service is unavailable for a moment; retry');

/** A service's refusal in this API's words. */
function fromBus(r: Extract<BusReply, { ok: false }>): Answer {
  switch (r.error.code) {
    case 'not_found':
      return fail(404, r.error.message);
    case 'validation_failed':
      return fail(400, r.error.message);
    case 'unauthorized':
      return fail(401, r.error.message);
    case 'forbidden':
      return fail(403, r.error.message);
    default:
      return fail(500, r.error.message);
  }
}

function allowedQuery(key: string, base: ContextBase): string[] {
  if (key === 'GET /skills/{id}') return ['version'];
  if (key === 'GET /webhooks/{id}/attempts') return ['limit'];
  if (key !== 'GET /contexts' && key !== 'GET /skills' && key !== 'GET /webhooks') return [];
  return base === 'web' ? ['page', 'limit'] : ['offset', 'limit'];
}

function intParam(q: URLSearchParams, name: string, fallback: number, min: number, max: number): number | string {
  const raw = q.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,10}$/.test(raw)) return `${name} must be a whole number`;
  const n = Number(raw);
  if (n < min || n > max) return `${name} must be from ${min} to ${max}`;
  return n;
}

/** The I/O layer's refusals (capacity, body size, time, encoding) in this API's `{error, message}` words. */
export function contextTransportRefusal(r: TransportRefusal): Reply {
  const [status, error] = r.kind === 'at_capacity' ? [500, 'internal_error'] : [400, 'bad_request'];
  return {
    status,
    headers: r.kind === 'at_capacity' ? { 'retry-after': '1' } : {},
    contentType: 'application/json',
    body: JSON.stringify({ error, message: transportRefusalMessage(r) }),
  };
}
