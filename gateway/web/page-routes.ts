// The pages people use: sign-up, sign-in, sign-out, the account page and its forms, and device verification.
// Forms post back here and are answered with a redirect (303) or the page again with a message; every post is
// checked for its CSRF token and origin first (session.ts).
import { randomUUID } from 'node:crypto';
import {
  apiKeyNameLengthMax,
  type Caller,
  type Config,
  labelIdsMax,
  isUuid,
  operationById,
  passwordMinLength,
  textProblem,
} from '../../contracts/index.ts';
import { ownCaller } from '../bus.ts';
import type { WebContext, WebRoute } from './route.ts';
import { copyScript, copyScriptPath } from './copy-script.ts';
import { cookie, page, parseForm, redirectHere, safeNext, type WebRequest, type WebResponse } from './http.ts';
import { refusalAnswer } from './oauth-answers.ts';
import { scopeList } from './oauth-routes.ts';
import type { AccountActivity, AccountPage, AccountTestMode, WebhookDraft } from './page-data.ts';
import { recentDeliveriesShown } from './webhook-views.ts';
import {
  accountPage,
  addCreditsPage,
  deviceConfirmPage,
  deviceEntryPage,
  messagePage,
  newInitialAccessTokenPage,
  signInPage,
  signUpPage,
} from './pages.ts';
import {
  csrfOf,
  formIsOurs,
  secureCookies,
  sessionClearCookie,
  sessionCookie,
  sessionOf,
  sessionRoute,
  sessionSetCookie,
  type WebSession,
} from './session.ts';

const createMandate = operationById('createMandate');
const getMandates = operationById('getMandates');
const getApprovals = operationById('getApprovals');
const getBalance = operationById('getBalance');
const getOrders = operationById('getOrders');
const listEvents = operationById('listEvents');

/** How many of its newest orders and events each side of the account page shows. */
const activityShown = '10';
const approvePurchase = operationById('approvePurchase');
const declinePurchase = operationById('declinePurchase');

/** Notices after an account action, by the code in the redirect (`/account?done=...`): no free text in URLs. */
const notices: Record<string, string> = {
  revoke_grant: 'Access revoked: the agent’s tokens stop working now.',
  revoke_token: 'Token revoked.',
  revoke_client: 'Client removed, and every access it held revoked.',
  revoke_initial_access_token: 'Initial access token revoked.',
  mandate: 'Mandate saved. It binds every agent of yours from now on.',
  approve: 'Purchase approved and bought: the agent that asked is told.',
  decline: 'Purchase declined: nothing was bought, and the agent that asked is told.',
  issue_api_key: 'API key issued. Copy it now: it is not shown again.',
  revoke_api_key: 'API key revoked: it stops working now.',
  enable_webhook: 'Webhook re-enabled: it takes the events made from now on.',
  pause_webhook: 'Webhook paused: events made while it is paused are not sent to it.',
  delete_webhook: 'Webhook deleted: nothing more is sent to it.',
  test_webhook:
    'Test event sent: its delivery shows under the webhook’s recent deliveries in a moment (reload to see it).',
  card_saved: 'Card saved at the payment processor. It shows here once the processor confirms, in a moment.',
  card_canceled: 'No card was saved.',
  payouts_returned: 'Back from the processor. Payouts are enabled once it has checked your details.',
};

/** Where a new initial access token is shown, once, and the cookie that carries it there (an empty value clears it). */
const newTokenPath = '/account/initial-access-tokens/new';
const newTokenCookieName = 'assay_new_initial_access_token';
/** How long the cookie may wait for its page: the browser follows the redirect at once; one never followed lapses. */
const newTokenCookieSeconds = 300;
const newTokenCookie = (config: Config, token: string) =>
  cookie(newTokenCookieName, token, {
    maxAgeSeconds: token ? newTokenCookieSeconds : 0,
    sameSite: 'Strict',
    secure: secureCookies(config),
    path: newTokenPath,
  });

/** The notice for a `done` code; a name the table does not hold (`constructor`, `__proto__`) has none. */
const noticeOf = (done: string | null) => (done !== null && Object.hasOwn(notices, done) ? notices[done]! : null);

