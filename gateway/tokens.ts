// Agent token verification: ES256 JWTs checked against the public keys the auth service serves over the bus.
// Verified tokens are cached until they expire (bounded), because a signature check costs ~100 µs and an agent
// sends the same token on every call.
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, jwtVerify } from 'jose';
import type { AgentTokenClaims, Caller, Names } from '../contracts/index.ts';
import type { GatewayBus } from './bus.ts';

export interface TokenVerifierOptions {
  issuer: string;
  fetchJwks: () => Promise<JSONWebKeySet>;
  nowMs: () => number;
  cacheMax?: number;
  /** Told why a fetch of the key set failed (callers only learn that keys are not available). */
  onFetchError?: (err: unknown) => void;
}

/** A fetch of the key set at most this often when an unknown kid shows up (so junk tokens cannot hammer it). */
const jwksRefreshMinIntervalMs = 5000;

export class TokenVerifier {
  private keys: ReturnType<typeof createLocalJWKSet> | null = null;
  private lastFetchMs = 0;
  private fetching: Promise<void> | null = null;
  private readonly cache = new Map<string, { caller: Caller; expMs: number }>();

  constructor(private readonly o: TokenVerifierOptions) {}

  /** The caller a token stands for, or null when it is not a valid, unexpired token of this service. */
  async verify(token: string): Promise<Caller | null> {
    const now = this.o.nowMs();
    const hit = this.cache.get(token);
    if (hit) {
      if (hit.expMs > now) return hit.caller;
      this.cache.delete(token);
      return null;
    }
    if (!this.keys) await this.refresh(true);
    if (!this.keys) throw new Error('token keys are not available yet');
    let claims: AgentTokenClaims;
    try {
      claims = await this.check(token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) return null;
      // A key rotated since we fetched: refresh once and try again.
      await this.refresh(false);
      try {
        claims = await this.check(token);
      } catch {
        return null;
      }
    }
    if (typeof claims.principal_id !== 'string' || typeof claims.agent_id !== 'string') return null;
    const caller: Caller = {
      principalId: claims.principal_id,
      agentId: claims.agent_id,
      scopes: typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [],
      sandbox: claims.sandbox === true,
    };
    if (this.cache.size >= (this.o.cacheMax ?? 100_000)) {
      // Drop the oldest tenth; Map iteration order is insertion order.
      let n = Math.ceil(this.cache.size / 10);
      for (const k of this.cache.keys()) {
        if (n-- <= 0) break;
        this.cache.delete(k);
      }
    }
    this.cache.set(token, { caller, expMs: claims.exp * 1000 });
    return caller;
  }

  private async check(token: string): Promise<AgentTokenClaims> {
    const { payload } = await jwtVerify(token, this.keys!, {
      issuer: this.o.issuer,
      audience: this.o.issuer,
      algorithms: ['ES256'],
      currentDate: new Date(this.o.nowMs()),
    });
    return payload as unknown as AgentTokenClaims;
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
export function jwksOverBus(bus: GatewayBus, names: Names): () => Promise<JSONWebKeySet> {
  return async () => {
    const reply = await bus.request(names.serviceSubject('auth'), {
      op: 'auth.token_jwks',
      requestId: 'jwks',
      caller: null,
      params: {},
      query: {},
      body: null,
    });
    if (!reply.ok) throw new Error(`the auth service refused the token key set: ${reply.error.message}`);
    return reply.body as JSONWebKeySet;
  };
}
