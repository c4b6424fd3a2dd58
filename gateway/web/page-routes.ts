// The pages people use: sign-up, sign-in, sign-out, the account page and its forms, and device verification.
// Forms post back here and are answered with a redirect (303) or the page again with a message; every post is
// checked for its CSRF token and origin first (session.ts).
import { randomUUID } from 'node:crypto';
import {
  type ApprovalT,
  type BillingView,
  apiKeyNameLengthMax,
  type Config,
  operations,
  passwordMinLength,
  textProblem,
  type WebhookView,
} from '../../contracts/index.ts';
import type { WebContext, WebRoute } from './face.ts';
import { page, parseForm, redirect, safeNext, type WebRequest, type WebResponse } from './http.ts';
import { scopeList } from './oauth-routes.ts';
import { accountPage, deviceConfirmPage, deviceEntryPage, messagePage, signInPage, signUpPage } from './pages.ts';
import {
  csrfOf,
  formIsOurs,
  sessionClearCookie,
  sessionCookie,
  sessionOf,
  sessionSetCookie,
  type WebSession,
} from './session.ts';

const createMandate = operations.find((o) => o.id === 'createMandate')!;
const getMandates = operations.find((o) => o.id === 'getMandates')!;
const getApprovals = operations.find((o) => o.id === 'getApprovals')!;
const approvePurchase = operations.find((o) => o.id === 'approvePurchase')!;
const declinePurchase = operations.find((o) => o.id === 'declinePurchase')!;

/** Notices after an account action, by the code in the redirect (`/account?done=...`): no free text in URLs. */
const notices: Record<string, string> = {
  revoke_grant: 'Access revoked: the agent’s tokens stop working now.',
  revoke_token: 'Token revoked.',
  revoke_client: 'Client removed, and every access it held revoked.',
  revoke_initial_access_token: 'Initial access token revoked.',
  mandate: 'Mandate saved. It binds every agent of yours from now on.',
  approve: 'Purchase approved and bought: the agent that asked is told.',
  decline: 'Purchase declined: nothing was bought, and the agent that asked is told.',
  issue_initial_access_token: 'Initial access token issued. Copy it now: it is not shown again.',
  issue_api_key: 'API key issued. Copy it now: it is not shown again.',
  revoke_api_key: 'API key revoked: it stops working now.',
  enable_webhook: 'Webhook re-enabled: it takes the events made from now on.',
  pause_webhook: 'Webhook paused: events made while it is paused are not sent to it.',
  card_saved: 'Card saved at the payment processor. It shows here once the processor confirms, in a moment.',
  card_canceled: 'No card was saved.',
  payouts_returned: 'Back from the processor. Payouts are enabled once it has checked your details.',
};

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
  redirect(`${ctx.config.webUrl}/signin?next=${encodeURIComponent(req.target)}`);

