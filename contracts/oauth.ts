// The accounts and OAuth server's messages between the gateway's web face and the `oauth` service (actors/oauth/),
// and the protocol constants both sides share: token prefixes, grant types, resources. docs/oauth.md explains them.
import Type, { type Static } from 'typebox';
import type { Scope } from './operations.ts';
import * as S from './schemas.ts';

/** Brand prefixes of every credential the service issues (secret scanners match them). */
export const credentialPrefixes = {
  accessToken: 'asyo_',
  refreshToken: 'asyr_',
  initialAccessToken: 'asyi_',
  authorizationCode: 'asyc_',
  deviceCode: 'asyd_',
  webSession: 'asys_',
  apiKey: 'asyk_',
} as const;

/**
 * Keys of the `<ns>_revoked` bucket: a revoked grant (every token issued under it) or one revoked access token (its
 * value is the token's `exp`). The oauth service writes them; every gateway watches them.
 */
export const revokedKeys = {
  grant: (grantId: string) => `grant.${grantId}`,
  token: (jti: string) => `token.${jti}`,
  parse(key: string): { kind: 'grant' | 'token'; id: string } | null {
    const dot = key.indexOf('.');
    const kind = key.slice(0, dot);
    return kind === 'grant' || kind === 'token' ? { kind, id: key.slice(dot + 1) } : null;
  },
};

/**
 * How long a revocation is remembered (the bucket's max age, and a gateway's memory of revoked grants): past every
 * access token it could stop, with a minute's margin for clock skew between processes.
 */
export function revokedRetentionMs(accessTokenSeconds: number): number {
  return (accessTokenSeconds + 60) * 1000;
}

/** Shortest password accepted at sign-up. */
export const passwordMinLength = 10;

/** Longest name of an API key of the context-file API, in characters (UTF-16 code units, as `maxlength` counts). */
export const apiKeyNameLengthMax = 100;

export const grantTypes = {
  authorizationCode: 'authorization_code',
  refreshToken: 'refresh_token',
  deviceCode: 'urn:ietf:params:oauth:grant-type:device_code',
  tokenExchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
} as const;
export const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';

/**
 * The deployment's own clients, which no account registers: the oauth service creates them at start-up (the same
 * id in every deployment, so the command-line client knows its id without a registration step). The CLI signs in
 * with the device grant only, for the scopes its commands use.
 */
export const firstPartyClients = {
  cli: {
    clientId: 'a55a7c11-c11e-4c11-8c11-00000000c11e',
    name: 'Assay command-line client',
    grantTypes: [grantTypes.deviceCode, grantTypes.refreshToken],
    scopes: ['sync'] as Scope[],
  },
} as const;

/** Scopes in words, for consent screens and the account page. */
export const scopeWords: Record<Scope, string> = {
  'read:artifact':
    'Search the catalog, read artifacts, reports and offers, and see your balance, ledger, events and mandates',
  'read:trust': 'Read trust scores',
  purchase: 'Buy listings within your mandate and add credits, and see your orders and what they delivered',
  publish: 'Publish artifacts and manage your listings',
  'manage:mandate': 'Set, change and revoke your mandate (how much your agents may spend)',
  'read:context': 'Read your context files',
  'write:context': 'Create, change, publish and delete your context files',
  sync: 'Upload folders from your devices, and list and restore their synced revisions',
};

/** The resources (RFC 8707) tokens can be for: the agent API with its MCP endpoint, or the MCP endpoint alone. */
export function oauthResources(baseUrl: string) {
  return { api: baseUrl, mcp: `${baseUrl}/mcp` };
}

/**
 * The error codes the OAuth service refuses with: RFC 6749 4.1.2.1 and 5.2, RFC 7591 3.2.2, RFC 8628 3.5 and
 * RFC 8707 2. Each is the RFC's own word; the web face picks the status (gateway/web/oauth-answers.ts).
 */
export const OAuthErrorCode = Type.Union([
  Type.Literal('invalid_request'),
  Type.Literal('invalid_client'),
  Type.Literal('invalid_grant'),
  Type.Literal('unauthorized_client'),
  Type.Literal('unsupported_grant_type'),
  Type.Literal('unsupported_response_type'),
  Type.Literal('invalid_scope'),
  Type.Literal('invalid_target'),
  Type.Literal('access_denied'),
  Type.Literal('authorization_pending'),
  Type.Literal('slow_down'),
  Type.Literal('expired_token'),
  Type.Literal('invalid_client_metadata'),
  Type.Literal('invalid_redirect_uri'),
]);
export type OAuthErrorCodeT = Static<typeof OAuthErrorCode>;

/**
 * What an OAuth step refused, as the service says it (a closed list). The web face turns each into an answer in one
 * place (gateway/web/oauth-answers.ts): an RFC 6749 body, a redirect back to the client, or a page for a person.
 */
