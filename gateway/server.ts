// The gateway: its two listeners (gateway/http/), each with one front door (gateway/door/) compiled over the rows of
// every face it serves, and the agent API's face itself: an operation row becomes a pipeline call, the MCP endpoint
// or a document the gateway serves. The pieces it runs (pipeline, MCP endpoint, bus, the faces, the health alerts
// bucket) are built by the composition root (cli/roles.ts).
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  assertOperationTable,
  type Config,
  type Operation,
  operations,
  syncPathPrefix,
  schemas,
} from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';
import { type Deprecation, deprecationsOf, withDeprecationHeaders } from './deprecation.ts';
import { errorsPage, markdownDocument } from './docs.ts';
import { type HealthBucket, HealthAlerts } from './health.ts';
import { Admission } from './http/admission.ts';
import { forwardedClientAddress, forwardedEntries } from './http/client-address.ts';
import { type Miss, missReply } from './door/dialects.ts';
import { Door, type PathSpace } from './door/door.ts';
import { type Dialect, type Matched, operationRow, type RouteRow } from './door/route.ts';
import type { Exchange } from './http/exchange.ts';
import { HttpListener } from './http/listener.ts';
import type { McpEndpoint } from './mcp/endpoint.ts';
import { agentOpenApiDocument } from './openapi/agent.ts';
import { type BodyInput, bearerToken, type CallInput, type CallResult, type Pipeline } from './pipeline.ts';
import type { RevokedSet } from './revocations.ts';
import { type ContextFace, contextPrefixes } from './context/face.ts';
import type { ContextBase } from './context/routes.ts';
import type { OkfExport } from './context/okf.ts';
import type { SyncFace } from './sync/face.ts';
import type { WebFace } from './web/face.ts';
import type { X402Face } from './x402/face.ts';
import { wantsPage } from './web/landing.ts';
import { protectedResourceMetadata } from './web/oauth-routes.ts';
import { countRequest, inSpan, SpanKind } from './telemetry.ts';

export interface GatewayOptions {
  config: Config;
  log: Logger;
  pipeline: Pipeline;
  bus: GatewayBus;
  mcp: McpEndpoint;
  /** The `<ns>_health` bucket, watched (and read) for the alerts /healthz shows. */
  health: HealthBucket;
  /** The OAuth server's endpoints and the people's pages (gateway/web/), on the same listener. */
  web: WebFace;
  /** The context-file API: under /api/v1 here, and on its own listener (ASSAY_API_PORT) under /v1. */
  context: ContextFace;
  /** `GET {web_url}/export/okf`: the public context files in the OKF format. */
  okf: OkfExport;
  /** Device sync under `{web_url}/api/sync/` (docs/sync.md). */
  sync: SyncFace;
  /** The x402 rail under `/x402/` (docs/x402.md). */
  x402: X402Face;
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
  /** `{base_url}` and `{web_url}`: every face's rows under one router. */
  private readonly door: Door;
  /** `{api_url}`: the context-file API under /v1, and nothing else. */
  private readonly apiDoor: Door;
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
  /** Pages served on an operation's own path to a browser that asks for HTML, by `GET <path>`. */
  private readonly pagesOnOperations = new Map<string, RouteRow>();

  constructor(private readonly o: GatewayOptions) {
    const table: readonly Operation[] = o.operations ?? operations;
    assertOperationTable(table);
    const { config } = o;
    const rows = this.rows(table);
    this.door = new Door({
      rows,
      spaces: pathSpaces(rows),
      fallback: 'agent',
      urls: { baseUrl: config.baseUrl, webUrl: config.webUrl },
      operation: (x, req, op, m) => this.serveOperation(x, req, op, m),
      miss: (dialect, x, req, miss) => this.miss(dialect, x, req, miss, 'web'),
    });
    this.apiDoor = new Door({
      rows: o.context.rows('api'),
      spaces: [{ prefix: contextPrefixes.api, dialect: 'context' }],
      fallback: 'context',
      urls: { baseUrl: config.baseUrl, webUrl: config.webUrl },
      miss: (dialect, x, req, miss) => this.miss(dialect, x, req, miss, 'api'),
    });
    this.deprecations = deprecationsOf(table, config.baseUrl);
    this.pipeline = o.pipeline;
    this.accessLog = o.log.isLevelEnabled('debug');
    this.openapiJson = JSON.stringify(agentOpenApiDocument(table, config.baseUrl, o.web.routes));
    this.protectedResourceJson = JSON.stringify(protectedResourceMetadata(config, config.baseUrl, 'Assay agent API'));
    this.alerts = new HealthAlerts(o.health, o.log);
    this.admission = new Admission(config.inflightMax);
    this.listener = this.listenerFor(config.port, this.door);
    this.apiListener = this.listenerFor(config.apiPort, this.apiDoor);
  }

