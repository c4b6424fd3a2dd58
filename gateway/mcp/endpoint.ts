// The MCP endpoint: Streamable HTTP on the gateway's own uWebSockets.js server. Each HTTP request is checked here
// (Origin, bearer token, session), then its JSON-RPC messages go to a fresh low-level MCP SDK Server whose
// tools/call and resources/read handlers run the REST pipeline. A POST reaches the Server through a thin
// one-exchange transport (exchange.ts); the GET event stream goes through the SDK's web-standard transport and
// carries resource update notifications (updates.ts). Sessions live in NATS KV, so any gateway process serves any
// session. Refusals at the HTTP level leave through `refuse` as the typed error object; refusals of a tool call are
// isError results carrying the same object (tools.ts, docs/mcp.md).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  type EmptyResult,
  ErrorCode as JsonRpcErrorCode,
  type JSONRPCMessage,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ReadResourceResult,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Logger } from 'pino';
import Type from 'typebox';
import { Value } from 'typebox/value';
import type { HttpRequest } from 'uWebSockets.js';
import { X402McpTool, x402ToolDefinition, x402ToolName } from '../x402/mcp-tool.ts';
import {
  type Caller,
  type Config,
  type ErrorCode,
  names as namesOf,
  type Operation,
  transportStatus,
} from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import { type Deprecation, deprecationsOf } from '../deprecation.ts';
import type { Exchange } from '../http/exchange.ts';
import { writeResponse } from '../http/web-response.ts';
import { bearerToken, type CallResult, type Pipeline } from '../pipeline.ts';
import { countRequest, inSpan, SpanKind } from '../telemetry.ts';

import { checkPost, type JsonRpcRefusal, PostExchange } from './exchange.ts';
import {
  eventsOperation,
  eventsReadOf,
  eventsResource,
  eventsTemplate,
  eventsUri,
  readResult,
  resourceNotFound,
  resourceRefusal,
} from './resources.ts';
import type { McpSession, McpSessions } from './sessions.ts';
import { EventStreams, type OpenStream } from './streams.ts';
import { type McpTool, rateLimitHeaders, splitArguments, toolResult, toolsFromTable } from './tools.ts';
import { ResourceUpdates, type UpdateTarget } from './updates.ts';

export interface McpEndpointDeps {
  config: Config;
  pipeline: Pipeline;
  /** For its connection state: with NATS unreachable the session store is too, and requests get 503 at once. */
  bus: GatewayBus;
  sessions: McpSessions;
  ops: readonly Operation[];
  log: Logger;
  /** The clock a deprecated tool's Sunset date is compared with. */
  nowMs: () => number;
}

/** The request headers the endpoint reads, copied before the first await as uWS requires. */
interface McpRequestHead {
  /** Absolute URL, for the web Request of the event stream. */
  url: string;
  origin: string;
  authorization: string;
  contentType: string;
  accept: string;
  sessionId: string;
  protocolVersion: string;
}

/** What a tool call or resource request needs from the HTTP request that carried it. */
interface RequestContext {
  token: string | undefined;
  caller: Caller;
  /** The request's session, as last read or written; null on initialize. */
  session: McpSession | null;
  requestId: string;
  /** The rate-limit headers of the latest tools/call in this HTTP request, sent on its HTTP response. */
  rateHeaders: Record<string, string> | null;
}

type Body = Promise<string | null>;

const serverInfo = { name: 'assay', title: 'Assay agent API', version: '1.0.0' };
const instructions =
  'Assay is a verified-artifact marketplace. Each tool is the twin of a REST operation under /v1 and runs the same ' +
  'pipeline (scope, validation, idempotency, handler). Mutating tools need an idempotency_key: reuse a key only to ' +
  'retry the same call. A refusal is an isError result whose structuredContent is the typed error object ' +
  '{ code, message, remediation, retryable, docs_url }; act on its remediation.';

/** How often open event streams are checked against the session store (sessions ended elsewhere, or expired). */
const streamCheckEveryMs = 5000;

