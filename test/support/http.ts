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
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (an HTML page); keep the text
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
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
