// A client of the context-file API for tests: one request over real HTTP with an API key, an OAuth token or a
// browser session (cookie, Origin and CSRF header), answered as status, parsed body and headers.
import assert from 'node:assert/strict';
import type { WebJar } from './oauth.ts';

export interface ContextReply {
  status: number;
  body: any;
  headers: Headers;
}

export interface ContextRequest {
  bearer?: string;
  body?: unknown;
  /** A body sent as is, instead of `body` as JSON. */
  raw?: string;
  /** Sign in as the jar's session: its cookies, our Origin, and the CSRF header (unless csrf is null). */
  jar?: WebJar;
  csrf?: string | null;
  contentType?: string;
}

export async function contextCall(
  webUrl: string,
  url: string,
  method: string,
  o: ContextRequest = {},
): Promise<ContextReply> {
  const headers: Record<string, string> = {};
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  if (o.jar) {
    headers.cookie = o.jar.header();
    headers.origin = new URL(webUrl).origin;
    if (o.csrf !== null) headers['x-csrf-token'] = o.csrf ?? o.jar.csrf;
  }
  if (o.body !== undefined || o.raw !== undefined) headers['content-type'] = o.contentType ?? 'application/json';
  const res = await fetch(url, {
    method,
    headers,
    body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

/** An account's API key, issued by the API's own route with the signed-in session. */
export async function issueApiKey(webUrl: string, jar: WebJar, name = 'server'): Promise<string> {
  if (!jar.cookies.has('assay_csrf')) await jar.get('/signin');
  const r = await contextCall(webUrl, `${webUrl}/api/v1/api-keys`, 'POST', { jar, body: { name } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.match(r.body.data.key, /^asyk_/);
  return r.body.data.key;
}