export class McpEndpoint {
  private readonly tools: McpTool[];
  private readonly toolDefinitions: McpTool['definition'][];
  private readonly toolsByName: Map<string, McpTool>;
  private readonly x402: X402McpTool | null;
  /** Deprecated operations by id, with their _meta values computed once (docs/deprecation.md). */
  private readonly deprecations: Map<string, Deprecation>;
  /** Scopes that open at least one tool: a token with none of them can do nothing here. */
  private readonly toolScopes: string[];
  private readonly allowedOrigins: Set<string>;
  private readonly streams: EventStreams;
  /** Notifications of resources/subscribe, sent on the event streams this process holds. */
  private readonly updates: ResourceUpdates;
  /** The operation (GET /v1/events) whose scope and rules the events resource follows. */
  private readonly eventsOp: Operation;
  /** One JSON Schema validator for every per-request Server (the SDK builds a new Ajv for each one otherwise). */
  private readonly validator = new AjvJsonSchemaValidator();
  private readonly streamCheck: NodeJS.Timeout;
  private checkingStreams = false;

  constructor(private readonly d: McpEndpointDeps) {
    this.tools = toolsFromTable(d.ops);
    this.toolDefinitions = this.tools.map((t) => t.definition);
    // The x402 rail's tool, only where the operator configured the rail (docs/x402.md).
    this.x402 = d.config.x402FacilitatorUrl === '' ? null : new X402McpTool({ config: d.config, bus: d.bus });
    if (this.x402) this.toolDefinitions.push(x402ToolDefinition);
    this.toolsByName = new Map(this.tools.map((t) => [t.definition.name, t]));
    this.deprecations = deprecationsOf(d.ops, d.config.baseUrl);
    this.toolScopes = [...new Set(this.tools.map((t) => t.op.scope!))];
    this.allowedOrigins = new Set([
      new URL(d.config.baseUrl).origin,
      ...d.config.mcpAllowedOrigins.split(',').filter(Boolean),
    ]);
    this.streams = new EventStreams(d.config.mcpSseStreamsMax);
    this.eventsOp = eventsOperation(d.ops);
    this.updates = new ResourceUpdates({
      nc: d.bus.nc,
      names: namesOf(d.config.namespace),
      log: d.log,
      uri: eventsUri,
    });
    this.streamCheck = setInterval(() => void this.checkStreams(), streamCheckEveryMs).unref();
  }

  /**
   * Entry from the listener's route callback: everything before the first await happens here. The Exchange holds
   * the in-flight slot, the body limits and HEAD (the head of the GET answer, after the same checks).
   */
  handle(x: Exchange, req: HttpRequest): void {
    const head = readHead(req, this.d.config.baseUrl);
    // DNS rebinding: a browser page must not reach this endpoint from a foreign origin. Clients that send no
    // Origin (non-browser agents) are let through; they still need a bearer token.
    if (head.origin !== '' && !this.allowedOrigins.has(head.origin)) {
      this.refuse(x, 'forbidden', `requests from the web origin ${shown(head.origin)} are not allowed here`);
      return;
    }
    if (!x.admit()) return;
    const body: Body | null = x.method === 'POST' ? new Promise((resolve) => x.readText(req, resolve)) : null;
    this.serve(x, head, body)
      .catch((err: unknown) => {
        this.d.log.error({ err, requestId: x.requestId }, 'MCP request failed');
      })
      // Always an answer, and so the in-flight slot back (a written answer makes this a no-op).
      .finally(() => {
        if (!x.closed) this.refuse(x, 'unavailable', 'the gateway failed to process the request');
      });
  }

  /** End every event stream and stop checking them: the gateway is shutting down. */
  close(): void {
    clearInterval(this.streamCheck);
    this.streams.endAll();
    this.updates.close();
  }

  private async serve(x: Exchange, head: McpRequestHead, body: Body | null): Promise<void> {
    const token = bearerToken(head.authorization);
    const auth = await this.d.pipeline.authenticate(token, 'mcp');
    if (!auth.ok) return this.writeResult(x, auth.refusal);
    const caller = auth.caller;
    if (this.toolScopes.length > 0 && !caller.scopes.some((s) => this.toolScopes.includes(s))) {
      const needed = this.toolScopes.join(' ');
      return this.refuse(
        x,
        'forbidden',
        `this token has none of the scopes the tools need (${needed})`,
        undefined,
        this.d.pipeline.challenge('insufficient_scope', needed),
      );
    }
    const ctx: RequestContext = { token, caller, session: null, requestId: x.requestId, rateHeaders: null };
    if (body) {
      // Null: refused by the I/O layer (413; 400 for a body too slow or not UTF-8) or the client went away.
      const raw = await body;
      return raw === null ? undefined : this.post(x, head, raw, caller, ctx);
    }
    if (x.method === 'GET' || x.head) return this.openStream(x, head, caller, ctx);
    return this.endSession(x, head, caller);
  }