type Frame = { webUrl: string; signedInAs: string | null; csrf: string };

function frameOf(ctx: WebContext, req: WebRequest, session: WebSession | null): { frame: Frame; setCookie: string[] } {
  const { csrf, setCookie } = csrfOf(ctx.config, req);
  return { frame: { webUrl: ctx.config.webUrl, signedInAs: session?.email ?? null, csrf }, setCookie };
}

function refusedForm(ctx: WebContext, req: WebRequest, session: WebSession | null): WebResponse {
  const { frame, setCookie } = frameOf(ctx, req, session);
  return page(
    403,
    messagePage({
      ...frame,
      title: 'Form expired',
      message:
        'This form was not sent from a page of this site (or it expired). Go back, reload the page and try again.',
      link: { href: `${ctx.config.webUrl}/account`, text: 'Your account' },
    }),
    setCookie,
  );
}

const toSignIn = (ctx: WebContext, req: WebRequest) =>
  redirectHere(ctx.config.webUrl, `/signin?next=${encodeURIComponent(req.target)}`);

/** The account page, with what the service and the principal's mandate say now. */
export async function renderAccount(
  ctx: WebContext,
  req: WebRequest,
  session: WebSession,
  extra: {
    notice?: string | null;
    error?: string | null;
    newApiKey?: { name: string; key: string } | null;
    webhookDraft?: WebhookDraft | null;
    newWebhookSecret?: AccountPage['newWebhookSecret'];
    newSandboxToken?: AccountTestMode['newToken'];
    status?: number;
  } = {},
): Promise<WebResponse> {
  const reader = webCaller(session, ['read:artifact', 'purchase']);
  const own = asOwner(session, req);
  const readOpts = (limit?: string) => ({
    requestId: req.requestId,
    clientAddress: req.clientAddress,
    ...(limit ? { query: { limit } } : {}),
  });
  const [account, apiKeys, webhooks, mandates, approvals, billing, balance, live, sandbox] = await Promise.all([
    ctx.ask('oauth.account', { principalId: session.principalId }, { requestId: req.requestId }),
    ctx.ask('oauth.apiKeyList', { principalId: session.principalId }, { requestId: req.requestId }),
    // A principal holds at most 20 webhooks, so one page of 100 is all of them.
    ctx.ask('webhook.list', { offset: 0, limit: 100 }, own),
    ctx.pipeline.callAs(reader, getMandates, readOpts('1')),
    ctx.pipeline.callAs(reader, getApprovals, readOpts('50')),
    ctx.ask('billing.get', { principalId: session.principalId }, own),
    ctx.pipeline.callAs(reader, getBalance, readOpts()),
    activityOf(ctx, req, reader),
    ctx.ask('sandbox.account', { principalId: session.principalId }, { requestId: req.requestId }),
  ]);
  if (!sandbox.ok) throw new Error(`test mode refused: ${sandbox.reply.error.message}`);
  const sandboxId = sandbox.body.sandboxPrincipalId;
  // The sandbox side is read as its own principal: its credits, orders and events are its own, never the account's.
  const tester = sandboxId === null ? null : sandboxCaller(sandboxId);
  const [test, testBalance, deliveries] = await Promise.all([
    tester ? activityOf(ctx, req, tester) : null,
    tester ? ctx.pipeline.callAs(tester, getBalance, readOpts()) : null,
    webhooks.ok
      ? Promise.all(
          webhooks.body.items.map((w) => ctx.ask('webhook.attempts', { id: w.id, limit: recentDeliveriesShown }, own)),
        )
      : [],
  ]);
  if (testBalance && !testBalance.ok) throw new Error(`test balance refused: ${testBalance.error.message}`);
  if (!billing.ok) throw new Error(`billing refused: ${billing.reply.error.message}`);
  if (!balance.ok) throw new Error(`balance refused: ${balance.error.message}`);
  if (!account.ok) throw new Error(`account refused: ${account.reply.error.message}`);
  if (!apiKeys.ok) throw new Error(`API keys refused: ${apiKeys.reply.error.message}`);
  if (!webhooks.ok) throw new Error(`webhooks refused: ${webhooks.reply.error.message}`);
  if (!approvals.ok) throw new Error(`approvals refused: ${approvals.error.message}`);
  if (!mandates.ok) throw new Error(`mandates refused: ${mandates.error.message}`);
  const b = billing.body;
  const current = mandates.body.items.find((m) => m.current && !m.revoked);
  const listingIds = new Set<string>();
  const agentIds = new Set<string>();
  for (const a of approvals.body.items) {
    listingIds.add(a.listingId);
    agentIds.add(a.agentId);
  }
  for (const o of [...live.orders, ...(test?.orders ?? [])]) {
    listingIds.add(o.listingId);
    agentIds.add(o.agentId);
  }
  const labels = await ctx.ask(
    'account.labels',
    {
      principalIds: sandboxId === null ? [session.principalId] : [session.principalId, sandboxId],
      listingIds: [...listingIds].slice(0, labelIdsMax),
      agentIds: [...agentIds].slice(0, labelIdsMax),
    },
    { requestId: req.requestId },
  );
  if (!labels.ok) throw new Error(`labels refused: ${labels.reply.error.message}`);
  const { frame, setCookie } = frameOf(ctx, req, session);
  const a = account.body;
  return page(
    extra.status ?? 200,
    accountPage({
      ...frame,
      email: a.email,
      principalId: session.principalId,
      clients: a.clients,
      grants: a.grants.map((g) => ({ ...g, scopes: scopeList(g.scopes) })),
      initialAccessTokens: a.initialAccessTokens,
      apiUrl: ctx.config.apiUrl,
      // Revoked keys are history, not something to act on: the page lists the ones that still work.
      apiKeys: apiKeys.body
        .filter((k) => k.revoked_at === null)
        .map((k) => ({ id: k.id, name: k.name, hint: k.hint, createdAt: k.created_at, lastUsedAt: k.last_used_at })),
      newApiKey: extra.newApiKey ?? null,
      apiKeyNameLengthMax,
      webhooks: webhooks.body.items.map((w, i) => {
        const attempts = deliveries[i];
        if (attempts && !attempts.ok) throw new Error(`deliveries refused: ${attempts.reply.error.message}`);
        return {
          id: w.id,
          name: w.name,
          url: w.url,
          events: w.events,
          isActive: w.is_active,
          disabledReason: w.disabled_reason,
          createdAt: w.created_at,
          deliveries: (attempts?.body.items ?? []).map((a) => ({
            eventId: a.event_id,
            eventType: a.event_type,
            attempt: a.attempt,
            at: a.at,
            status: a.status,
            error: a.error,
            outcome: a.outcome,
          })),
        };
      }),
      webhookDraft: extra.webhookDraft ?? null,
      webhookAllowLoopback: ctx.config.webhookAllowLoopback,
      newWebhookSecret: extra.newWebhookSecret ?? null,
      baseUrl: ctx.config.baseUrl,
      live,
      testMode: {
        baseUrl: ctx.config.baseUrl,
        grantCents: ctx.config.sandboxGrantCents,
        sandbox:
          sandboxId === null || test === null || testBalance === null
            ? null
            : {
                principalId: sandboxId,
                balanceCents: testBalance.body.balance_cents,
                agents: sandbox.body.agents,
                activity: test,
              },
        newToken: extra.newSandboxToken ?? null,
        formAgentId: randomUUID(),
      },
      labels: {
        listings: Object.fromEntries(
          labels.body.listings.map((l) => [
            l.id,
            {
              title: l.title,
              priceCents: l.priceCents,
              floor: l.floor,
              meanEntailment: l.report?.meanEntailment ?? null,
            },
          ]),
        ),
        agents: Object.fromEntries(labels.body.agents.map((a) => [a.id, a.name])),
      },
      mandate: current
        ? {
            perItemCapCents: current.perItemCapCents,
            minTrust: current.minTrust,
            minFloor: current.minFloor ?? 0,
            minJudgeVersion: current.minJudgeVersion,
            minJudgeSpecificity: current.minJudgeSpecificity ?? null,
            rejectOpenJudgeErrata: current.rejectOpenJudgeErrata,
            approvalAboveCents: current.approvalAboveCents ?? null,
          }
        : null,
      approvals: approvals.body.items,
      money: {
        processor: ctx.config.stripeSecretKey !== '',
        balanceCents: balance.body.balance_cents,
        card: b.card && { brand: b.card.brand, last4: b.card.last4, savedAt: b.card.savedAt },
        payouts: b.payoutAccount && { enabled: b.payoutAccount.payoutsEnabled, paidOutCents: b.paidOutCents },
      },
      mandateKey: randomUUID(),
      notice: extra.notice ?? null,
      error: extra.error ?? null,
    }),
    setCookie,
  );
}

