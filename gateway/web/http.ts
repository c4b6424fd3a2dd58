// The web face's request and response: what a handler reads (copied from uWS before any await), and what it answers
// (an HTML page with the security headers every page carries, a redirect, or a JSON body of the OAuth protocol).
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
const pageHeaders = {
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

/** 303 See Other: after a form post, and for OAuth redirects (RFC 9700 4.11: never 307, which would repost). */
export function redirect(location: string, cookies: string[] = []): WebResponse {
  return {
    status: 303,
    headers: {
      location,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      ...(cookies.length > 0 ? { 'set-cookie': cookies } : {}),
    },
    contentType: null,
    body: '',
  };
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

export function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  sameSite: 'Lax' | 'Strict';
  secure: boolean;
}

/** A Set-Cookie value: always HttpOnly and Path=/; Secure whenever the web URL is https. */
export function cookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=/; HttpOnly; SameSite=${o.sameSite}; Max-Age=${o.maxAgeSeconds}${o.secure ? '; Secure' : ''}`;
}

/** A form body (application/x-www-form-urlencoded) as a record; repeated names keep their first value. */
export function parseForm(body: string | null): { form: Record<string, string>; repeated: string[] } {
  const form: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [k, v] of new URLSearchParams(body ?? '')) {
    if (k in form) repeated.push(k);
    else form[k] = v;
  }
  return { form, repeated };
}

/** Where to go after signing in: a path on this server, never another origin (`//evil`, `/\\evil`, a scheme). */
export function safeNext(next: string | null | undefined, fallback = '/account'): string {
  if (!next?.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return fallback;
  return next;
}