export const OAuthRefusal = Type.Union([
  /** The client is told, with the RFC's error code. */
  Type.Object({ refused: Type.Literal('protocol'), error: OAuthErrorCode, description: Type.String() }),
  /** More device codes started than a minute allows (per address or per client). */
  Type.Object({ refused: Type.Literal('too_many_device_codes'), retryAfterS: Type.Integer({ minimum: 0 }) }),
  /** Registration without a live initial access token (RFC 7591 3). */
  Type.Object({ refused: Type.Literal('initial_access_token_required') }),
  // A person reads these: without a known client and one of its redirect URIs nothing may be redirected.
  Type.Object({ refused: Type.Literal('unknown_client') }),
  Type.Object({ refused: Type.Literal('unregistered_redirect_uri') }),
  /** A client ID metadata document that could not be fetched or is not a valid one: why, for the person. */
  Type.Object({ refused: Type.Literal('client_metadata_unusable'), problem: Type.String() }),
  Type.Object({ refused: Type.Literal('another_accounts_client') }),
  Type.Object({ refused: Type.Literal('client_removed') }),
  Type.Object({ refused: Type.Literal('screen_expired') }),
  Type.Object({ refused: Type.Literal('unknown_user_code') }),
  Type.Object({ refused: Type.Literal('device_code_not_pending') }),
]);
export type OAuthRefusalT = Static<typeof OAuthRefusal>;

/** Where an authorization request's answer may go once its client and redirect URI are known (RFC 6749 4.1.2). */
const ReturnTo = Type.Object({ redirectUri: Type.String(), state: Type.Union([Type.String(), Type.Null()]) });

/** A refusal; `returnTo` when it may be sent back to the client's redirect URI (RFC 6749 4.1.2.1). */
const Refused = Type.Object({
  kind: Type.Literal('refused'),
  refusal: OAuthRefusal,
  returnTo: Type.Optional(ReturnTo),
});

/** Who a client is, for a consent screen or the device page. */
const ClientShown = Type.Object({
  clientId: Type.String(),
  clientName: Type.Union([Type.String(), Type.Null()]),
  /**
   * How the server knows it: registered by an account (with an initial access token), the deployment's own client
   * (the command-line client), or known only by its client ID metadata document (`documentHost` is where it lives).
   */
  known: Type.Union([Type.Literal('registered'), Type.Literal('first_party'), Type.Literal('metadata_document')]),
  documentHost: Type.Optional(Type.String()),
});
export type ClientShownT = Static<typeof ClientShown>;

/** Tokens issued at the token endpoint (RFC 6749 5.1, RFC 8693 2.2.1). */
const TokensIssued = Type.Object({
  kind: Type.Literal('tokens'),
  accessToken: Type.String(),
  expiresInS: Type.Integer({ minimum: 0 }),
  scopes: Type.Array(Type.String()),
  refreshToken: Type.Optional(Type.String()),
  /** A token exchange: the issued token is an access token (RFC 8693 issued_token_type). */
  exchanged: Type.Boolean(),
});

/** A client registered with an initial access token (RFC 7591 3.2.1). */
const ClientRegistered = Type.Object({
  kind: Type.Literal('registered'),
  clientId: S.Uuid(),
  issuedAtS: Type.Integer(),
  clientName: Type.Union([Type.String(), Type.Null()]),
  redirectUris: Type.Array(Type.String()),
  grantTypes: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
});

/** A device code started (RFC 8628 3.2). */
const DeviceCodeStarted = Type.Object({
  kind: Type.Literal('device_code'),
  deviceCode: Type.String(),
  userCode: Type.String(),
  expiresInS: Type.Integer(),
  intervalS: Type.Integer(),
});

const Form = Type.Record(Type.String(), Type.String());
const Credentials = Type.Object({
  email: Type.String({ maxLength: 320 }),
  password: Type.String({ maxLength: 1024 }),
  clientAddress: Type.String(),
  /**
   * Sign-up only: the form's submission id. The same form sent again (its first answer lost to a timeout) signs in
   * to the account it made, instead of being told the email is taken.
   */
  submission: Type.Optional(S.Uuid()),
});
const SessionStarted = Type.Object({ sessionToken: Type.String(), principalId: S.Uuid() });
/** A code for the client, to its redirect URI (RFC 6749 4.1.2). */
const CodeIssued = Type.Object({ kind: Type.Literal('code'), code: Type.String(), returnTo: ReturnTo });

export const AccountView = Type.Object({
  email: Type.String(),
  clients: Type.Array(
    Type.Object({
      clientId: S.Uuid(),
      name: Type.Union([Type.String(), Type.Null()]),
      redirectUris: Type.Array(Type.String()),
      grantTypes: Type.Array(Type.String()),
      createdAt: Type.String(),
    }),
  ),
  grants: Type.Array(
    Type.Object({
      id: S.Uuid(),
      clientId: S.Uuid(),
      clientName: Type.Union([Type.String(), Type.Null()]),
      scopes: Type.Array(Type.String()),
      resource: Type.String(),
      createdAt: Type.String(),
      liveTokens: Type.Array(Type.Object({ jti: Type.String(), expiresAt: Type.String(), exchanged: Type.Boolean() })),
    }),
  ),
  initialAccessTokens: Type.Array(Type.Object({ id: S.Uuid(), createdAt: Type.String(), expiresAt: Type.String() })),
});

