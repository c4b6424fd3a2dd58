// `GET {web_url}/export/okf`: every public context file in the OKF format (contracts/okf.ts, docs/contexts.md: The
// OKF export), no authentication. The gateway writes the header and end lines and streams the files' lines in pages
// it asks the ledger service for over NATS, one page ahead of the socket and no more: page n + 1 is asked for while
// page n is written, and page n + 2 only once page n is in the socket, so an export holds at most two pages
// whatever the number of files, and a reader that stops reading stops the reading of pages.
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  type BusRequest,
  type Config,
  etagMatches,
  type Names,
  okfEndLine,
  okfExportsPerGatewayMax,
  okfHeaderLine,
  okfExportPath,
  okfMediaType,
  type OkfPageHeadT,
} from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import type { Exchange, Reply, TransportRefusal } from '../http/exchange.ts';

export interface OkfExportDeps {
  config: Config;
  log: Logger;
  bus: GatewayBus;
  names: Names;
}

interface Page {
  count: number;
  last: string | null;
  /** The files' lines, as the service wrote them. */
  lines: Uint8Array;
}

const decoder = new TextDecoder();

export class OkfExport {
  /** Exports this process is streaming now (bounded by okfExportsPerGatewayMax). */
  private streaming = 0;
  private readonly subject: string;

  constructor(private readonly d: OkfExportDeps) {
    this.subject = d.names.serviceSubject('ledger');
  }

  /**
   * GET or HEAD: 304 to a matching If-None-Match, else the export (its head alone for HEAD). Refusals are the
   * context-file API's `{error, message}`, with 503 for a retryable outage.
   */
  handle(x: Exchange, req: HttpRequest): void {
    x.refusalWords = okfRefusal;
    if (x.method !== 'GET' && x.method !== 'HEAD') {
      const message = `${x.method} is not served on ${okfExportPath}; it accepts GET, HEAD`;
      x.sendJson(404, { allow: 'GET, HEAD' }, { error: 'not_found', message });
      return;
    }
    const ifNoneMatch = req.getHeader('if-none-match');
    if (!x.admit()) return;
    void this.serve(x, ifNoneMatch).catch((err: unknown) => {
      this.d.log.error({ err, requestId: x.requestId }, 'OKF export failed before it started');
      unavailable(x, 'the export could not be read; retry');
    });
  }

  private async serve(x: Exchange, ifNoneMatch: string): Promise<void> {
    const tag = await this.tag(x.requestId);
    if (x.closed) return;
    if (tag === null) return unavailable(x, 'the export is unavailable for a moment; retry');
    const etag = `"${tag}"`;
    // Caches may keep it, and ask again with the tag each time (a 304 costs one small query).
    const headers = { etag, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };
    if (ifNoneMatch !== '' && etagMatches(ifNoneMatch, etag)) return x.send(304, headers, null, null);
    // HEAD: the head of the answer, its length unknown (the GET streams).
    if (x.head) return x.send(200, headers, okfMediaType, null);
    if (this.streaming >= okfExportsPerGatewayMax) {
      return unavailable(x, `this gateway is streaming ${okfExportsPerGatewayMax} exports already; retry`);
    }
    this.streaming++;
    try {
      await this.stream(x, tag, { ...headers, 'content-type': okfMediaType });
    } finally {
      this.streaming--;
    }
  }

  private async stream(x: Exchange, tag: string, headers: Record<string, string>): Promise<void> {
    x.startStream(200, headers, okfHeaderLine(this.d.config.webUrl, tag), true);
    try {
      await this.files(x);
    } catch (err) {
      this.d.log.error({ err, requestId: x.requestId }, 'OKF export failed');
      this.cutShort(x, 'it failed');
    }
  }

  private async files(x: Exchange): Promise<void> {
    let count = 0;
    let next = this.page(null, x.requestId);
    for (;;) {
      const page = await next;
      if (x.closed) return;
      if (page === null) return this.cutShort(x, 'a page of the export could not be read');
      if (page.count === 0) break;
      count += page.count;
      // The next page is asked for while this one is written; the one after waits until this one is handed over.
      next = this.page(page.last, x.requestId);
      if (!(await x.writePaced(page.lines))) return;
    }
    // The end line says the stream is complete, and by its tag whether the files changed while it ran.
    const endTag = await this.tag(x.requestId);
    if (x.closed) return;
    if (endTag === null) return this.cutShort(x, 'the export’s end could not be read');
    x.write(okfEndLine(count, endTag));
    x.endStream();
  }

  /** A failure mid-stream: no end line, and the connection closes, so no reader can take the export as complete. */
  private cutShort(x: Exchange, why: string): void {
    this.d.log.warn({ requestId: x.requestId, why }, 'OKF export cut short');
    x.abortStream();
  }

  private async tag(requestId: string): Promise<string | null> {
    const reply = await this.d.bus.request(this.subject, request('context.export_tag', requestId, null));
    if (!reply.ok) return null;
    return (reply.body as { tag: string }).tag;
  }

  /** The page after `after`, or null when it could not be read. Never rejects: a page asked ahead may go unread. */
  private async page(after: string | null, requestId: string): Promise<Page | null> {
    // A page can pass NATS's max_payload (one file alone may, escaped): it comes in parts.
    const { reply } = await this.d.bus.requestWire(
      this.subject,
      request('context.export_page', requestId, { after }),
      true,
    );
    if (!reply.ok || !(reply.body instanceof Uint8Array)) return null;
    const bytes = reply.body;
    const nl = bytes.indexOf(10);
    try {
      const head = JSON.parse(decoder.decode(bytes.subarray(0, Math.max(nl, 0)))) as OkfPageHeadT;
      return { count: head.count, last: head.last, lines: bytes.subarray(nl + 1) };
    } catch {
      return null;
    }
  }
}

function request(op: string, requestId: string, body: unknown): BusRequest {
  return { op, requestId, caller: null, params: {}, query: {}, body };
}

const unavailableHeaders = { 'retry-after': '1', 'cache-control': 'no-store' };

function unavailable(x: Exchange, message: string): void {
  x.sendJson(503, unavailableHeaders, { error: 'unavailable', message });
}

/** The I/O layer's refusals; only capacity can happen (the export reads no body). */
function okfRefusal(r: TransportRefusal): Reply {
  const [status, error, message] =
    r.kind === 'at_capacity'
      ? [503, 'unavailable', 'this gateway is at capacity or shutting down; retry']
      : [400, 'bad_request', 'the export takes no request body'];
  return {
    status,
    headers: r.kind === 'at_capacity' ? unavailableHeaders : {},
    contentType: 'application/json',
    body: JSON.stringify({ error, message }),
  };
}
