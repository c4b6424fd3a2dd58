// The web routes of live money and the person's data (docs/money.md): the account page's card and payout forms,
// the payment processor's webhook, and the spec's `/api/health`, `/api/account/export` and
// `/api/orders/{order_id}/compliance`. Errors on the `/api/` routes are the agent API's typed error object.
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import {
  AccountExportPage,
  type AccountExportPart,
  type Answer,
  type ErrorCode,
  accountExportFormat,
  accountExportSections,
  errorBody,
  errorTable,
  operationById,
} from '../../contracts/index.ts';
import Stripe from 'stripe';
import type { WebContext, WebRoute } from './route.ts';
import { json, redirect, type WebRequest, type WebResponse } from './http.ts';
import { accountForm, asOwner, renderAccount, webCaller } from './page-routes.ts';
import { sessionRoute, type WebSession } from './session.ts';

const getComplianceBundle = operationById('getComplianceBundle');
const getMandates = operationById('getMandates');

const typedError = (ctx: WebContext, code: ErrorCode, message: string, status: number = errorTable[code].status) =>
  json(status, errorBody(ctx.config.baseUrl, code, message));

/** A `/api/` route of the signed-in person (session cookie): 401 with the typed error otherwise. */
function sessionApi(
  method: 'GET' | 'POST',
  path: string,
  answer: (ctx: WebContext, req: WebRequest, session: WebSession) => Promise<WebResponse>,
): WebRoute {
  return sessionRoute(
    { method, path, body: 'none' },
    (ctx) => typedError(ctx, 'unauthorized', 'sign in first: this route reads the session cookie'),
    answer,
  );
}

export function moneyRoutes(): WebRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/health',
      body: 'none',
      // Liveness of the web app: this process answers. Readiness of the whole system is /healthz.
      handle: async () => json(200, { status: 'ok' }),
    },
    {
      method: 'POST',
      path: '/api/stripe/webhook',
      body: 'text',
      handle: processorWebhook,
    },
    accountForm('/account/card', async (ctx, req, session) => {
      const body = {
        principalId: session.principalId,
        email: session.email,
        successUrl: `${ctx.config.webUrl}/account?done=card_saved#money`,
        cancelUrl: `${ctx.config.webUrl}/account?done=card_canceled#money`,
      };
      return hostedPage(ctx, req, session, await ctx.ask('payments.card_setup', body, { requestId: req.requestId }));
    }),
    accountForm('/account/payouts', async (ctx, req, session) => {
      const body = {
        principalId: session.principalId,
        email: session.email,
        refreshUrl: `${ctx.config.webUrl}/account#money`,
        returnUrl: `${ctx.config.webUrl}/account?done=payouts_returned#money`,
      };
      return hostedPage(ctx, req, session, await ctx.ask('payments.onboarding', body, { requestId: req.requestId }));
    }),
    sessionApi('GET', '/api/orders/{order_id}/compliance', async (ctx, req, session) => {
      const r = await ctx.pipeline.runAs(webCaller(session, ['purchase']), {
        op: getComplianceBundle,
        token: undefined,
        params: { order_id: req.params.order_id ?? '' },
        query: {},
        body: { kind: 'none' },
        idempotencyKey: undefined,
        requestId: req.requestId,
        clientAddress: req.clientAddress,
      });
      return json(r.status, r.body, r.headers);
    }),
    sessionApi('GET', '/api/account/export', accountExport),
  ];
}

/** Send the person to the processor's hosted page, or back to the account page saying why not. */
async function hostedPage(
  ctx: WebContext,
  req: WebRequest,
  session: WebSession,
  r: Answer<'payments.card_setup'> | Answer<'payments.onboarding'>,
): Promise<WebResponse> {
  if (r.ok) return redirect(r.body.url);
  return renderAccount(ctx, req, session, {
    error: r.reply.error.message,
    status: r.reply.error.code === 'unavailable' ? 503 : 400,
  });
}

/**
 * The processor's events: the signature over the raw body is checked first (tolerance 5 minutes), then the payments
 * service acts; 2xx only once what the event changes is durable, so the processor retries anything else.
 */
