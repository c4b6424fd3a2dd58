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

/** An HTTP answer of a protocol endpoint (RFC 6749 JSON bodies), as the service decides it. */
export const OAuthHttp = Type.Object({
  status: Type.Integer(),
  body: Type.Record(Type.String(), Type.Unknown()),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
});

const Form = Type.Record(Type.String(), Type.String());
const Credentials = Type.Object({
  email: Type.String({ maxLength: 320 }),
  password: Type.String({ maxLength: 1024 }),
  clientAddress: Type.String(),
});
const SessionStarted = Type.Object({ sessionToken: Type.String(), principalId: S.Uuid() });
const PageError = Type.Object({ kind: Type.Literal('page_error'), title: Type.String(), message: Type.String() });
const Redirect = Type.Object({ kind: Type.Literal('redirect'), location: Type.String() });

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
    body: Type.Object({ principalId: S.Uuid(), action: AccountAction, id: Type.Optional(Type.String()) }),
    // The words shown after an action are the account page's (gateway/web/page-routes.ts), not the service's.
    reply: Type.Object({
      newInitialAccessToken: Type.Optional(Type.Object({ token: Type.String(), expiresAt: Type.String() })),
    }),
  },
  register: {
    body: Type.Object({ initialAccessToken: Type.Union([Type.String(), Type.Null()]), metadata: Type.Unknown() }),
    reply: OAuthHttp,
  },
  authorize: {
    body: Type.Object({ principalId: Type.Union([S.Uuid(), Type.Null()]), query: Form }),
    reply: Type.Union([
      PageError,
      Redirect,
      Type.Object({ kind: Type.Literal('sign_in') }),
      Type.Object({
        kind: Type.Literal('consent'),
        clientId: S.Uuid(),
        clientName: Type.Union([Type.String(), Type.Null()]),
        redirectOrigin: Type.String(),
        scopes: Type.Array(Type.String()),
        resource: Type.String(),
        screenToken: Type.String(),
      }),
    ]),
  },
  decision: {
    body: Type.Object({ principalId: S.Uuid(), screenToken: Type.String(), decision: Type.String() }),
    reply: Type.Union([PageError, Redirect]),
  },
  token: { body: Type.Object({ form: Form }), reply: OAuthHttp },
  deviceAuthorization: { body: Type.Object({ form: Form }), reply: OAuthHttp },
  deviceLookup: {
    body: Type.Object({ principalId: S.Uuid(), userCode: Type.String(), clientAddress: Type.String() }),
    reply: Type.Union([
      Type.Object({ kind: Type.Literal('error'), message: Type.String() }),
      Type.Object({
        kind: Type.Literal('confirm'),
        clientId: S.Uuid(),
        clientName: Type.Union([Type.String(), Type.Null()]),
        userCode: Type.String(),
        scopes: Type.Array(Type.String()),
        screenToken: Type.String(),
      }),
    ]),
  },
  deviceDecision: {
    body: Type.Object({ principalId: S.Uuid(), screenToken: Type.String(), decision: Type.String() }),
    reply: Type.Object({ title: Type.String(), message: Type.String() }),
  },
  revoke: { body: Type.Object({ form: Form }), reply: OAuthHttp },
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
export type OAuthHttpT = Static<typeof OAuthHttp>;
export type AccountViewT = Static<typeof AccountView>;