/** One side's newest orders and events, read through the agent API's own operations as `caller`. */
async function activityOf(ctx: WebContext, req: WebRequest, caller: Caller): Promise<AccountActivity> {
  const o = { requestId: req.requestId, clientAddress: req.clientAddress, query: { limit: activityShown } };
  const [orders, events] = await Promise.all([
    ctx.pipeline.callAs(caller, getOrders, o),
    // Newest first: the events resource's read, not GET /v1/events' oldest-first walk.
    ctx.pipeline.callAs(caller, listEvents, { ...o, dispatchAs: 'events.latest' }),
  ]);
  if (!orders.ok) throw new Error(`orders refused: ${orders.error.message}`);
  if (!events.ok) throw new Error(`events refused: ${events.error.message}`);
  return {
    orders: orders.body.items.map((x) => ({
      id: x.id,
      listingId: x.listingId,
      agentId: x.buyerAgentId,
      state: x.state,
      escrowCents: x.escrowCents,
      refundReason: x.refundReason,
      createdAt: x.createdAt,
    })),
    events: events.body.items.map((e) => ({ id: e.id, type: e.type, createdAt: e.created_at })).reverse(),
  };
}

/** The account's sandbox principal, read as itself (the page's reads of the test side). */
function sandboxCaller(sandboxPrincipalId: string): Caller {
  return {
    principalId: sandboxPrincipalId,
    agentId: sandboxPrincipalId,
    scopes: ['read:artifact', 'purchase'],
    sandbox: true,
  };
}

