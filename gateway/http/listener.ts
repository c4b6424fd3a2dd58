// One uWebSockets.js listening port and the I/O layer around it. A face of the service (the agent API today; web
// pages, the payment-processor webhook or the context-file API on its own port later) gives it a `serve` function,
// which receives an Exchange per request, and a `refusal` function, which words the layer's own refusals (at
// capacity, body too large, body too slow) in that face's error shape. Routes answer through the Exchange: JSON,
// HTML or bytes with any content type, streamed or whole, after reading the body as text or raw bytes.
//
// What uWS 20.30 does before any of this runs (docs/operations.md): a method its parser does not know (FOO,
// PROPFIND, lower-case `get`) closes the connection at once; a request with more than 48 header lines, a control
// byte in a header value, or a target that is not a path (`OPTIONS *`, `CONNECT host:port`) is never handed over
// and the connection is closed after uWS's idle timeout (about 10 s). No hook exists for either.
import uWS, { type HttpRequest } from 'uWebSockets.js';
import type { Admission } from './admission.ts';
import { BodyDeadlines } from './body-deadlines.ts';
import {
  Exchange,
  type ListenerContext,
  type Reply,
  type TransportRefusal,
  type UnsafeResponseHeader,
} from './exchange.ts';

if (typeof uWS.SSLApp !== 'function') {
  // The package falls back to a slow pure-JS server with other routing when its native binary fails to load.
  throw new Error('uWebSockets.js native binary did not load (Node 20 on glibc x64 is required)');
}

export interface ListenerOptions {
  host: string;
  port: number;
  bodyBytesMax: number;
  bodyReadTimeoutMs: number;
  /** How much more of a body refused as too large is read and thrown away before the answer (Exchange). */
  bodyDiscardBytesMax: number;
  /** The in-flight limit; listeners of one process may share it. */
  admission: Admission;
  /** The layer's refusals in this face's error shape. */
  refusal: (r: TransportRefusal) => Reply;
  /** Told about a response refused for an unsafe header (a bug: log it). */
  unsafeHeader: (err: UnsafeResponseHeader) => void;
  /** Called synchronously for every request uWS hands over; must answer or `admit` before it returns. */
  serve: (x: Exchange, req: HttpRequest) => void;
}

export class HttpListener {
  private readonly app = uWS.App();
  private readonly ctx: ListenerContext;
  private listenSocket: uWS.us_listen_socket | null = null;
  port = 0;

  constructor(private readonly o: ListenerOptions) {
    this.ctx = {
      bodyBytesMax: o.bodyBytesMax,
      bodyDiscardBytesMax: o.bodyDiscardBytesMax,
      admission: o.admission,
      deadlines: new BodyDeadlines(o.bodyReadTimeoutMs),
      refusal: o.refusal,
      unsafeHeader: o.unsafeHeader,
    };
    const { serve } = o;
    this.app.any('/*', (res, req) => {
      const x = new Exchange(res, req, this.ctx);
      if (conflictingContentLength(req)) x.refuse({ kind: 'conflicting_length' });
      else serve(x, req);
    });
  }

  async listen(): Promise<number> {
    const { host, port } = this.o;
    await new Promise<void>((resolve, reject) => {
      // Exclusive: uWS listens with SO_REUSEPORT by default, so a second process told the same port would start
      // without an error and silently take a share of this one's connections (seen in the test suite: two systems
      // on one port, one's client answered by the other, which then stopped). A port in use must fail the start.
      listenExclusive(this.app, host, port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port} (in use?)`));
        this.listenSocket = socket;
        this.port = uWS.us_socket_local_port(socket);
        resolve();
      });
    });
    return this.port;
  }

  /** Accept no new connections; open ones keep being served. */
  stopListening(): void {
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
  }

  /** Close every connection at once. */
  close(): void {
    this.stopListening();
    this.ctx.deadlines.close();
    (this.app as unknown as { close(): void }).close();
  }
}

/**
 * Whether a request carries Content-Length more than once with different values. uWS frames the body by the first
 * and hands the rest over as given; a proxy in front that took another would see another request boundary (request
 * smuggling), so RFC 9112 6.3 says to refuse. Only requests with a length pay for the walk over their headers.
 */
function conflictingContentLength(req: HttpRequest): boolean {
  const first = req.getHeader('content-length');
  if (first === '') return false;
  let conflict = false;
  req.forEach((name, value) => {
    if (name === 'content-length' && value.trim() !== first.trim()) conflict = true;
  });
  return conflict;
}

/** `app.listen(host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, cb)`: the binding takes it; uWS's typings lack the overload. */
function listenExclusive(
  app: uWS.TemplatedApp,
  host: string,
  port: number,
  cb: (socket: uWS.us_listen_socket | false) => void,
): void {
  (app.listen as unknown as (h: string, p: number, o: number, c: typeof cb) => void)(
    host,
    port,
    (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT,
    cb,
  );
}
