// The web session and CSRF protection of the pages. The session is an opaque `asys_` token in the `assay_session`
// cookie (HttpOnly, SameSite=Lax, Secure on https), resolved by the oauth service on every request. Every form
// carries a CSRF token equal to the `assay_csrf` cookie (double submit; SameSite=Strict), and a form post whose
// Origin header names another origin is refused as well.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../contracts/index.ts';
import type { WebContext } from './face.ts';
import { cookie, type WebRequest } from './http.ts';

export const sessionCookie = 'assay_session';
export const csrfCookie = 'assay_csrf';

export interface WebSession {
  token: string;
  principalId: string;
  email: string;
  webAgentId: string;
}

const secure = (config: Config) => config.webUrl.startsWith('https://');

/** The signed-in person, or null. */
export async function sessionOf(ctx: WebContext, req: WebRequest): Promise<WebSession | null> {
  const token = req.cookies[sessionCookie];
  if (!token) return null;
  const r = await ctx.oauth('session', { sessionToken: token }, req.requestId);
  if (!r.ok) {
    if (r.reply.error.code === 'unauthorized') return null;
    throw new Error(`session lookup refused: ${r.reply.error.message}`);
  }
  return { token, ...r.body };
}

export function sessionSetCookie(config: Config, token: string): string {
  return cookie(sessionCookie, token, {
    maxAgeSeconds: config.webSessionSeconds,
    sameSite: 'Lax',
    secure: secure(config),
  });
}

export function sessionClearCookie(config: Config): string {
  return cookie(sessionCookie, '', { maxAgeSeconds: 0, sameSite: 'Lax', secure: secure(config) });
}

/** The CSRF token of this browser, and the cookie to set when it has none yet. */
export function csrfOf(config: Config, req: WebRequest): { csrf: string; setCookie: string[] } {
  const existing = req.cookies[csrfCookie];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { csrf: existing, setCookie: [] };
  const csrf = randomBytes(32).toString('base64url');
  return {
    csrf,
    setCookie: [cookie(csrfCookie, csrf, { maxAgeSeconds: 86_400, sameSite: 'Strict', secure: secure(config) })],
  };
}

/** A form post from one of our pages: same CSRF token as the cookie, and no foreign Origin. */
export function formIsOurs(config: Config, req: WebRequest, form: Record<string, string>): boolean {
  if (req.origin && req.origin !== new URL(config.webUrl).origin) return false;
  const expected = req.cookies[csrfCookie];
  return Boolean(expected) && form.csrf === expected;
}
