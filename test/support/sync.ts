// Device sync from a client's side for tests: an account with an OAuth access token of scope `sync`, and the routes
// under {web_url}/api/sync/ over real HTTP (Node's fetch).
import { createHash } from 'node:crypto';
import { accountWithClient, approvedTokens, discover } from './oauth.ts';
import type { TestSystem } from './system.ts';

export interface SyncAccount {
  email: string;
  principalId: string;
  token: string;
}

export async function syncAccount(sys: TestSystem, email: string, scope = 'sync'): Promise<SyncAccount> {
  const as = await discover(sys.baseUrl);
  const { jar, client } = await accountWithClient(as, sys.baseUrl, email);
  const tokens = await approvedTokens(as, jar, client, { scope });
  const page = await (await jar.get('/account')).text();
  const principalId = /<code>([0-9a-f-]{36})<\/code>/.exec(page)![1]!;
  return { email, principalId, token: tokens.access_token };
}

export const digestOf = (bytes: Uint8Array | string) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export interface SyncReply {
  status: number;
  body: any;
  headers: Headers;
  bytes: Buffer;
}

export async function syncCall(
  sys: TestSystem,
  method: string,
  path: string,
  o: { token?: string; json?: unknown; raw?: Uint8Array | string; key?: string; headers?: Record<string, string> } = {},
): Promise<SyncReply> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.key !== undefined) headers['idempotency-key'] = o.key;
  let body: string | Uint8Array | undefined;
  if (o.json !== undefined) {
    body = JSON.stringify(o.json);
    headers['content-type'] = 'application/json';
  } else if (o.raw !== undefined) {
    body = o.raw;
    headers['content-type'] ??= 'application/octet-stream';
  }
  const res = await fetch(`${sys.config.webUrl}/api/sync/${path}`, {
    method,
    headers,
    body: body as BodyInit | undefined,
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  let parsed: unknown = null;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) parsed = JSON.parse(bytes.toString());
  return { status: res.status, body: parsed, headers: res.headers, bytes };
}

/** Upload `bytes` under their digest (or under `digest` when a test lies about it). */
export function putBlob(sys: TestSystem, token: string, bytes: Uint8Array | string, digest = digestOf(bytes)) {
  return syncCall(sys, 'PUT', `blobs/${digest}`, { token, raw: bytes });
}