/** A request's options for an operation the signed-in person runs on their own principal actor, as the principal. */
export function asOwner(session: WebSession, req: WebRequest) {
  return { requestId: req.requestId, actorId: session.principalId, caller: ownCaller(session.principalId) };
}

/** The person acting on the web, as an agent caller of the agent API (the account's own `web` agent). */
export function webCaller(session: WebSession, scopes: string[]) {
  return { principalId: session.principalId, agentId: session.webAgentId, scopes, sandbox: false };
}

/** A page for a signed-in person; anyone else is sent to sign in and back. */
function signedInPage(
  path: string,
  show: (ctx: WebContext, req: WebRequest, session: WebSession) => Promise<WebResponse>,
): WebRoute {
  return sessionRoute({ method: 'GET', path, body: 'none' }, toSignIn, show);
}

/** A form route that needs a signed-in person and a form of ours. */
export function accountForm(
  path: string,
  act: (ctx: WebContext, req: WebRequest, session: WebSession, form: Record<string, string>) => Promise<WebResponse>,
): WebRoute {
  return sessionRoute(
    { method: 'POST', path, body: 'text' },
    (ctx) => redirectHere(ctx.config.webUrl, '/signin?next=/account'),
    async (ctx, req, session) => {
      const { form } = parseForm(req.body);
      if (!formIsOurs(ctx.config, req, form)) return refusedForm(ctx, req, session);
      return act(ctx, req, session, form);
    },
  );
}

/** One account action through the service, then back to the account page with its notice. */
function accountAction(
  path: string,
  action: 'revoke_grant' | 'revoke_token' | 'revoke_client' | 'revoke_initial_access_token',
  idParam: string,
): WebRoute {
  return accountForm(path, async (ctx, req, session) => {
    const r = await ctx.ask(
      'oauth.accountAction',
      { principalId: session.principalId, action, id: req.params[idParam] ?? '' },
      { requestId: req.requestId },
    );
    if (!r.ok) return renderAccount(ctx, req, session, { error: r.reply.error.message, status: 404 });
    return redirectHere(ctx.config.webUrl, `/account?done=${action}`);
  });
}

