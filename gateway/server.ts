// The agent API's HTTP face: routes each request of the listener (gateway/http/) to a pipeline call, the MCP
// endpoint or a document the gateway serves itself, and words every refusal as the typed error object. The pieces
// it runs (pipeline, MCP endpoint, bus, the health alerts bucket) are built by the composition root (cli/roles.ts).
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  assertOperationTable,
  type Config,
  type Operation,
  okfExportPath,
  operations,
  syncPathPrefix,
  schemas,
  transportStatus,
} from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';
import { type Deprecation, deprecationsOf, withDeprecationHeaders } from './deprecation.ts';
import { errorsPage, markdownDocument } from './docs.ts';
import { HealthAlerts } from './health.ts';
import { Admission } from './http/admission.ts';
import { type Exchange, type Reply, type TransportRefusal, transportRefusalMessage } from './http/exchange.ts';
import { HttpListener } from './http/listener.ts';
import type { McpEndpoint } from './mcp/endpoint.ts';
import { openApiDocument } from './openapi.ts';
import { type BodyInput, bearerToken, type CallInput, type CallResult, type Pipeline } from './pipeline.ts';
import type { RevokedSet } from './revocations.ts';
import { compileRouter } from './router.ts';
import { type ContextFace, contextTransportRefusal } from './context/face.ts';
import type { OkfExport } from './context/okf.ts';
import type { SyncFace } from './sync/face.ts';
import type { WebFace } from './web/face.ts';
import { protectedResourceMetadata } from './web/oauth-routes.ts';
import { countRequest, inSpan, SpanKind } from '../contracts/index.ts';

export interface GatewayOptions {
  config: Config;
  log: Logger;
  pipeline: Pipeline;
  bus: GatewayBus;
  mcp: McpEndpoint;
  /** The `<ns>_health` bucket, watched for the alerts /healthz shows. */
  health: KV;
  /** The OAuth server's endpoints and the people's pages (gateway/web/), on the same listener. */
  web: WebFace;
  /** The context-file API: under /api/v1 here, and on its own listener (ASSAY_API_PORT) under /v1. */
  context: ContextFace;
  /** `GET {web_url}/export/okf`: the public context files in the OKF format. */
  okf: OkfExport;
  /** Device sync under `{web_url}/api/sync/` (docs/sync.md). */
  sync: SyncFace;
  /** Revoked OAuth grants and tokens, loaded before the gateway listens. */
  revoked: RevokedSet;
  /** The clock a deprecated operation's Sunset date is compared with. */
  nowMs: () => number;
  /** The operation table to serve; the contracts' table when absent (a test serves one with a row deprecated). */
  operations?: readonly Operation[];
}

const noBody: BodyInput = { kind: 'none' };
const markdown = 'text/markdown; charset=utf-8';
/** An Idempotency-Key header is printable ASCII (the header's draft makes it a structured-field string). */
const headerKeyPattern = /^[\x20-\x7e]*$/;

export class Gateway {
  private readonly admission: Admission;
  private readonly listener: HttpListener;
  private readonly apiListener: HttpListener;
  private readonly alerts: HealthAlerts;
  private readonly match: ReturnType<typeof compileRouter<Operation>>;
  private readonly pipeline: Pipeline;
  private readonly openapiJson: string;
  private readonly errorsHtml = errorsPage();
  private readonly changelogMarkdown = markdownDocument('CHANGELOG.md');
  private readonly deprecationMarkdown = markdownDocument('deprecation.md');
  /** Deprecated operations by id, with their headers computed once (docs/deprecation.md). */
  private readonly deprecations: Map<string, Deprecation>;
  private readonly offerSchemaJson = JSON.stringify(schemas.OfferDocument);
  private readonly protectedResourceJson: string;
  /** Per-request access lines are debug level; checked once so the hot path pays nothing when they are off. */
  private readonly accessLog: boolean;
  private closing: Promise<void> | null = null;

  constructor(private readonly o: GatewayOptions) {
    const table: readonly Operation[] = o.operations ?? operations;
    assertOperationTable(table);
    const { config } = o;
    this.match = compileRouter(table);
    this.deprecations = deprecationsOf(table, config.baseUrl);
    this.pipeline = o.pipeline;
    this.accessLog = o.log.isLevelEnabled('debug');
    this.openapiJson = JSON.stringify(openApiDocument(table, config.baseUrl, o.web.routes));
    this.protectedResourceJson = JSON.stringify(protectedResourceMetadata(config, config.baseUrl, 'Assay agent API'));
    this.alerts = new HealthAlerts(o.health, o.log);
    this.admission = new Admission(config.inflightMax);
    this.listener = new HttpListener({
      host: config.host,
      port: config.port,
      bodyBytesMax: config.bodyBytesMax,
      bodyReadTimeoutMs: config.bodyReadTimeoutMs,
      bodyDiscardBytesMax: config.bodyDiscardBytesMax,
      admission: this.admission,
      refusal: (r) => this.transportRefusal(r),
      serve: (x, req) => this.onRequest(x, req),
    });
    this.apiListener = new HttpListener({
      host: config.host,
      port: config.apiPort,
      bodyBytesMax: config.bodyBytesMax,
      bodyReadTimeoutMs: config.bodyReadTimeoutMs,
      bodyDiscardBytesMax: config.bodyDiscardBytesMax,
      admission: this.admission,
      refusal: contextTransportRefusal,
      serve: (x, req) => this.onApiRequest(x, req),
    });
  }

