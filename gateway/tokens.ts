// Agent token verification: ES256 JWTs checked against the public keys the auth service serves over the bus. Two
// kinds, told apart by their signed claims (never by their text): OAuth access tokens name their grant (`gid`), are
// live and revocable, and are handed out as `asyo_` + JWT; sandbox tokens and operator-minted tokens name no grant. Verified tokens are cached until they expire (bounded), because a
// signature check costs ~100 µs and an agent sends the same token on every call; revocation is checked on every
// call, cached or not.
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, jwtVerify } from 'jose';
import Type from 'typebox';
import { Value } from 'typebox/value';
import { type Caller, credentialPrefixes, oauthResources } from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';
import type { RevokedSet } from './revocations.ts';

/**
 * The claims a verified token must carry for the gateway to read it (contracts' AgentTokenClaims): who it is, its
 * audience and expiry. The rest (scope, sandbox, a grant's gid and jti) is read where it is used, checked there.
 */
const TokenClaims = Type.Object({
  principal_id: Type.String(),
  agent_id: Type.String(),
  aud: Type.Union([Type.String(), Type.Array(Type.String())]),
  exp: Type.Number(),
  scope: Type.Optional(Type.Unknown()),
  sandbox: Type.Optional(Type.Unknown()),
  jti: Type.Optional(Type.Unknown()),
  gid: Type.Optional(Type.Unknown()),
});

export interface TokenVerifierOptions {
  issuer: string;
  fetchJwks: () => Promise<JSONWebKeySet>;
  nowMs: () => number;
  /** Revoked OAuth grants and tokens, checked on every call with an OAuth token. */
  revoked: RevokedSet;
  cacheMax?: number;
  /** Told why a fetch of the key set failed (callers only learn that keys are not available). */
  onFetchError?: (err: unknown) => void;
}

/** Where a token is presented: the agent API (REST) or the MCP endpoint, which also accepts MCP-only tokens. */
export type TokenFace = 'api' | 'mcp';

interface Verified {
  caller: Caller;
  expMs: number;
  /** What the token may be used for. */
  faces: { api: boolean; mcp: boolean };
  /** OAuth tokens: the grant and token id revocation is checked by. */
  revocable: { grantId: string; jti: string } | null;
}

/** A fetch of the key set at most this often when an unknown kid shows up (so junk tokens cannot hammer it). */
const jwksRefreshMinIntervalMs = 5000;

export class TokenVerifier {
  private keys: ReturnType<typeof createLocalJWKSet> | null = null;
  private lastFetchMs = 0;
  private fetching: Promise<void> | null = null;
  private readonly cache = new Map<string, Verified>();
  private readonly resources: { api: string; mcp: string };

  constructor(private readonly o: TokenVerifierOptions) {
    this.resources = oauthResources(o.issuer);
  }

  /**
   * The caller a token stands for on this face, or null when it is not a valid, unexpired, unrevoked token of this
   * service for it. Throws when that cannot be told yet (no keys, revocations not loaded): the caller answers 503.
   */
  async verify(token: string, face: TokenFace = 'api'): Promise<Caller | null> {
    const now = this.o.nowMs();
    let v = this.cache.get(token);
    if (v && v.expMs <= now) {
      this.cache.delete(token);
      return null;
    }
    if (!v) {
      const fresh = await this.verifyFresh(token);
      if (!fresh) return null;
      v = fresh;
      this.remember(token, v);
    }
    if (!v.faces[face]) return null;
    if (v.revocable) {
      if (!this.o.revoked.ready) throw new Error('revocations are not loaded yet');
      if (this.o.revoked.isRevoked(v.revocable.grantId, v.revocable.jti)) return null;
    }
    return v.caller;
  }

  private async verifyFresh(token: string): Promise<Verified | null> {
    // The prefix is how an OAuth access token is handed out, not what makes it one: it is dropped if present, and
    // what the token is comes from its signed claims below.
    const prefixed = token.startsWith(credentialPrefixes.accessToken);
    const jwt = prefixed ? token.slice(credentialPrefixes.accessToken.length) : token;
    if (!this.keys) await this.refresh(true);
    if (!this.keys) throw new Error('token keys are not available yet');
    let payload: unknown;
    try {
      payload = await this.check(jwt);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) return null;
      // A key rotated since we fetched: refresh once and try again.
      await this.refresh(false);
      try {
        payload = await this.check(jwt);
      } catch {
        return null;
      }
    }
    if (!Value.Check(TokenClaims, payload)) return null;
    const claims = payload;
    // A token that names a grant is an OAuth access token, whatever its text: live, and revocable with its grant.
    // One that names none is a sandbox token or an operator's `mint-token`, and is never handed out prefixed.
    const grant = Object.hasOwn(claims, 'gid');
    if (grant && (typeof claims.gid !== 'string' || typeof claims.jti !== 'string' || claims.sandbox !== false)) {
      return null;
    }
    if (prefixed && !grant) return null;
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    const api = aud.includes(this.resources.api);
    // Frozen: the cached caller goes with every request of its token, and a gateway of the same process hands the
    // request to the actor as it is (InProcessActors), so a handler that changed it would change it for the next.
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
    return {
      caller: Object.freeze({
        principalId: claims.principal_id,
        agentId: claims.agent_id,
        scopes: Object.freeze(scopes) as string[],
        sandbox: claims.sandbox === true,
      }),
      expMs: claims.exp * 1000,
      faces: { api, mcp: api || aud.includes(this.resources.mcp) },
      revocable:
        grant && typeof claims.gid === 'string' && typeof claims.jti === 'string'
          ? { grantId: claims.gid, jti: claims.jti }
          : null,
    };
  }

  private remember(token: string, v: Verified): void {
    if (this.cache.size >= (this.o.cacheMax ?? 100_000)) {
      // Drop the oldest tenth; Map iteration order is insertion order.
      let n = Math.ceil(this.cache.size / 10);
      for (const k of this.cache.keys()) {
        if (n-- <= 0) break;
        this.cache.delete(k);
      }
    }
    this.cache.set(token, v);
  }

  /** The token's claims once its signature, issuer, audience and times check out; what they hold is checked after. */
  private async check(token: string): Promise<unknown> {
    const { payload } = await jwtVerify(token, this.keys!, {
      issuer: this.o.issuer,
      audience: [this.resources.api, this.resources.mcp],
      algorithms: ['ES256'],
      currentDate: new Date(this.o.nowMs()),
    });
    return payload;
  }

  private async refresh(force: boolean): Promise<void> {
    const now = this.o.nowMs();
    if (!force && now - this.lastFetchMs < jwksRefreshMinIntervalMs) return;
    if (!this.fetching) {
      this.fetching = (async () => {
        try {
          this.keys = createLocalJWKSet(await this.o.fetchJwks());
          this.lastFetchMs = this.o.nowMs();
        } catch (err) {
          this.o.onFetchError?.(err);
        } finally {
          this.fetching = null;
        }
      })();
    }
    await this.fetching.catch(() => {});
  }
}

/** The token key set as the auth service serves it over the bus: the `fetchJwks` of a gateway's verifier. */
export function jwksOverBus(bus: GatewayBus): () => Promise<JSONWebKeySet> {
  return async () => {
    const r = await bus.ask('auth.token_jwks', null, { requestId: 'jwks' });
    if (!r.ok) throw new Error(`the auth service refused the token key set: ${r.reply.error.message}`);
    return r.body;
  };
}
