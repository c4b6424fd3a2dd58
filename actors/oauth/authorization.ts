// How a person authorizes a client: registration of the client with an initial access token (RFC 7591), the
// authorization request and its consent screen (RFC 6749 4.1, PKCE RFC 7636, resource RFC 8707), and the device
// flow's two halves (RFC 8628 3.1-3.3). Each handler says what happened, a result or a refusal
// (contracts/oauth.ts); the web face words it (gateway/web/oauth-answers.ts). Each rule is one named step.
import {
  credentialPrefixes,
  errorReply,
  grantTypes,
  type OAuthRefusalT,
  oauthResources,
  okReply,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import { countThisMinute, oauthStore } from '../../storage/index.ts';
import { type Client, clientForAuthorization, clientOf, clientPresentedAs, mayAuthorize } from './clients.ts';
import type { OAuthDeps } from './deps.ts';
import {
  type Checked,
  checkClientMetadata,
  codeVerifierPattern,
  matchRedirectUri,
  protocolRefusal,
  requestedResource,
  requestedScopes,
} from './rules.ts';
import { newSecret, newUserCode, normaliseUserCode, secretHash } from './secrets.ts';

type Handlers = ServiceHandlers<'oauth'>;
type ReturnTo = { redirectUri: string; state: string | null };

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

/** A refusal, sent back to the client's redirect URI when `returnTo` is known (RFC 6749 4.1.2.1). */
function refused(refusal: OAuthRefusalT, returnTo?: ReturnTo) {
  return okReply(
    200,
    returnTo ? { kind: 'refused' as const, refusal, returnTo } : { kind: 'refused' as const, refusal },
  );
}

const pass = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = (error: Parameters<typeof protocolRefusal>[0], description: string) => ({
  ok: false as const,
  refusal: protocolRefusal(error, description),
});

// ----- the steps of an authorization request, in the order they are checked -----

/** OAuth 2.1 2.3.1, RFC 8252 7.3: one of the client's redirect URIs, or nothing may be redirected. */
function checkRedirectUri(client: Client, requested: string | undefined): Checked<string> {
  const uri = matchRedirectUri(client.row.redirect_uris, requested);
  return uri ? pass(uri) : { ok: false, refusal: { refused: 'unregistered_redirect_uri' } };
}

/** RFC 6749 4.1.1: only the code flow. */
function checkResponseType(responseType: string | undefined): Checked<'code'> {
  return responseType === 'code' ? pass('code') : fail('unsupported_response_type', 'response_type must be code');
}

/** RFC 6749 4.1.2.1, RFC 8628 3.1: the client registered the grant it uses. */
function checkGrantType(client: Client, grantType: string, name: string): Checked<string> {
  return client.row.grant_types.includes(grantType)
    ? pass(grantType)
    : fail('unauthorized_client', `this client did not register the ${name} grant`);
}

/** OAuth 2.1 4.1.1, RFC 7636 4.3: an S256 challenge is required; plain is not accepted. */
function checkPkce(challenge: string | undefined, method: string | undefined): Checked<string> {
  if (!challenge) return fail('invalid_request', 'PKCE is required: send code_challenge (S256)');
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
  if (!codeVerifierPattern.test(challenge) || challenge.length !== 43) {
    return fail('invalid_request', 'code_challenge must be BASE64URL(SHA256(code_verifier)), 43 characters');
  }
  return pass(challenge);
}

/** A client an account registered is that account's to authorize; the others are anyone's. */
function checkAuthorizer(client: Client, principalId: string): Checked<string> {
  return mayAuthorize(client, principalId)
    ? pass(principalId)
    : { ok: false, refusal: { refused: 'another_accounts_client' } };
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
  const resources = Object.values(oauthResources(d.config.baseUrl));
  const clientLookup = { sql, documents: d.documents, newId: () => d.ids.uuid(), nowIso: () => d.clock.nowIso() };

  async function grantFor(principalId: string, clientRowId: string, scopes: string[], resource: string) {
    const id = d.ids.uuid();
    await oauthStore.insertGrant(sql, {
      id,
      principalId,
      clientId: clientRowId,
      scopes,
      resource,
      at: d.clock.nowIso(),
    });
    return id;
  }

  /** RFC 8628 does not bound device codes; each stores a row, so they are bounded per address and per client. */
  async function checkDeviceCodeRate(clientAddress: string, client: Client): Promise<Checked<null>> {
    // An address over its limit does not spend the client's (or one address could use up everyone's).
    const nowMs = d.clock.nowMs();
    const tooFast = (retryAfterS: number) => ({
      ok: false as const,
      refusal: { refused: 'too_many_device_codes' as const, retryAfterS },
    });
    const byAddress = await countThisMinute(sql, `device_authorization:addr:${clientAddress}`, nowMs);
    if (byAddress.count > d.config.signInAttemptsPerMinute) return tooFast(byAddress.retryAfterS);
    const byClient = await countThisMinute(sql, `device_authorization:client:${client.row.client_id}`, nowMs);
    if (byClient.count > d.config.deviceCodesPerClientPerMinute) return tooFast(byClient.retryAfterS);
    return pass(null);
  }

  return {
    async 'oauth.register'({ body }) {
      // RFC 7591 3: registration needs the initial access token. It registers one client and is then spent (RFC 7591
      // leaves the choice; the account page promises it): a spent one is refused as an unknown one is.
      const tokenHash = body.initialAccessToken === null ? null : secretHash(body.initialAccessToken);
      const at = d.clock.nowIso();
      if (tokenHash === null || !(await oauthStore.initialAccessTokenPrincipal(sql, tokenHash, at))) {
        return refused({ refused: 'initial_access_token_required' });
      }
      // Metadata the server refuses spends nothing: the token is taken only with the client it registers.
      const checked = checkClientMetadata(body.metadata);
      if (!checked.ok) return refused(checked.refusal);
      const m = checked.value;
      const clientId = d.ids.uuid();
      const principalId = await oauthStore.insertClientSpendingToken(sql, tokenHash, at, {
        clientId,
        clientName: m.clientName,
        redirectUris: m.redirectUris,
        grantTypes: m.grantTypes,
        scopes: m.scopes,
        at,
      });
      // Another registration spent it since it was looked up.
      if (principalId === null) return refused({ refused: 'initial_access_token_required' });
      return okReply(200, {
        kind: 'registered' as const,
        clientId,
        issuedAtS: Math.floor(Date.parse(at) / 1000),
        clientName: m.clientName,
        redirectUris: m.redirectUris,
        grantTypes: m.grantTypes,
        scopes: m.scopes,
      });
    },

    async 'oauth.authorize'({ body }) {
      const q = body.query;
      // RFC 6749 4.1.2.1: without a known client and one of its redirect URIs, nothing may be redirected.
      const client = await clientForAuthorization(clientLookup, q.client_id);
      if (!client.ok) return refused(client.refusal);
      const redirectUri = checkRedirectUri(client.value, q.redirect_uri);
      if (!redirectUri.ok) return refused(redirectUri.refusal);
      const returnTo = { redirectUri: redirectUri.value, state: q.state ?? null };
      const responseType = checkResponseType(q.response_type);
      if (!responseType.ok) return refused(responseType.refusal, returnTo);
      const grant = checkGrantType(client.value, grantTypes.authorizationCode, 'authorization_code');
      if (!grant.ok) return refused(grant.refusal, returnTo);
      const challenge = checkPkce(q.code_challenge, q.code_challenge_method);
      if (!challenge.ok) return refused(challenge.refusal, returnTo);
      const scopes = requestedScopes(q.scope, client.value.row.scopes);
      if (!scopes.ok) return refused(scopes.refusal, returnTo);
      const resource = requestedResource(q.resource, resources);
      if (!resource.ok) return refused(resource.refusal, returnTo);
      if (body.principalId === null) return okReply(200, { kind: 'sign_in' as const });
      const authorizer = checkAuthorizer(client.value, body.principalId);
      if (!authorizer.ok) return refused(authorizer.refusal);
      const asked = 'save' in client.value ? await client.value.save() : client.value;
      const request: ApprovedRequest = {
        clientId: asked.row.client_id,
        redirectUri: redirectUri.value,
        scopes: scopes.value,
        resource: resource.value,
        codeChallenge: challenge.value,
        state: returnTo.state,
      };
      return okReply(200, {
        kind: 'consent' as const,
        client: asked.shown,
        redirectOrigin: new URL(redirectUri.value).origin,
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
      if (!request) return refused({ refused: 'screen_expired' });
      const client = await oauthStore.liveClient(sql, request.clientId);
      if (!client) return refused({ refused: 'client_removed' });
      const returnTo = { redirectUri: request.redirectUri, state: request.state };
      if (body.decision !== 'approve')
        return refused(protocolRefusal('access_denied', 'the person declined'), returnTo);
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
      return okReply(200, { kind: 'code' as const, code: code.value, returnTo });
    },

    async 'oauth.deviceAuthorization'({ body }) {
      const f = body.form;
      const client = await clientPresentedAs(sql, f.client_id);
      if (!client) return refused(protocolRefusal('invalid_client', 'unknown client_id'));
      // Each request stores a device code: bounded per address and per client, or anyone knowing a client id could
      // fill the table (checked before the grant, as a flood would be).
      const rate = await checkDeviceCodeRate(body.clientAddress, client);
      if (!rate.ok) return refused(rate.refusal);
      const grant = checkGrantType(client, grantTypes.deviceCode, 'device_code');
      if (!grant.ok) return refused(grant.refusal);
      const scopes = requestedScopes(f.scope, client.row.scopes);
      if (!scopes.ok) return refused(scopes.refusal);
      const resource = requestedResource(f.resource, resources);
      if (!resource.ok) return refused(resource.refusal);
      const deviceCode = newSecret(credentialPrefixes.deviceCode);
      const now = d.clock.nowMs();
      for (;;) {
        const userCode = newUserCode();
        const stored = await oauthStore.insertDeviceCode(sql, {
          deviceCodeHash: deviceCode.hash,
          userCode,
          clientId: client.row.client_id,
          scopes: scopes.value,
          resource: resource.value,
          at: new Date(now).toISOString(),
          expiresAt: new Date(now + deviceCodeSeconds * 1000).toISOString(),
          intervalSeconds: devicePollSeconds,
        });
        if (!stored) continue; // a user code in use: draw again
        return okReply(200, {
          kind: 'device_code' as const,
          deviceCode: deviceCode.value,
          userCode,
          expiresInS: deviceCodeSeconds,
          intervalS: devicePollSeconds,
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
      if (!row || !fresh) return refused({ refused: 'unknown_user_code' });
      const clientRow = await oauthStore.liveClient(sql, row.client_id);
      if (!clientRow) return refused({ refused: 'client_removed' });
      const client = clientOf(clientRow);
      const authorizer = checkAuthorizer(client, body.principalId);
      if (!authorizer.ok) return refused(authorizer.refusal);
      return okReply(200, {
        kind: 'confirm' as const,
        client: client.shown,
        userCode: row.user_code,
        scopes: row.scopes,
        screenToken: await d.tokens.screenToken('device', body.principalId, { userCode: row.user_code }),
      });
    },

    async 'oauth.deviceDecision'({ body }) {
      const request = await d.tokens.screenRequest('device', body.screenToken, body.principalId);
      const userCode = typeof request?.userCode === 'string' ? request.userCode : null;
      const row = userCode ? await oauthStore.deviceCodeByUserCode(sql, userCode) : null;
      if (!row || !userCode) return refused({ refused: 'screen_expired' });
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
        return refused({ refused: 'device_code_not_pending' });
      }
      return okReply(200, { kind: 'device_decided' as const, approved: approve });
    },
  };
}
