// `GET {web_url}/export/okf`: every public context file in the OKF format (contracts/okf.ts, docs/contexts.md: The
// OKF export), no authentication. The gateway writes the header and end lines and streams the files' lines in pages
// it asks the ledger service for over NATS, one page ahead of the socket and no more: page n + 1 is asked for while
// page n is written, and page n + 2 only once page n is in the socket, so an export holds at most two pages
// whatever the number of files, and a reader that stops reading stops the reading of pages.
import type { Logger } from 'pino';
import { Value } from 'typebox/value';
import type { HttpRequest } from 'uWebSockets.js';
import {
  type Config,
  etagMatches,
  type Names,
  okfEndLine,
  okfExportsPerGatewayMax,
  okfHeaderLine,
  okfExportPath,
  okfMediaType,
  OkfPageHead,
} from '../../contracts/index.ts';
import type { GatewayBus } from '../bus.ts';
import { NoQuery, paramsOf, type RouteRow } from '../door/route.ts';
import type { Exchange } from '../http/exchange.ts';

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

  constructor(private readonly d: OkfExportDeps) {}

  /** The export as a row of the gateway's router: public, in the `{error, message}` words with 503 for an outage. */
  row(): RouteRow {
    return {
      method: 'GET',
      path: okfExportPath,
      face: 'export',
      dialect: 'export',
      auth: ['none'],
      scope: null,
      rate: null,
      schemas: {
        params: paramsOf(okfExportPath),
        query: NoQuery,
        body: null,
        responses: { 200: 'bytes', 304: 'bytes' },
      },
      dispatch: { kind: 'local', serve: (x, req) => this.handle(x, req) },
    };
  }

  /** GET or HEAD: 304 to a matching If-None-Match, else the export (its head alone for HEAD). */
  handle(x: Exchange, req: HttpRequest): void {
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
    const r = await this.d.bus.ask('context.export_tag', null, { requestId });
    return r.ok ? r.body.tag : null;
  }

  /** The page after `after`, or null when it could not be read. Never rejects: a page asked ahead may go unread. */
  private async page(after: string | null, requestId: string): Promise<Page | null> {
    // A page can pass NATS's max_payload (one file alone may, escaped): it comes in parts.
    const r = await this.d.bus.ask('context.export_page', { after }, { requestId, inParts: true });
    if (!r.ok) return null;
    const bytes = r.body;
    const nl = bytes.indexOf(10);
    let head: unknown;
    try {
      head = JSON.parse(decoder.decode(bytes.subarray(0, Math.max(nl, 0))));
    } catch {
      return null;
    }
    if (!Value.Check(OkfPageHead, head)) return null;
    return { count: head.count, last: head.last, lines: bytes.subarray(nl + 1) };
  }
}

const unavailableHeaders = { 'retry-after': '1', 'cache-control': 'no-store' };

function unavailable(x: Exchange, message: string): void {
  x.sendJson(503, unavailableHeaders, { error: 'unavailable', message });
}
