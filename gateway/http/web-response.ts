// Web-standard Response -> Exchange, for handlers written against the Fetch API (the MCP SDK's transport). An event
// stream (text/event-stream) is relayed chunk by chunk at the pace the socket drains; the Response's reader is
// cancelled when the client goes away. For HEAD only the head is written.
import type { Exchange } from './exchange.ts';

/** Headers uWS writes itself or that do not survive the hop into uWS's own framing. */
const hopHeaders = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

export interface WriteOptions {
  /** Headers added to (or replacing) the Response's own. */
  headers?: Record<string, string>;
  /** Called once an event stream starts, with a function that ends it from the server side. */
  onStream?: (end: () => void) => void;
}

/** Write a web Response; resolves when the response has ended or the client is gone. */
export async function writeResponse(x: Exchange, response: Response, o: WriteOptions = {}): Promise<void> {
  const headers = headersOf(response, o.headers);
  const type = response.headers.get('content-type') ?? '';
  if (response.body && type.startsWith('text/event-stream')) {
    if (!x.head) return relayEvents(x, response.body, response.status, headers, o);
    void response.body.cancel().catch(() => {});
    x.send(response.status, headers, null, null);
    return;
  }
  const body = response.body ? new Uint8Array(await response.arrayBuffer()) : '';
  x.send(response.status, headers, null, body);
}

function headersOf(response: Response, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!hopHeaders.has(name) && !(name in extra)) out[name] = value;
  });
  return Object.assign(out, extra);
}

async function relayEvents(
  x: Exchange,
  body: ReadableStream<Uint8Array>,
  status: number,
  headers: Record<string, string>,
  o: WriteOptions,
): Promise<void> {
  const reader = body.getReader();
  const end = () => void reader.cancel().catch(() => {});
  x.whenAborted(end);
  if (x.closed) return;
  o.onStream?.(end);
  // uWS sends the head with the first body bytes; an SSE comment makes the client see the stream open now instead
  // of at the first event or keep-alive.
  x.startStream(status, headers, ': stream open\n\n');
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (x.closed) return;
    if (done) {
      x.endStream();
      return;
    }
    if (!x.write(value!)) await x.drained();
  }
}
