// One HTTP request and its response on uWebSockets.js: the only code that touches an HttpResponse. The uWS rules
// live here: read the request synchronously, attach onAborted before anything is answered later, write inside cork,
// never touch a response after it ended or aborted. So do the HTTP rules every route shares: the in-flight slot
// (released exactly once, when the response ends or the client goes away), the body size limit and read timeout,
// the status line, the request id, and HEAD (the head of the GET answer, without its content).
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { hasControlCharacter } from '../../contracts/index.ts';
import type { Admission } from './admission.ts';
import type { BodyDeadlines, BodyRead } from './body-deadlines.ts';

/** Why the layer refused a request before its route could answer; each listener words these its own way. */
export type TransportRefusal =
  | { kind: 'at_capacity' }
  | { kind: 'body_too_large'; bytesMax: number }
  | { kind: 'body_timeout'; timeoutMs: number }
  /** A body read as text whose bytes are not UTF-8. */
  | { kind: 'body_not_utf8' }
  /** More than one Content-Length, with different values: where the body ends is not known (RFC 9112 6.3). */
  | { kind: 'conflicting_length' };

/** What a refusal says, in every face's words for it (each face has its own codes and statuses). */
export function transportRefusalMessage(r: TransportRefusal): string {
  switch (r.kind) {
    case 'at_capacity':
      return 'this gateway is at capacity or shutting down; retry';
    case 'body_too_large':
      return `the request body is larger than ${r.bytesMax} bytes`;
    case 'body_timeout':
      return `the request body did not arrive within ${r.timeoutMs} ms`;
    case 'body_not_utf8':
      return 'the request body is not UTF-8 text';
    case 'conflicting_length':
      return 'the request has Content-Length headers with different values';
  }
}

/** Response headers; a list is written as one header line per value (Set-Cookie). */
export type ResponseHeaders = Record<string, string | readonly string[]>;

/**
 * A header name is an RFC 9110 token, and a value holds no control character: a CR or LF in either would end the
 * header line early and let whatever follows be read as headers of the caller's choosing (response splitting).
 * uWS writes names and values as given, so this is checked here, for every response of every face.
 */
const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A response header that cannot be written as one header line: a bug in whatever built the response. */
export class UnsafeResponseHeader extends Error {
  constructor(readonly headerName: string) {
    super(
      `refused to write response header ${JSON.stringify(headerName.slice(0, 100))}: control character or not a token`,
    );
  }
}

/** Throws UnsafeResponseHeader for the first header (or content type) that could not be written as one line. */
export function assertSafeHeaders(headers: ResponseHeaders | null, contentType: string | null): void {
  if (contentType !== null && hasControlCharacter(contentType)) throw new UnsafeResponseHeader('content-type');
  if (headers === null) return;
  for (const name in headers) {
    if (!headerNamePattern.test(name)) throw new UnsafeResponseHeader(name);
    const value = headers[name]!;
    if (typeof value === 'string') {
      if (hasControlCharacter(value)) throw new UnsafeResponseHeader(name);
    } else for (const v of value) if (hasControlCharacter(v)) throw new UnsafeResponseHeader(name);
  }
}

/** A complete response. */
export interface Reply {
  status: number;
  headers: Record<string, string> | null;
  contentType: string | null;
  body: string | Uint8Array;
}

/** What the exchanges of one listener share. */
export interface ListenerContext {
  readonly bodyBytesMax: number;
  /** How many more bytes of a body refused as too large are read and thrown away before its answer. */
  readonly bodyDiscardBytesMax: number;
  readonly admission: Admission;
  readonly deadlines: BodyDeadlines;
  readonly refusal: (r: TransportRefusal) => Reply;
  /** Told about a response refused for an unsafe header (answered 500 instead): a bug to log. */
  readonly unsafeHeader: (err: UnsafeResponseHeader) => void;
}

const statusLines: string[] = [];
for (const [code, text] of Object.entries(STATUS_CODES)) statusLines[Number(code)] = `${code} ${text}`;

/** `200 OK`, `413 Payload Too Large`, ...: the status line uWS writes. */
export function statusLine(status: number): string {
  return statusLines[status] ?? `${status} Unknown`;
}

/** uWS hands methods over in lower case; the methods routes know, without a string copy per request. */
const upperMethods: Record<string, string> = {
  get: 'GET',
  head: 'HEAD',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  options: 'OPTIONS',
  trace: 'TRACE',
  connect: 'CONNECT',
};

