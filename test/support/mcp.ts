// MCP over real HTTP: the SDK's own client, and a raw JSON-RPC helper for the cases a conforming client never sends
// (wrong headers, foreign origins, ended sessions).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface McpConnection {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

/**
 * An SDK client with the bearer token on every request. With `sessionId` it resumes that session without a new
 * initialize (the SDK's reconnect path), as a client does that reaches another gateway through a load balancer.
 */
export async function connectMcp(
  baseUrl: string,
  token: string,
  o: { path?: string; sessionId?: string; protocolVersion?: string; fetch?: typeof fetch } = {},
): Promise<McpConnection> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}${o.path ?? '/mcp'}`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    ...(o.sessionId ? { sessionId: o.sessionId } : {}),
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
  if (o.protocolVersion) transport.setProtocolVersion(o.protocolVersion);
  const client = new Client({ name: 'assay-test', version: '1.0.0' });
  // The client opens the GET event stream in the background; errors there surface through onerror, not calls.
  client.onerror = () => {};
  await client.connect(transport);
  return { client, transport };
}

/** A tool result as the REST face would show it: the status the pipeline decided and the body (or typed error). */
export function outcome(r: CallToolResult | Record<string, unknown>): {
  status: number;
  body: any;
  isError: boolean;
  replayed: boolean;
} {
  const result = r as CallToolResult;
  const text = (result.content[0] as { type: string; text: string }).text;
  return {
    status: (result._meta?.['assay/status'] as number) ?? 0,
    body: JSON.parse(text),
    isError: result.isError === true,
    replayed: result._meta?.['assay/idempotent_replayed'] === true,
  };
}

export interface RawReply {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP request to the MCP endpoint with a JSON-RPC body (or none), and the headers a client would send. */
export async function rawMcp(
  baseUrl: string,
  o: {
    method?: string;
    path?: string;
    token?: string;
    sessionId?: string;
    protocolVersion?: string;
    headers?: Record<string, string>;
    body?: unknown;
    rawBody?: string;
  },
): Promise<RawReply> {
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
    ...(o.sessionId ? { 'mcp-session-id': o.sessionId } : {}),
    ...(o.protocolVersion ? { 'mcp-protocol-version': o.protocolVersion } : {}),
    ...(o.body !== undefined || o.rawBody !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(o.headers ?? {}),
  };
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
  const res = await fetch(`${baseUrl}${o.path ?? '/mcp'}`, { method: o.method ?? 'POST', headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON; keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export const initializeMessage = (protocolVersion: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
});

/** initialize + notifications/initialized with raw HTTP; returns the session id. */
export async function openRawSession(baseUrl: string, token: string, protocolVersion = '2025-06-18'): Promise<string> {
  const init = await rawMcp(baseUrl, { token, body: initializeMessage(protocolVersion) });
  const sessionId = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !sessionId)
    throw new Error(`initialize failed: ${init.status} ${JSON.stringify(init.body)}`);
  const note = await rawMcp(baseUrl, {
    token,
    sessionId,
    protocolVersion,
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  if (note.status !== 202) throw new Error(`initialized notification: ${note.status}`);
  return sessionId;
}

/** tools/call with raw HTTP on an open session. */
export function rawToolCall(
  baseUrl: string,
  o: { token: string; sessionId: string; name: string; args?: Record<string, unknown>; protocolVersion?: string },
): Promise<RawReply> {
  return rawMcp(baseUrl, {
    token: o.token,
    sessionId: o.sessionId,
    protocolVersion: o.protocolVersion ?? '2025-06-18',
    body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: o.name, arguments: o.args ?? {} } },
  });
}
