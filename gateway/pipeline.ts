// The pipeline every agent call runs, REST or MCP, in this order: route (done by the caller), authentication,
// scope, rate limit, input validation, Idempotency-Key, dispatch over NATS, reply mapping. One function, so both faces
// behave the same by construction.
import { hash } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import type { Static, TSchema } from 'typebox';
import {
  type BusReply,
  type Caller,
  canonicalJson,
  type ErrorBody,
  type ErrorCode,
  errorBody,
  errorTable,
  etagMatches,
  type InternalOpId,
  jsonValueProblem,
  type Names,
  type Operation,
  type RateClass,
  rateClassOf,
  textProblem,
} from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { Authenticator } from './authenticator.ts';
import type { TokenFace } from './tokens.ts';

export type BodyInput = { kind: 'none' } | { kind: 'raw'; text: string } | { kind: 'value'; value: unknown };

export interface CallInput {
  op: Operation;
  /** Where the call arrived: the MCP endpoint also accepts tokens issued for it alone. REST when absent. */
  face?: TokenFace;
  /** The bearer token, without the "Bearer " prefix; undefined when absent or not a bearer credential. */
  token: string | undefined;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: BodyInput;
  idempotencyKey: string | undefined;
  /** The If-None-Match header, for operations whose replies carry an ETag. */
  ifNoneMatch?: string;
  /** An HTTP HEAD (answered as GET, body dropped): the service delivers nothing. */
  head?: boolean;
  requestId: string;
  clientAddress: string;
  /**
   * The bus operation to dispatch instead of the row's own: a variant of the row that another face offers, run with
   * the row's scope, rate limit and validation, so both answer under the same rules (the MCP resource assay://events
   * reads the newest events under GET /v1/events' row). It must be served where the row is dispatched.
   */
  dispatchAs?: InternalOpId;
  /**
   * A part of the request the transport could not decode into text (a path parameter's percent-encoding, a
   * header's bytes): refused with validation_failed at the validation step.
   */
  encodingProblem?: string | null;
}

export interface CallResult {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  /** The body's JSON exactly as the service sent it (bytes from the bus, text from this process's actors); or a download's raw bytes. */
  rawBody?: Uint8Array | string;
  /** A download's media type; JSON when absent. */
  contentType?: string;
  /** Set when the result is a refusal: the typed error object (also in `body`). */

  error?: ErrorBody;
}

export const idempotencyKeyLengthMax = 200;

/** The credential of an `Authorization: Bearer <token>` header; undefined for anything else. */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization && /^Bearer [^\s]+$/i.test(authorization) ? authorization.slice(7) : undefined;
}

type Check = ReturnType<typeof Compile<TSchema>>;
interface Validators {
  params: Check;
  query: Check;
  body: Check | null;
}

export interface PipelineDeps {
  names: Names;
  baseUrl: string;
  bus: GatewayBus;
  auth: Authenticator;
  /** The agent routes' rate limits (gateway/rate-limiter.ts). */
  limiter: RateLimiter;
}

export class Pipeline {
  private readonly validators = new Map<string, Validators>();
  private readonly rateClasses = new Map<string, RateClass>();

  constructor(
    private readonly d: PipelineDeps,
    ops: readonly Operation[],
  ) {
    for (const op of ops) {
      this.validators.set(op.id, {
        params: Compile(op.params),
        query: Compile(op.query),
        body: op.body ? Compile(op.body) : null,
      });
      if (op.audience === 'agent' && op.scope !== null) this.rateClasses.set(op.id, rateClassOf(op));
    }
  }

  refuse(code: ErrorCode, message: string, status?: number, headers: Record<string, string> = {}): CallResult {
    const body = errorBody(this.d.baseUrl, code, message);
    return { status: status ?? errorTable[code].status, body, headers, error: body };
  }

  async run(input: CallInput): Promise<CallResult> {
    // 2. Authentication (public operations have none).
    let caller: Caller | null = null;
    // A signed link stands in for the token; the service that owns what it signs checks it (docs/purchases.md).
    if (input.op.signedLink && input.query.signature !== undefined) return this.validateAndDispatch(null, input);
    if (input.op.scope !== null) {
      const auth = await this.authenticate(input.token, input.face);
      if (!auth.ok) return auth.refusal;
      caller = auth.caller;
    }
    return this.runAs(caller, input, true);
  }

