// The web face's request and response: what a handler reads (copied from uWS before any await), and what it answers
// (an HTML page with the security headers every page carries, a redirect, or a JSON body of the OAuth protocol).
import { hasControlCharacter } from '../../contracts/index.ts';
import type { ResponseHeaders } from '../http/exchange.ts';
import { pageContentSecurityPolicy } from './pages.ts';

export interface WebRequest {
  method: string;
  /** The path and query as the client sent them (for `next` after sign-in). */
  target: string;
  path: string;
  query: URLSearchParams;
  /** Names that appear more than once in the query (OAuth parameters must not, RFC 6749 3.1). */
  repeatedQuery: string[];
  params: Record<string, string>;
  cookies: Record<string, string>;
  authorization: string;
  contentType: string;
  /** The payment processor's webhook signature (`Stripe-Signature`), for POST /api/stripe/webhook. */
  stripeSignature: string;
  origin: string;
  clientAddress: string;
  body: string | null;
  requestId: string;
}

export interface WebResponse {
  status: number;
  headers: ResponseHeaders;
  contentType: string | null;
  body: string | null;
  /**
   * A body written in chunks instead of `body`: `write` resolves false once the client is gone; the function
   * resolves true when the body is complete, false to cut the answer short (the client sees it incomplete).
   */
  stream?: (write: (chunk: string) => Promise<boolean>) => Promise<boolean>;
}

/**
 * Every page: no script may run (there is none), nothing is loaded from elsewhere, no framing (the consent screen
 * must not be clickjacked), no caching of personal pages. `form-action` is left out on purpose: Chromium applies it
 * to the redirect after a form post, and the consent form's answer goes to the client's own redirect URI. The
 * referrer policy is same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` on form posts,
 * and the origin check of forms (session.ts) needs the real one.
 */
export const pageHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': pageContentSecurityPolicy,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

export function page(status: number, html: string, cookies: string[] = []): WebResponse {
  return {
    status,
    headers: cookies.length > 0 ? { ...pageHeaders, 'set-cookie': cookies } : { ...pageHeaders },
    contentType: 'text/html; charset=utf-8',
    body: html,
  };
}

/**
 * 303 See Other: after a form post, and for OAuth redirects (RFC 9700 4.11: never 307, which would repost). The
 * target is parsed and written back as the URL parser serialises it, so it is one absolute http(s) URL and nothing
 * else; anything that does not parse is a bug in the caller and throws.
 */
export function redirect(location: string, cookies: string[] = []): WebResponse {
  const url = new URL(location);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`refused to redirect to ${url.protocol}`);
  return {
    status: 303,
    headers: {
      location: url.href,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      ...(cookies.length > 0 ? { 'set-cookie': cookies } : {}),
    },
    contentType: null,
    body: '',
  };
}

/** A redirect to a page of this site: `path` (with its query) under `webUrl`, which the result must not leave. */
export function redirectHere(webUrl: string, path: string, cookies: string[] = []): WebResponse {
  const url = new URL(`${webUrl}${path}`);
  if (url.origin !== new URL(webUrl).origin) throw new Error(`refused to redirect off ${webUrl}`);
  return redirect(url.href, cookies);
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): WebResponse {
  return {
    status,
    headers: { 'cache-control': 'no-store', ...headers },
    contentType: 'application/json',
    body: JSON.stringify(body),
  };
}

/** RFC 6749 5.2 error body. */
export function oauthError(status: number, error: string, description: string): WebResponse {
  return json(status, { error, error_description: description });
}

/** A plain own data property: `__proto__` as a name stays a name instead of setting the prototype. */
const ownValue = (value: string): PropertyDescriptor => ({
  value,
  enumerable: true,
  writable: true,
  configurable: true,
});

export function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    // Own properties only: a cookie named `constructor` or `__proto__` is just a name.
    if (name && !Object.hasOwn(out, name)) Object.defineProperty(out, name, ownValue(part.slice(eq + 1).trim()));
  }
  return out;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  sameSite: 'Lax' | 'Strict';
  secure: boolean;
  /** Where the browser sends it; `/` unless one page alone reads it. */
  path?: string;
}

/** A Set-Cookie value: always HttpOnly, Path=/ unless told; Secure whenever the web URL is https. */
export function cookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=${o.path ?? '/'}; HttpOnly; SameSite=${o.sameSite}; Max-Age=${o.maxAgeSeconds}${o.secure ? '; Secure' : ''}`;
}

/** A form body (application/x-www-form-urlencoded) as a record; repeated names keep their first value. */
export function parseForm(body: string | null): { form: Record<string, string>; repeated: string[] } {
  const form: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [k, v] of new URLSearchParams(body ?? '')) {
    if (Object.hasOwn(form, k)) repeated.push(k);
    else Object.defineProperty(form, k, ownValue(v));
  }
  return { form, repeated };
}

/**
 * Where to go after signing in: a path on this server, never another origin (`//evil`, `/\\evil`, a scheme), parsed
 * and re-serialised, so what is used is what the URL parser made of it; anything odd gives the fallback.
 */
export function safeNext(next: string | null | undefined, fallback = '/account'): string {
  if (!next?.startsWith('/') || next.startsWith('//') || next.startsWith('/\\') || hasControlCharacter(next)) {
    return fallback;
  }
  const origin = 'http://next.invalid';
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return fallback;
  }
  if (url.origin !== origin) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}
