// The OAuth server's rules that need no storage: what a client may register (RFC 7591, RFC 8252), which redirect
// URI an authorization request may use, which scopes and resources a request may ask for. Each answer is either
// the accepted value or the refusal (the RFC's error code with a description).
import {
  grantTypes,
  type OAuthErrorCodeT,
  type OAuthRefusalT,
  type Scope,
  scopes as allScopes,
} from '../../contracts/index.ts';

/** One step of a request: the accepted value, or what it refused. */
export type Checked<T> = { ok: true; value: T } | { ok: false; refusal: OAuthRefusalT };

/** An RFC error for the client. */
export const protocolRefusal = (error: OAuthErrorCodeT, description: string): OAuthRefusalT => ({
  refused: 'protocol',
  error,
  description,
});

const refuse = (error: OAuthErrorCodeT, description: string): { ok: false; refusal: OAuthRefusalT } => ({
  ok: false,
  refusal: protocolRefusal(error, description),
});

/** Grant types a client may register. */
export const registrableGrantTypes: readonly string[] = Object.values(grantTypes);
const redirectUrisMax = 10;
const clientNameMax = 200;

export interface ClientMetadata {
  clientName: string | null;
  redirectUris: string[];
  grantTypes: string[];
  scopes: Scope[];
}

/** A space-separated scope string as scopes; null when one is unknown. */
export function parseScopes(scope: string): Scope[] | null {
  const parts = scope.split(' ').filter(Boolean);
  if (parts.some((p) => !(allScopes as readonly string[]).includes(p))) return null;
  return [...new Set(parts)] as Scope[];
}

/**
 * Literal loopback addresses only (OAuth 2.1 8.4.2, RFC 8252 8.3): `localhost` is a name, and a name can be made to
 * resolve elsewhere (a hosts file, a resolver that does not special-case it), sending the code off the machine.
 */
const loopbackHosts = new Set(['127.0.0.1', '[::1]']);

/**
 * RFC 8252 7.3 and OAuth 2.1 2.3.1: https, or http on a loopback host (a native app's local listener); an absolute
 * URI without a fragment or user information. Null when acceptable, else why not.
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URI`;
  }
  if (uri.includes('#')) return `${uri} has a fragment`;
  if (url.username || url.password) return `${uri} carries user information`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && loopbackHosts.has(url.hostname)) return null;
  return `${uri} is neither https nor http on a loopback address`;
}

/** RFC 7591 2 and 3.2.2: the registration request's metadata, checked against what the principal may grant. */
export function checkClientMetadata(metadata: unknown): Checked<ClientMetadata> {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    return refuse('invalid_client_metadata', 'the request body must be a JSON object');
  }
  const m = metadata as Record<string, unknown>;
  const clientName = m.client_name ?? null;
  if (clientName !== null && (typeof clientName !== 'string' || clientName.length > clientNameMax)) {
    return refuse('invalid_client_metadata', `client_name must be a string of at most ${clientNameMax} characters`);
  }
  const redirectUris = m.redirect_uris ?? [];
  if (!Array.isArray(redirectUris) || redirectUris.some((u) => typeof u !== 'string')) {
    return refuse('invalid_redirect_uri', 'redirect_uris must be an array of strings');
  }
  if (redirectUris.length > redirectUrisMax) {
    return refuse('invalid_redirect_uri', `at most ${redirectUrisMax} redirect_uris`);
  }
  for (const uri of redirectUris as string[]) {
    const problem = redirectUriProblem(uri);
    if (problem) return refuse('invalid_redirect_uri', problem);
  }
  const grants = m.grant_types ?? [grantTypes.authorizationCode, grantTypes.refreshToken];
  if (!Array.isArray(grants) || grants.some((g) => typeof g !== 'string' || !registrableGrantTypes.includes(g))) {
    return refuse('invalid_client_metadata', `grant_types must be among ${registrableGrantTypes.join(', ')}`);
  }
  if (grants.includes(grantTypes.authorizationCode) && redirectUris.length === 0) {
    return refuse('invalid_redirect_uri', 'the authorization_code grant needs at least one redirect URI');
  }
  const responseTypes = m.response_types ?? (grants.includes(grantTypes.authorizationCode) ? ['code'] : []);
  if (!Array.isArray(responseTypes) || responseTypes.some((t) => t !== 'code')) {
    return refuse('invalid_client_metadata', 'response_types may only be ["code"]');
  }
  const authMethod = m.token_endpoint_auth_method ?? 'none';
  if (authMethod !== 'none') {
    return refuse(
      'invalid_client_metadata',
      'token_endpoint_auth_method must be "none": clients are public and prove themselves with PKCE',
    );
  }
  const scope = m.scope ?? allScopes.join(' ');
  const parsed = typeof scope === 'string' ? parseScopes(scope) : null;
  if (!parsed || parsed.length === 0) {
    return refuse('invalid_client_metadata', `scope must be a space-separated subset of: ${allScopes.join(' ')}`);
  }
  return {
    ok: true,
    value: { clientName: clientName as string | null, redirectUris, grantTypes: [...new Set(grants)], scopes: parsed },
  };
}

/**
 * The registered redirect URI a request may use: an exact match (OAuth 2.1 2.3.1), except that a loopback
 * redirect's port may differ (RFC 8252 7.3: a native app listens on a port it is given at run time). When the
 * request names none, the client's only one.
 */
export function matchRedirectUri(registered: readonly string[], requested: string | undefined): string | null {
  if (requested === undefined || requested === '') return registered.length === 1 ? registered[0]! : null;
  if (registered.includes(requested)) return requested;
  let asked: URL;
  try {
    asked = new URL(requested);
  } catch {
    return null;
  }
  if (asked.protocol !== 'http:' || !loopbackHosts.has(asked.hostname)) return null;
  for (const uri of registered) {
    const r = new URL(uri);
    if (r.protocol === asked.protocol && r.hostname === asked.hostname && r.pathname === asked.pathname) {
      if (r.search === asked.search) return requested;
    }
  }
  return null;
}

/** RFC 7636 4.1: a code verifier (and an S256 challenge's character set, 43 characters). */
export const codeVerifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * The scopes a request may have: a subset of what the client registered. An empty request means all of them
 * (RFC 6749 3.3 lets the server pick a default and say so in the response).
 */
export function requestedScopes(requested: string | undefined, allowed: readonly string[]): Checked<Scope[]> {
  if (requested === undefined || requested.trim() === '') return { ok: true, value: [...allowed] as Scope[] };
  const parsed = parseScopes(requested);
  if (!parsed) return refuse('invalid_scope', `unknown scope in "${requested}"`);
  const extra = parsed.filter((s) => !allowed.includes(s));
  if (extra.length > 0) return refuse('invalid_scope', `not granted to this client: ${extra.join(' ')}`);
  return { ok: true, value: parsed };
}

/** RFC 8707 2: one of this server's resources; the agent API when none is named. */
export function requestedResource(resource: string | undefined, resources: readonly string[]): Checked<string> {
  if (resource === undefined || resource === '') return { ok: true, value: resources[0]! };
  const normalised = resource.replace(/\/+$/, '');
  if (!resources.includes(normalised)) {
    return refuse('invalid_target', `the resource must be one of: ${resources.join(', ')}`);
  }
  return { ok: true, value: normalised };
}