/** An empty field is null (no threshold); a number is itself; anything else goes on for validation to refuse. */
function optionalNumber(value: string | undefined): unknown {
  if (value === undefined || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : value;
}

/**
 * Approve or decline a purchase waiting for approval, through the agent API's own operation. The key is the
 * action and the request: a double submit replays the first answer, and a refused approval (no credits yet, say)
 * recorded nothing, so trying again after a top-up runs again.
 */
function approvalDecision(
  path: string,
  op: typeof approvePurchase | typeof declinePurchase,
  done: 'approve' | 'decline',
): WebRoute {
  return accountForm(path, async (ctx, req, session) => {
    const id = req.params.id ?? '';
    const r = await ctx.pipeline.callAs(webCaller(session, ['manage:mandate']), op, {
      params: { approval_id: id },
      body: {},
      idempotencyKey: `web-${done}-${id}`,
      requestId: req.requestId,
      clientAddress: req.clientAddress,
    });
    if (!r.ok) {
      if (r.error.code === 'insufficient_credits') return addCreditsFirst(ctx, req, session, id);
      return renderAccount(ctx, req, session, { error: r.error.message, status: r.status });
    }
    const state = r.body.state;
    // A request already decided, or past its time, answers as it stands: say what it is, not what was asked.
    if (state === 'expired') {
      return renderAccount(ctx, req, session, { error: 'That request had expired: nothing was bought.', status: 409 });
    }
    if ((done === 'approve') !== (state === 'approved')) {
      return renderAccount(ctx, req, session, { error: `That request was already ${state}.`, status: 409 });
    }
    return redirectHere(ctx.config.webUrl, `/account?done=${done}`);
  });
}

/**
 * An approval refused for want of credits: a page that says what to do (add credits, then approve again) and links to
 * where, with the price and what is available, not the refusal's words with the request's id. Nothing was bought, and
 * the request waits on.
 */
async function addCreditsFirst(ctx: WebContext, req: WebRequest, session: WebSession, id: string) {
  const o = { requestId: req.requestId, clientAddress: req.clientAddress };
  const [approvals, balance] = await Promise.all([
    ctx.pipeline.callAs(webCaller(session, ['read:artifact']), getApprovals, {
      ...o,
      query: { state: 'pending', limit: '100' },
    }),
    ctx.pipeline.callAs(webCaller(session, ['read:artifact']), getBalance, o),
  ]);
  if (!balance.ok) throw new Error(`balance refused: ${balance.error.message}`);
  const waiting = approvals.ok ? approvals.body.items.find((a) => a.id === id) : undefined;
  const { frame, setCookie } = frameOf(ctx, req, session);
  return page(
    409,
    addCreditsPage({
      ...frame,
      priceCents: waiting?.priceCents ?? null,
      availableCents: balance.body.balance_cents,
      expiresAt: waiting?.expiresAt ?? null,
      cardPayments: ctx.config.stripeSecretKey !== '',
    }),
    setCookie,
  );
}

/**
 * Pause a webhook or re-enable it, through the same operation as the context-file API's `PATCH /webhooks/{id}`.
 * The principal's actor answers not_found for an id that is not the person's own.
 */
function webhookSwitch(path: string, isActive: boolean, done: 'enable_webhook' | 'pause_webhook'): WebRoute {
  return accountForm(path, async (ctx, req, session) => {
    const r = await ctx.ask(
      'webhook.update',
      { id: req.params.id ?? '', patch: { is_active: isActive } },
      asOwner(session, req),
    );
    if (!r.ok) {
      if (r.reply.error.code !== 'not_found') throw new Error(`changing a webhook refused: ${r.reply.error.message}`);
      return renderAccount(ctx, req, session, { error: 'That is not there any more.', status: 404 });
    }
    return redirectHere(ctx.config.webUrl, `/account?done=${done}`);
  });
}

async function signInOrUp(ctx: WebContext, req: WebRequest, kind: 'signIn' | 'signUp'): Promise<WebResponse> {
  const { form } = parseForm(req.body);
  const next = safeNext(form.next);
  const { frame, setCookie } = frameOf(ctx, req, null);
  // A form sent again keeps its submission id (so a retry after a lost answer is known); a new form gets one.
  const submission = form.submission && isUuid(form.submission) ? form.submission : randomUUID();
  const again = (status: number, error: string) =>
    page(
      status,
      kind === 'signIn'
        ? signInPage({ ...frame, next, email: form.email ?? '', error })
        : signUpPage({ ...frame, next, email: form.email ?? '', error, passwordMinLength, submission }),
      setCookie,
    );
  if (!formIsOurs(ctx.config, req, form)) return again(403, 'This form expired. Please try again.');
  const credentials = { email: form.email ?? '', password: form.password ?? '', clientAddress: req.clientAddress };
  const o = { requestId: req.requestId, timeoutMs: ctx.config.passwordWorkTimeoutMs };
  const r =
    kind === 'signUp'
      ? await ctx.ask(
          'oauth.signUp',
          form.submission && isUuid(form.submission) ? { ...credentials, submission: form.submission } : credentials,
          o,
        )
      : await ctx.ask('oauth.signIn', credentials, o);
  if (!r.ok) {
    const e = r.reply.error;
    if (e.code === 'rate_limited') return again(429, e.message);
    if (e.code === 'unauthorized' || e.code === 'validation_failed')
      return again(e.code === 'unauthorized' ? 401 : 400, e.message);
    if (e.code === 'unavailable') {
      // The answer may be lost rather than the work: the same form, sent again, finishes or signs in.
      return again(
        503,
        kind === 'signUp'
          ? 'The service is busy and did not answer in time. Send the form again: if your account was made, this signs you in to it.'
          : 'The service is busy and did not answer in time. Send the form again in a moment.',
      );
    }
    throw new Error(`${kind} refused: ${e.message}`);
  }
  return redirectHere(ctx.config.webUrl, next, [sessionSetCookie(ctx.config, r.body.sessionToken)]);
}

/** The device pages: the code entry, or the confirmation for a code the service knows. */
async function deviceStep(ctx: WebContext, req: WebRequest, session: WebSession, userCode: string) {
  const { frame, setCookie } = frameOf(ctx, req, session);
  if (!userCode) return page(200, deviceEntryPage({ ...frame, userCode: '', error: null }), setCookie);
  const r = await ctx.ask(
    'oauth.deviceLookup',
    { principalId: session.principalId, userCode, clientAddress: req.clientAddress },
    { requestId: req.requestId },
  );
  if (!r.ok) {
    if (r.reply.error.code !== 'rate_limited') throw new Error(`device lookup refused: ${r.reply.error.message}`);
    return page(429, deviceEntryPage({ ...frame, userCode, error: r.reply.error.message }), setCookie);
  }
  if (r.body.kind === 'refused') {
    return refusalAnswer(ctx.config, r.body, {
      kind: 'page',
      flow: 'device',
      show: (w) => page(w.status, deviceEntryPage({ ...frame, userCode, error: w.message }), setCookie),
    });
  }
  return page(
    200,
    deviceConfirmPage({
      ...frame,
      client: r.body.client,
      userCode: r.body.userCode,
      scopes: scopeList(r.body.scopes),
      screenToken: r.body.screenToken,
    }),
    setCookie,
  );
}

export function pageRoutes(_config: Config): WebRoute[] {
  return [
    {
      method: 'GET',
      path: copyScriptPath,
      body: 'none',
      // The same bytes for everyone, and the page names them by hash: cacheable, and never sniffed as anything else.
      handle: async () => ({
        status: 200,
        headers: { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' },
        contentType: 'text/javascript; charset=utf-8',
        body: copyScript,
      }),
    },
    {
      method: 'GET',
      path: '/signin',
      body: 'none',
      async handle(ctx, req) {
        const next = safeNext(req.query.get('next'));
        const session = await sessionOf(ctx, req);
        if (session) return redirectHere(ctx.config.webUrl, next);
        const { frame, setCookie } = frameOf(ctx, req, null);
        return page(200, signInPage({ ...frame, next, email: '', error: null }), setCookie);
      },
    },
    { method: 'POST', path: '/signin', body: 'text', handle: (ctx, req) => signInOrUp(ctx, req, 'signIn') },
    {
      method: 'GET',
      path: '/signup',
      body: 'none',
      async handle(ctx, req) {
        const next = safeNext(req.query.get('next'));
        const { frame, setCookie } = frameOf(ctx, req, null);
        return page(
          200,
          signUpPage({ ...frame, next, email: '', error: null, passwordMinLength, submission: randomUUID() }),
          setCookie,
        );
      },
    },
    { method: 'POST', path: '/signup', body: 'text', handle: (ctx, req) => signInOrUp(ctx, req, 'signUp') },
    {
      method: 'POST',
      path: '/signout',
      body: 'text',
      async handle(ctx, req) {
        const { form } = parseForm(req.body);
        const token = req.cookies[sessionCookie];
        if (!formIsOurs(ctx.config, req, form)) return refusedForm(ctx, req, null);
        if (token) await ctx.ask('oauth.signOut', { sessionToken: token }, { requestId: req.requestId });
        return redirectHere(ctx.config.webUrl, '/signin', [sessionClearCookie(ctx.config)]);
      },
    },
    signedInPage('/account', (ctx, req, session) =>
      renderAccount(ctx, req, session, { notice: noticeOf(req.query.get('done')) }),
    ),
    accountForm('/account/mandate', async (ctx, req, session, form) => {
      const cap = Number(form.per_item_cap_cents);
      const minTrust = form.min_trust === undefined || form.min_trust === '' ? 0 : Number(form.min_trust);
      const minFloor = form.min_floor === undefined || form.min_floor === '' ? 0 : Number(form.min_floor);
      const body: Record<string, unknown> = {
        per_item_cap_cents: Number.isFinite(cap) ? cap : form.per_item_cap_cents,
        min_trust: Number.isFinite(minTrust) ? minTrust : form.min_trust,
        min_floor: Number.isFinite(minFloor) ? minFloor : form.min_floor,
        min_judge_version: form.min_judge_version ? form.min_judge_version : null,
        min_judge_specificity: optionalNumber(form.min_judge_specificity),
        reject_open_judge_errata: form.reject_open_judge_errata === 'true',
        approval_above_cents: optionalNumber(form.approval_above_cents),
      };
      const r = await ctx.pipeline.runAs(webCaller(session, ['manage:mandate']), {
        op: createMandate,
        token: undefined,
        params: {},
        query: {},
        body: { kind: 'value', value: body },
        idempotencyKey: form.idempotency_key || randomUUID(),
        requestId: req.requestId,
        clientAddress: req.clientAddress,
      });
      if (r.error) return renderAccount(ctx, req, session, { error: r.error.message, status: r.status });
      return redirectHere(ctx.config.webUrl, '/account?done=mandate');
    }),
    approvalDecision('/account/approvals/{id}/approve', approvePurchase, 'approve'),
    approvalDecision('/account/approvals/{id}/decline', declinePurchase, 'decline'),
    accountForm('/account/initial-access-tokens', async (ctx, req, session) => {
      const r = await ctx.ask(
        'oauth.accountAction',
        { principalId: session.principalId, action: 'issue_initial_access_token' },
        { requestId: req.requestId },
      );
      const issued = r.ok ? r.body.newInitialAccessToken : undefined;
      if (!issued)
        throw new Error(`issuing an initial access token refused: ${r.ok ? 'no token' : r.reply.error.message}`);
      // Post, redirect, get: a reload of the page that shows it issues nothing. The token rides to that page in a
      // cookie only that page is sent, which it clears; never in a URL.
      return redirectHere(ctx.config.webUrl, newTokenPath, [newTokenCookie(ctx.config, issued.token)]);
    }),
    signedInPage(newTokenPath, async (ctx, req, session) => {
      const token = req.cookies[newTokenCookieName];
      // Shown only if it is this person's own, unused token: a cookie planted by anyone else shows nothing.
      const shown = token
        ? await ctx.ask(
            'oauth.accountAction',
            { principalId: session.principalId, action: 'show_initial_access_token', token },
            { requestId: req.requestId },
          )
        : null;
      const { frame, setCookie } = frameOf(ctx, req, session);
      return page(
        200,
        newInitialAccessTokenPage({ ...frame, token: shown?.ok ? (shown.body.newInitialAccessToken ?? null) : null }),
        [...setCookie, newTokenCookie(ctx.config, '')],
      );
    }),
    accountAction('/account/initial-access-tokens/{id}/revoke', 'revoke_initial_access_token', 'id'),
    // API keys go through the same service operations as the context-file API's `/api-keys` route.
    accountForm('/account/api-keys', async (ctx, req, session, form) => {
      const name = (form.name ?? '').trim();
      const error =
        name.length === 0 || name.length > apiKeyNameLengthMax
          ? `Give the key a name of 1 to ${apiKeyNameLengthMax} characters.`
          : textProblem(name) === null
            ? null
            : 'The name contains a character that cannot be kept (NUL): remove it.';
      if (error !== null) return renderAccount(ctx, req, session, { error, status: 400 });
      const r = await ctx.ask(
        'oauth.apiKeyCreate',
        { principalId: session.principalId, name },
        { requestId: req.requestId },
      );
      if (!r.ok) throw new Error(`issuing an API key refused: ${r.reply.error.message}`);
      // Shown once, on this answer; never in a URL.
      return renderAccount(ctx, req, session, {
        notice: notices.issue_api_key!,
        newApiKey: { name: r.body.name, key: r.body.key },
      });
    }),
    accountForm('/account/api-keys/{id}/revoke', async (ctx, req, session) => {
      const r = await ctx.ask(
        'oauth.apiKeyRevoke',
        { principalId: session.principalId, id: req.params.id ?? '' },
        { requestId: req.requestId },
      );
      if (!r.ok) {
        if (r.reply.error.code !== 'not_found')
          throw new Error(`revoking an API key refused: ${r.reply.error.message}`);
        return renderAccount(ctx, req, session, { error: 'That is not there any more.', status: 404 });
      }
      return redirectHere(ctx.config.webUrl, '/account?done=revoke_api_key');
    }),
    webhookSwitch('/account/webhooks/{id}/enable', true, 'enable_webhook'),
    webhookSwitch('/account/webhooks/{id}/pause', false, 'pause_webhook'),
    accountAction('/account/grants/{id}/revoke', 'revoke_grant', 'id'),
    accountAction('/account/tokens/{id}/revoke', 'revoke_token', 'id'),
    accountAction('/account/clients/{id}/revoke', 'revoke_client', 'id'),
    signedInPage('/device', (ctx, req, session) => deviceStep(ctx, req, session, req.query.get('user_code') ?? '')),
    accountForm('/device', (ctx, req, session, form) => deviceStep(ctx, req, session, form.user_code ?? '')),
    accountForm('/device/decision', async (ctx, req, session, form) => {
      const r = await ctx.ask(
        'oauth.deviceDecision',
        { principalId: session.principalId, screenToken: form.screen_token ?? '', decision: form.decision ?? '' },
        { requestId: req.requestId },
      );
      if (!r.ok) throw new Error(`device decision refused: ${r.reply.error.message}`);
      const { frame, setCookie } = frameOf(ctx, req, session);
      const show = (status: number, title: string, message: string, link: { href: string; text: string } | null) =>
        page(status, messagePage({ ...frame, title, message, link }), setCookie);
      if (r.body.kind === 'refused') {
        return refusalAnswer(ctx.config, r.body, {
          kind: 'page',
          flow: 'device',
          show: (w) => show(w.status, w.title, w.message, null),
        });
      }
      // Done either way: the person goes on to the account, where the device's access is listed (and revocable).
      const toAccount = { href: '/account#grants', text: 'Back to your account' };
      return r.body.approved
        ? show(200, 'Device connected', 'You can return to your device: it is signed in now.', toAccount)
        : show(200, 'Request denied', 'The device was not given access.', toAccount);
    }),
  ];
}
