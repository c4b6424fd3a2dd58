// A real HTTP client over a real socket (Node's fetch), with the few helpers the suites share.
export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  key?: string;
  headers?: Record<string, string>;
}

export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  o: CallOptions = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.key !== undefined) headers['idempotency-key'] = o.key;
  let body: string | undefined;
  if (o.rawBody !== undefined) body = o.rawBody;
  else if (o.body !== undefined) body = JSON.stringify(o.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const send = () => fetch(`${baseUrl}${path}`, { method, headers, body });
  const res = await send().catch((err: unknown) => {
    // Safe to send twice: a read, or a write the server keys by its Idempotency-Key (a replay answers as the first).
    if (!closedUnanswered(err) || !(method === 'GET' || method === 'HEAD' || o.key !== undefined)) throw err;
    console.log(`${method} ${path}: its kept-alive connection was closed with it unanswered; sent again`);
    return send();
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (an HTML page); keep the text
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/**
 * Whether a fetch failed because a kept-alive connection that had answered before was closed with this request
 * unanswered (no answer's head came back). A server closes a connection it has kept idle (uWS after 8-12 s); a client
 * that reads an answer seconds late on a starved machine can send its next request on that connection just as the
 * server closes it, and the server never reads the request. HTTP clients send such a request again where that is
 * safe (Go's transport: idempotent methods and requests carrying an Idempotency-Key).
 */
export function closedUnanswered(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; socket?: { bytesRead?: number } } } | null)?.cause;
  return cause?.code === 'UND_ERR_SOCKET' && (cause.socket?.bytesRead ?? 0) > 0;
}

/** The five fields of the typed error object, with docs_url ending in #<code>. */
export function isTypedError(body: any, code?: string): boolean {
  if (!body || typeof body !== 'object') return false;
  const ok =
    typeof body.code === 'string' &&
    typeof body.message === 'string' &&
    typeof body.remediation === 'string' &&
    typeof body.retryable === 'boolean' &&
    typeof body.docs_url === 'string' &&
    body.docs_url.endsWith(`#${body.code}`);
  return ok && (code === undefined || body.code === code);
}
