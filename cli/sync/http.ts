// The command-line client's HTTP: node:http(s) with keep-alive connections, JSON calls, blob uploads streamed from
// a file with their length, downloads streamed to a file, and the access token refreshed when it expires (or is
// refused once). Every failure becomes a CliError with the exit code docs/sync.md lists and the next step in words.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { credentials, type ServerLogin } from './credentials.ts';

export const exitCodes = {
  ok: 0,
  failed: 1,
  usage: 2,
  /** `sync`: committed, and the scan flagged content (listed). */
  findings: 3,
  login: 4,
  refused: 5,
  unreachable: 6,
  /** `restore`: a downloaded blob did not hash to its digest. */
  corrupt: 7,
  interrupted: 130,
} as const;

export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    /** The server's error body, for --json. */
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

const networkCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Blobs up to this size are uploaded from one read of the file, larger ones streamed. */
const smallUploadBytes = 256 * 1024;

/** Bodies this large are sent chunked (see `raw`). */
const chunkedFromBytes = 999_999_999;

export class Http {
  private readonly agent: http.Agent;
  private readonly lib: typeof http | typeof https;

  constructor(
    readonly server: string,
    sockets = 8,
  ) {
    const https_ = server.startsWith('https:');
    this.lib = https_ ? https : http;
    this.agent = new (https_ ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: sockets });
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * One request; `body` a string/Buffer or a stream with its length. Resolves with the response, unread. A
   * connection reset is tried again (twice): a kept-alive connection the server closed as idle just as a request
   * went out fails that way, and every sync request is safe to repeat (blobs by digest, commits by their key).
   */
  async raw(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string | Buffer | { stream: () => Readable; length: number },
  ): Promise<IncomingMessage> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(method, path, headers, body);
      } catch (err) {
        const code = (err as { resetCode?: string }).resetCode;
        if (code === undefined || attempt >= 3) throw err;
      }
    }
  }

  private once(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string | Buffer | { stream: () => Readable; length: number },
  ): Promise<IncomingMessage> {
    const url = new URL(path, this.server);
    return new Promise((resolve, reject) => {
      const h: Record<string, string> = { ...headers };
      if (typeof body === 'string' || Buffer.isBuffer(body)) h['content-length'] = String(Buffer.byteLength(body));
      else if (body && body.length >= chunkedFromBytes) {
        // The server's HTTP layer refuses a Content-Length of 10 digits: a blob of 1 GB or more goes chunked.
        h['transfer-encoding'] = 'chunked';
        h['x-blob-size'] = String(body.length);
      } else if (body) h['content-length'] = String(body.length);
      const req = this.lib.request(url, { method, headers: h, agent: this.agent }, resolve);
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
          const e = new CliError(
            exitCodes.unreachable,
            `the connection to ${this.server} was reset (${err.code}); run the command again`,
          ) as CliError & { resetCode?: string };
          e.resetCode = err.code;
          reject(e);
        } else if (err.code && networkCodes.has(err.code)) {
          reject(
            new CliError(
              exitCodes.unreachable,
              `cannot reach the server at ${this.server} (${err.code}); check --server and that the server is running, then run the command again`,
            ),
          );
        } else reject(err);
      });
      if (body === undefined) req.end();
      else if (typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
      else {
        const s = body.stream();
        s.on('error', (err) => req.destroy(err));
        s.pipe(req);
      }
    });
  }

  async call(
    method: string,
    path: string,
    o: { headers?: Record<string, string>; json?: unknown; form?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json', ...(o.headers ?? {}) };
    let body: string | undefined;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['content-type'] = 'application/json';
    } else if (o.form !== undefined) {
      body = new URLSearchParams(o.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    return read(await this.raw(method, path, headers, body));
  }
}

export async function read(res: IncomingMessage): Promise<Answer> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown = text;
  if ((res.headers['content-type'] ?? '').includes('json') && text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      // keep the text
    }
  }
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

/** The stored login of a server, with an access token refreshed when it is about to expire. */
export class Auth {
  private refreshing: Promise<string> | null = null;

  constructor(
    private readonly http: Http,
    private login: ServerLogin,
  ) {}

  static of(h: Http): Auth {
    const login = credentials.get(h.server);
    if (!login?.refresh_token) {
      throw new CliError(
        exitCodes.login,
        `you are not logged in to ${h.server}; run \`assay login --server ${h.server}\``,
      );
    }
    return new Auth(h, login);
  }

  async token(): Promise<string> {
    if (this.login.access_token && this.login.expires_at - 30_000 > Date.now()) return this.login.access_token;
    return this.refresh();
  }