  private async post(
    x: Exchange,
    head: McpRequestHead,
    raw: string,
    caller: Caller,
    ctx: RequestContext,
  ): Promise<void> {
    // Any depth parses (JSON.parse does not recurse); a tool's arguments are bounded by the pipeline, without
    // recursion, before anything walks or sends them (contracts/text.ts), and answered as a tool result.
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return this.refuse(x, 'validation_failed', 'the request body is not valid JSON', transportStatus.malformedJson);
    }
    const checked = checkPost(head.accept, head.contentType, body);
    if (!checked.ok) return this.refuseJsonRpc(x, checked.refusal);
    // initialize opens a session (checkPost allows it only alone); everything else needs one.
    const initializing = checked.messages.some((m) => 'method' in m && m.method === 'initialize');
    if (!initializing) {
      const session = await this.session(x, head, caller);
      if (!session) return;
      void this.d.sessions.touch(session);
      ctx.session = session;
    }

    const exchange = new PostExchange(checked.messages);
    exchange.onerror = (err) => this.d.log.warn({ err, requestId: ctx.requestId }, 'MCP exchange error');
    const server = this.newServer(ctx);
    await server.connect(exchange);
    exchange.deliver();
    if (!exchange.hasRequests) {
      x.send(202, null, null, '');
      return;
    }
    // The Server answers every request (a handler that throws becomes a JSON-RPC error) and the pipeline under
    // tools/call is bounded by the bus timeout; the guard only makes sure the client is answered whatever happens.
    // A finished exchange holds no timers, so the Server is not closed (closing builds an Error to reject pending
    // requests, of which there are none).
    const answers = await this.withinDeadline(exchange.answered);
    if (answers === null) {
      return this.refuse(x, 'unavailable', 'the request was not answered in time; retry', undefined, {
        'retry-after': '1',
      });
    }
    // A batch is answered with an array (JSON-RPC 2.0), a single request with one object.
    const answer = Array.isArray(body) ? answers : answers[0]!;
    if (!initializing) return this.answer(x, answer, ctx.rateHeaders);
    const version = negotiatedVersion(answers[0]!);
    // A JSON-RPC error (bad initialize params) opens nothing.
    if (version === null) return this.answer(x, answer);
    const opened = await this.storeCall(x, () => this.d.sessions.open(caller, version));
    if (opened === undefined) return;
    if (opened === 'limit') {
      return this.refuse(
        x,
        'rate_limited',
        `this principal holds ${this.d.config.mcpSessionsPerPrincipalMax} MCP sessions, the most allowed; end one with DELETE /mcp or let one expire`,
        undefined,
        { 'retry-after': String(Math.min(60, this.d.config.mcpSessionIdleSeconds)) },
      );
    }
    this.answer(x, answer, { 'mcp-session-id': opened.id });
  }

  /**
   * GET: the server-to-client event stream of a session, which carries `notifications/resources/updated` for the
   * session's subscriptions (updates.ts). HEAD: the same checks and the head of the same answer, without opening a
   * stream.
   */
  private async openStream(x: Exchange, head: McpRequestHead, caller: Caller, ctx: RequestContext): Promise<void> {
    const session = await this.session(x, head, caller);
    if (!session) return;
    if (!x.head) void this.d.sessions.touch(session);
    ctx.session = session;
    let endStream: (() => void) | null = null;
    let endRequested = false;
    const entry: OpenStream = {
      principalId: session.principalId,
      sessionId: session.id,
      end: () => {
        endRequested = true;
        endStream?.();
      },
    };
    if (!(x.head ? this.streams.hasRoom(entry) : this.streams.add(entry))) {
      return this.refuse(
        x,
        'unavailable',
        `this gateway holds ${this.d.config.mcpSseStreamsMax} event streams, the most it may; retry (perhaps through another gateway)`,
        undefined,
        { 'retry-after': '5' },
      );
    }
    // The Exchange gives the in-flight slot back when the stream starts: a stream lasts as long as the client keeps
    // it, and must not hold the count a graceful stop waits on. The SDK's web-standard transport, stateless (the session was checked above), makes the stream: its headers,
    // keep-alive comments, and the 406 for a client that does not accept text/event-stream.
    const server = this.newServer(ctx);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    let target: UpdateTarget | null = null;
    try {
      await server.connect(transport);
      const headers: Record<string, string> = { accept: head.accept };
      if (head.protocolVersion) headers['mcp-protocol-version'] = head.protocolVersion;
      const response = await transport.handleRequest(new Request(head.url, { method: 'GET', headers }));
      if (!x.head && response.status === 200) {
        // Notifications the transport is sent without a request to answer go on this stream.
        target = {
          principalId: session.principalId,
          sessionId: session.id,
          notify: (uri) => void server.sendResourceUpdated({ uri }).catch(() => {}),
        };
        this.updates.add(target, session);
        // A subscription changed through another gateway since the read above was announced before this stream
        // listened: read the record once more.
        void this.d.sessions
          .find(session.principalId, session.id)
          .then((live) => live && this.updates.apply(live.principalId, live.id, live))
          .catch(() => {});
      }
      await writeResponse(x, response, {
        onStream: (end) => {
          endStream = end;
          if (endRequested) end();
        },
      });
    } finally {
      if (target) this.updates.remove(target);
      this.streams.remove(entry);
      await server.close().catch(() => {});
    }
  }

  /** DELETE: end the session everywhere (KV), and its event stream on this process at once. */
  private async endSession(x: Exchange, head: McpRequestHead, caller: Caller): Promise<void> {
    const session = await this.session(x, head, caller);
    if (!session) return;
    if ((await this.storeCall(x, () => this.d.sessions.end(session).then(() => true))) === undefined) return;
    this.streams.endSession(session.principalId, session.id);
    x.send(200, null, null, '');
  }

  /** The request's live session, or null after answering the refusal (400 or 404; 503 if the store is unreachable). */
  private async session(x: Exchange, head: McpRequestHead, caller: Caller): Promise<McpSession | null> {
    if (!head.sessionId) {
      this.refuse(
        x,
        'validation_failed',
        'this request needs the Mcp-Session-Id header that initialize returned',
        transportStatus.mcpSessionHeaders,
      );
      return null;
    }
    const session = await this.storeCall(x, () => this.d.sessions.find(caller.principalId, head.sessionId));
    if (session === undefined) return null;
    if (!session) {
      this.refuse(
        x,
        'not_found',
        `MCP session ${shown(head.sessionId)} is not open for this principal (ended, expired or unknown); send initialize to start a new one`,
      );
      return null;
    }
    // Without the header a server assumes the negotiated revision (2025-06-18 basic/transports); with it, it must
    // be that revision.
    if (head.protocolVersion && head.protocolVersion !== session.protocolVersion) {
      this.refuse(
        x,
        'validation_failed',
        `MCP-Protocol-Version ${shown(head.protocolVersion)} is not the version this session negotiated (${session.protocolVersion})`,
        transportStatus.mcpSessionHeaders,
      );
      return null;
    }
    return session;
  }

  /**
   * A call to the session store, or undefined after answering 503: NATS unreachable (known at once from the bus's
   * connection state, instead of after a request timeout) or the call failed.
   */
  private async storeCall<T>(x: Exchange, call: () => Promise<T>): Promise<T | undefined> {
    const unavailable = (message: string) => {
      this.refuse(x, 'unavailable', message, undefined, { 'retry-after': '1' });
      return undefined;
    };
    if (!this.d.bus.isConnected()) return unavailable('the session store is unreachable; retry shortly');
    try {
      return await call();
    } catch (err) {
      this.d.log.warn({ err, requestId: x.requestId }, 'MCP session store call failed');
      return unavailable('the session store did not answer; retry shortly');
    }
  }

  /** The value of `p`, or null if it takes longer than twice the request timeout. */
  private async withinDeadline<T>(p: Promise<T>): Promise<T | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), 2 * this.d.config.requestTimeoutMs);
    });
    try {
      return await Promise.race([p, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A low-level SDK Server for one HTTP request: the tool list, tools/call through the pipeline, and the events
   * resource (read through the pipeline, subscriptions kept in the session record).
   */
  private newServer(ctx: RequestContext): Server {
    const server = new Server(serverInfo, {
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } },
      instructions,
      jsonSchemaValidator: this.validator,
    });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.toolDefinitions }));
    server.setRequestHandler(CallToolRequestSchema, (request) => this.callTool(request.params, ctx));
    server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [eventsResource] }));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [eventsTemplate] }));
    server.setRequestHandler(ReadResourceRequestSchema, (request) => this.readResource(request.params.uri, ctx));
    server.setRequestHandler(SubscribeRequestSchema, (request) => this.subscribe(request.params.uri, true, ctx));
    server.setRequestHandler(UnsubscribeRequestSchema, (request) => this.subscribe(request.params.uri, false, ctx));
    return server;
  }

  /**
   * resources/read: the page GET /v1/events answers, through its pipeline (scope, rate limit, validation); without a
   * cursor the newest events instead of the oldest (resources.ts).
   */
  private async readResource(uri: string, ctx: RequestContext): Promise<ReadResourceResult> {
    const read = eventsReadOf(uri);
    if (read === null) throw resourceNotFound(uri);
    if (read === 'duplicate') {
      throw resourceRefusal(this.d.pipeline.refuse('validation_failed', 'a query parameter of the URI is repeated'));
    }
    const result = await this.d.pipeline
      .run({
        op: this.eventsOp,
        face: 'mcp',
        token: ctx.token,
        params: {},
        query: read.query,
        body: { kind: 'none' },
        idempotencyKey: undefined,
        dispatchAs: read.dispatchAs,
        requestId: ctx.requestId,
        clientAddress: '',
      })
      .catch((err: unknown) => {
        this.d.log.error({ err, requestId: ctx.requestId, uri }, 'pipeline failed');
        return this.d.pipeline.refuse('unavailable', 'the gateway failed to process the request');
      });
    const limit = rateLimitHeaders(result);
    if (limit) ctx.rateHeaders = limit;
    if (result.error) throw resourceRefusal(result);
    return readResult(uri, result);
  }

  /**
   * resources/subscribe and resources/unsubscribe: only assay://events, kept in the session's record (so the gateway
   * holding the event stream honours it, whichever it is). Subscribing needs the scope reading needs.
   */
  private async subscribe(uri: string, subscribed: boolean, ctx: RequestContext): Promise<EmptyResult> {
    if (uri !== eventsUri) throw resourceNotFound(uri);
    const scope = this.eventsOp.scope!;
    if (subscribed && !ctx.caller.scopes.includes(scope)) {
      throw resourceRefusal(this.d.pipeline.refuse('forbidden', `subscribing to ${uri} needs the scope ${scope}`));
    }
    const session = ctx.session!;
    let stored: McpSession | null;
    try {
      stored = await this.d.sessions.setSubscribed(session, uri, subscribed);
    } catch (err) {
      this.d.log.warn({ err, requestId: ctx.requestId }, 'MCP session store call failed');
      throw resourceRefusal(this.d.pipeline.refuse('unavailable', 'the session store did not answer; retry shortly'));
    }
    if (!stored) {
      throw resourceRefusal(
        this.d.pipeline.refuse('not_found', 'this MCP session ended meanwhile; send initialize to start a new one'),
      );
    }
    // A batch that subscribes and unsubscribes goes on from what was written.
    ctx.session = stored;
    this.updates.changed(stored.principalId, stored.id, stored);
    return {};
  }

  /** tools/call: the tool's operation through the same pipeline as its REST twin. */
  private async callTool(params: CallToolRequest['params'], ctx: RequestContext): Promise<CallToolResult> {
    if (this.x402 && params.name === x402ToolName) {
      return this.x402.call(params.arguments ?? {}, params._meta, ctx.requestId);
    }
    const tool = this.toolsByName.get(params.name);
    // An unknown (or not yet built) tool is a protocol error, as the MCP tools specification lists it.
    if (!tool) throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
    const deprecation = this.deprecations.size === 0 ? undefined : this.deprecations.get(tool.op.id);
    if (deprecation && this.d.nowMs() >= deprecation.sunsetMs) {
      // Past its sunset the tool answers as its REST twin does: not_found naming the replacement.
      return toolResult(this.d.pipeline.refuse('not_found', deprecation.goneMessage), tool.op, deprecation);
    }
    const started = performance.now();
    const run = () =>
      this.d.pipeline.run({
        op: tool.op,
        face: 'mcp',
        token: ctx.token,
        ...splitArguments(tool.op, params.arguments ?? {}),
        requestId: ctx.requestId,
        clientAddress: '',
      });
    const result = await inSpan(
      tool.op.id,
      SpanKind.SERVER,
      { 'assay.operation': tool.op.id, 'assay.face': 'mcp' },
      run,
    ).catch((err: unknown) => {
      this.d.log.error({ err, requestId: ctx.requestId, op: tool.op.id }, 'pipeline failed');
      return this.d.pipeline.refuse('unavailable', 'the gateway failed to process the request');
    });
    countRequest(tool.op.id, 'mcp', result.status, started);
    if (result.status >= 500) {
      this.d.log.warn({ requestId: ctx.requestId, op: tool.op.id, code: result.error?.code }, 'tool call refused');
    }
    const limit = rateLimitHeaders(result);
    if (limit) ctx.rateHeaders = limit;
    return toolResult(result, tool.op, deprecation);
  }

  /** Event streams of sessions that ended through another gateway, or expired, are closed here. */
  private async checkStreams(): Promise<void> {
    if (this.checkingStreams) return;
    this.checkingStreams = true;
    try {
      for (const s of this.streams.all()) {
        const live = await this.d.sessions.find(s.principalId, s.sessionId).catch(() => 'unknown' as const);
        if (live === null) s.end();
        // Subscriptions changed through another gateway whose notice was lost.
        else if (live !== 'unknown') this.updates.apply(s.principalId, s.sessionId, live);
      }
    } finally {
      this.checkingStreams = false;
    }
  }

  private answer(
    x: Exchange,
    answer: JSONRPCMessage | JSONRPCMessage[],
    headers: Record<string, string> | null = null,
  ): void {
    x.sendJson(200, headers, answer);
  }

  /** The one exit for HTTP-level refusals of this endpoint: the typed error object. */
  private refuse(
    x: Exchange,
    code: ErrorCode,
    message: string,
    status?: number,
    headers: Record<string, string> = {},
  ): void {
    this.writeResult(x, this.d.pipeline.refuse(code, message, status, headers));
  }

  /**
   * Refusals of the Streamable HTTP negotiation and of malformed JSON-RPC keep the transport's own form (a JSON-RPC
   * error with id null), as the SDK's transport answers them: they are protocol errors, not Assay refusals.
   */
  private refuseJsonRpc(x: Exchange, r: JsonRpcRefusal): void {
    x.sendJson(r.status, null, { jsonrpc: '2.0', error: { code: r.code, message: r.message }, id: null });
  }

  private writeResult(x: Exchange, r: CallResult): void {
    x.sendJson(r.status, r.headers, r.body);
  }
}

function readHead(req: HttpRequest, baseUrl: string): McpRequestHead {
  const query = req.getQuery();
  return {
    url: `${baseUrl}${req.getUrl()}${query ? `?${query}` : ''}`,
    origin: req.getHeader('origin'),
    authorization: req.getHeader('authorization'),
    contentType: req.getHeader('content-type'),
    accept: req.getHeader('accept'),
    sessionId: req.getHeader('mcp-session-id'),
    protocolVersion: req.getHeader('mcp-protocol-version'),
  };
}

/** The protocolVersion of a successful initialize result, or null (a JSON-RPC error). */
function negotiatedVersion(answer: JSONRPCMessage): string | null {
  return Value.Check(InitializeAnswer, answer) ? answer.result.protocolVersion : null;
}

const InitializeAnswer = Type.Object({ result: Type.Object({ protocolVersion: Type.String() }) });

/** A client-supplied value quoted in a message, cut short so a huge header cannot bloat the answer. */
function shown(value: string): string {
  return value.length > 64 ? `${value.slice(0, 64)}…` : value;
}
