// Webhooks on the account page (docs/webhooks.md): add one, rotate its secret, delete it, send it a test event (pause
// and re-enable are page-routes.ts's). Every change goes through the same principal-actor operations as the
// context-file API's `/webhooks` routes. Delete and the test event answer with a redirect (post, redirect, get);
// adding a webhook and rotating its secret answer with the page itself, because the secret is shown once, in that
// answer, and never put in a URL.
import { type EventTypeName, eventTypeNames, textProblem, webhookNameCharsMax } from '../../contracts/index.ts';
import { redirectHere, type WebRequest } from './http.ts';
import type { WebhookDraft } from './page-data.ts';
import { accountForm, asOwner, renderAccount } from './page-routes.ts';
import type { WebContext, WebRoute } from './route.ts';
import type { WebSession } from './session.ts';

/** A webhook action's answer that says the webhook is not (or no longer) the person's. */
const gone = (ctx: WebContext, req: WebRequest, session: WebSession) =>
  renderAccount(ctx, req, session, { error: 'That webhook is not there any more.', status: 404 });

export function webhookRoutes(): WebRoute[] {
  return [
    accountForm('/account/webhooks', async (ctx, req, session, form) => {
      // Checkboxes repeat the name `events`: every value counts, not only the first.
      const events = new URLSearchParams(req.body ?? '').getAll('events');
      const known = events.filter((e): e is EventTypeName => (eventTypeNames as readonly string[]).includes(e));
      const draft: WebhookDraft = { name: (form.name ?? '').trim(), url: (form.url ?? '').trim(), events };
      const refuse = (error: string) => renderAccount(ctx, req, session, { error, status: 400, webhookDraft: draft });
      if (draft.name.length === 0 || draft.name.length > webhookNameCharsMax)
        return refuse(`Give the webhook a name of 1 to ${webhookNameCharsMax} characters.`);
      if (textProblem(draft.name) !== null)
        return refuse('The name contains a character that cannot be kept (NUL): remove it.');
      if (events.length === 0) return refuse('Choose at least one event to send.');
      if (known.length !== events.length) return refuse('Choose events from the list.');
      const r = await ctx.ask(
        'webhook.create',
        { name: draft.name, url: draft.url, events: known },
        asOwner(session, req),
      );
      if (!r.ok) {
        if (r.reply.error.code !== 'validation_failed')
          throw new Error(`adding a webhook refused: ${r.reply.error.message}`);
        return refuse(`That webhook was not added: ${r.reply.error.message}.`);
      }
      return renderAccount(ctx, req, session, {
        notice: 'Webhook added. Copy its signing secret now: it is not shown again.',
        newWebhookSecret: { name: r.body.name, secret: r.body.secret ?? '', rotated: false },
      });
    }),
    accountForm('/account/webhooks/{id}/rotate', async (ctx, req, session) => {
      const r = await ctx.ask('webhook.rotate', { id: req.params.id ?? '' }, asOwner(session, req));
      if (!r.ok) {
        if (r.reply.error.code !== 'not_found') throw new Error(`rotating a secret refused: ${r.reply.error.message}`);
        return gone(ctx, req, session);
      }
      return renderAccount(ctx, req, session, {
        notice: 'Secret rotated. Copy the new one now: it is not shown again.',
        newWebhookSecret: { name: r.body.name, secret: r.body.secret ?? '', rotated: true },
      });
    }),
    accountForm('/account/webhooks/{id}/delete', async (ctx, req, session) => {
      const r = await ctx.ask('webhook.delete', { id: req.params.id ?? '' }, asOwner(session, req));
      if (!r.ok) {
        if (r.reply.error.code !== 'not_found') throw new Error(`deleting a webhook refused: ${r.reply.error.message}`);
        return gone(ctx, req, session);
      }
      return redirectHere(ctx.config.webUrl, '/account?done=delete_webhook#webhooks');
    }),
    accountForm('/account/webhooks/{id}/test', async (ctx, req, session) => {
      const r = await ctx.ask('webhook.test', { id: req.params.id ?? '' }, asOwner(session, req));
      if (!r.ok) {
        const e = r.reply.error;
        if (e.code === 'not_found') return gone(ctx, req, session);
        if (e.code === 'validation_failed')
          return renderAccount(ctx, req, session, { error: `${e.message}.`, status: 409 });
        throw new Error(`a test event refused: ${e.message}`);
      }
      return redirectHere(ctx.config.webUrl, '/account?done=test_webhook#webhooks');
    }),
  ];
}
