// How a person authorizes a client: registration of the client with an initial access token (RFC 7591), the
// authorization request and its consent screen (RFC 6749 4.1, PKCE RFC 7636, resource RFC 8707, the `iss`
// response parameter RFC 9207), and the device flow's two halves (RFC 8628 3.1-3.3).
import {
  credentialPrefixes,
  errorReply,
  grantTypes,
  isUuid,
  oauthResources,
  okReply,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import { countThisMinute, oauthStore } from '../../storage/index.ts';
import type { OAuthDeps } from './deps.ts';
import {
  checkClientMetadata,
  codeVerifierPattern,
  matchRedirectUri,
  requestedResource,
  requestedScopes,
} from './rules.ts';
import { newSecret, newUserCode, normaliseUserCode, secretHash } from './secrets.ts';

type Handlers = ServiceHandlers<'oauth'>;

const codeSeconds = 60;
const deviceCodeSeconds = 600;
const devicePollSeconds = 5;

/** The parameters a consent screen token carries: what the person approves, exactly. */
interface ApprovedRequest {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  resource: string;
  codeChallenge: string;
  state: string | null;
}

export function authorizationHandlers(
  d: OAuthDeps,
): Pick<
  Handlers,
  | 'oauth.register'
  | 'oauth.authorize'
  | 'oauth.decision'
  | 'oauth.deviceAuthorization'
  | 'oauth.deviceLookup'
  | 'oauth.deviceDecision'
> {
  const { sql } = d;
  const issuer = d.config.baseUrl;
  const resources = Object.values(oauthResources(d.config.baseUrl));
  const http = (status: number, body: Record<string, unknown>, headers?: Record<string, string>) =>
    okReply(200, headers ? { status, body, headers } : { status, body });
  const oauthError = (status: number, error: string, description: string) =>
    http(status, { error, error_description: description });
  const pageError = (title: string, message: string) => okReply(200, { kind: 'page_error' as const, title, message });

  /** RFC 6749 4.1.2: the answer goes back to the client's redirect URI, with `state` and (RFC 9207) `iss`. */
  const redirectTo = (redirectUri: string, params: Record<string, string>, state: string | null) => {
    const url = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    if (state !== null) url.searchParams.set('state', state);
    url.searchParams.set('iss', issuer);
    return okReply(200, { kind: 'redirect' as const, location: url.toString() });
  };

  async function grantFor(principalId: string, clientId: string, scopes: string[], resource: string) {
    const id = d.ids.uuid();
    await oauthStore.insertGrant(sql, { id, principalId, clientId, scopes, resource, at: d.clock.nowIso() });
    return id;
  }

  return {
    async 'oauth.register'({ body }) {
      const principalId =
        body.initialAccessToken === null
          ? null
          : await oauthStore.initialAccessTokenPrincipal(sql, secretHash(body.initialAccessToken), d.clock.nowIso());
      if (!principalId) {
        // RFC 7591 3: registration needs the initial access token; RFC 6750 3.1 words the refusal.
        return http(
          401,
          { error: 'invalid_token', error_description: 'a valid initial access token is required (Bearer asyi_...)' },
          { 'www-authenticate': 'Bearer error="invalid_token"' },
        );
      }
      const checked = checkClientMetadata(body.metadata);
      if (!checked.ok) return oauthError(400, checked.error, checked.description);
      const m = checked.value;
      const clientId = d.ids.uuid();
      const at = d.clock.nowIso();
      await oauthStore.insertClient(sql, {
        clientId,
        principalId,
        clientName: m.clientName,
        redirectUris: m.redirectUris,
        grantTypes: m.grantTypes,
        scopes: m.scopes,
        at,
      });
      return http(201, {
        client_id: clientId,
        client_id_issued_at: Math.floor(Date.parse(at) / 1000),
        ...(m.clientName === null ? {} : { client_name: m.clientName }),
        redirect_uris: m.redirectUris,
        grant_types: m.grantTypes,
        response_types: m.grantTypes.includes(grantTypes.authorizationCode) ? ['code'] : [],
        token_endpoint_auth_method: 'none',
        scope: m.scopes.join(' '),
      });
    },

    async 'oauth.authorize'({ body }) {
      const q = body.query;
      // RFC 6749 4.1.2.1: without a known client and one of its redirect URIs, nothing may be redirected.
      const client = q.client_id && isUuid(q.client_id) ? await oauthStore.liveClient(sql, q.client_id) : null;
      if (!client) return pageError('Unknown application', 'The application that sent you here is not registered.');
      const redirectUri = matchRedirectUri(client.redirect_uris, q.redirect_uri);
      if (!redirectUri) {
        return pageError(
          'Wrong return address',
          'The application asked to send the answer to an address it did not register, so nothing was sent.',
        );
      }
      const state = q.state ?? null;
      const fail = (error: string, description: string) =>
        redirectTo(redirectUri, { error, error_description: description }, state);
      if (q.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
      if (!client.grant_types.includes(grantTypes.authorizationCode)) {
        return fail('unauthorized_client', 'this client did not register the authorization_code grant');
      }
      if (!q.code_challenge) return fail('invalid_request', 'PKCE is required: send code_challenge (S256)');
      if (q.code_challenge_method !== 'S256') {
        return fail('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
      }
      if (!codeVerifierPattern.test(q.code_challenge) || q.code_challenge.length !== 43) {
        return fail('invalid_request', 'code_challenge must be BASE64URL(SHA256(code_verifier)), 43 characters');
      }
      const scopes = requestedScopes(q.scope, client.scopes);
      if (!scopes.ok) return fail(scopes.error, scopes.description);
      const resource = requestedResource(q.resource, resources);
      if (!resource.ok) return fail(resource.error, resource.description);
      if (body.principalId === null) return okReply(200, { kind: 'sign_in' as const });
      if (body.principalId !== client.principal_id) {
        return pageError(
          'Another account’s application',
          'This application was registered by another account. Sign out and sign in with that account to authorize it.',
        );
      }
      const request: ApprovedRequest = {
        clientId: client.client_id,
        redirectUri,
        scopes: scopes.value,
        resource: resource.value,
        codeChallenge: q.code_challenge,
        state,
      };
      return okReply(200, {
        kind: 'consent' as const,
        clientId: client.client_id,
        clientName: client.client_name,
        redirectOrigin: new URL(redirectUri).origin,
        scopes: scopes.value,
        resource: resource.value,
        screenToken: await d.tokens.screenToken('consent', body.principalId, { ...request }),
      });
    },

    async 'oauth.decision'({ body }) {
      const request = (await d.tokens.screenRequest(
        'consent',
        body.screenToken,
        body.principalId,
      )) as ApprovedRequest | null;
      if (!request) {
        return pageError(
          'This page has expired',
          'The consent screen was not valid any more (or not yours). Go back to the application and start again.',
        );
      }
      const client = await oauthStore.liveClient(sql, request.clientId);
      if (!client) return pageError('Unknown application', 'The application was removed meanwhile.');
      if (body.decision !== 'approve') {
        return redirectTo(
          request.redirectUri,
          { error: 'access_denied', error_description: 'the person declined' },
          request.state,
        );
      }
      const grantId = await grantFor(body.principalId, request.clientId, request.scopes, request.resource);
      const code = newSecret(credentialPrefixes.authorizationCode);
      await oauthStore.insertCode(sql, {
        codeHash: code.hash,
        grantId,
        clientId: request.clientId,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        expiresAt: new Date(d.clock.nowMs() + codeSeconds * 1000).toISOString(),
      });
      return redirectTo(request.redirectUri, { code: code.value }, request.state);
    },

    async 'oauth.deviceAuthorization'({ body }) {
      const f = body.form;
      const client = f.client_id && isUuid(f.client_id) ? await oauthStore.liveClient(sql, f.client_id) : null;
      if (!client) return oauthError(401, 'invalid_client', 'unknown client_id');
      if (!client.grant_types.includes(grantTypes.deviceCode)) {
        return oauthError(400, 'unauthorized_client', 'this client did not register the device_code grant');
      }
      const scopes = requestedScopes(f.scope, client.scopes);
      if (!scopes.ok) return oauthError(400, scopes.error, scopes.description);
      const resource = requestedResource(f.resource, resources);
      if (!resource.ok) return oauthError(400, resource.error, resource.description);
      const deviceCode = newSecret(credentialPrefixes.deviceCode);
      const now = d.clock.nowMs();
      for (;;) {
        const userCode = newUserCode();
        const stored = await oauthStore.insertDeviceCode(sql, {
          deviceCodeHash: deviceCode.hash,
          userCode,
          clientId: client.client_id,
          scopes: scopes.value,
          resource: resource.value,
          at: new Date(now).toISOString(),
          expiresAt: new Date(now + deviceCodeSeconds * 1000).toISOString(),
          intervalSeconds: devicePollSeconds,
        });
        if (!stored) continue; // a user code in use: draw again
        const verificationUri = `${d.config.webUrl}/device`;
        return http(200, {
          device_code: deviceCode.value,
          user_code: userCode,
          verification_uri: verificationUri,
          verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
          expires_in: deviceCodeSeconds,
          interval: devicePollSeconds,
        });
      }
    },

    async 'oauth.deviceLookup'({ body }) {
      const nowMs = d.clock.nowMs();
      const tries = Math.max(
        (await countThisMinute(sql, `device:addr:${body.clientAddress}`, nowMs)).count,
        (await countThisMinute(sql, `device:principal:${body.principalId}`, nowMs)).count,
      );
      if (tries > d.config.signInAttemptsPerMinute) {
        return errorReply('rate_limited', 'Too many codes tried. Wait a minute and try again.', 60);
      }
      const userCode = normaliseUserCode(body.userCode);
      const row = userCode ? await oauthStore.deviceCodeByUserCode(sql, userCode) : null;
      const fresh = row && row.state === 'pending' && row.expires_at.getTime() > d.clock.nowMs();
      if (!row || !fresh) {
        return okReply(200, {
          kind: 'error' as const,
          message: 'That code is not valid (or it expired). Check the code your device shows.',
        });
      }
      const client = await oauthStore.liveClient(sql, row.client_id);
      if (!client) return okReply(200, { kind: 'error' as const, message: 'The application was removed.' });
      if (client.principal_id !== body.principalId) {
        return okReply(200, {
          kind: 'error' as const,
          message: 'This application was registered by another account. Sign in with that account to approve it.',
        });
      }
      return okReply(200, {
        kind: 'confirm' as const,
        clientId: client.client_id,
        clientName: client.client_name,
        userCode: row.user_code,
        scopes: row.scopes,
        screenToken: await d.tokens.screenToken('device', body.principalId, { userCode: row.user_code }),
      });
    },

    async 'oauth.deviceDecision'({ body }) {
      const request = await d.tokens.screenRequest('device', body.screenToken, body.principalId);
      const userCode = typeof request?.userCode === 'string' ? request.userCode : null;
      const row = userCode ? await oauthStore.deviceCodeByUserCode(sql, userCode) : null;
      if (!row || !userCode) {
        return okReply(200, { title: 'This page has expired', message: 'Start again from your device.' });
      }
      const approve = body.decision === 'approve';
      const grantId = approve ? await grantFor(body.principalId, row.client_id, row.scopes, row.resource) : null;
      const decided = await oauthStore.decideDeviceCode(
        sql,
        userCode,
        { state: approve ? 'approved' : 'denied', principalId: body.principalId, grantId },
        d.clock.nowIso(),
      );
      if (!decided) {
        if (grantId) await oauthStore.revokeGrant(sql, grantId, 'device_code_not_pending', d.clock.nowIso());
        return okReply(200, {
          title: 'Code expired',
          message: 'The code expired or was used. Start again from your device.',
        });
      }
      return okReply(
        200,
        approve
          ? { title: 'Device connected', message: 'You can return to your device: it is signed in now.' }
          : { title: 'Request denied', message: 'The device was not given access.' },
      );
    },
  };
}