/** The account page, with what the service and the principal's mandate say now. */
export async function renderAccount(
  ctx: WebContext,
  req: WebRequest,
  session: WebSession,
  extra: {
    notice?: string | null;
    error?: string | null;
    newInitialAccessToken?: { token: string; expiresAt: string } | null;
    newApiKey?: { name: string; key: string } | null;
    status?: number;
  } = {},
): Promise<WebResponse> {
  const read = (op: typeof getMandates | typeof getApprovals, limit: string) =>
    ctx.pipeline.runAs(webCaller(session, ['read:artifact']), {
      op,
      token: undefined,
      params: {},
      query: { limit },
      body: { kind: 'none' },
      idempotencyKey: undefined,
      requestId: req.requestId,
      clientAddress: req.clientAddress,
    });
  const [account, apiKeys, webhooks, mandates, approvals, billing, balance] = await Promise.all([
    ctx.oauth('account', { principalId: session.principalId }, req.requestId),
    ctx.oauth('apiKeyList', { principalId: session.principalId }, req.requestId),
    // A principal holds at most 20 webhooks, so one page of 100 is all of them.
    ctx.principal('webhook.list', session.principalId, { offset: 0, limit: 100 }, req.requestId),
    read(getMandates, '1'),
    read(getApprovals, '50'),
    ctx.principal('billing.get', session.principalId, { principalId: session.principalId }, req.requestId),
    ctx.principal('getBalance', session.principalId, {}, req.requestId),
  ]);
  if (!billing.ok) throw new Error(`billing refused: ${billing.error.message}`);
  if (!balance.ok) throw new Error(`balance refused: ${balance.error.message}`);
  const b = billing.body as BillingView;
  if (!account.ok) throw new Error(`account refused: ${account.reply.error.message}`);
  if (!apiKeys.ok) throw new Error(`API keys refused: ${apiKeys.reply.error.message}`);
  if (!webhooks.ok) throw new Error(`webhooks refused: ${webhooks.error.message}`);
  if (approvals.error) throw new Error(`approvals refused: ${approvals.error.message}`);
  const current = (mandates.body as { items?: any[] } | undefined)?.items?.find((m) => m.current && !m.revoked);
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
      newInitialAccessToken: extra.newInitialAccessToken ?? null,
      apiUrl: ctx.config.apiUrl,
      // Revoked keys are history, not something to act on: the page lists the ones that still work.
      apiKeys: apiKeys.body
        .filter((k) => k.revoked_at === null)
        .map((k) => ({ id: k.id, name: k.name, hint: k.hint, createdAt: k.created_at, lastUsedAt: k.last_used_at })),
      newApiKey: extra.newApiKey ?? null,
      apiKeyNameLengthMax,
      webhooks: (webhooks.body as { items: WebhookView[] }).items.map((w) => ({
        id: w.id,
        name: w.name,
        url: w.url,
        events: w.events,
        isActive: w.is_active,
        disabledReason: w.disabled_reason,
        createdAt: w.created_at,
      })),
      mandate: current
        ? {
            perItemCapCents: current.perItemCapCents,
            minTrust: current.minTrust,
            minFloor: current.minFloor ?? 0,
            minJudgeVersion: current.minJudgeVersion,
            rejectOpenJudgeErrata: current.rejectOpenJudgeErrata,
            approvalAboveCents: current.approvalAboveCents ?? null,
          }
        : null,
      approvals: (approvals.body as { items: ApprovalT[] }).items,
      money: {
        processor: ctx.config.stripeSecretKey !== '',
        balanceCents: (balance.body as { balance_cents: number }).balance_cents,
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

/** The person acting on the web, as an agent caller of the agent API (the account's own `web` agent). */
export function webCaller(session: WebSession, scopes: string[]) {
  return { principalId: session.principalId, agentId: session.webAgentId, scopes, sandbox: false };
}

/** A page for a signed-in person; anyone else is sent to sign in and back. */
function signedInPage(
  path: string,
  show: (ctx: WebContext, req: WebRequest, session: WebSession) => Promise<WebResponse>,
): WebRoute {
  return {
    method: 'GET',
    path,
    body: 'none',
    async handle(ctx, req) {
      const session = await sessionOf(ctx, req);
      return session ? show(ctx, req, session) : toSignIn(ctx, req);
    },
  };
}

/** A form route that needs a signed-in person and a form of ours. */
export function accountForm(
  path: string,
  act: (ctx: WebContext, req: WebRequest, session: WebSession, form: Record<string, string>) => Promise<WebResponse>,
): WebRoute {
  return {
    method: 'POST',
    path,
    body: 'text',
    async handle(ctx, req) {
      const session = await sessionOf(ctx, req);
      if (!session) return redirect(`${ctx.config.webUrl}/signin?next=/account`);
      const { form } = parseForm(req.body);
      if (!formIsOurs(ctx.config, req, form)) return refusedForm(ctx, req, session);
      return act(ctx, req, session, form);
    },
  };
}

/** One account action through the service, then back to the account page with its notice. */
function accountAction(
  path: string,
  action: 'revoke_grant' | 'revoke_token' | 'revoke_client' | 'revoke_initial_access_token',
  idParam: string,
): WebRoute {
  return accountForm(path, async (ctx, req, session) => {
    const r = await ctx.oauth(
      'accountAction',
      { principalId: session.principalId, action, id: req.params[idParam] ?? '' },
      req.requestId,
    );
    if (!r.ok) return renderAccount(ctx, req, session, { error: r.reply.error.message, status: 404 });
    return redirect(`${ctx.config.webUrl}/account?done=${action}`);
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
    const r = await ctx.pipeline.runAs(webCaller(session, ['manage:mandate']), {
      op,
      token: undefined,
      params: { approval_id: id },
      query: {},
      body: { kind: 'value', value: {} },
      idempotencyKey: `web-${done}-${id}`,
      requestId: req.requestId,
      clientAddress: req.clientAddress,
    });
    if (r.error) return renderAccount(ctx, req, session, { error: r.error.message, status: r.status });
    const state = (r.body as ApprovalT).state;
    // A request already decided, or past its time, answers as it stands: say what it is, not what was asked.
    if (state === 'expired') {
      return renderAccount(ctx, req, session, { error: 'That request had expired: nothing was bought.', status: 409 });
    }
    if ((done === 'approve') !== (state === 'approved')) {
      return renderAccount(ctx, req, session, { error: `That request was already ${state}.`, status: 409 });
    }
    return redirect(`${ctx.config.webUrl}/account?done=${done}`);
  });
}

/**
 * Pause a webhook or re-enable it, through the same operation as the context-file API's `PATCH /webhooks/{id}`.
 * The principal's actor answers not_found for an id that is not the person's own.
 */
function webhookSwitch(path: string, isActive: boolean, done: 'enable_webhook' | 'pause_webhook'): WebRoute {
  return accountForm(path, async (ctx, req, session) => {
    const r = await ctx.principal(
      'webhook.update',
      session.principalId,
      { id: req.params.id ?? '', patch: { is_active: isActive } },
      req.requestId,
    );
    if (!r.ok) {
      if (r.error.code !== 'not_found') throw new Error(`changing a webhook refused: ${r.error.message}`);
      return renderAccount(ctx, req, session, { error: 'That is not there any more.', status: 404 });
    }
    return redirect(`${ctx.config.webUrl}/account?done=${done}`);
  });
}

async function signInOrUp(ctx: WebContext, req: WebRequest, kind: 'signIn' | 'signUp'): Promise<WebResponse> {
  const { form } = parseForm(req.body);
  const next = safeNext(form.next);
  const { frame, setCookie } = frameOf(ctx, req, null);
  const again = (status: number, error: string) =>
    page(
      status,
      kind === 'signIn'
        ? signInPage({ ...frame, next, email: form.email ?? '', error })
        : signUpPage({ ...frame, next, email: form.email ?? '', error, passwordMinLength }),
      setCookie,
    );
  if (!formIsOurs(ctx.config, req, form)) return again(403, 'This form expired. Please try again.');
  const r = await ctx.oauth(
    kind,
    { email: form.email ?? '', password: form.password ?? '', clientAddress: req.clientAddress },
    req.requestId,
  );
  if (!r.ok) {
    const e = r.reply.error;
    if (e.code === 'rate_limited') return again(429, e.message);
    if (e.code === 'unauthorized' || e.code === 'validation_failed')
      return again(e.code === 'unauthorized' ? 401 : 400, e.message);
    throw new Error(`${kind} refused: ${e.message}`);
  }
  return redirect(`${ctx.config.webUrl}${next}`, [sessionSetCookie(ctx.config, r.body.sessionToken)]);
}

/** The device pages: the code entry, or the confirmation for a code the service knows. */
async function deviceStep(ctx: WebContext, req: WebRequest, session: WebSession, userCode: string) {
  const { frame, setCookie } = frameOf(ctx, req, session);
  if (!userCode) return page(200, deviceEntryPage({ ...frame, userCode: '', error: null }), setCookie);
  const r = await ctx.oauth(
    'deviceLookup',
    { principalId: session.principalId, userCode, clientAddress: req.clientAddress },
    req.requestId,
  );
  if (!r.ok) {
    if (r.reply.error.code !== 'rate_limited') throw new Error(`device lookup refused: ${r.reply.error.message}`);
    return page(429, deviceEntryPage({ ...frame, userCode, error: r.reply.error.message }), setCookie);
  }
  if (r.body.kind === 'error') {
    return page(400, deviceEntryPage({ ...frame, userCode, error: r.body.message }), setCookie);
  }
  return page(
    200,
    deviceConfirmPage({
      ...frame,
      clientName: r.body.clientName,
      clientId: r.body.clientId,
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
      path: '/signin',
      body: 'none',
      async handle(ctx, req) {
        const next = safeNext(req.query.get('next'));
        const session = await sessionOf(ctx, req);
        if (session) return redirect(`${ctx.config.webUrl}${next}`);
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
        return page(200, signUpPage({ ...frame, next, email: '', error: null, passwordMinLength }), setCookie);
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
        if (token) await ctx.oauth('signOut', { sessionToken: token }, req.requestId);
        return redirect(`${ctx.config.webUrl}/signin`, [sessionClearCookie(ctx.config)]);
      },
    },
    signedInPage('/account', (ctx, req, session) =>
      renderAccount(ctx, req, session, { notice: notices[req.query.get('done') ?? ''] ?? null }),
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
      return redirect(`${ctx.config.webUrl}/account?done=mandate`);
    }),
    approvalDecision('/account/approvals/{id}/approve', approvePurchase, 'approve'),
    approvalDecision('/account/approvals/{id}/decline', declinePurchase, 'decline'),
    accountForm('/account/initial-access-tokens', async (ctx, req, session) => {
      const r = await ctx.oauth(
        'accountAction',
        { principalId: session.principalId, action: 'issue_initial_access_token' },
        req.requestId,
      );
      if (!r.ok) throw new Error(`issuing an initial access token refused: ${r.reply.error.message}`);
      // Shown once, on this answer; never in a URL.
      return renderAccount(ctx, req, session, {
        notice: notices.issue_initial_access_token!,
        newInitialAccessToken: r.body.newInitialAccessToken ?? null,
      });
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
      const r = await ctx.oauth('apiKeyCreate', { principalId: session.principalId, name }, req.requestId);
      if (!r.ok) throw new Error(`issuing an API key refused: ${r.reply.error.message}`);
      // Shown once, on this answer; never in a URL.
      return renderAccount(ctx, req, session, {
        notice: notices.issue_api_key!,
        newApiKey: { name: r.body.name, key: r.body.key },
      });
    }),
    accountForm('/account/api-keys/{id}/revoke', async (ctx, req, session) => {
      const r = await ctx.oauth(
        'apiKeyRevoke',
        { principalId: session.principalId, id: req.params.id ?? '' },
        req.requestId,
      );
      if (!r.ok) {
        if (r.reply.error.code !== 'not_found')
          throw new Error(`revoking an API key refused: ${r.reply.error.message}`);
        return renderAccount(ctx, req, session, { error: 'That is not there any more.', status: 404 });
      }
      return redirect(`${ctx.config.webUrl}/account?done=revoke_api_key`);
    }),
    webhookSwitch('/account/webhooks/{id}/enable', true, 'enable_webhook'),
    webhookSwitch('/account/webhooks/{id}/pause', false, 'pause_webhook'),
    accountAction('/account/grants/{id}/revoke', 'revoke_grant', 'id'),
    accountAction('/account/tokens/{id}/revoke', 'revoke_token', 'id'),
    accountAction('/account/clients/{id}/revoke', 'revoke_client', 'id'),
    signedInPage('/device', (ctx, req, session) => deviceStep(ctx, req, session, req.query.get('user_code') ?? '')),
    accountForm('/device', (ctx, req, session, form) => deviceStep(ctx, req, session, form.user_code ?? '')),
    accountForm('/device/decision', async (ctx, req, session, form) => {
      const r = await ctx.oauth(
        'deviceDecision',
        { principalId: session.principalId, screenToken: form.screen_token ?? '', decision: form.decision ?? '' },
        req.requestId,
      );
      if (!r.ok) throw new Error(`device decision refused: ${r.reply.error.message}`);
      const { frame, setCookie } = frameOf(ctx, req, session);
      return page(200, messagePage({ ...frame, title: r.body.title, message: r.body.message, link: null }), setCookie);
    }),
  ];
}