  get port(): number {
    return this.listener.port;
  }

  /** The context-file API's own port (`{api_url}`). */
  get apiPort(): number {
    return this.apiListener.port;
  }

  /** Requests holding an in-flight slot right now. */
  get inflight(): number {
    return this.admission.count;
  }

  async listen(): Promise<number> {
    this.alerts.start();
    await this.o.revoked.start();
    await this.apiListener.listen();
    return this.listener.listen();
  }

  /** Stop accepting, let in-flight requests finish (up to the grace period), then close every connection. */
  close(graceMs = this.o.config.shutdownGraceMs): Promise<void> {
    this.closing ??= (async () => {
      this.o.mcp.close();
      this.listener.stopListening();
      this.apiListener.stopListening();
      const inflight = this.admission.count;
      this.o.log.info({ inflight, graceMs }, 'gateway draining: new requests refused, finishing those in flight');
      await this.admission.drain(graceMs);
      this.o.log.info({ unfinished: this.admission.count }, 'gateway drained');
      this.listener.close();
      this.apiListener.close();
      this.alerts.stop();
      this.o.revoked.stop();
    })();
    return this.closing;
  }

  /** `{api_url}`: the context-file API under /v1, and nothing else. */
  private onApiRequest(x: Exchange, req: HttpRequest): void {
    const path = req.getUrl();
    if (path === contextApiPrefix || path.startsWith(`${contextApiPrefix}/`)) {
      this.o.context.handle(x, req, 'api', path.slice(contextApiPrefix.length));
      return;
    }
    x.sendJson(404, null, { error: 'not_found', message: `the context-file API is served under ${contextApiPrefix}` });
  }

  private onRequest(x: Exchange, req: HttpRequest): void {
    const path = req.getUrl();
    if (path === contextWebPrefix || path.startsWith(`${contextWebPrefix}/`)) {
      this.o.context.handle(x, req, 'web', path.slice(contextWebPrefix.length));
      return;
    }
    if (path === okfExportPath) {
      this.o.okf.handle(x, req);
      return;
    }
    if (path.startsWith(syncPathPrefix)) {
      this.o.sync.handle(x, req, path);
      return;
    }
    const m = this.match(x.method, path);
    if (m.kind === 'none') {
      const w = this.o.web.serves(x.method, path);
      if (w.kind === 'found') {
        if (w.problem) {
          this.reply(x, this.pipeline.refuse('validation_failed', w.problem));
          return;
        }
        this.o.web.handle(x, req, w.route, w.params, this.clientAddress(x, req));
        return;
      }
      if (w.kind === 'wrong_method') {
        const result = this.pipeline.refuse('not_found', `${x.method} is not served on ${path}; it accepts ${w.allow}`);
        result.headers.allow = w.allow;
        this.reply(x, result);
        return;
      }
    }
    if (m.kind !== 'found') {
      // HEAD answers as GET would, down to the length of the message.
      const method = x.head ? 'GET' : x.method;
      const message =
        m.kind === 'wrong_method'
          ? `${method} is not served on ${path}; it accepts ${m.allow}`
          : `no route ${method} ${path}`;
      const result = this.pipeline.refuse('not_found', message);
      if (m.kind === 'wrong_method') result.headers.allow = m.allow;
      this.reply(x, result);
      return;
    }
    const op = m.route;
    const deprecation = this.deprecations.size === 0 ? undefined : this.deprecations.get(op.id);
    if (deprecation && this.o.nowMs() >= deprecation.sunsetMs) {
      // Past its sunset the route is gone, as an unknown route is: before authentication, naming its replacement.
      const result = this.pipeline.refuse('not_found', deprecation.goneMessage);
      this.reply(x, { ...result, headers: withDeprecationHeaders(result.headers, deprecation) });
      return;
    }
    if (op.dispatch.to === 'mcp') {
      this.o.mcp.handle(x, req);
      return;
    }
    if (op.dispatch.to === 'gateway') {
      this.servePage(x, op.dispatch.page, deprecation);
      return;
    }
    const token = bearerToken(req.getHeader('authorization'));
    const idempotencyKey = op.mutating ? req.getHeader('idempotency-key') : '';
    const ifNoneMatch = req.getHeader('if-none-match');
    const rawQuery = req.getQuery();
    // Only public operations (sandbox registration) are limited per address; reading it costs a copy.
    const clientAddress = op.scope === null ? this.clientAddress(x, req) : '';
    // uWS hands header values over byte for byte as Latin-1 and drops trailing bytes above 0x7f, so a non-ASCII key
    // would not be the key the client sent (and could equal another one).
    const encodingProblem =
      m.problem ??
      (headerKeyPattern.test(idempotencyKey)
        ? null
        : 'the Idempotency-Key header must be printable ASCII (other bytes do not reach the service intact)');
    if (!x.admit()) return;
    const input: CallInput = {
      op,
      token,
      params: m.params,
      query: parseQuery(rawQuery),
      body: noBody,
      idempotencyKey: idempotencyKey === '' ? undefined : idempotencyKey,
      ifNoneMatch: ifNoneMatch === '' ? undefined : ifNoneMatch,
      head: x.head,
      requestId: x.requestId,
      clientAddress,
      encodingProblem,
    };
    if (x.method !== 'POST' && x.method !== 'PUT' && x.method !== 'PATCH') {
      void this.run(x, input);
      return;
    }
    x.readText(req, (text) => {
      if (text === null) return;
      input.body = { kind: 'raw', text };
      void this.run(x, input);
    });
  }

