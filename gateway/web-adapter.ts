// uWebSockets.js <-> web-standard Request/Response, for handlers written against the Fetch API (the MCP SDK's
// transport). The uWS rules live here: read the request synchronously, attach onAborted before any await, write
// inside cork, never touch a response after it ended or aborted, and stream bodies at the pace the socket drains.
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';

/** One HTTP exchange: the uWS response and whether it may still be written. */
export class UwsExchange {
  /** True once the client went away or the response ended: the HttpResponse must not be touched again. */
  closed = false;
  private readonly onAbort: (() => void)[] = [];
  /** The one pending wait for the socket to drain, woken on abort too. */
  private drainWaiter: (() => void) | null = null;

  constructor(readonly res: HttpResponse) {
    res.onAborted(() => {
      this.closed = true;
      this.drainWaiter?.();
      for (const f of this.onAbort.splice(0)) f();
    });
  }

  /** Run `f` once if the client goes away before the response ends. */
  whenAborted(f: () => void): void {
    if (this.closed) f();
    else this.onAbort.push(f);
  }

  /** Resolves when uWS can take more bytes for this response, or the client went away. */
  drained(): Promise<void> {
    return new Promise((resolve) => {
      this.drainWaiter = () => {
        this.drainWaiter = null;
        resolve();
      };
      this.res.onWritable(() => {
        this.drainWaiter?.();
        return true;
      });
    });
  }
}

/**
 * Collect the request body up to `limit` bytes. Must be called before the handler's first await (uWS delivers the
 * body only to a handler attached in the request callback). Resolves 'too_large' as soon as the limit is passed,
 * 'aborted' if the client goes away first.
 */
export function readBody(x: UwsExchange, limit: number): Promise<Buffer | 'too_large' | 'aborted'> {
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let size = 0;
    x.res.onData((chunk, isLast) => {
      if (size < 0) return;
      size += chunk.byteLength;
      if (size > limit) {
        size = -1;
        chunks = [];
        resolve('too_large');
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) resolve(Buffer.concat(chunks));
    });
    x.whenAborted(() => resolve('aborted'));
  });
}

/** Headers uWS writes itself or that do not survive the hop into uWS's own framing. */
const hopHeaders = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
}

/** Write a complete JSON (or empty) response at once. */
export function writeJson(
  x: UwsExchange,
  status: number,
  headers: Record<string, string>,
  body: unknown,
  closeConnection = false,
): void {
  if (x.closed) return;
  x.closed = true;
  const text = body === undefined ? '' : JSON.stringify(body);
  x.res.cork(() => {
    x.res.writeStatus(statusLine(status));
    if (body !== undefined) x.res.writeHeader('content-type', 'application/json');
    for (const [k, v] of Object.entries(headers)) x.res.writeHeader(k, v);
    x.res.end(text, closeConnection);
  });
}

export interface WriteOptions {
  /** Headers added to (or replacing) the Response's own. */
  headers?: Record<string, string>;
  /** Called once an event stream starts, with a function that ends it from the server side. */
  onStream?: (end: () => void) => void;
}

/**
 * Write a web Response. An event stream (text/event-stream) is relayed chunk by chunk, waiting for the socket to
 * drain whenever uWS reports back-pressure; the Response's reader is cancelled when the client goes away. Resolves
 * when the response has ended or the client is gone.
 */
export async function writeResponse(x: UwsExchange, response: Response, o: WriteOptions = {}): Promise<void> {
  const type = response.headers.get('content-type') ?? '';
  if (response.body && type.startsWith('text/event-stream')) return relayEvents(x, response, o);
  const body = response.body ? new Uint8Array(await response.arrayBuffer()) : null;
  if (x.closed) return;
  x.closed = true;
  x.res.cork(() => {
    writeHead(x.res, response, o.headers);
    if (body) x.res.end(body);
    else x.res.end();
  });
}

function writeHead(res: HttpResponse, response: Response, extra: Record<string, string> = {}): void {
  res.writeStatus(statusLine(response.status));
  response.headers.forEach((value, name) => {
    if (!hopHeaders.has(name) && !(name in extra)) res.writeHeader(name, value);
  });
  for (const [name, value] of Object.entries(extra)) res.writeHeader(name, value);
}

async function relayEvents(x: UwsExchange, response: Response, o: WriteOptions): Promise<void> {
  const reader = response.body!.getReader();
  const end = () => void reader.cancel().catch(() => {});
  x.whenAborted(end);
  if (x.closed) return;
  o.onStream?.(end);
  x.res.cork(() => {
    writeHead(x.res, response, o.headers);
    // uWS sends the head with the first body bytes; an SSE comment makes the client see the stream open now
    // instead of at the first event or keep-alive.
    x.res.write(': stream open\n\n');
  });
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (x.closed) return;
    if (done) {
      x.closed = true;
      x.res.cork(() => x.res.end());
      return;
    }
    let drained = true;
    x.res.cork(() => {
      drained = x.res.write(value!);
    });
    if (!drained) await x.drained();
  }
}
