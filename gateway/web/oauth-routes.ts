// The OAuth 2.1 server's HTTP endpoints (docs/oauth.md): metadata (RFC 8414, RFC 9728), registration (RFC 7591),
// the authorization endpoint and the consent screen's decision, the token, device authorization and revocation
// endpoints. The gateway parses and words; the oauth service decides.
import {
  accessTokenType,
  type Config,
  grantTypes,
  oauthResources,
  type OAuthReply,
  parseJsonText,
  scopes,
  scopeWords,
  type Scope,
} from '../../contracts/index.ts';
import type { WebContext, WebRoute } from './route.ts';
import { json, oauthError, page, parseForm, redirectHere, type WebRequest, type WebResponse } from './http.ts';
import { endpointAnswer, redirectToClient, refusalAnswer, tokenEndpointHeaders } from './oauth-answers.ts';
import { consentPage, messagePage } from './pages.ts';
import { csrfOf, formIsOurs, sessionOf } from './session.ts';

const formType = /^application\/x-www-form-urlencoded(\s*;.*)?$/i;

export function authorizationServerMetadata(config: Config) {
  const base = config.baseUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    device_authorization_endpoint: `${base}/oauth/device_authorization`,
    grant_types_supported: Object.values(grantTypes),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...scopes],
    authorization_response_iss_parameter_supported: true,
    // MCP authorization (2025-11-25): a client_id may be the https URL of the client's metadata document.
    client_id_metadata_document_supported: true,
    service_documentation: `${config.webUrl}/account`,
  };
}