  /**
   * The pipeline from step 3 on, for a caller established already: by a token (run), or by a web session for the
   * account page's own calls (gateway/web/), which a person makes and the agent rate limits do not count.
   */
  async runAs(caller: Caller | null, input: CallInput, rateLimited = false): Promise<CallResult> {
    const { op } = input;
    // 3. Scope.
    if (op.scope !== null) {
      if (!caller) return this.refuse('unauthorized', 'send Authorization: Bearer <token>');
      if (!caller.scopes.includes(op.scope)) {
        return this.refuse('forbidden', `this operation needs the scope ${op.scope}`);
      }
      if (!op.available) {
        return this.refuse('not_found', `${op.method} ${op.path} is not available in this version of the service`);
      }
    }
    // Rate limit: agent calls spend a token of the operation's class; every answer says how many are left.
    const rateClass = rateLimited && caller ? this.rateClasses.get(op.id) : undefined;
    if (rateClass === undefined) return this.validateAndDispatch(caller, input);
    const taken = this.d.limiter.take(caller!, rateClass);
    const verdict = 'ok' in taken ? taken : await taken;
    if (!verdict.ok) {
      return this.refuse(
        'rate_limited',
        `this agent's ${rateClass} calls are over their plan's rate; retry in ${verdict.retryAfterS} s`,
        undefined,
        { ...verdict.headers, 'retry-after': String(verdict.retryAfterS) },
      );
    }
    const result = await this.validateAndDispatch(caller, input);
    Object.assign(result.headers, verdict.headers);
    return result;
  }

  /**
   * Run an operation for a caller a face established itself (the account page, as the signed-in person), and take
   * its answer as the operation's output: checked against the row's output schema, so what the page reads is what
   * the schema declares (a body that does not match is a bug, and throws).
   */
  async callAs<T extends TSchema>(
    caller: Caller,
    op: Operation & { output: T },
    o: {
      params?: Record<string, string>;
      query?: Record<string, unknown>;
      body?: unknown;
      idempotencyKey?: string;
      requestId: string;
      clientAddress: string;
      /** An internal operation answering in the row's place, as the MCP events resource does (`events.latest`). */
      dispatchAs?: InternalOpId;
    },
  ): Promise<{ ok: true; status: number; body: Static<T> } | { ok: false; status: number; error: ErrorBody }> {
    const r = await this.runAs(caller, {
      ...(o.dispatchAs ? { dispatchAs: o.dispatchAs } : {}),
      op,
      token: undefined,
      params: o.params ?? {},
      query: o.query ?? {},
      body: o.body === undefined ? { kind: 'none' } : { kind: 'value', value: o.body },
      idempotencyKey: o.idempotencyKey,
      requestId: o.requestId,
      clientAddress: o.clientAddress,
    });
    if (r.error) return { ok: false, status: r.status, error: r.error };
    const body: unknown = r.body;
    const output: T = op.output;
    if (!Value.Check(output, body)) throw new Error(`${op.id} answered a body its output schema refuses`);
    return { ok: true, status: r.status, body };
  }

  /** Steps 4 to 7: validation, Idempotency-Key, dispatch, reply mapping. */
  private async validateAndDispatch(caller: Caller | null, input: CallInput): Promise<CallResult> {
    const { op } = input;
    // 4. Validation of path, query and body. Text and nesting first (contracts/text.ts): what the schemas and every
    // store downstream can hold, checked without recursion before any recursive validator sees the value.
    if (input.encodingProblem) return this.refuse('validation_failed', input.encodingProblem);
    const v = this.validators.get(op.id)!;
    const paramsProblem = partProblem(input.params, 'path');
    if (paramsProblem !== null) return this.refuse('validation_failed', paramsProblem);
    if (!v.params.Check(input.params)) return this.invalid('path', v.params, input.params);
    const queryProblem = partProblem(input.query, 'query');
    if (queryProblem !== null) return this.refuse('validation_failed', queryProblem);
    const query = Value.Convert(op.query, input.query) as Record<string, unknown>;
    if (!v.query.Check(query)) return this.invalid('query', v.query, query);
    let body: unknown = null;
    if (v.body) {
      if (input.body.kind === 'value') body = input.body.value;
      else if (input.body.kind === 'none' || input.body.text.trim() === '') body = {};
      else {
        try {
          body = JSON.parse(input.body.text);
        } catch {
          return this.refuse('validation_failed', 'the request body is not valid JSON', 400);
        }
      }
      const bodyProblem = jsonValueProblem(body, 'body');
      if (bodyProblem !== null) return this.refuse('validation_failed', bodyProblem);
      if (!v.body.Check(body)) return this.invalid('body', v.body, body);
    }
    // 5. Idempotency-Key on mutating operations.
    let idempotency: { key: string; requestHash: string } | undefined;
    if (op.mutating) {
      const key = input.idempotencyKey;
      if (key === undefined || key.length === 0 || key.length > idempotencyKeyLengthMax) {
        return this.refuse(
          'validation_failed',
          key === undefined || key.length === 0
            ? 'this operation needs an Idempotency-Key (1 to 200 characters)'
            : `the Idempotency-Key is ${key.length} characters; at most ${idempotencyKeyLengthMax}`,
        );
      }
      const keyProblem = textProblem(key);
      if (keyProblem !== null) return this.refuse('validation_failed', `the Idempotency-Key ${keyProblem}`);
      idempotency = { key, requestHash: requestHash(op.id, input.params, body) };
    }
    // 6. Dispatch.
    const d = op.dispatch;
    if (d.to === 'gateway' || d.to === 'mcp')
      throw new Error(`${op.id} is served by the gateway itself, not the pipeline`);
    const subject =
      d.to === 'actor'
        ? this.d.names.actorSubject(d.kind, caller!.principalId)
        : this.d.names.serviceSubject(d.service);
    const { reply, rawBody } = await this.d.bus.requestWire(
      subject,
      {
        op: input.dispatchAs ?? op.id,
        requestId: input.requestId,
        caller,
        params: input.params,
        query,
        body,
        // Undefined when absent (JSON drops it): a conditional spread here is a slow object copy per request.
        idempotency: idempotency ?? undefined,
        clientAddress: input.clientAddress,
        head: input.head || undefined,
        // Only downloads look at it; on other operations the gateway alone answers 304.
        ifNoneMatch: op.media ? input.ifNoneMatch : undefined,
      },
      op.replyChunked === true,
    );
    // 7. Reply mapping.
    return this.fromReply(reply, input.ifNoneMatch, rawBody);
  }