const requestIdPattern = /^[A-Za-z0-9._-]{1,100}$/;
/**
 * The most bytes one corked write of a stream hands uWS: its cork buffer (16 KiB) less the chunk's framing. uWS
 * v20.30 drops the bytes of a larger corked write while the socket still holds earlier ones: it flushes the cork
 * buffer first and, when that flush is buffered too, returns without writing or buffering the new bytes
 * (AsyncSocket::uncork), so the chunk's size goes out without its data and the framing breaks (found by
 * CONTEXT-OKF-STREAM with a reader that pauses). A write that fits the cork buffer never takes that path.
 */
const corkedWriteBytesMax = 16 * 1024 - 64;
/** Refuses bytes that are not UTF-8 (rather than replacing them), and keeps a byte order mark as sent. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class Exchange implements BodyRead {
  /** The request method in upper case, as sent (HEAD stays HEAD; routes map it to GET). */
  readonly method: string;
  /** A HEAD request: every answer is written without its content. */
  readonly head: boolean;
  /** The client's X-Request-Id when it is a sane token, else a new UUID; echoed on every answer. */
  readonly requestId: string;
  /** True once the response ended or the client went away: the HttpResponse must not be touched again. */
  closed = false;
  readStartTick = 0;
  private holdsSlot = false;
  private watching = false;
  private onAbort: (() => void)[] | null = null;
  private drainWaiter: (() => void) | null = null;
  private onBody: ((body: Buffer | string | null) => void) | null = null;
  private bodyAsText = false;
  private bodyChunks: Buffer[] | null = null;
  private bodyBytes = 0;
  /** An onData handler is attached: uWS hands this exchange the rest of the body. */
  private bodyListened = false;
  /** The last chunk of the body arrived. */
  private bodyEnded = false;
  /**
   * The answer to a body refused as too large, held while the rest of that body is read and thrown away; written
   * (and the connection closed) when the body ends, the discard bound or the read timeout is reached.
   */
  private lingering: Reply | null = null;
  private discardBytesLeft = 0;

  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    private readonly ctx: ListenerContext,
  ) {
    const method = req.getMethod();
    this.method = upperMethods[method] ?? method.toUpperCase();
    this.head = this.method === 'HEAD';
    const id = req.getHeader('x-request-id');
    this.requestId = requestIdPattern.test(id) ? id : randomUUID();
  }

  /**
   * Take an in-flight slot for a response that will be written later. False after answering the refusal (every
   * slot taken, or the process is stopping).
   */
  admit(): boolean {
    if (!this.ctx.admission.enter()) {
      this.refuse({ kind: 'at_capacity' });
      return false;
    }
    this.holdsSlot = true;
    this.watch();
    return true;
  }

  /** Give the slot back before the response ends: a stream lasts as long as its client wants. */
  releaseSlot(): void {
    if (!this.holdsSlot) return;
    this.holdsSlot = false;
    this.ctx.admission.leave();
  }

  /** Run `f` once if the client goes away before the response ends. */
  whenAborted(f: () => void): void {
    this.watch();
    if (this.closed) f();
    else if (this.onAbort) this.onAbort.push(f);
    else this.onAbort = [f];
  }

  /**
   * Read the request body as bytes; `done` gets them, or null when the body was refused (413 for more than the
   * limit, 400 when it does not arrive within the read timeout: both close the connection) or the client went away.
   * Must be called from the route callback, before any await (uWS delivers the body only to a handler attached there).
   */
  readBody(req: HttpRequest, done: (body: Buffer | null) => void): void {
    this.startBody(req, false, done as (body: Buffer | string | null) => void);
  }

  /** `readBody`, decoded as UTF-8; bytes that are not UTF-8 are refused (400, the connection stays open). */
  readText(req: HttpRequest, done: (text: string | null) => void): void {
    this.startBody(req, true, done as (body: Buffer | string | null) => void);
  }

  /**
   * Stream the request body into `sink` one chunk at a time (a device sync blob), never buffering the whole body:
   * uWS is paused while the sink writes a chunk. `bytesMax` is this body's own limit (413 past it, worded by the
   * face); the read timeout counts from the last chunk, not the first, so a large body may take as long as it keeps
   * arriving. `done` is called once: true after the last chunk was written, false when the body was refused, the
   * client went away or the sink failed (`err`). Call it from the route callback, before any await.
   */
  streamBody(
    req: HttpRequest,
    bytesMax: number,
    sink: (chunk: Uint8Array) => Promise<void>,
    done: (ok: boolean, err?: unknown) => void,
  ): void {
    void req;
    if (this.closed) {
      done(false);
      return;
    }
    this.watch();
    let finished = false;
    const end = (ok: boolean, err?: unknown) => {
      if (finished) return;
      finished = true;
      this.onBody = null;
      this.ctx.deadlines.stop(this);
      done(ok, err);
    };
    // finish() (a refusal, an abort, the timeout) ends the read as failed.
    this.onBody = () => end(false);
    this.ctx.deadlines.start(this);
    let chain = Promise.resolve();
    const res = this.res;
    this.bodyListened = true;
    res.onData((chunk, isLast) => {
      if (isLast) this.bodyEnded = true;
      if (this.lingering !== null) {
        this.discard(chunk.byteLength, isLast);
        return;
      }
      if (finished) return;
      this.bodyBytes += chunk.byteLength;
      if (this.bodyBytes > bytesMax) {
        this.refuse({ kind: 'body_too_large', bytesMax });
        return;
      }
      this.ctx.deadlines.start(this);
      const copy = Buffer.from(chunk.slice(0));
      if (!isLast) res.pause();
      chain = chain.then(async () => {
        if (finished) return;
        try {
          await sink(copy);
        } catch (err) {
          end(false, err);
          return;
        }
        if (finished || this.closed) return;
        if (isLast) end(true);
        else res.resume();
      });
    });
  }

  /** The body timed out (called by the listener's deadline sweep). */
  readTimedOut(): void {
    if (this.lingering !== null) this.endLingering();
    else this.refuse({ kind: 'body_timeout', timeoutMs: this.ctx.deadlines.timeoutMs });
  }

  /** Set by a face whose answers are worded otherwise (the context-file API): its words for refusals here. */
  refusalWords: ((r: TransportRefusal) => Reply) | null = null;

  /**
   * Answer one of the layer's own refusals, worded by the listener. `bodyBytesLeft`: for a body too large, how much
   * of it is still to come when its length was declared (-1: not known).
   */
  refuse(r: TransportRefusal, bodyBytesLeft = -1): void {
    const reply = (this.refusalWords ?? this.ctx.refusal)(r);
    if (r.kind === 'body_too_large') {
      this.answerAfterBody(reply, bodyBytesLeft);
      return;
    }
    // A body that stopped arriving will not be read to its end, and one of unknown length cannot be: close.
    this.send(
      reply.status,
      reply.headers,
      reply.contentType,
      reply.body,
      r.kind === 'body_timeout' || r.kind === 'conflicting_length',
    );
  }

  /**
   * Refuse a request whose body is not wanted (one declared larger than a route's own limit), in the route callback
   * before any await: the rest of the body is read and thrown away first, as for a body over the listener's limit.
   */
  refuseBody(req: HttpRequest, reply: Reply): void {
    const declared = req.getHeader('content-length');
    this.answerAfterBody(reply, declared === '' ? -1 : Number(declared) - this.bodyBytes);
  }

  /**
   * Refuse a request whose body `streamBody` is reading and that is no longer wanted (its caller turned out not to
   * be allowed): the rest is read and thrown away first, as above. Without a body being read, answer and close.
   */
  refuseStreamed(reply: Reply): void {
    if (this.bodyListened) this.answerAfterBody(reply, -1);
    else this.send(reply.status, reply.headers, reply.contentType, reply.body, true);
  }

  /**
   * Write the whole response once; later calls do nothing. `body` null means "no content" for a status that has
   * none (204, 304) and, for HEAD, "length not known" (the GET would stream). A HEAD request gets the head alone,
   * with the Content-Length of `body`.
   *
   * uWS 20.30's endWithoutBody only finishes a response when called with no argument at all: with a length (or
   * `undefined`, read as 2^63) it writes that Content-Length and waits for that many bytes, and the next request on
   * the connection closes it. So answers without content carry their length as a header, and never close the
   * connection (none has a request body left to skip).
   */
  send(
    status: number,
    headers: ResponseHeaders | null,
    contentType: string | null,
    body: string | Uint8Array | null,
    closeConnection = false,
  ): void {
    if (this.closed || !this.headersSafe(headers, contentType)) return;
    this.finish();
    const res = this.res;
    res.cork(() => {
      this.writeHead(status, headers, contentType);
      if (status === 204 || status === 304) res.endWithoutBody();
      else if (this.head) {
        if (body !== null) res.writeHeader('content-length', String(byteLength(body)));
        res.endWithoutBody();
      } else res.end(body ?? '', closeConnection);
    });
  }

  /** `send` with a JSON value. */
  sendJson(status: number, headers: Record<string, string> | null, value: unknown, closeConnection = false): void {
    this.send(status, headers, 'application/json', JSON.stringify(value), closeConnection);
  }

  /**
   * Start a streamed (chunked) response with its first chunk. An open-ended stream (events) gives its slot back: it
   * lasts as long as its client wants. A download that ends by itself (`holdSlot`) keeps it until it ends, so a
   * graceful stop waits for it like for any other answer.
   */
  startStream(status: number, headers: ResponseHeaders | null, first: string, holdSlot = false): void {
    if (this.closed || !this.headersSafe(headers, null)) return;
    if (!holdSlot) this.releaseSlot();
    this.res.cork(() => {
      this.writeHead(status, headers, null);
      this.res.write(first);
    });
  }

  /**
   * One chunk of a started stream, in slices that each fit uWS's cork buffer; false when uWS buffers some of it
   * (wait for `drained` before the next).
   */
  write(chunk: string | Uint8Array): boolean {
    if (this.closed) return true;
    const bytes = typeof chunk === 'string' && chunk.length * 3 > corkedWriteBytesMax ? Buffer.from(chunk) : chunk;
    if (typeof bytes === 'string' || bytes.byteLength <= corkedWriteBytesMax) return this.writeCorked(bytes);
    let written = true;
    for (let at = 0; at < bytes.byteLength; at += corkedWriteBytesMax) {
      written = this.writeCorked(bytes.subarray(at, at + corkedWriteBytesMax)) && written;
    }
    return written;
  }

  private writeCorked(chunk: string | Uint8Array): boolean {
    let written = true;
    this.res.cork(() => {
      written = this.res.write(chunk);
    });
    return written;
  }

  /**
   * Write a large chunk of a started stream at the pace the client reads it: slices of `corkedWriteBytesMax`, and after
   * a slice uWS could not send at once, the next waits until the socket is writable. Resolves true once all of it is
   * handed over, false if the client went away. Why slices: uWS copies whatever a write cannot send into its own
   * buffer, and with a writable handler set it sends that buffer only at the next write; a whole chunk written under
   * backpressure would sit there in full (with the next on top), a slice is all it ever holds.
   */
  async writePaced(chunk: Uint8Array): Promise<boolean> {
    for (let at = 0; at < chunk.byteLength; at += corkedWriteBytesMax) {
      if (this.closed) return false;
      if (!this.write(chunk.subarray(at, at + corkedWriteBytesMax))) await this.drained();
    }
    return !this.closed;
  }

  /** End a started stream. */
  endStream(): void {
    if (this.closed) return;
    this.finish();
    this.res.cork(() => this.res.end());
  }

  /**
   * End a started stream as failed: the connection closes without the last chunk, so the client sees the response
   * cut short instead of complete.
   */
  abortStream(): void {
    if (this.closed) return;
    // uWS runs onAborted from close(); calling aborted() after it covers a response nobody watched yet.
    this.res.close();
    this.aborted();
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

  /**
   * False after answering a plain 500 in place of a response whose headers could not be written safely: the
   * response is refused whole, never written with the header dropped or cleaned (its meaning would change).
   */
  private headersSafe(headers: ResponseHeaders | null, contentType: string | null): boolean {
    try {
      assertSafeHeaders(headers, contentType);
      return true;
    } catch (err) {
      if (!(err instanceof UnsafeResponseHeader)) throw err;
      this.ctx.unsafeHeader(err);
      this.send(500, { 'cache-control': 'no-store' }, 'text/plain; charset=utf-8', 'internal error');
      return false;
    }
  }

  private writeHead(status: number, headers: ResponseHeaders | null, contentType: string | null): void {
    // The last line of defence: every caller checked already (headersSafe), so this never throws in practice.
    assertSafeHeaders(headers, contentType);
    const res = this.res;
    res.writeStatus(statusLine(status));
    if (contentType !== null) res.writeHeader('content-type', contentType);
    res.writeHeader('x-request-id', this.requestId);
    if (headers === null) return;
    for (const name in headers) {
      const value = headers[name]!;
      // A header that cannot be folded into one line (Set-Cookie) is written once per value.
      if (typeof value === 'string') res.writeHeader(name, value);
      else for (const v of value) res.writeHeader(name, v);
    }
  }

  private watch(): void {
    if (this.watching || this.closed) return;
    this.watching = true;
    this.res.onAborted(() => this.aborted());
  }

  private startBody(req: HttpRequest, asText: boolean, done: (body: Buffer | string | null) => void): void {
    if (this.closed) {
      done(null);
      return;
    }
    this.watch();
    const bytesMax = this.ctx.bodyBytesMax;
    const declared = req.getHeader('content-length');
    if (declared !== '' && Number(declared) > bytesMax) {
      this.refuse({ kind: 'body_too_large', bytesMax }, Number(declared));
      done(null);
      return;
    }
    this.onBody = done;
    this.bodyAsText = asText;
    this.ctx.deadlines.start(this);
    this.bodyListened = true;
    this.res.onData((chunk, isLast) => this.chunk(chunk, isLast));
  }

  /**
   * Answer `reply` once the rest of the request body has been read and thrown away, then close the connection.
   * Answering at once and closing would reset a connection whose client is still sending (its unread bytes make the
   * kernel send RST), and the client would see EPIPE or ECONNRESET instead of the answer. uWS gives no handle on a
   * connection once its response has ended, so the answer waits for the body's end; uWS has already answered
   * `Expect: 100-continue` before any route runs, so an earlier answer would not spare such a client the upload
   * either. Bounded: at most `bodyDiscardBytesMax` more bytes (`bytesLeft` when declared: larger is answered now)
   * and the read timeout from now; past either the answer is written and the connection closed regardless.
   */
  private answerAfterBody(reply: Reply, bytesLeft: number): void {
    if (this.closed) return;
    this.watch();
    const bound = this.ctx.bodyDiscardBytesMax;
    if (this.bodyEnded || bytesLeft === 0 || bytesLeft > bound || this.head) {
      this.send(reply.status, reply.headers, reply.contentType, reply.body, true);
      return;
    }
    // The route's reader gets null now; the answer is decided and nothing else may write it.
    this.finish();
    this.lingering = reply;
    this.discardBytesLeft = bound;
    this.ctx.deadlines.start(this);
    if (!this.bodyListened) {
      this.bodyListened = true;
      this.res.onData((chunk, isLast) => {
        if (isLast) this.bodyEnded = true;
        this.discard(chunk.byteLength, isLast);
      });
    } else {
      // streamBody pauses uWS while its sink writes a chunk; the discarding reads on.
      this.res.resume();
    }
  }

  private discard(bytes: number, isLast: boolean): void {
    if (this.lingering === null) return;
    this.discardBytesLeft -= bytes;
    if (isLast || this.discardBytesLeft < 0) this.endLingering();
  }

  /** Write the held answer and close the connection. */
  private endLingering(): void {
    const reply = this.lingering;
    if (reply === null) return;
    this.lingering = null;
    this.ctx.deadlines.stop(this);
    this.res.cork(() => {
      this.writeHead(reply.status, reply.headers, reply.contentType);
      this.res.end(reply.body, true);
    });
  }

  private chunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (isLast) this.bodyEnded = true;
    if (this.lingering !== null) {
      this.discard(chunk.byteLength, isLast);
      return;
    }
    if (this.onBody === null) return;
    this.bodyBytes += chunk.byteLength;
    if (this.bodyBytes > this.ctx.bodyBytesMax) {
      this.refuse({ kind: 'body_too_large', bytesMax: this.ctx.bodyBytesMax });
      return;
    }
    // uWS reuses the chunk's memory after this callback returns: decode or copy it now. A body in one chunk (the
    // common case) is decoded straight from uWS's memory.
    if (isLast && this.bodyChunks === null) {
      if (this.bodyAsText) this.endText(chunk);
      else this.endBody(Buffer.from(chunk.slice(0)));
      return;
    }
    const chunks = this.bodyChunks ?? [];
    this.bodyChunks = chunks;
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) {
      const bytes = Buffer.concat(chunks);
      if (this.bodyAsText) this.endText(bytes);
      else this.endBody(bytes);
    }
  }

  private endText(bytes: ArrayBuffer | Uint8Array): void {
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      this.refuse({ kind: 'body_not_utf8' });
      return;
    }
    this.endBody(text);
  }

  /** Hand the body (or null) to the reader, once. */
  private endBody(body: Buffer | string | null): void {
    const done = this.onBody;
    if (done === null) return;
    this.onBody = null;
    this.bodyChunks = null;
    this.ctx.deadlines.stop(this);
    done(body);
  }

  /** The response is ending: give the slot back and stop reading. */
  private finish(): void {
    this.closed = true;
    this.releaseSlot();
    this.endBody(null);
  }

  private aborted(): void {
    if (this.lingering !== null) {
      // The client went away while its refused body was being thrown away: nobody to answer.
      this.lingering = null;
      this.ctx.deadlines.stop(this);
      return;
    }
    if (this.closed) return;
    this.finish();
    this.drainWaiter?.();
    const handlers = this.onAbort;
    this.onAbort = null;
    if (handlers) for (const f of handlers) f();
  }
}

function byteLength(body: string | Uint8Array): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
}