async function processorWebhook(ctx: WebContext, req: WebRequest): Promise<WebResponse> {
  const secret = ctx.config.stripeWebhookSecret;
  if (!secret) return typedError(ctx, 'unavailable', 'the processor webhook is not configured (STRIPE_WEBHOOK_SECRET)');
  let event: { id: string; type: string };
  try {
    // The SDK's own check (HMAC over the raw body, tolerance 5 minutes): the gateway needs no processor key for it.
    event = Stripe.webhooks.constructEvent(req.body ?? '', req.stripeSignature, secret, 300);
  } catch (err) {
    const why = err instanceof Error ? err.message : 'bad signature';
    return typedError(ctx, 'validation_failed', `the event's signature does not hold: ${why}`, 400);
  }
  const r = await ctx.ask('payments.event', { event }, { requestId: req.requestId });
  if (!r.ok) {
    const e = r.reply.error;
    return json(e.code === 'validation_failed' ? 400 : 503, errorBody(ctx.config.baseUrl, e.code, e.message));
  }
  return json(200, { received: true, handled: r.body.handled });
}

/**
 * Everything held about the signed-in person, streamed as one JSON document: the small parts first (profile,
 * clients and grants without secrets, API keys' metadata, mandates, billing), then each large section a page at a
 * time. A failure midway cuts the answer short, so no reader takes a partial export as complete.
 */
async function accountExport(ctx: WebContext, req: WebRequest, session: WebSession): Promise<WebResponse> {
  const p = session.principalId;
  const own = asOwner(session, req);
  const [account, apiKeys, billing, mandates, skills] = await Promise.all([
    ctx.ask('oauth.account', { principalId: p }, { requestId: req.requestId }),
    ctx.ask('oauth.apiKeyList', { principalId: p }, { requestId: req.requestId }),
    ctx.ask('billing.get', { principalId: p }, own),
    ctx.pipeline.callAs(webCaller(session, ['read:artifact']), getMandates, {
      query: { limit: '100' },
      requestId: req.requestId,
      clientAddress: req.clientAddress,
    }),
    ctx.ask('skill.list', { offset: 0, limit: 100 }, own),
  ]);
  if (!account.ok || !apiKeys.ok || !billing.ok || !mandates.ok || !skills.ok) {
    return typedError(ctx, 'unavailable', 'a part of the account could not be read; retry');
  }
  const b = billing.body;
  const head = {
    format: accountExportFormat,
    exported_at: new Date().toISOString(),
    principal_id: p,
    profile: { email: session.email },
    account: account.body,
    api_keys: apiKeys.body,
    mandates: mandates.body.items,
    skills: skills.body.items,
    billing: {
      card: b.card && {
        brand: b.card.brand,
        last4: b.card.last4,
        saved_at: b.card.savedAt,
        customer_id: b.card.customerId,
      },
      payout_account: b.payoutAccount && {
        account_id: b.payoutAccount.accountId,
        payouts_enabled: b.payoutAccount.payoutsEnabled,
      },
      paid_out_cents: b.paidOutCents,
    },
  };
  const headJson = JSON.stringify(head);
  return {
    status: 200,
    headers: {
      'cache-control': 'no-store',
      'content-disposition': 'attachment; filename="assay-account-export.json"',
      'x-content-type-options': 'nosniff',
    },
    contentType: 'application/json',
    body: null,
    async stream(write) {
      // The head's object, left open for the sections.
      if (!(await write(headJson.slice(0, -1)))) return false;
      for (const section of accountExportSections) {
        if (!(await write(`,${JSON.stringify(section)}:[`))) return false;
        let after: string | null = null;
        let first = true;
        do {
          const page = await exportPage(ctx, p, section, after, req.requestId);
          if (page === null) return false;
          if (page.items.length > 0) {
            const items = page.items.map((i) => JSON.stringify(i)).join(',');
            if (!(await write(first ? items : `,${items}`))) return false;
            first = false;
          }
          after = page.next;
        } while (after !== null);
        if (!(await write(']'))) return false;
      }
      const sync = await exportPage(ctx, p, 'sync', null, req.requestId);
      if (sync === null) return false;
      return write(`,"sync":${JSON.stringify(sync.items[0])}}`);
    },
  };
}

/** One page of a section of the export, read in parts (a page of context files can pass one NATS message). */
async function exportPage(
  ctx: WebContext,
  principalId: string,
  section: Static<typeof AccountExportPart>,
  after: string | null,
  requestId: string,
): Promise<AccountExportPage | null> {
  const r = await ctx.ask('account.export_page', { principalId, section, after }, { requestId, inParts: true });
  if (!r.ok) return null;
  const page: unknown = JSON.parse(decoder.decode(r.body));
  if (!Value.Check(AccountExportPage, page)) throw new Error(`an export page of ${section} is not {items, next}`);
  return page;
}

const decoder = new TextDecoder();
