// Where the OAuth service's answers become HTTP. The service says what happened, a result or a refusal
// (contracts/oauth.ts); this module alone words it: an RFC 6749 JSON body with its status and headers, a redirect
// back to the client's redirect URI (with `state` and the RFC 9207 `iss`), or a page a person reads.
import { accessTokenType, type Config, type OAuthRefusalT, type OAuthReply } from '../../contracts/index.ts';
import { json, redirect, type WebResponse } from './http.ts';

/** A refusal as the service sends it; `returnTo` when the client's redirect URI may receive it. */
export type OAuthRefused = Extract<OAuthReply<'authorize'>, { kind: 'refused' }>;

/** Refusals the web face decides itself, before the service is asked: a malformed or a foreign request. */
export type FaceRefusal = { refused: 'repeated_parameters'; names: string[] } | { refused: 'decision_not_ours' };

/** Any refusal this module words: the service's or the face's own. */
type Refused = { refusal: OAuthRefusalT | FaceRefusal; returnTo?: OAuthRefused['returnTo'] };

/** RFC 6749 5.1 and RFC 7009: what the token and revocation endpoints answer is never cached. */
export const tokenEndpointHeaders = { 'cache-control': 'no-store', pragma: 'no-cache' };

/** What a person reads for a refusal: the page's status, title and words. */
export interface RefusalWords {
  status: number;
  title: string;
  message: string;
}

/** Where a refusal is shown: a protocol endpoint's JSON, or a page of the authorization or the device flow. */
export type RefusalSurface =
  | { kind: 'endpoint'; headers?: Record<string, string> }
  | { kind: 'page'; flow: 'authorization' | 'device'; show: (words: RefusalWords) => WebResponse };

/** RFC 6749 5.2: invalid_client is 401; every other error is 400. */
const statusOfError = (error: string) => (error === 'invalid_client' ? 401 : 400);

/** The one exit for OAuth refusals. */
export function refusalAnswer(config: Config, r: Refused, surface: RefusalSurface): WebResponse {
  const refusal = r.refusal;
  // RFC 6749 4.1.2.1: once the client and its redirect URI are known, the client is told there.
  if (surface.kind === 'page' && r.returnTo && refusal.refused === 'protocol') {
    return redirectToClient(config, r.returnTo, { error: refusal.error, error_description: refusal.description });
  }
  if (surface.kind === 'page') return surface.show(personWords(refusal, surface.flow));
  const headers = surface.headers ?? {};
  switch (refusal.refused) {
    case 'protocol':
      return json(
        statusOfError(refusal.error),
        { error: refusal.error, error_description: refusal.description },
        headers,
      );
    case 'too_many_device_codes':
      // RFC 8628 names no error for too many device codes; slow_down is its word for "too fast".
      return json(
        429,
        { error: 'slow_down', error_description: 'too many device codes started; wait a minute and try again' },
        { ...headers, 'retry-after': String(refusal.retryAfterS) },
      );
    case 'initial_access_token_required':
      // RFC 7591 3 with RFC 6750 3.1's words.
      return json(
        401,
        {
          error: 'invalid_token',
          error_description:
            'a valid initial access token is required (Bearer asyi_...); each one registers a single client',
        },
        { ...headers, 'www-authenticate': 'Bearer error="invalid_token"' },
      );
    default:
      return json(400, { error: 'invalid_request', error_description: personWords(refusal, 'authorization').message });
  }
}