  /** A listener on `port` whose every request goes through `door`, sharing the process's in-flight limit. */
  private listenerFor(port: number, door: Door): HttpListener {
    const { config, log } = this.o;
    return new HttpListener({
      host: config.host,
      port,
      bodyBytesMax: config.bodyBytesMax,
      bodyReadTimeoutMs: config.bodyReadTimeoutMs,
      bodyDiscardBytesMax: config.bodyDiscardBytesMax,
      admission: this.admission,
      refusal: door.refusal,
      unsafeHeader: (err) => log.error({ err }, 'response refused: unsafe header'),
      serve: (x, req) => door.serve(x, req),
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

  /** Every row this listener serves: the operation table's, then the web face's, the context-file API's, the export's and sync's. */
  private rows(table: readonly Operation[]): RouteRow[] {
    const operationKeys = new Set(table.map((op) => `${op.method} ${op.path}`));
    const web = this.o.web.rows({
      refuseProblem: (x, problem) => this.reply(x, this.pipeline.refuse('validation_failed', problem)),
      clientAddress: (x, req) => this.clientAddress(x, req),
    });
    // A page on an operation's own method and path (the landing page on `/`, the MCP endpoint's path) is served to
    // a browser that asks for HTML, from the operation's row (serveOperation); it is not a row of its own.
    for (const row of web) {
      if (operationKeys.has(`${row.method} ${row.path}`)) this.pagesOnOperations.set(`${row.method} ${row.path}`, row);
    }
    return [
      ...table.map(operationRow),
      ...web.filter((row) => !operationKeys.has(`${row.method} ${row.path}`)),
      ...this.o.context.rows('web'),
      this.o.okf.row(),
      ...this.o.sync.rows(),
      ...this.o.x402.rows(),
    ];
  }

  /** The rows of the listeners, for the spine tests and the documents. */
  get routeRows(): { web: readonly RouteRow[]; api: readonly RouteRow[] } {
    return { web: this.door.rows, api: this.apiDoor.rows };
  }

  /**
   * A path or method no row serves, in its dialect. The context-file API answers after authentication (its misses
   * spend the caller's rate like its routes); outside its prefix the `{api_url}` listener has nothing.
   */
  private miss(dialect: Dialect, x: Exchange, req: HttpRequest, miss: Miss, base: ContextBase): void {
    if (dialect === 'context') {
      if (miss.space === null) {
        const message = `the context-file API is served under ${contextPrefixes.api}`;
        x.sendJson(404, null, { error: 'not_found', message });
        return;
      }
      this.o.context.handle(
        x,
        req,
        base,
        miss.allow === null ? { kind: 'none' } : { kind: 'wrong_method', allow: miss.allow },
      );
      return;
    }
    const r = missReply(dialect, miss, { baseUrl: this.o.config.baseUrl, webUrl: this.o.config.webUrl });
    x.send(r.status, r.headers, r.contentType, r.body);
  }

  /** A row of the operation table: past its sunset it is gone; the MCP endpoint, a document, or the pipeline. */
  private serveOperation(x: Exchange, req: HttpRequest, op: Operation, m: Matched): void {
    // `/` is the MCP endpoint's path too: a browser navigating there asks for HTML and gets the landing page; an MCP
    // client or API caller never asks for text/html, so its answers stay the endpoint's (gateway/web/landing.ts).
    if (this.pagesOnOperations.size > 0 && (x.method === 'GET' || x.head)) {
      const page = this.pagesOnOperations.get(`GET ${op.path}`);
      if (page?.dispatch.kind === 'local' && wantsPage(req.getHeader('accept'))) {
        page.dispatch.serve(x, req, m);
        return;
      }
    }
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

  private clientAddress(x: Exchange, req: HttpRequest): string {
    const hops = this.o.config.trustProxy;
    if (hops > 0) {
      const forwarded = forwardedClientAddress(forwardedEntries(req), hops);
      if (forwarded !== null) return forwarded;
    }
    return Buffer.from(x.res.getRemoteAddressAsText()).toString();
  }
}

/**
 * The path spaces of `{base_url}` and `{web_url}` whose misses are not the agent API's typed 404: the context-file
 * API and device sync (their own `{error, message}`), the OAuth endpoints (RFC 6749), and the pages people use
 * (HTML): the first segment of every page row no row of another dialect shares.
 */
function pathSpaces(rows: readonly RouteRow[]): PathSpace[] {
  const spaces: PathSpace[] = [
    { prefix: contextPrefixes.web, dialect: 'context' },
    { prefix: syncPathPrefix, dialect: 'sync' },
    { prefix: '/oauth', dialect: 'oauth' },
  ];
  const firstSegment = (path: string) => `/${path.split('/')[1] ?? ''}`;
  const others = new Set(rows.filter((r) => r.dialect !== 'page').map((r) => firstSegment(r.path)));
  const pages = new Set(rows.filter((r) => r.dialect === 'page').map((r) => firstSegment(r.path)));
  for (const prefix of pages) if (!others.has(prefix)) spaces.push({ prefix, dialect: 'page' });
  return spaces;
}

function parseQuery(raw: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!raw) return out;
  for (const [k, v] of new URLSearchParams(raw)) out[k] = v;
  return out;
}