export const AccountAction = Type.Union([
  Type.Literal('revoke_grant'),
  Type.Literal('revoke_token'),
  Type.Literal('revoke_client'),
  Type.Literal('issue_initial_access_token'),
  Type.Literal('revoke_initial_access_token'),
  /** The page that shows a new token once: the token back, if it is the principal's own and unused, else not_found. */
  Type.Literal('show_initial_access_token'),
]);

/** An API key of the context-file API as its owner sees it (never the key itself, after creation). */
export const ApiKeyView = Type.Object({
  id: S.Uuid(),
  name: Type.String(),
  hint: Type.String({ description: 'The last four characters of the key.' }),
  created_at: Type.String(),
  revoked_at: Type.Union([Type.String(), Type.Null()]),
  last_used_at: Type.Union([Type.String(), Type.Null()]),
});

export const oauthMessages = {
  signUp: { body: Credentials, reply: SessionStarted },
  signIn: { body: Credentials, reply: SessionStarted },
  session: {
    body: Type.Object({ sessionToken: Type.String() }),
    reply: Type.Object({ principalId: S.Uuid(), email: Type.String(), webAgentId: S.Uuid() }),
  },
  signOut: { body: Type.Object({ sessionToken: Type.String() }), reply: Type.Object({}) },
  account: { body: Type.Object({ principalId: S.Uuid() }), reply: AccountView },
  accountAction: {
    body: Type.Object({
      principalId: S.Uuid(),
      action: AccountAction,
      id: Type.Optional(Type.String()),
      /** show_initial_access_token: the token to show. */
      token: Type.Optional(Type.String()),
    }),
    // The words shown after an action are the account page's (gateway/web/page-routes.ts), not the service's.
    reply: Type.Object({
      newInitialAccessToken: Type.Optional(Type.Object({ token: Type.String(), expiresAt: Type.String() })),
    }),
  },
  register: {
    body: Type.Object({ initialAccessToken: Type.Union([Type.String(), Type.Null()]), metadata: Type.Unknown() }),
    reply: Type.Union([ClientRegistered, Refused]),
  },
  authorize: {
    body: Type.Object({ principalId: Type.Union([S.Uuid(), Type.Null()]), query: Form }),
    reply: Type.Union([
      Refused,
      Type.Object({ kind: Type.Literal('sign_in') }),
      Type.Object({
        kind: Type.Literal('consent'),
        client: ClientShown,
        redirectOrigin: Type.String(),
        scopes: Type.Array(Type.String()),
        resource: Type.String(),
        screenToken: Type.String(),
      }),
    ]),
  },
  decision: {
    body: Type.Object({ principalId: S.Uuid(), screenToken: Type.String(), decision: Type.String() }),
    reply: Type.Union([Refused, CodeIssued]),
  },
  token: { body: Type.Object({ form: Form }), reply: Type.Union([TokensIssued, Refused]) },
  deviceAuthorization: {
    body: Type.Object({ form: Form, clientAddress: Type.String() }),
    reply: Type.Union([DeviceCodeStarted, Refused]),
  },
  deviceLookup: {
    body: Type.Object({ principalId: S.Uuid(), userCode: Type.String(), clientAddress: Type.String() }),
    reply: Type.Union([
      Refused,
      Type.Object({
        kind: Type.Literal('confirm'),
        client: ClientShown,
        userCode: Type.String(),
        scopes: Type.Array(Type.String()),
        screenToken: Type.String(),
      }),
    ]),
  },
  deviceDecision: {
    body: Type.Object({ principalId: S.Uuid(), screenToken: Type.String(), decision: Type.String() }),
    reply: Type.Union([Refused, Type.Object({ kind: Type.Literal('device_decided'), approved: Type.Boolean() })]),
  },
  revoke: {
    body: Type.Object({ form: Form }),
    // RFC 7009 2.2: an unknown token is revoked as far as the client can tell.
    reply: Type.Union([Type.Object({ kind: Type.Literal('revoked') }), Refused]),
  },
  apiKeyCreate: {
    body: Type.Object({ principalId: S.Uuid(), name: Type.String({ minLength: 1, maxLength: apiKeyNameLengthMax }) }),
    reply: Type.Intersect([ApiKeyView, Type.Object({ key: Type.String({ description: 'Shown once.' }) })]),
  },
  apiKeyList: { body: Type.Object({ principalId: S.Uuid() }), reply: Type.Array(ApiKeyView) },
  apiKeyRevoke: { body: Type.Object({ principalId: S.Uuid(), id: Type.String() }), reply: ApiKeyView },
  /** The principal behind a presented key; unauthorized when it is unknown or revoked. */
  apiKeyResolve: {
    body: Type.Object({ key: Type.String() }),
    reply: Type.Object({ principalId: S.Uuid(), keyId: S.Uuid() }),
  },
} as const;

export type OAuthMessage = keyof typeof oauthMessages;
export type OAuthBody<M extends OAuthMessage> = Static<(typeof oauthMessages)[M]['body']>;
export type OAuthReply<M extends OAuthMessage> = Static<(typeof oauthMessages)[M]['reply']>;
export type AccountViewT = Static<typeof AccountView>;