  private async run(x: Exchange, input: CallInput): Promise<void> {
    let result: CallResult;
    const started = performance.now();
    try {
      result = await inSpan(
        input.op.id,
        SpanKind.SERVER,
        { 'assay.operation': input.op.id, 'assay.face': 'rest', 'http.request.method': x.method },
        async (span) => {
          const r = await this.pipeline.run(input);
          span?.setAttribute('http.response.status_code', r.status);
          return r;
        },
      );
    } catch (err) {
      this.o.log.error({ err, requestId: x.requestId, op: input.op.id }, 'pipeline failed');
      result = this.pipeline.refuse('unavailable', 'the gateway failed to process the request');
    }
    countRequest(input.op.id, 'rest', result.status, started);
    const deprecation = this.deprecations.size === 0 ? undefined : this.deprecations.get(input.op.id);
    if (deprecation) result = { ...result, headers: withDeprecationHeaders(result.headers, deprecation) };
    if (result.status >= 500) {
      this.o.log.warn({ requestId: x.requestId, op: input.op.id, code: result.error?.code }, 'request refused');
    } else if (this.accessLog) {
      this.o.log.debug(
        { requestId: x.requestId, op: input.op.id, status: result.status, code: result.error?.code },
        'request',
      );
    }
    this.reply(x, result);
  }

  private reply(x: Exchange, r: CallResult): void {
    if (r.status === 304) x.send(304, r.headers, null, null);
    else x.send(r.status, r.headers, r.contentType ?? 'application/json', r.rawBody ?? JSON.stringify(r.body));
  }

  private servePage(
    x: Exchange,
    page: Extract<Operation['dispatch'], { to: 'gateway' }>['page'],
    deprecation: Deprecation | undefined,
  ): void {
    const headers = deprecation ? deprecation.headers : null;
    if (page === 'healthz') {
      // A liveness probe: 200 whatever the alerts say.
      const alerts = this.alerts.list();
      const nats = this.o.bus.isConnected();
      x.sendJson(200, headers, { status: alerts.length > 0 ? 'degraded' : 'ok', nats, alerts });
    } else if (page === 'openapi') x.send(200, headers, 'application/json', this.openapiJson);
    else if (page === 'offerSchema') x.send(200, headers, 'application/schema+json', this.offerSchemaJson);
    else if (page === 'protectedResource') x.send(200, headers, 'application/json', this.protectedResourceJson);
    else if (page === 'changelog') x.send(200, headers, markdown, this.changelogMarkdown);
    else if (page === 'deprecationPolicy') x.send(200, headers, markdown, this.deprecationMarkdown);
    else x.send(200, headers, 'text/html; charset=utf-8', this.errorsHtml);
  }

  /** The I/O layer's refusals, as the typed error object (REST and MCP alike). */
  private transportRefusal(r: TransportRefusal): Reply {
    const message = transportRefusalMessage(r);
    const result =
      r.kind === 'at_capacity'
        ? this.pipeline.refuse('unavailable', message, undefined, { 'retry-after': '1' })
        : this.pipeline.refuse(
            'validation_failed',
            message,
            r.kind === 'body_too_large'
              ? transportStatus.bodyTooLarge
              : r.kind === 'body_timeout'
                ? transportStatus.bodyReadTimeout
                : transportStatus.malformedJson,
          );
    return {
      status: result.status,
      headers: result.headers,
      contentType: 'application/json',
      body: JSON.stringify(result.body),
    };
  }

  private clientAddress(x: Exchange, req: HttpRequest): string {
    if (this.o.config.trustProxy) {
      const forwarded = req.getHeader('x-forwarded-for').split(',')[0]?.trim();
      if (forwarded) return forwarded;
    }
    return Buffer.from(x.res.getRemoteAddressAsText()).toString();
  }
}

/** Where the context-file API is served: `{web_url}/api/v1` on this listener, `{api_url}/v1` on its own. */
const contextWebPrefix = '/api/v1';
const contextApiPrefix = '/v1';

function parseQuery(raw: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!raw) return out;
  for (const [k, v] of new URLSearchParams(raw)) out[k] = v;
  return out;
}