/** RFC 6749 4.1.2: the answer goes back to the client's redirect URI, with `state` and (RFC 9207) `iss`. */
export function redirectToClient(
  config: Config,
  returnTo: { redirectUri: string; state: string | null },
  params: Record<string, string>,
): WebResponse {
  const url = new URL(returnTo.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (returnTo.state !== null) url.searchParams.set('state', returnTo.state);
  url.searchParams.set('iss', config.baseUrl);
  return redirect(url.toString());
}

/** A refusal in a person's words, for the page of the flow it happened in. */
export function personWords(refusal: OAuthRefusalT | FaceRefusal, flow: 'authorization' | 'device'): RefusalWords {
  const authorizing = flow === 'authorization';
  switch (refusal.refused) {
    case 'repeated_parameters':
      // RFC 6749 3.1: a parameter must not be sent twice; which value was meant cannot be known.
      return {
        status: 400,
        title: 'Malformed request',
        message: `The application sent these parameters more than once: ${refusal.names.join(', ')}.`,
      };
    case 'decision_not_ours':
      return {
        status: 403,
        title: 'Not accepted',
        message: 'This decision did not come from a consent screen of yours. Nothing was approved.',
      };
    case 'unknown_client':
      return {
        status: 400,
        title: 'Unknown application',
        message: 'The application that sent you here is not registered.',
      };
    case 'unregistered_redirect_uri':
      return {
        status: 400,
        title: 'Wrong return address',
        message: 'The application asked to send the answer to an address it did not register, so nothing was sent.',
      };
    case 'client_metadata_unusable':
      return {
        status: 400,
        title: 'Unusable application',
        message: `The application describes itself in a document that cannot be used: ${refusal.problem}. Nothing was sent to it.`,
      };
    case 'another_accounts_client':
      return authorizing
        ? {
            status: 400,
            title: 'Another account’s application',
            message:
              'This application was registered by another account. Sign out and sign in with that account to authorize it.',
          }
        : {
            status: 400,
            title: 'Another account’s application',
            message: 'This application was registered by another account. Sign in with that account to approve it.',
          };
    case 'client_removed':
      return {
        status: 400,
        title: 'Unknown application',
        message: authorizing ? 'The application was removed meanwhile.' : 'The application was removed.',
      };
    case 'screen_expired':
      return authorizing
        ? {
            status: 400,
            title: 'This page has expired',
            message:
              'The consent screen was not valid any more (or not yours). Go back to the application and start again.',
          }
        : { status: 200, title: 'This page has expired', message: 'Start again from your device.' };
    case 'unknown_user_code':
      return {
        status: 400,
        title: 'Unknown code',
        message: 'That code is not valid (or it expired). Check the code your device shows.',
      };
    case 'device_code_not_pending':
      return {
        status: 200,
        title: 'Code expired',
        message: 'The code expired or was used. Start again from your device.',
      };
    case 'protocol':
      return { status: 400, title: 'Request refused', message: `The request was refused: ${refusal.description}.` };
    case 'too_many_device_codes':
      return { status: 429, title: 'Too many requests', message: 'Too many device codes were started. Wait a minute.' };
    case 'initial_access_token_required':
      return { status: 401, title: 'Not authorized', message: 'A valid initial access token is required.' };
  }
}

/**
 * A protocol endpoint's answer (registration, token, device authorization, revocation) as the RFCs word it; the
 * token and revocation endpoints send `tokenEndpointHeaders` with every answer, refusals included.
 */
export function endpointAnswer(
  config: Config,
  answer: OAuthReply<'register' | 'token' | 'deviceAuthorization' | 'revoke'>,
  refusalHeaders: Record<string, string> = {},
): WebResponse {
  switch (answer.kind) {
    case 'refused':
      return refusalAnswer(config, answer, { kind: 'endpoint', headers: refusalHeaders });
    case 'registered':
      // RFC 7591 3.2.1.
      return json(201, {
        client_id: answer.clientId,
        client_id_issued_at: answer.issuedAtS,
        ...(answer.clientName === null ? {} : { client_name: answer.clientName }),
        redirect_uris: answer.redirectUris,
        grant_types: answer.grantTypes,
        response_types: answer.grantTypes.includes('authorization_code') ? ['code'] : [],
        token_endpoint_auth_method: 'none',
        scope: answer.scopes.join(' '),
      });
    case 'device_code': {
      // RFC 8628 3.2.
      const verificationUri = `${config.webUrl}/device`;
      return json(200, {
        device_code: answer.deviceCode,
        user_code: answer.userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${answer.userCode}`,
        expires_in: answer.expiresInS,
        interval: answer.intervalS,
      });
    }
    case 'tokens':
      // RFC 6749 5.1; RFC 8693 2.2.1 names what an exchange issued.
      return json(
        200,
        {
          access_token: answer.accessToken,
          token_type: 'Bearer',
          expires_in: answer.expiresInS,
          scope: answer.scopes.join(' '),
          ...(answer.exchanged ? { issued_token_type: accessTokenType } : {}),
          ...(answer.refreshToken === undefined ? {} : { refresh_token: answer.refreshToken }),
        },
        tokenEndpointHeaders,
      );
    case 'revoked':
      return json(200, {}, tokenEndpointHeaders);
  }
}
