// The HTTP face: a uWebSockets.js server that turns each request into a pipeline call. uWS rules apply here and
// only here: read the request synchronously, attach onAborted before any await, write inside cork, never touch a
// response after it ended or aborted.
import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import uWS, { type HttpRequest, type HttpResponse } from 'uWebSockets.js';
import {
  assertOperationTable,
  type Config,
  type Names,
  type Operation,
  operations,
  schemas,
  scopes,
  transportStatus,
} from '../contracts/index.ts';
import { GatewayBus } from './bus.ts';
import { errorsPage } from './docs.ts';
import { McpEndpoint } from './mcp/endpoint.ts';
import { McpSessions, type McpSessionsBucket } from './mcp/sessions.ts';
import { openApiDocument } from './openapi.ts';
import { type BodyInput, bearerToken, type CallResult, Pipeline } from './pipeline.ts';
import { compileRouter } from './router.ts';
import { TokenVerifier } from './tokens.ts';

if (typeof uWS.SSLApp !== 'function') {
  // The package falls back to a slow pure-JS server with other routing when its native binary fails to load.
  throw new Error('uWebSockets.js native binary did not load (Node 20 on glibc x64 is required)');
}

export interface GatewayOptions {
  config: Config;
  names: Names;
  nc: NatsConnection;
  log: Logger;
  /** The MCP sessions bucket (`<ns>_mcp_sessions`), opened by the composition root. */
  mcpSessions: McpSessionsBucket;
  nowMs?: () => number;
}

const statusText: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  409: '409 Conflict',
  413: '413 Content Too Large',
  422: '422 Unprocessable Content',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

const requestIdPattern = /^[A-Za-z0-9._-]{1,100}$/;

export class Gateway {
  readonly pipeline: Pipeline;
  readonly bus: GatewayBus;
  private readonly app = uWS.App();
  private listenSocket: uWS.us_listen_socket | null = null;
  private readonly match = compileRouter(operations);
  private readonly openapiJson: string;
  private readonly errorsHtml = errorsPage();
  private readonly offerSchemaJson = JSON.stringify(schemas.OfferDocument);
  private readonly protectedResourceJson: string;
  private readonly mcp: McpEndpoint;
  private inflight = 0;
  /** Per-request access lines are debug level; checked once so the hot path pays nothing when they are off. */
  private readonly accessLog: boolean;

  private draining = false;
  private idle: (() => void) | null = null;
  port = 0;

