// One POST of MCP Streamable HTTP as the MCP SDK's Transport: the SDK's Server receives the JSON-RPC messages the
// POST carried and sends its responses back here; once every request of the POST is answered, they become the HTTP
// answer (one JSON object, or an array for a batch). This is the thin adapter the SDK's web-standard transport would
// otherwise be: in JSON-response mode that transport does the same, but through a web Request, a Response and a
// ReadableStream per call, which cost more than the rest of a tool call (see docs/mcp.md, Performance).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, JSONRPCMessageSchema, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Messages one POST may batch (2025-03-26 clients batch; later revisions send one). The SDK's transport allows 100. */
export const jsonRpcBatchMax = 100;

/** Why a POST body cannot be handed to the Server, as the Streamable HTTP transport answers it. */
export interface JsonRpcRefusal {
  status: 400 | 406 | 415;
  code: number;
  message: string;
}

/**
 * The negotiation and message checks of the SDK's Streamable HTTP transport (same statuses, JSON-RPC codes and
 * texts), applied before any message reaches the Server. Returns the messages, or the refusal.
 */
export function checkPost(
  accept: string,
  contentType: string,
  body: unknown,
): { ok: true; messages: JSONRPCMessage[] } | { ok: false; refusal: JsonRpcRefusal } {
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return refuse(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  }
  if (mediaType(contentType) !== 'application/json') {
    return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  }
  const raw = Array.isArray(body) ? body : [body];
  if (raw.length > jsonRpcBatchMax) {
    return refuse(400, -32600, `Invalid Request: Batch must not exceed ${jsonRpcBatchMax} messages`);
  }
  const messages: JSONRPCMessage[] = [];
  for (const m of raw) {
    const parsed = JSONRPCMessageSchema.safeParse(m);
    if (!parsed.success) return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
    messages.push(parsed.data);
  }
  const initializing = messages.some((m) => 'method' in m && m.method === 'initialize');
  if (initializing && messages.length > 1) {
    return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
  }
  return { ok: true, messages };
}

function refuse(status: JsonRpcRefusal['status'], code: number, message: string) {
  return { ok: false as const, refusal: { status, code, message } };
}

function mediaType(header: string): string {
  return header.split(';')[0]!.trim().toLowerCase();
}

/** The Transport of one POST: hands the messages to the Server and collects its answers to the POST's requests. */
export class PostExchange implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Resolves with the answers, in the order of the requests, once every request has one. */
  readonly answered: Promise<JSONRPCMessage[]>;
  private readonly answers = new Map<RequestId, JSONRPCMessage>();
  private readonly requestIds: RequestId[];
  private resolve!: (answers: JSONRPCMessage[]) => void;

  /** `messages` have passed checkPost, so their shape tells requests, notifications and responses apart. */
  constructor(private readonly messages: JSONRPCMessage[]) {
    this.requestIds = messages.flatMap((m) => ('method' in m && 'id' in m ? [m.id] : []));
    this.answered = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  /** Whether the POST carries requests (otherwise it is answered 202 with no body). */
  get hasRequests(): boolean {
    return this.requestIds.length > 0;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {}

  /** Deliver the POST's messages to the connected Server. */
  deliver(): void {
    for (const m of this.messages) this.onmessage?.(m);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Notifications or requests a handler sends while answering have no stream to go to in JSON-response mode and
    // are dropped, as the SDK's transport drops them; Assay's handlers send none.
    if ('method' in message || !('id' in message) || message.id === undefined) return;
    this.answers.set(message.id, message);
    if (this.requestIds.every((id) => this.answers.has(id))) {
      this.resolve(this.requestIds.map((id) => this.answers.get(id)!));
    }
  }
}
