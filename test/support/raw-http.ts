// HTTP/1.1 over a raw TCP socket (node:net), for what fetch cannot show or will not send: the exact bytes after a
// HEAD answer, methods the server's parser refuses, bodies that stop half way or drip, connections the server closes.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: Buffer;
}

export class RawConnection {
  private buffered = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  /** Resolves with the milliseconds from `open` until the server closed the connection (or it failed). */
  readonly closed: Promise<number>;
  isClosed = false;

  private constructor(
    private readonly socket: Socket,
    openedAtMs: number,
  ) {
    socket.on('data', (d) => {
      this.buffered = Buffer.concat([this.buffered, d]);
      this.wake?.();
    });
    this.closed = new Promise((resolve) => {
      const done = () => {
        this.isClosed = true;
        this.wake?.();
        resolve(Date.now() - openedAtMs);
      };
      socket.on('close', done);
      socket.on('error', () => {});
    });
  }

  static open(baseUrl: string): Promise<RawConnection> {
    const { hostname, port } = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const openedAtMs = Date.now();
      const socket = connect(Number(port), hostname, () => resolve(new RawConnection(socket, openedAtMs)));
      socket.once('error', reject);
    });
  }

  send(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The bytes received and not yet read as a response. */
  get unread(): Buffer {
    return this.buffered;
  }

  /** Drop the connection from the client side (an abandoned upload). */
  destroy(): void {
    this.socket.destroy();
  }

  /**
   * The next complete response. `head`: it answers a HEAD request, so it has no content whatever its headers say
   * (RFC 9112 6.3). Fails if the bytes are not a response, or after `timeoutMs`.
   */
  async response(o: { head?: boolean; timeoutMs?: number } = {}): Promise<RawResponse> {
    const deadline = Date.now() + (o.timeoutMs ?? 10_000);
    for (;;) {
      const parsed = parse(this.buffered, o.head ?? false);
      if (parsed) {
        this.buffered = this.buffered.subarray(parsed.length);
        return parsed.response;
      }
      if (this.isClosed) throw new Error(`connection closed; received ${JSON.stringify(this.buffered.toString())}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no complete response; received ${JSON.stringify(this.buffered.toString())}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          this.wake = null;
          resolve();
        };
      });
    }
  }
}

function parse(buf: Buffer, head: boolean): { response: RawResponse; length: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(lines[0]!);
  if (!status) throw new Error(`not an HTTP/1.1 response: ${JSON.stringify(buf.toString())}`);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyStart = end + 4;
  const code = Number(status[1]);
  if (head || code === 204 || code === 304) {
    return { response: { status: code, headers, body: Buffer.alloc(0) }, length: bodyStart };
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buf.length < bodyStart + length) return null;
  return {
    response: { status: code, headers, body: buf.subarray(bodyStart, bodyStart + length) },
    length: bodyStart + length,
  };
}

/** A request's bytes: request line, Host, the given headers, and the body (whose length is sent unless given). */
export function rawRequest(
  method: string,
  path: string,
  o: { headers?: Record<string, string>; body?: string; contentLength?: number } = {},
): string {
  const headers: Record<string, string> = { host: 'assay.test', ...(o.headers ?? {}) };
  if (o.body !== undefined || o.contentLength !== undefined) {
    headers['content-length'] = String(o.contentLength ?? Buffer.byteLength(o.body ?? ''));
  }
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${o.body ?? ''}`;
}