  constructor(private readonly o: GatewayOptions) {
    assertOperationTable(operations);
    this.accessLog = o.log.isLevelEnabled('debug');
    const { config, names, nc } = o;
    this.bus = new GatewayBus(nc, config.requestTimeoutMs, o.log);
    const verifier = new TokenVerifier({
      issuer: config.baseUrl,
      nowMs: o.nowMs ?? Date.now,
      fetchJwks: async () => {
        const reply = await this.bus.request(names.serviceSubject('auth'), {
          op: 'auth.token_jwks',
          requestId: 'jwks',
          caller: null,
          params: {},
          query: {},
          body: null,
        });
        if (!reply.ok) throw new Error(`the auth service refused the token key set: ${reply.error.message}`);
        return reply.body as { keys: never[] };
      },
      onFetchError: (err) => o.log.warn({ err }, 'fetching the token key set failed'),
    });
    this.pipeline = new Pipeline({ names, baseUrl: config.baseUrl, bus: this.bus, verifier }, operations);
    this.openapiJson = JSON.stringify(openApiDocument(operations, config.baseUrl));
    // RFC 9728. The authorization server (OAuth 2.1) arrives with the OAuth issue; it will live at the base URL.
    this.protectedResourceJson = JSON.stringify({
      resource: config.baseUrl,
      authorization_servers: [config.baseUrl],
      bearer_methods_supported: ['header'],
      scopes_supported: [...scopes],
      resource_name: 'Assay agent API',
    });
    const nowMs = o.nowMs ?? Date.now;
    this.mcp = new McpEndpoint({
      config,
      pipeline: this.pipeline,
      bus: this.bus,
      ops: operations,
      log: o.log,
      sessions: new McpSessions(o.mcpSessions, {
        idleMs: config.mcpSessionIdleSeconds * 1000,
        perPrincipalMax: config.mcpSessionsPerPrincipalMax,
        nowMs,
        newId: randomUUID,
        onError: (err, what) => o.log.warn({ err }, what),
      }),
      admission: {
        enter: () => {
          if (this.draining || this.inflight >= config.inflightMax) return false;
          this.inflight++;
          return true;
        },
        leave: () => this.done(),
      },
    });
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  async listen(): Promise<number> {
    const { host, port } = this.o.config;
    await new Promise<void>((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port} (in use?)`));
        this.listenSocket = socket;
        this.port = uWS.us_socket_local_port(socket);
        resolve();
      });
    });
    return this.port;
  }

  /** Stop accepting, let in-flight requests finish (up to the grace period), then close every connection. */
  async close(graceMs = this.o.config.shutdownGraceMs): Promise<void> {
    this.draining = true;
    this.mcp.close();
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    if (this.inflight > 0) {
      await Promise.race([
        new Promise<void>((resolve) => {
          this.idle = resolve;
        }),
        new Promise((resolve) => setTimeout(resolve, graceMs).unref()),
      ]);
    }
    (this.app as unknown as { close(): void }).close();
  }

  private onRequest(res: HttpResponse, req: HttpRequest): void {
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headerId = req.getHeader('x-request-id');
    const requestId = requestIdPattern.test(headerId) ? headerId : randomUUID();
    const m = this.match(method, path);
    if (m.kind !== 'found') {
      const message =
        m.kind === 'wrong_method'
          ? `${method} is not served on ${path}; it accepts ${m.allow.join(', ')}`
          : `no route ${method} ${path}`;
      const result = this.pipeline.refuse('not_found', message);
      if (m.kind === 'wrong_method') result.headers.allow = m.allow.join(', ');
      this.write(res, requestId, result, { aborted: false });
      return;
    }
    const { op, params } = m;
    if (op.dispatch.to === 'mcp') {
      this.mcp.handle(res, req, requestId);
      return;
    }
    if (op.dispatch.to === 'gateway') {
      this.servePage(res, requestId, op);
      return;
    }
    const authorization = req.getHeader('authorization');
    const idempotencyKey = req.getHeader('idempotency-key');
    const contentLength = req.getHeader('content-length');
    const ifNoneMatch = req.getHeader('if-none-match');
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    // Only public operations (sandbox registration) are limited per address; reading it costs a copy.
    const clientAddress = op.scope === null ? this.clientAddress(res, req) : '';
    const token = bearerToken(authorization);
    const query = parseQuery(rawQuery);
    const hasBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
    if (this.draining || this.inflight >= this.o.config.inflightMax) {
      const result = this.pipeline.refuse(
        'unavailable',
        'this gateway is at capacity or shutting down; retry',
        undefined,
        {
          'retry-after': '1',
        },
      );
      this.write(res, requestId, result, state);
      return;
    }
    const limit = this.o.config.bodyBytesMax;
    if (hasBody && contentLength && Number(contentLength) > limit) {
      this.write(res, requestId, this.tooLarge(limit), state, true);
      return;
    }
    this.inflight++;
    const run = (body: BodyInput) =>
      this.pipeline
        .run({
          op,
          token,
          params,
          query,
          body,
          idempotencyKey: idempotencyKey === '' ? undefined : idempotencyKey,
          ifNoneMatch: ifNoneMatch === '' ? undefined : ifNoneMatch,
          requestId,
          clientAddress,
        })
        .catch((err: unknown) => {
          this.o.log.error({ err, requestId, op: op.id }, 'pipeline failed');
          return this.pipeline.refuse('unavailable', 'the gateway failed to process the request');
        })
        .then((result) => {
          if (result.status >= 500)
            this.o.log.warn({ requestId, op: op.id, code: result.error?.code }, 'request refused');
          else if (this.accessLog) {
            this.o.log.debug({ requestId, op: op.id, status: result.status, code: result.error?.code }, 'request');
          }
          this.write(res, requestId, result, state);
        })
        .finally(() => this.done());
    if (!hasBody) {
      void run({ kind: 'none' });
      return;
    }
    let chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (size < 0) return;
      size += chunk.byteLength;
      if (size > limit) {
        size = -1;
        chunks = [];
        this.write(res, requestId, this.tooLarge(limit), state, true);
        this.done();
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) void run({ kind: 'raw', text: Buffer.concat(chunks).toString('utf8') });
    });
  }

  private servePage(res: HttpResponse, requestId: string, op: Operation): void {
    const page = op.dispatch.to === 'gateway' ? op.dispatch.page : null;
    const state = { aborted: false };
    if (page === 'healthz') {
      this.write(
        res,
        requestId,
        { status: 200, body: { status: 'ok', nats: this.bus.isConnected() }, headers: {} },
        state,
      );
    } else if (page === 'openapi') {
      this.writeRaw(res, requestId, 200, 'application/json', this.openapiJson);
    } else if (page === 'offerSchema') {
      this.writeRaw(res, requestId, 200, 'application/schema+json', this.offerSchemaJson);
    } else if (page === 'protectedResource') {
      this.writeRaw(res, requestId, 200, 'application/json', this.protectedResourceJson);
    } else {
      this.writeRaw(res, requestId, 200, 'text/html; charset=utf-8', this.errorsHtml);
    }
  }

  private tooLarge(limit: number): CallResult {
    return this.pipeline.refuse(
      'validation_failed',
      `the request body is larger than ${limit} bytes`,
      transportStatus.bodyTooLarge,
    );
  }

  private done(): void {
    this.inflight--;
    if (this.inflight === 0 && this.idle) this.idle();
  }

  private write(res: HttpResponse, requestId: string, r: CallResult, state: { aborted: boolean }, close = false): void {
    if (state.aborted) return;
    state.aborted = true; // written: never touch this response again
    const body = r.status === 304 ? '' : (r.rawBody ?? JSON.stringify(r.body));

    res.cork(() => {
      res.writeStatus(statusText[r.status] ?? String(r.status));
      if (r.status !== 304) res.writeHeader('content-type', 'application/json');
      res.writeHeader('x-request-id', requestId);
      for (const [k, v] of Object.entries(r.headers)) res.writeHeader(k, v);
      // A 304 carries no content (RFC 9110 15.4.5), not even an empty one with a zero length.
      if (r.status === 304) res.endWithoutBody(undefined, close);
      else res.end(body, close);
    });
  }

  private writeRaw(res: HttpResponse, requestId: string, status: number, type: string, body: string): void {
    res.cork(() => {
      res.writeStatus(statusText[status] ?? String(status));
      res.writeHeader('content-type', type);
      res.writeHeader('x-request-id', requestId);
      res.end(body);
    });
  }

  private clientAddress(res: HttpResponse, req: HttpRequest): string {
    if (this.o.config.trustProxy) {
      const forwarded = req.getHeader('x-forwarded-for').split(',')[0]?.trim();
      if (forwarded) return forwarded;
    }
    return Buffer.from(res.getRemoteAddressAsText()).toString();
  }
}

function parseQuery(raw: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!raw) return out;
  for (const [k, v] of new URLSearchParams(raw)) out[k] = v;
  return out;
}