  /** Refresh once for everyone waiting (refresh tokens rotate: two refreshes at once would revoke the login). */
  refresh(): Promise<string> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<string> {
    const r = await this.http.call('POST', '/oauth/token', {
      form: {
        grant_type: 'refresh_token',
        refresh_token: this.login.refresh_token ?? '',
        client_id: this.login.client_id,
      },
    });
    if (r.status !== 200) {
      credentials.forgetTokens(this.http.server);
      throw new CliError(
        exitCodes.login,
        `your login to ${this.http.server} expired or was revoked (${r.body?.error ?? r.status}); run \`assay login --server ${this.http.server}\``,
      );
    }
    this.login = {
      ...this.login,
      access_token: r.body.access_token,
      refresh_token: r.body.refresh_token ?? this.login.refresh_token,
      expires_at: Date.now() + Number(r.body.expires_in ?? 600) * 1000,
      scope: r.body.scope ?? this.login.scope,
    };
    credentials.put(this.http.server, this.login, false);
    return this.login.access_token!;
  }

  /**
   * A call with the access token; a 401 refreshes the token and tries once more, and a 429 waits for its
   * Retry-After and tries again (docs/sync.md, Rate limits).
   */
  async call(
    method: string,
    path: string,
    o: { headers?: Record<string, string>; json?: unknown } = {},
  ): Promise<Answer> {
    let refreshed = false;
    for (let limited = 0; ; ) {
      const token = await this.token();
      const r = await this.http.call(method, path, {
        ...o,
        headers: { ...(o.headers ?? {}), authorization: `Bearer ${token}` },
      });
      if (r.status === 401 && !refreshed) {
        refreshed = true;
        await this.refresh();
      } else if (r.status === 429 && limited++ < rateRetriesMax) await waitRetryAfter(r.headers);
      else return r;
    }
  }

  /** Upload a file as a blob (streamed, with its length). */
  async putBlob(digest: string, file: string, size: number, onBytes: (n: number) => void): Promise<Answer> {
    let refreshed = false;
    for (let limited = 0; ; ) {
      const token = await this.token();
      // A small file is read whole and sent as one buffer; a larger one is streamed.
      const small = size <= smallUploadBytes ? await readFile(file) : null;
      const res = await this.http.raw(
        'PUT',
        `/api/sync/blobs/${digest}`,
        { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        small ?? {
          length: size,
          stream: () => {
            const s = createReadStream(file, { highWaterMark: 256 * 1024 });
            s.on('data', (c) => onBytes(c.length));
            return s;
          },
        },
      );
      const r = await read(res);
      if (r.status === 401 && !refreshed) {
        refreshed = true;
        await this.refresh();
      } else if (r.status === 429 && limited++ < rateRetriesMax) await waitRetryAfter(r.headers);
      else {
        if (small) onBytes(small.length);
        return r;
      }
    }
  }

  /** Download a blob: the response, to be streamed by the caller. */
  async getBlob(digest: string): Promise<IncomingMessage> {
    let refreshed = false;
    for (let limited = 0; ; ) {
      const token = await this.token();
      const res = await this.http.raw('GET', `/api/sync/blobs/${digest}`, { authorization: `Bearer ${token}` });
      if (res.statusCode === 401 && !refreshed) {
        refreshed = true;
        res.resume();
        await this.refresh();
      } else if (res.statusCode === 429 && limited++ < rateRetriesMax) {
        res.resume();
        await waitRetryAfter(res.headers);
      } else return res;
    }
  }
}

/** 429s one request waits out before the refusal is reported. */
const rateRetriesMax = 30;

/** Wait as long as a 429's Retry-After says (1 s to a minute). */
function waitRetryAfter(headers: IncomingMessage['headers']): Promise<void> {
  const seconds = Math.min(60, Math.max(1, Number(headers['retry-after']) || 1));
  return new Promise((r) => setTimeout(r, seconds * 1000));
}

/** A sync route's refusal as a CliError, worded with its next step. */
export function refusal(r: Answer, what: string): CliError {
  const b = (r.body && typeof r.body === 'object' ? r.body : {}) as Record<string, any>;
  const code = typeof b.error === 'string' ? b.error : `http_${r.status}`;
  const message = typeof b.message === 'string' ? b.message : String(r.body).slice(0, 200);
  const next: Record<string, string> = {
    unauthorized: 'run `assay login`',
    forbidden: 'run `assay login` again: the login lacks the scope sync',
    quota_exceeded: 'free space by syncing less (add paths to .assayignore), or ask for a larger quota',
    unsafe_paths: 'remove or fix the paths listed above, then sync again',
    not_found: 'check the locator with `assay revisions`',
    unavailable: 'try again in a moment',
    rate_limited: 'wait a minute and run the command again, or ask for a larger plan',
  };
  const exit =
    code === 'unauthorized' || code === 'forbidden'
      ? exitCodes.login
      : r.status >= 500 && code !== 'quota_exceeded'
        ? exitCodes.failed
        : exitCodes.refused;
  return new CliError(
    exit,
    `${what} refused (${code}): ${message}${Object.hasOwn(next, code) ? `; ${next[code]}` : ''}`,
    {
      status: r.status,
      ...b,
    },
  );
}
