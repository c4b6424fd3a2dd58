// The token endpoint (RFC 6749 3.2, 4.1.3, 5, 6; PKCE RFC 7636 4.6; device RFC 8628 3.4-3.5; exchange RFC 8693)
// and revocation (RFC 7009). Clients are public: they name themselves with `client_id` and prove possession with
// PKCE, a refresh token or a device code. Every single-use credential is spent before it is checked, so a replay
// is always seen; a replayed code or refresh token revokes the grant it belongs to (OAuth 2.1 4.1.3, 4.3.1).
// Each grant answers what happened: tokens, or a refusal (contracts/oauth.ts); the web face words it.
import {
  accessTokenType,
  type BusReply,
  credentialPrefixes,
  grantTypes,
  type OAuthErrorCodeT,
  type OAuthReply,
  oauthResources,
  okReply,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import { oauthStore, type Sql } from '../../storage/index.ts';
import { type Client, clientPresentedAs } from './clients.ts';
import type { OAuthDeps } from './deps.ts';
import { type Checked, codeVerifierPattern, parseScopes, protocolRefusal, requestedResource } from './rules.ts';
import { newSecret, s256, sameSecret, secretHash } from './secrets.ts';

type GrantRow = oauthStore.GrantRow;
/** A token request's transaction, and the grants it revoked (announced to gateways after it commits). */
type Tx = { db: Sql; revoked: string[] };
type Handlers = ServiceHandlers<'oauth'>;
type TokenAnswer = BusReply<OAuthReply<'token'>>;

/**
 * OAuth 2.1 4.1.3 and RFC 7636 4.6: a code (spent, on its first use) is redeemed before it expires, with the redirect
 * URI of its request and the verifier of its challenge.
 */
function checkCodeRedemption(
  code: oauthStore.CodeRow,
  redirectUri: string,
  verifier: string,
  nowMs: number,
): Checked<oauthStore.CodeRow> {
  const refuse = (description: string) => ({
    ok: false as const,
    refusal: protocolRefusal('invalid_grant', description),
  });
  if (code.expires_at.getTime() <= nowMs) return refuse('the authorization code expired');
  if (code.redirect_uri !== redirectUri) return refuse('redirect_uri differs from the authorization request');
  if (!codeVerifierPattern.test(verifier) || !sameSecret(s256(verifier), code.code_challenge)) {
    return refuse('the code_verifier does not match the code_challenge');
  }
  return { ok: true, value: code };
}

export function tokenHandlers(d: OAuthDeps): Pick<Handlers, 'oauth.token' | 'oauth.revoke'> {
  const { sql } = d;
  const resources = Object.values(oauthResources(d.config.baseUrl));
  const now = () => d.clock.nowIso();
  const refuse = (error: OAuthErrorCodeT, description: string) =>
    okReply(200, { kind: 'refused' as const, refusal: protocolRefusal(error, description) });
  const invalidGrant = (description: string) => refuse('invalid_grant', description);

  /** RFC 6749 3.2.1: the live client the request names, calling with a grant type it registered; or the refusal. */
  async function callingClient(db: Sql, clientId: string | undefined, grantType: string) {
    const client = await clientPresentedAs(db, clientId);
    if (!client) return { refusal: refuse('invalid_client', 'unknown or missing client_id') };
    if (!client.row.grant_types.includes(grantType)) {
      return { refusal: refuse('unauthorized_client', `this client did not register the ${grantType} grant`) };
    }
    return { client };
  }

  /**
   * Revoke a grant, for a replayed single-use credential: in the request's transaction, and in every gateway's
   * revocation set once it commits (`t.revoked`).
   */
  async function revokeFamily(t: Tx, grantId: string, reason: string) {
    await oauthStore.revokeGrant(t.db, grantId, reason, now());
    t.revoked.push(grantId);
    d.log.warn({ grantId, reason }, 'oauth grant revoked: a single-use credential was presented twice');
  }

  /** Access token (and refresh token unless exchanged) under a live grant. */
  async function issue(
    db: Sql,
    grant: GrantRow,
    o: {
      /** The client_id claim: the client as it names itself (a metadata document's URL, or a uuid). */
      clientId: string;
      scopes?: string[];
      audience?: string;
      refresh: boolean;
      /** An exchange: the acting client, and the subject token the new one is made from. */
      act?: { sub: string; parentJti: string };
      agentId?: string;
      notAfter?: number;
    },
  ) {
    const scopes = o.scopes ?? grant.scopes;
    const audience = o.audience ?? grant.resource;
    const access = await d.tokens.accessToken(
      {
        principalId: grant.principal_id,
        agentId: o.agentId ?? grant.client_id,
        clientId: o.clientId,
        grantId: grant.id,
        scopes,
        audience,
        ...(o.act ? { act: { sub: o.act.sub } } : {}),
      },
      o.notAfter,
    );
    const at = now();
    await oauthStore.insertAccessToken(db, {
      jti: access.jti,
      grantId: grant.id,
      scopes,
      audience,
      parentJti: o.act?.parentJti ?? null,
      at,
      expiresAt: new Date(access.exp * 1000).toISOString(),
    });
    let refreshToken: string | undefined;
    if (o.refresh) {
      const refresh = newSecret(credentialPrefixes.refreshToken);
      await oauthStore.insertRefreshToken(db, {
        tokenHash: refresh.hash,
        grantId: grant.id,
        at,
        expiresAt: new Date(d.clock.nowMs() + d.config.oauthRefreshTokenSeconds * 1000).toISOString(),
      });
      refreshToken = refresh.value;
    }
    return okReply(200, {
      kind: 'tokens' as const,
      accessToken: access.token,
      expiresInS: Math.max(0, access.exp - Math.floor(d.clock.nowMs() / 1000)),
      scopes,
      ...(refreshToken === undefined ? {} : { refreshToken }),
      exchanged: o.act !== undefined,
    });
  }

  /** A client that registered refresh tokens gets one with its first tokens. */
  const refreshes = (client: Client) => client.row.grant_types.includes(grantTypes.refreshToken);

  /** The grants the token endpoint serves (RFC 6749 4.1.3, 6; RFC 8693 2.1; RFC 8628 3.4), by grant_type. */
  const grants: Record<string, (t: Tx, f: Record<string, string>) => Promise<TokenAnswer>> = {
    async [grantTypes.authorizationCode](t: Tx, f: Record<string, string>) {
      const called = await callingClient(t.db, f.client_id, grantTypes.authorizationCode);
      if (called.refusal) return called.refusal;
      if (!f.code || !f.redirect_uri || !f.code_verifier) {
        return refuse('invalid_request', 'code, redirect_uri and code_verifier are required');
      }
      const code = await oauthStore.spendCode(t.db, secretHash(f.code), now());
      if (!code || code.client_id !== called.client.row.client_id) return invalidGrant('unknown authorization code');
      if (code.used_at !== null) {
        await revokeFamily(t, code.grant_id, 'code_reused');
        return invalidGrant('the authorization code was used already; what it issued is revoked');
      }
      const redemption = checkCodeRedemption(code, f.redirect_uri, f.code_verifier, d.clock.nowMs());
      if (!redemption.ok) return okReply(200, { kind: 'refused' as const, refusal: redemption.refusal });
      const grant = await oauthStore.liveGrant(t.db, code.grant_id);
      if (!grant) return invalidGrant('the grant was revoked');
      return issue(t.db, grant, { clientId: called.client.presentedId, refresh: refreshes(called.client) });
    },

    async [grantTypes.refreshToken](t: Tx, f: Record<string, string>) {
      const called = await callingClient(t.db, f.client_id, grantTypes.refreshToken);
      if (called.refusal) return called.refusal;
      if (!f.refresh_token) return refuse('invalid_request', 'refresh_token is required');
      const spent = await oauthStore.spendRefreshToken(t.db, secretHash(f.refresh_token), now());
      if (!spent) return invalidGrant('unknown refresh token');
      const grant = await oauthStore.liveGrant(t.db, spent.grant_id);
      if (!grant || grant.client_id !== called.client.row.client_id) return invalidGrant('the grant was revoked');
      if (spent.used_at !== null) {
        await revokeFamily(t, grant.id, 'refresh_token_reused');
        return invalidGrant('the refresh token was used already; the grant is revoked');
      }
      if (spent.expires_at.getTime() <= d.clock.nowMs()) return invalidGrant('the refresh token expired');
      // RFC 6749 6: a refresh may narrow the scope, never widen it.
      let scopes = grant.scopes;
      if (f.scope) {
        const asked = parseScopes(f.scope);
        if (!asked || asked.some((s) => !grant.scopes.includes(s))) {
          return refuse('invalid_scope', 'a refresh cannot ask for scopes the grant does not hold');
        }
        scopes = asked;
      }
      return issue(t.db, grant, { clientId: called.client.presentedId, scopes, refresh: true });
    },

    async [grantTypes.tokenExchange](t: Tx, f: Record<string, string>) {
      const called = await callingClient(t.db, f.client_id, grantTypes.tokenExchange);
      if (called.refusal) return called.refusal;
      if (!f.subject_token || f.subject_token_type !== accessTokenType) {
        return refuse(
          'invalid_request',
          `subject_token (an access token, subject_token_type ${accessTokenType}) is required`,
        );
      }
      if (f.requested_token_type && f.requested_token_type !== accessTokenType) {
        return refuse('invalid_request', `only ${accessTokenType} can be issued`);
      }
      const subject = await d.tokens.verifyAccessToken(f.subject_token);
      const live = subject ? await oauthStore.accessTokenLive(t.db, subject.jti) : false;
      const grant = subject && live ? await oauthStore.liveGrant(t.db, subject.gid) : null;
      if (!subject || !grant) return invalidGrant('the subject_token is not a live access token of this server');
      // The exchanged token stays the principal's and inside the subject's grant; the calling client must be the
      // principal's too (it becomes the acting agent).
      if (called.client.row.principal_id !== subject.principal_id) {
        return invalidGrant('the subject_token belongs to another account than this client');
      }
      // Never wider than the subject token, nor than what the acting client registered: a client cannot gain
      // through an exchange a scope the person never let it ask for.
      const held = subject.scope.split(' ').filter(Boolean);
      const allowed = held.filter((s) => called.client.row.scopes.includes(s));
      let scopes = allowed;
      if (f.scope) {
        const asked = parseScopes(f.scope);
        if (!asked) return refuse('invalid_scope', `unknown scope in "${f.scope}"`);
        const wider = asked.filter((s) => !allowed.includes(s));
        if (wider.length > 0) {
          return refuse(
            'invalid_scope',
            `an exchange cannot widen scope: ${wider.join(' ')} (held: ${allowed.join(' ')})`,
          );
        }
        scopes = asked;
      }
      if (scopes.length === 0)
        return refuse('invalid_scope', 'the subject token holds no scope this client registered');
      const target = requestedResource(f.resource ?? f.audience, resources);
      if (!target.ok) return okReply(200, { kind: 'refused' as const, refusal: target.refusal });
      // The agent API token covers the MCP endpoint too; an MCP-only token cannot become an API one.
      if (subject.aud !== d.config.baseUrl && target.value !== subject.aud) {
        return refuse('invalid_target', 'an exchange cannot move a token to a wider audience');
      }
      return issue(t.db, grant, {
        clientId: subject.client_id,
        scopes,
        audience: target.value,
        refresh: false,
        act: { sub: called.client.presentedId, parentJti: subject.jti },
        agentId: called.client.row.client_id,
        notAfter: subject.exp,
      });
    },

    async [grantTypes.deviceCode](t: Tx, f: Record<string, string>) {
      const called = await callingClient(t.db, f.client_id, grantTypes.deviceCode);
      if (called.refusal) return called.refusal;
      if (!f.device_code) return refuse('invalid_request', 'device_code is required');
      const nowMs = d.clock.nowMs();
      type Outcome = 'unknown' | 'expired' | 'slow_down' | 'pending' | 'denied' | 'issue' | 'used';
      let outcome = 'unknown' as Outcome;
      let grantId: string | null = null;
      await oauthStore.pollDeviceCode(t.db, secretHash(f.device_code), now(), (r) => {
        const early = r.last_polled_at !== null && nowMs - r.last_polled_at.getTime() < r.interval_seconds * 1000;
        // Another client's device code is unknown to this one: it neither spends it nor slows it down.
        if (r.client_id !== called.client.row.client_id) return { slowDown: false, spend: false, touch: false };
        if (r.expires_at.getTime() <= nowMs) outcome = 'expired';
        else if (r.state === 'denied') outcome = 'denied';
        else if (r.state === 'approved') outcome = r.used_at === null ? 'issue' : 'used';
        else outcome = early ? 'slow_down' : 'pending';
        grantId = r.grant_id;
        return { slowDown: outcome === 'slow_down', spend: outcome === 'issue', touch: true };
      });
      switch (outcome) {
        case 'unknown':
          return invalidGrant('unknown device_code');
        case 'expired':
          return refuse('expired_token', 'the device code expired; start again');
        case 'denied':
          return refuse('access_denied', 'the person declined');
        case 'slow_down':
          return refuse('slow_down', 'polled faster than the interval: wait 5 seconds longer between polls');
        case 'pending':
          return refuse('authorization_pending', 'the person has not decided yet');
        case 'used':
          return invalidGrant('the device code was used already');
        case 'issue': {
          const grant = grantId ? await oauthStore.liveGrant(t.db, grantId) : null;
          if (!grant) return invalidGrant('the grant was revoked');
          return issue(t.db, grant, { clientId: called.client.presentedId, refresh: refreshes(called.client) });
        }
      }
    },
  };

  return {
    async 'oauth.token'({ body }) {
      const f = body.form;
      if (!f.grant_type) return refuse('invalid_request', 'grant_type is required');
      // Own properties only: `constructor` or `toString` is an unknown grant type, not a function of Object.
      const grant = Object.hasOwn(grants, f.grant_type) ? grants[f.grant_type] : undefined;
      if (!grant) return refuse('unsupported_grant_type', `grant_type ${f.grant_type} is not supported`);
      // One transaction per request: spending a credential and storing what replaces it commit together (one
      // WAL flush), and a replay's revocation commits with the refusal.
      const revoked: string[] = [];
      await d.tokens.keys();
      const reply = await sql.begin((db) => grant({ db: db as unknown as Sql, revoked }, f));
      await d.revocations.grants(revoked);
      return reply;
    },

    async 'oauth.revoke'({ body }) {
      const f = body.form;
      // RFC 7009 2.2: an unknown or invalid token is answered 200 as well; there is nothing to revoke.
      const done = okReply(200, { kind: 'revoked' as const });
      const notIssuedToThisClient = () => refuse('invalid_client', 'the token was not issued to this client');
      if (!f.token) return refuse('invalid_request', 'token is required');
      if (f.token.startsWith(credentialPrefixes.refreshToken)) {
        const grantId = await oauthStore.refreshTokenGrant(sql, secretHash(f.token));
        const grant = grantId ? await oauthStore.liveGrant(sql, grantId) : null;
        if (!grant) return done;
        if (f.client_id && (await clientPresentedAs(sql, f.client_id))?.row.client_id !== grant.client_id) {
          return notIssuedToThisClient();
        }
        // RFC 7009 2.1: revoking a refresh token ends the grant, and the access tokens issued under it.
        await oauthStore.revokeGrant(sql, grant.id, 'revoked_by_client', now());
        await d.revocations.grants([grant.id]);
        return done;
      }
      const access = await d.tokens.verifyAccessToken(f.token, { allowExpired: true });
      if (!access) return done;
      if (f.client_id && f.client_id !== access.client_id) return notIssuedToThisClient();
      await d.revocations.tokens(await oauthStore.revokeAccessToken(sql, access.jti, now()));
      return done;
    },
  };
}