/** RFC 9728 metadata of one of our resources: the agent API (served by the operation table) or the MCP endpoint. */
export function protectedResourceMetadata(config: Config, resource: string, name: string) {
  return {
    resource,
    authorization_servers: [config.baseUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: [...scopes],
    resource_name: name,
  };
}

/** A form's JSON Schema: its fields are strings. */
function formSchema(fields: Record<string, string>, required: string[]): Record<string, unknown> {
  return {
    type: 'object',
    required,
    properties: Object.fromEntries(
      Object.entries(fields).map(([k, description]) => [k, { type: 'string', description }]),
    ),
  };
}

const registrationSchema = {
  type: 'object',
  properties: {
    client_name: { type: 'string', maxLength: 200 },
    redirect_uris: {
      type: 'array',
      maxItems: 10,
      items: { type: 'string', format: 'uri', description: 'https, or http on a loopback host; no fragment.' },
    },
    grant_types: { type: 'array', items: { type: 'string', enum: Object.values(grantTypes) } },
    scope: { type: 'string', description: `Space-separated, among: ${scopes.join(' ')}.` },
    token_endpoint_auth_method: { type: 'string', enum: ['none'] },
    response_types: { type: 'array', items: { type: 'string', enum: ['code'] } },
  },
};

const decisionSchema = formSchema(
  {
    screen_token: 'The token the consent screen was shown with.',
    csrf: 'Equal to the assay_csrf cookie.',
    decision: 'approve or deny.',
  },
  ['screen_token', 'csrf', 'decision'],
);

const tokenRequestSchema = formSchema(
  {
    grant_type: Object.values(grantTypes).join(', '),
    client_id: 'The client (clients are public: token_endpoint_auth_method none).',
    code: 'authorization_code: the code (asyc_).',
    redirect_uri: 'authorization_code: the redirect URI of the request.',
    code_verifier: 'authorization_code: the PKCE verifier.',
    refresh_token: 'refresh_token: the token (asyr_); each use rotates it.',
    scope: 'refresh_token and token exchange: narrower scopes.',
    subject_token: 'token exchange: an access token (asyo_).',
    subject_token_type: `token exchange: ${accessTokenType}.`,
    requested_token_type: `token exchange: ${accessTokenType} (the only one).`,
    resource: 'token exchange: the agent API or its MCP endpoint (RFC 8707).',
    device_code: 'device_code: the device code (asyd_).',
  },
  ['grant_type', 'client_id'],
);

/** A protocol endpoint's form, or the RFC 6749 refusal for a request that is not one. */
function formOf(req: WebRequest): { form: Record<string, string> } | { refusal: WebResponse } {
  if (!formType.test(req.contentType)) {
    return { refusal: oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded') };
  }
  const { form, repeated } = parseForm(req.body);
  if (repeated.length > 0) {
    return { refusal: oauthError(400, 'invalid_request', `parameters sent more than once: ${repeated.join(', ')}`) };
  }
  return { form };
}

/** Post a form to one of the service's protocol endpoints and relay its answer. */
function formEndpoint(op: 'oauth.token' | 'oauth.revoke' | 'oauth.deviceAuthorization') {
  return async (ctx: WebContext, req: WebRequest) => {
    const parsed = formOf(req);
    if ('refusal' in parsed) return parsed.refusal;
    const form = parsed.form;
    const o = { requestId: req.requestId };
    const r =
      op === 'oauth.deviceAuthorization'
        ? await ctx.ask(op, { form, clientAddress: req.clientAddress }, o)
        : await ctx.ask(op, { form }, o);
    if (!r.ok) return oauthError(503, 'temporarily_unavailable', r.reply.error.message);
    return endpointAnswer(ctx.config, r.body, op === 'oauth.deviceAuthorization' ? {} : tokenEndpointHeaders);
  };
}

export const scopeList = (list: readonly string[]) =>
  list.map((scope) => ({ scope, words: scopeWords[scope as Scope] ?? scope }));

/** A refusal of the authorization flow in the browser: back to the client where it may go, else a page. */
function refusalPage(
  ctx: WebContext,
  req: WebRequest,
  signedInAs: string | null,
  refused: Parameters<typeof refusalAnswer>[1],
): WebResponse {
  const { csrf, setCookie } = csrfOf(ctx.config, req);
  const frame = { webUrl: ctx.config.webUrl, signedInAs, csrf };
  return refusalAnswer(ctx.config, refused, {
    kind: 'page',
    flow: 'authorization',
    show: (w) => page(w.status, messagePage({ ...frame, title: w.title, message: w.message, link: null }), setCookie),
  });
}

/** The consent screen, the sign-in redirect, a refusal or the code sent back, as the service decided. */
export async function authorizeAnswer(
  ctx: WebContext,
  req: WebRequest,
  answer: OAuthReply<'authorize'> | OAuthReply<'decision'>,
  signedInAs: string | null,
): Promise<WebResponse> {
  const { csrf, setCookie } = csrfOf(ctx.config, req);
  const frame = { webUrl: ctx.config.webUrl, signedInAs, csrf };
  switch (answer.kind) {
    case 'refused':
      return refusalPage(ctx, req, signedInAs, answer);
    case 'code':
      return redirectToClient(ctx.config, answer.returnTo, { code: answer.code });
    case 'sign_in':
      return redirectHere(ctx.config.webUrl, `/signin?next=${encodeURIComponent(req.target)}`);
    case 'consent':
      return page(
        200,
        consentPage({
          ...frame,
          client: answer.client,
          redirectOrigin: answer.redirectOrigin,
          scopes: scopeList(answer.scopes),
          resource: answer.resource,
          screenToken: answer.screenToken,
        }),
        setCookie,
      );
  }
}

export function oauthRoutes(config: Config): WebRoute[] {
  const resources = oauthResources(config.baseUrl);
  const metadata = authorizationServerMetadata(config);
  return [
    {
      method: 'GET',
      path: '/.well-known/oauth-authorization-server',
      body: 'none',
      doc: {
        summary: 'Authorization server metadata: every endpoint below, grants, scopes, PKCE methods.',
        rfc: 'RFC 8414 3',
        responses: { 200: { description: 'The metadata document.', media: 'application/json' } },
      },
      handle: async () => json(200, metadata, { 'cache-control': 'public, max-age=300' }),
    },
    {
      method: 'GET',
      path: '/.well-known/oauth-protected-resource/mcp',
      body: 'none',
      doc: {
        summary: 'Protected resource metadata of the MCP endpoint alone (tokens with resource {base_url}/mcp).',
        rfc: 'RFC 9728 3',
        responses: { 200: { description: 'The metadata document.', media: 'application/json' } },
      },
      handle: async () =>
        json(200, protectedResourceMetadata(config, resources.mcp, 'Assay MCP endpoint'), {
          'cache-control': 'public, max-age=300',
        }),
    },
    {
      method: 'POST',
      path: '/oauth/register',
      body: 'text',
      doc: {
        summary: 'Dynamic client registration, authorized by an initial access token issued on the account page.',
        rfc: 'RFC 7591 3',
        security: 'initialAccessToken',
        request: { media: 'application/json', schema: registrationSchema },
        responses: {
          201: {
            description: 'The client: client_id (an agent of the principal) and its metadata.',
            media: 'application/json',
          },
          400: { description: 'invalid_redirect_uri or invalid_client_metadata.', media: 'application/json' },
          401: {
            description: 'invalid_token: no, an unknown, an expired or a revoked initial access token.',
            media: 'application/json',
          },
        },
      },
      async handle(ctx, req) {
        const bearer = /^Bearer (\S+)$/i.exec(req.authorization)?.[1] ?? null;
        const parsed = parseJsonText(req.body ?? '', 'the body');
        if (!parsed.ok) {
          return oauthError(
            400,
            'invalid_client_metadata',
            parsed.syntax ? 'the body must be a JSON object' : parsed.problem,
          );
        }
        const metadata = parsed.value;
        const r = await ctx.ask(
          'oauth.register',
          { initialAccessToken: bearer, metadata },
          { requestId: req.requestId },
        );
        if (!r.ok) return oauthError(503, 'temporarily_unavailable', r.reply.error.message);
        return endpointAnswer(ctx.config, r.body);
      },
    },
    {
      method: 'GET',
      path: '/oauth/authorize',
      body: 'none',
      doc: {
        summary: 'Authorization code with PKCE S256: sign-in if needed, then the consent screen.',
        rfc: 'OAuth 2.1 4.1.1; RFC 7636 4.3; RFC 8707 2',
        responses: {
          200: { description: 'The consent screen.', media: 'text/html' },
          303: { description: 'To sign-in, or back to the redirect URI with an error, state and iss.' },
          400: {
            description: 'An unknown client or redirect URI, or a repeated parameter: a page, never a redirect.',
            media: 'text/html',
          },
        },
      },
      async handle(ctx, req) {
        if (req.repeatedQuery.length > 0) {
          return refusalPage(ctx, req, null, { refusal: { refused: 'repeated_parameters', names: req.repeatedQuery } });
        }
        const session = await sessionOf(ctx, req);
        const query = Object.fromEntries(req.query);
        const r = await ctx.ask(
          'oauth.authorize',
          { principalId: session?.principalId ?? null, query },
          { requestId: req.requestId },
        );
        if (!r.ok) throw new Error(`authorize refused: ${r.reply.error.message}`);
        return authorizeAnswer(ctx, req, r.body, session?.email ?? null);
      },
    },
    {
      method: 'POST',
      path: '/oauth/authorize/decision',
      body: 'text',
      doc: {
        summary: "The consent screen's form: its screen token, the CSRF token and approve or deny.",
        rfc: 'OAuth 2.1 4.1.2, 7.12',
        request: { media: 'application/x-www-form-urlencoded', schema: decisionSchema },
        responses: {
          303: { description: 'Back to the redirect URI with a code (or access_denied), state and iss.' },
          403: {
            description: 'No screen token, a foreign origin or a wrong CSRF token: nothing approved.',
            media: 'text/html',
          },
        },
      },
      async handle(ctx, req) {
        const { form } = parseForm(req.body);
        const session = await sessionOf(ctx, req);
        // The screen token is the real guard (a cross-site form cannot know it); the session and CSRF checks make
        // sure the person deciding is the one the screen was shown to, in this browser.
        if (!session || !formIsOurs(ctx.config, req, form) || !form.screen_token) {
          return refusalPage(ctx, req, session?.email ?? null, { refusal: { refused: 'decision_not_ours' } });
        }
        const r = await ctx.ask(
          'oauth.decision',
          { principalId: session.principalId, screenToken: form.screen_token, decision: form.decision ?? '' },
          { requestId: req.requestId },
        );
        if (!r.ok) throw new Error(`decision refused: ${r.reply.error.message}`);
        return authorizeAnswer(ctx, req, r.body, session.email);
      },
    },
    {
      method: 'POST',
      path: '/oauth/token',
      body: 'text',
      doc: {
        summary: 'Token endpoint: authorization_code, refresh_token (rotated), token exchange, device_code.',
        rfc: 'OAuth 2.1 3.2; RFC 8693 2; RFC 8628 3.4',
        request: { media: 'application/x-www-form-urlencoded', schema: tokenRequestSchema },
        responses: {
          200: {
            description: 'access_token (asyo_), token_type, expires_in, scope, refresh_token (asyr_).',
            media: 'application/json',
          },
          400: {
            description:
              'RFC 6749 5.2 error: invalid_request, invalid_grant, invalid_scope, invalid_target, authorization_pending, slow_down, expired_token, access_denied, unsupported_grant_type, unauthorized_client.',
            media: 'application/json',
          },
          401: { description: 'invalid_client.', media: 'application/json' },
        },
      },
      handle: formEndpoint('oauth.token'),
    },
    {
      method: 'POST',
      path: '/oauth/device_authorization',
      body: 'text',
      doc: {
        summary: 'Device authorization for the command-line login: a device code and a user code to enter at /device.',
        rfc: 'RFC 8628 3.1-3.2',
        request: {
          media: 'application/x-www-form-urlencoded',
          schema: formSchema(
            { client_id: 'The client.', scope: 'Space-separated scopes.', resource: 'RFC 8707 resource.' },
            ['client_id'],
          ),
        },
        responses: {
          200: {
            description: 'device_code, user_code, verification_uri(_complete), expires_in, interval.',
            media: 'application/json',
          },
          400: { description: 'invalid_scope, invalid_target, unauthorized_client.', media: 'application/json' },
          401: { description: 'invalid_client.', media: 'application/json' },
        },
      },
      handle: formEndpoint('oauth.deviceAuthorization'),
    },
    {
      method: 'POST',
      path: '/oauth/revoke',
      body: 'text',
      doc: {
        summary:
          'Revocation: a refresh token ends its grant, an access token itself; in force on every gateway within 1 s.',
        rfc: 'RFC 7009 2',
        request: {
          media: 'application/x-www-form-urlencoded',
          schema: formSchema({ token: 'The token.', token_type_hint: 'Ignored.', client_id: 'The client.' }, ['token']),
        },
        responses: {
          200: { description: 'Revoked, or nothing to revoke.', media: 'application/json' },
          400: { description: 'invalid_request.', media: 'application/json' },
          401: { description: 'invalid_client: the token was issued to another client.', media: 'application/json' },
        },
      },
      handle: formEndpoint('oauth.revoke'),
    },
  ];
}
