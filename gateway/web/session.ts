// The web session and CSRF protection of the pages. The session is an opaque `asys_` token in the `assay_session`
// cookie (HttpOnly, SameSite=Lax, Secure on https), resolved by the oauth service on every request. Every form
// carries a CSRF token equal to the `assay_csrf` cookie (double submit; SameSite=Strict), and a form post whose
// Origin header names another origin is refused as well.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../contracts/index.ts';
import type { WebContext, WebRoute } from './route.ts';
import { sessionCookie, type WebSession } from '../authenticator.ts';
import { cookie, type WebRequest, type WebResponse } from './http.ts';

export { sessionCookie, type WebSession };

export const csrfCookie = 'assay_csrf';

const secure = (config: Config) => config.webUrl.startsWith('https://');
/** Whether cookies carry Secure: whenever the web URL is https. */
export const secureCookies = secure;

/** The signed-in person, or null; throws when sessions cannot be checked right now (the page answers 503). */
export async function sessionOf(ctx: WebContext, req: WebRequest): Promise<WebSession | null> {
  const r = await ctx.auth.session(req);
  if (r.ok) return r.who.session;
  if (r.failure.kind === 'unavailable') throw new Error('sessions cannot be checked right now');
  return null;
}

/** A route of the signed-in person: `signedIn` answers them, `anonymous` a request without a session. */
export function sessionRoute(
  route: Pick<WebRoute, 'method' | 'path' | 'body'>,
  anonymous: (ctx: WebContext, req: WebRequest) => WebResponse,
  signedIn: (ctx: WebContext, req: WebRequest, session: WebSession) => Promise<WebResponse>,
): WebRoute {
  return {
    ...route,
    async handle(ctx, req) {
      const session = await sessionOf(ctx, req);
      return session ? signedIn(ctx, req, session) : anonymous(ctx, req);
    },
  };
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
