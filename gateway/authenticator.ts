// The one authenticator of every face: what each credential proves is decided here, once, and each face only words
// the outcome in its own dialect (the typed error object, RFC 6749, the context API's {error, message}, a page).
//
// - A bearer token (`Authorization: Bearer <jwt>`, or `asyo_<jwt>`): its signature, audience, expiry and revocation
//   are checked by the token verifier, which reads what the token is from its signed claims (gateway/tokens.ts).
// - An API key (`Authorization: Bearer asyk_...`): the oauth service resolves it to its principal.
// - A web session (the `assay_session` cookie): the oauth service resolves it to the signed-in person.
//
// A principal acting as itself (an API key, a web session) is an identity whose agent is the principal itself
// (`ownCaller`), everywhere.
import { type Caller, credentialPrefixes } from '../contracts/index.ts';
import { type GatewayBus, ownCaller } from './bus.ts';
import type { TokenFace, TokenVerifier } from './tokens.ts';

/** The web session's cookie: an opaque `asys_` token the oauth service resolves (gateway/web/session.ts). */
export const sessionCookie = 'assay_session';

/** The signed-in person of a web session. */
export interface WebSession {
  token: string;
  principalId: string;
  email: string;
  webAgentId: string;
}

/** Who a request is, once its credential checks out. */
export interface Identity {
  caller: Caller;
  /** How it proved it. */
  via: 'token' | 'api_key' | 'session';
  /** The signed-in person's session, when `via` is `session`. */
  session: WebSession | null;
}

/** Why a request is not authenticated; each face words it. */
export type AuthFailure =
  /** No credential of a kind this route accepts. */
  | { kind: 'missing' }
  /** An Authorization header that is not `Bearer <credential>`. */
  | { kind: 'malformed' }
  /** A credential that is unknown, expired or revoked. */
  | { kind: 'invalid'; credential: 'token' | 'api_key' | 'session' }
  /** The credential cannot be checked right now (keys or revocations not loaded, the service unreachable). */
  | { kind: 'unavailable' };

export type AuthOutcome = { ok: true; who: Identity } | { ok: false; failure: AuthFailure };

/** The credentials a request carries, read from it before any await. */
export interface Credentials {
  authorization: string;
  cookies: Record<string, string>;
  requestId: string;
}

/** Which credentials a route accepts, in the order they are tried. */
export type Accepts = readonly ('token' | 'api_key' | 'session')[];

const bearerPattern = /^Bearer\s+(\S+)\s*$/i;

export class Authenticator {
  constructor(
    private readonly verifier: TokenVerifier,
    private readonly bus: GatewayBus,
  ) {}

  /**
   * The identity of a request, from the first credential it carries of those the route accepts: an API key or a
   * bearer token in the Authorization header, else the session cookie. A request that sends a header the route
   * cannot use is refused rather than falling back to its cookie.
   */
  async identify(c: Credentials, accepts: Accepts, face: TokenFace = 'api'): Promise<AuthOutcome> {
    if (c.authorization !== '') {
      const bearer = bearerPattern.exec(c.authorization)?.[1];
      if (bearer === undefined) return refused({ kind: 'malformed' });
      if (bearer.startsWith(credentialPrefixes.apiKey)) {
        return accepts.includes('api_key') ? this.apiKey(bearer, c.requestId) : refused({ kind: 'missing' });
      }
      return accepts.includes('token') ? this.token(bearer, face) : refused({ kind: 'missing' });
    }
    if (accepts.includes('session') && c.cookies[sessionCookie]) return this.session(c);
    return refused({ kind: 'missing' });
  }

  /** A bearer token (agent, operator-minted or OAuth access token), for this face. */
  async token(token: string, face: TokenFace = 'api'): Promise<AuthOutcome> {
    let caller: Caller | null;
    try {
      caller = await this.verifier.verify(token, face);
    } catch {
      return refused({ kind: 'unavailable' });
    }
    if (!caller) return refused({ kind: 'invalid', credential: 'token' });
    return { ok: true, who: { caller, via: 'token', session: null } };
  }

  private async apiKey(key: string, requestId: string): Promise<AuthOutcome> {
    const r = await this.bus.ask('oauth.apiKeyResolve', { key }, { requestId });
    if (!r.ok) {
      return refused(r.reply.error.code === 'unauthorized' ? { kind: 'invalid', credential: 'api_key' } : unavailable);
    }
    return { ok: true, who: { caller: ownCaller(r.body.principalId), via: 'api_key', session: null } };
  }

  /** The signed-in person of the session cookie. */
  async session(c: Pick<Credentials, 'cookies' | 'requestId'>): Promise<AuthOutcome> {
    const token = c.cookies[sessionCookie];
    if (!token) return refused({ kind: 'missing' });
    const r = await this.bus.ask('oauth.session', { sessionToken: token }, { requestId: c.requestId });
    if (!r.ok) {
      return refused(r.reply.error.code === 'unauthorized' ? { kind: 'invalid', credential: 'session' } : unavailable);
    }
    const session = { token, ...r.body };
    return { ok: true, who: { caller: ownCaller(session.principalId), via: 'session', session } };
  }
}

const unavailable: AuthFailure = { kind: 'unavailable' };
const refused = (failure: AuthFailure): AuthOutcome => ({ ok: false, failure });
