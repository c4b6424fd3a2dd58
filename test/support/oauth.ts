// The OAuth server from a client's side, for tests and benchmarks: oauth4webapi (a maintained, conforming client)
// for the protocol, and a small cookie jar for the web forms a person fills in (over plain HTTP when the browser is
// not the point of the test).
import { spawn } from 'node:child_process';
import * as oauth from 'oauth4webapi';

export { oauth };

/** oauth4webapi refuses plain HTTP unless told; tests run on loopback. */
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export const allGrants = [
  'authorization_code',
  'refresh_token',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange',
];

export async function discover(baseUrl: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(baseUrl);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
}

/** A browser's cookies and the CSRF token its forms carry, for the web pages over plain HTTP. */
export class WebJar {
  cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  get csrf(): string {
    return this.cookies.get('assay_csrf') ?? '';
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async get(path: string): Promise<Response> {
    const res = await fetch(new URL(path, this.baseUrl), { headers: { cookie: this.header() }, redirect: 'manual' });
    this.keep(res);
    return res;
  }

  /** Post a form as a page of the site would (its CSRF token and Origin added). */
  async post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    if (!this.cookies.has('assay_csrf')) await this.get('/signin');
    const res = await fetch(new URL(path, this.baseUrl), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: this.header(),
        origin: new URL(this.baseUrl).origin,
        ...headers,
      },
      body: new URLSearchParams({ csrf: this.csrf, ...form }),
    });
    this.keep(res);
    return res;
  }
}

/** A loopback redirect URI nothing listens on: tests read where the server redirects, and never follow it. */
export const loopbackRedirectUri = 'http://127.0.0.1:9/callback';

/** The claims of an access token (`asyo_` + JWT), decoded but not verified: for a test to inspect. */
export function accessTokenClaims(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.slice('asyo_'.length).split('.')[1]!, 'base64url').toString());
}

export async function signUp(
  baseUrl: string,
  email: string,
  password = 'correct horse battery staple',
): Promise<WebJar> {
  const jar = new WebJar(baseUrl);
  const res = await jar.post('/signup', { email, password, next: '/account' });
  if (res.status !== 303 || !jar.cookies.has('assay_session')) {
    throw new Error(`sign-up failed: ${res.status} ${await res.text()}`);
  }
  return jar;
}

/**
 * `assay login` run as a person runs it, with an initial access token from `jar`'s account page, its device code
 * approved over the verification page's form; resolves once the command has exited. `assay` is the Node arguments
 * that start the command (a checkout's cli/assay.ts through tsx, say).
 */
export async function deviceLogin(
  jar: WebJar,
  o: { assay: string[]; server: string; cwd: string; env: NodeJS.ProcessEnv },
): Promise<void> {
  const token = await issueInitialAccessToken(jar);
  const login = spawn(process.execPath, [...o.assay, 'login', '--server', o.server, '--initial-access-token', token], {
    cwd: o.cwd,
    env: o.env,
  });
  let out = '';
  login.stdout.on('data', (c) => (out += c));
  const exited = new Promise((r) => login.on('close', r));
  const url = await new Promise<URL>((resolve) => {
    const t = setInterval(() => {
      const m = /(http\S+\/device\?user_code=[A-Z-]+)/.exec(out);
      if (m) {
        clearInterval(t);
        resolve(new URL(m[1]!));
      }
    }, 50);
  });
  const page = await (await jar.get(url.pathname + url.search)).text();
  const screenToken = /name="screen_token" value="([^"]+)"/.exec(page)![1]!;
  await jar.post('/device/decision', { screen_token: screenToken, decision: 'approve' });
  await exited;
}

/** The account page's "Issue an initial access token" button, and the page it redirects to that shows it once. */
export async function issueInitialAccessToken(jar: WebJar): Promise<string> {
  const posted = await jar.post('/account/initial-access-tokens', {});
  const location = posted.headers.get('location');
  if (posted.status !== 303 || !location) throw new Error(`issuing answered ${posted.status}, not a redirect`);
  const res = await jar.get(new URL(location).pathname);
  const token = /asyi_[A-Za-z0-9_-]{43}/.exec(await res.text())?.[0];
  if (!token) throw new Error(`no initial access token on the page it is shown on (${res.status})`);
  return token;
}

export async function registerClient(
  as: oauth.AuthorizationServer,
  initialAccessToken: string,
  metadata: Partial<oauth.Client>,
): Promise<oauth.Client> {
  const res = await oauth.dynamicClientRegistrationRequest(as, metadata, { initialAccessToken, ...insecure });
  return oauth.processDynamicClientRegistrationResponse(res);
}

export interface AuthorizationRequest {
  url: URL;
  verifier: string;
  state: string;
  redirectUri: string;
}

export async function authorizationRequest(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  redirectUri: string,
  extra: Record<string, string> = {},
): Promise<AuthorizationRequest> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...extra,
  }).toString();
  return { url, verifier, state, redirectUri };
}

/** A signed-in person's approval on the consent screen, over HTTP: the redirect the browser would follow. */
export async function approveOverHttp(jar: WebJar, request: AuthorizationRequest, decision = 'approve'): Promise<URL> {
  const screen = await jar.get(`${request.url.pathname}${request.url.search}`);
  const html = await screen.text();
  const screenToken = /name="screen_token" value="([^"]+)"/.exec(html)?.[1];
  if (!screenToken) throw new Error(`no consent screen (${screen.status}): ${html.slice(0, 300)}`);
  const res = await jar.post('/oauth/authorize/decision', { screen_token: screenToken, decision });
  const location = res.headers.get('location');
  if (res.status !== 303 || !location) throw new Error(`the decision did not redirect (${res.status})`);
  return new URL(location);
}

/** Exchange the code the redirect carried; throws oauth4webapi's errors for a refusal. */
export async function redeemCode(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  callback: URL,
  request: AuthorizationRequest,
  verifier = request.verifier,
): Promise<oauth.TokenEndpointResponse> {
  const params = oauth.validateAuthResponse(as, client, callback, request.state);
  const res = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    request.redirectUri,
    verifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(as, client, res);
}

/** The RFC 6749 error code of a refused token request, or null when it succeeded. */
export async function tokenError(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) return err.error;
    throw err;
  }
}

/**
 * A person who signed up, with one client registered with an initial access token from the account page: every
 * grant type and the loopback redirect URI unless `metadata` says otherwise.
 */
export async function accountWithClient(
  as: oauth.AuthorizationServer,
  baseUrl: string,
  email: string,
  metadata: Partial<oauth.Client> = {},
): Promise<{ jar: WebJar; client: oauth.Client }> {
  const jar = await signUp(baseUrl, email);
  const client = await registerClient(as, await issueInitialAccessToken(jar), {
    redirect_uris: [loopbackRedirectUri],
    grant_types: allGrants,
    ...metadata,
  });
  return { jar, client };
}

/** Tokens for `client` once its person approves the request on the consent screen (over HTTP). */
export async function approvedTokens(
  as: oauth.AuthorizationServer,
  jar: WebJar,
  client: oauth.Client,
  extra: Record<string, string> = {},
): Promise<oauth.TokenEndpointResponse> {
  const request = await authorizationRequest(as, client, loopbackRedirectUri, extra);
  return redeemCode(as, client, await approveOverHttp(jar, request), request);
}