  /** Step 2 alone, for the MCP endpoint, which authenticates each HTTP request before any JSON-RPC is read. */
  async authenticate(
    token: string | undefined,
    face: TokenFace = 'api',
  ): Promise<{ ok: true; caller: Caller } | { ok: false; refusal: CallResult }> {
    if (token === undefined) {
      return {
        ok: false,
        refusal: this.refuse('unauthorized', 'send Authorization: Bearer <token>', undefined, this.challenge()),
      };
    }
    const r = await this.d.auth.token(token, face);
    if (r.ok) return { ok: true, caller: r.who.caller };
    if (r.failure.kind === 'unavailable') {
      return {
        ok: false,
        refusal: this.refuse('unavailable', 'token keys are not available yet; retry shortly', undefined, {
          'retry-after': '1',
        }),
      };
    }
    return {
      ok: false,
      refusal: this.refuse(
        'unauthorized',
        'the bearer token is invalid or expired',
        undefined,
        this.challenge('invalid_token'),
      ),
    };
  }

  fromReply(reply: BusReply, ifNoneMatch?: string, rawBody: Uint8Array | string | null = null): CallResult {
    if (reply.ok) {
      const headers: Record<string, string> = reply.headers
        ? { ...reply.headers }
        : reply.replayed
          ? { 'idempotent-replayed': 'true' }
          : {};
      if (reply.etag) {
        headers.etag = reply.etag;
        headers['cache-control'] = 'private, no-cache';
        if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, reply.etag)) {
          return { status: 304, body: null, headers };
        }
      }
      // `body` stays lazy (parsed only if someone reads it); HTTP sends `rawBody` as it came.
      const result: CallResult = { status: reply.status, body: undefined, headers };
      Object.defineProperty(result, 'body', { enumerable: true, get: () => reply.body });
      if (rawBody !== null) result.rawBody = rawBody;
      if (reply.mediaType !== undefined) result.contentType = reply.mediaType;
      return result;
    }
    const { code, message, retryAfterS, approvalId } = reply.error;
    const body = errorBody(this.d.baseUrl, code, message, approvalId);
    return {
      status: errorTable[code].status,
      body,
      headers: retryAfterS ? { 'retry-after': String(retryAfterS) } : {},
      error: body,
    };
  }

  /** The RFC 6750 / RFC 9728 challenge: where the protected-resource metadata is, and what went wrong if known. */
  challenge(error?: string, scope?: string): Record<string, string> {
    const resourceMetadata = `${this.d.baseUrl}/.well-known/oauth-protected-resource`;
    return {
      'www-authenticate': `Bearer resource_metadata="${resourceMetadata}"${error ? `, error="${error}"` : ''}${scope ? `, scope="${scope}"` : ''}`,
    };
  }

  private invalid(part: 'path' | 'query' | 'body', check: Check, value: unknown): CallResult {
    const problems = [...check.Errors(value)]
      .filter((e) => e.keyword !== 'boolean')
      .slice(0, 5)
      .map((e) => `${part}${e.instancePath || ''} ${describe(e)}`);
    return this.refuse('validation_failed', problems.join('; ') || `${part} does not match the schema`);
  }
}

function describe(e: { keyword: string; message: string; params: Record<string, unknown> }): string {
  if (e.keyword === 'additionalProperties') {
    return `must not have the properties ${JSON.stringify(e.params.additionalProperties)}`;
  }
  if (e.keyword === 'required') return `needs ${JSON.stringify(e.params.requiredProperties ?? e.params)}`;
  return e.message;
}

/** `jsonValueProblem` for a request part, skipping the walk for an empty one (most calls have no path or query). */
function partProblem(part: Record<string, unknown>, where: string): string | null {
  for (const _ in part) return jsonValueProblem(part, where);
  return null;
}

/** What makes two calls "the same request" for Idempotency-Key replay: operation, path parameters and body. */
export function requestHash(opId: string, params: Record<string, string>, body: unknown): string {
  return hash('sha256', `${opId}\n${canonicalJson(params)}\n${canonicalJson(body)}`, 'hex');
}
