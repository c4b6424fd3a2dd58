// JWTs of the OAuth server, all signed with the token keys (the ones gateways verify agent tokens with):
// - access tokens (RFC 9068 profile: `typ: at+jwt`), handed out with the `asyo_` prefix;
// - screen tokens: a short-lived principal token minted for one consent or device screen and accepted back only by
//   that screen's decision call, so a cross-site form cannot approve anything (it cannot know the token).
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, importJWK, type JWK, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { credentialPrefixes } from '../../contracts/index.ts';
import { activeKey, allKeys, type Sql } from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';

export interface AccessTokenClaims {
  principalId: string;
  agentId: string;
  clientId: string;
  grantId: string;
  scopes: string[];
  audience: string;
  /** RFC 8693 4.1: who acts (the client that exchanged), for an exchanged token. */
  act?: { sub: string };
}

export interface VerifiedAccessToken extends JWTPayload {
  principal_id: string;
  agent_id: string;
  client_id: string;
  gid: string;
  scope: string;
  jti: string;
  exp: number;
  aud: string;
}

const screenTokenSeconds = 600;
/** Screen tokens carry their own audience, so one can never pass for an access token or the other way round. */
const screenAudience = (issuer: string, purpose: 'consent' | 'device') => `${issuer}#${purpose}-screen`;

interface LoadedKeys {
  /** The public keys of every token key (verification). */
  set: ReturnType<typeof createLocalJWKSet>;
  /** The active key (signing). */
  signing: { kid: string; key: CryptoKey | Uint8Array };
  readAtMs: number;
}

export class OAuthTokens {
  private loaded: LoadedKeys | null = null;
  private loading: Promise<LoadedKeys> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly issuer: string,
    private readonly accessTokenSeconds: number,
    /** How long the keys are used before they are read again (a rotation shows within this and one read). */
    private readonly keysTtlMs: number,
  ) {}

  /** A new access token: the prefixed token, its id and expiry (seconds since the epoch). */
  async accessToken(c: AccessTokenClaims, notAfter?: number): Promise<{ token: string; jti: string; exp: number }> {
    const iat = Math.floor(this.clock.nowMs() / 1000);
    const exp = Math.min(iat + this.accessTokenSeconds, notAfter ?? Number.POSITIVE_INFINITY);
    const jti = randomUUID();
    const claims: Record<string, unknown> = {
      client_id: c.clientId,
      scope: c.scopes.join(' '),
      principal_id: c.principalId,
      agent_id: c.agentId,
      sandbox: false,
      gid: c.grantId,
    };
    if (c.act) claims.act = c.act;
    const jwt = await this.sign(claims, { sub: c.principalId, aud: c.audience, iat, exp, jti, typ: 'at+jwt' });
    return { token: `${credentialPrefixes.accessToken}${jwt}`, jti, exp };
  }

  /**
   * One of our access tokens, checked (signature, issuer, expiry unless `allowExpired`); null for anything else.
   * Revocation is the caller's business.
   */
  async verifyAccessToken(token: string, o: { allowExpired?: boolean } = {}): Promise<VerifiedAccessToken | null> {
    // With or without its prefix: the same signed token is the same token (revoking the bare form revokes it).
    const jwt = token.startsWith(credentialPrefixes.accessToken)
      ? token.slice(credentialPrefixes.accessToken.length)
      : token;
    const claims = await this.verify(jwt, {
      typ: 'at+jwt',
      ...(o.allowExpired ? { currentDate: new Date(0) } : {}),
    });
    if (!claims) return null;
    const ok = ['principal_id', 'agent_id', 'client_id', 'gid', 'scope', 'jti', 'aud'].every(
      (k) => typeof claims[k] === 'string',
    );
    return ok ? (claims as VerifiedAccessToken) : null;
  }

  async screenToken(purpose: 'consent' | 'device', principalId: string, request: Record<string, unknown>) {
    const iat = Math.floor(this.clock.nowMs() / 1000);
    return this.sign(
      { request },
      {
        sub: principalId,
        aud: screenAudience(this.issuer, purpose),
        iat,
        exp: iat + screenTokenSeconds,
        jti: randomUUID(),
        typ: 'screen+jwt',
      },
    );
  }

  /** The request a screen token was minted for, if it is valid, unexpired, for this screen and this principal. */
  async screenRequest(
    purpose: 'consent' | 'device',
    token: string,
    principalId: string,
  ): Promise<Record<string, unknown> | null> {
    const claims = await this.verify(token, { typ: 'screen+jwt', audience: screenAudience(this.issuer, purpose) });
    if (!claims || claims.sub !== principalId || typeof claims.request !== 'object' || claims.request === null) {
      return null;
    }
    return claims.request as Record<string, unknown>;
  }

  /**
   * The token keys: loaded once (awaited), then refreshed in the background when older than keysTtlMs. Callers that
   * sign or verify inside a transaction await this first: a transaction holding a pooled connection must never
   * wait for another connection to read keys, or a pool full of such transactions waits forever.
   */
  async keys(): Promise<LoadedKeys> {
    const loaded = this.loaded;
    if (loaded && this.clock.nowMs() - loaded.readAtMs <= this.keysTtlMs) return loaded;
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    if (loaded) {
      // Stale: keep using what we have while the refresh runs (a rotation shows within one refresh).
      this.loading.catch(() => {});
      return loaded;
    }
    return this.loading;
  }

  private async load(): Promise<LoadedKeys> {
    const [active, all] = await Promise.all([activeKey(this.sql, 'token'), allKeys(this.sql, 'token')]);
    if (!active) throw new Error('no active token key');
    this.loaded = {
      set: createLocalJWKSet({ keys: all.map((k) => k.publicJwk as JWK) }),
      signing: { kid: active.kid, key: await importJWK(active.privateJwk as JWK, 'ES256') },
      readAtMs: this.clock.nowMs(),
    };
    return this.loaded;
  }

  private async sign(
    claims: Record<string, unknown>,
    h: { sub: string; aud: string; iat: number; exp: number; jti: string; typ: string },
  ): Promise<string> {
    const { signing } = await this.keys();
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: signing.kid, typ: h.typ })
      .setIssuer(this.issuer)
      .setSubject(h.sub)
      .setAudience(h.aud)
      .setIssuedAt(h.iat)
      .setExpirationTime(h.exp)
      .setJti(h.jti)
      .sign(signing.key);
  }

  private async verify(
    jwt: string,
    o: { typ: string; audience?: string; currentDate?: Date },
  ): Promise<(JWTPayload & Record<string, unknown>) | null> {
    const { set } = await this.keys();
    try {
      const { payload } = await jwtVerify(jwt, set, {
        issuer: this.issuer,
        typ: o.typ,
        algorithms: ['ES256'],
        currentDate: o.currentDate ?? new Date(this.clock.nowMs()),
        ...(o.audience ? { audience: o.audience } : {}),
      });
      return payload as JWTPayload & Record<string, unknown>;
    } catch {
      return null;
    }
  }
}
