// The webhooks part of the account page (docs/webhooks.md): the list, each webhook's actions and recent deliveries,
// the form that adds one, and the secret shown once after adding or rotating (the routes are webhook-routes.ts).
import { eventTypeNames, webhookNameCharsMax, webhookUrlCharsMax } from '../../contracts/index.ts';
import { html, type SafeHtml } from './html.ts';
import type { AccountPage, AccountWebhook, PageFrame, WebhookDraft } from './page-data.ts';
import { breakableUrl, csrfField, encode, time } from './page-parts.ts';

export type { WebhookDraft };

/** How many of a webhook's newest delivery attempts the page shows. */
export const recentDeliveriesShown = 10;

// ----- the section -----

/** Near the top of the page while a webhook stays disabled: delivery stopped, and nothing is sent until it is re-enabled. */
export function disabledWebhooksNotice(): SafeHtml {
  return html`<div class="alert error" id="webhooks-disabled-notice"><p><strong>A webhook was disabled because its deliveries kept failing.</strong> Nothing is sent to it until you re-enable it: <a href="#webhooks">see your webhooks</a>.</p></div>`;
}

export function newWebhookSecretPanel(s: { name: string; secret: string; rotated: boolean }): SafeHtml {
  return html`<section class="panel" aria-labelledby="new-webhook-secret-heading">
<h2 id="new-webhook-secret-heading">${s.rotated ? html`The new signing secret of “${s.name}”` : html`The signing secret of your new webhook “${s.name}”`}</h2>
<p><strong>Copy it now: it will not be shown again.</strong> Your endpoint checks each delivery’s signature with it (<code>webhook-signature</code>, Standard Webhooks).${s.rotated && ' The previous secret keeps signing beside it for 24 hours, so your endpoint can switch without missing a delivery.'}</p>
<code class="secret">${s.secret}</code>
</section>`;
}

export function webhooksSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="webhooks" aria-labelledby="webhooks-heading">
<h2 id="webhooks-heading">Webhooks</h2>
<p>Webhooks send your events to your HTTPS endpoints as they happen, signed with the webhook’s secret. A webhook whose deliveries keep failing is disabled; re-enable it here once its endpoint works again. Pausing one stops its deliveries: events made while it is paused are not sent later. <strong>Send a test event</strong> makes a <code>webhook.test</code> event and delivers it, signed like any other, to that webhook alone.</p>
<p>The same webhooks are on the context-file API with an API key: <code>${data.apiUrl}/v1/webhooks</code> (described in <a href="${data.apiUrl}/v1/openapi.json">its OpenAPI document</a> and in <a href="/docs/webhooks">the webhooks guide</a>).</p>
${
  data.webhooks.length === 0
    ? html`<p class="empty">You have no webhooks.</p>`
    : html`<div class="table-wrap" role="region" aria-labelledby="webhooks-caption" tabindex="0">
<table>
<caption id="webhooks-caption">Your webhooks, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">URL and events</th><th scope="col">State</th><th scope="col">Registered</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${data.webhooks.map((w) => webhookRow(data, w))}</tbody>
</table>
</div>
<ul class="items">${data.webhooks.map((w) => webhookItem(data, w))}</ul>`
}
${addWebhookForm(data)}
</section>`;
}

function webhookRow(frame: PageFrame, w: AccountWebhook): SafeHtml {
  const state = w.isActive ? html`Active` : w.disabledReason === null ? html`Paused` : html`<strong>Disabled</strong>`;
  const button = w.isActive
    ? html`<form method="post" action="/account/webhooks/${encode(w.id)}/pause">${csrfField(frame)}<button type="submit" class="button secondary small">Pause<span class="visually-hidden"> the webhook ${w.name}</span></button></form>`
    : html`<form method="post" action="/account/webhooks/${encode(w.id)}/enable">${csrfField(frame)}<button type="submit" class="button primary small">Re-enable<span class="visually-hidden"> the webhook ${w.name}</span></button></form>`;
  // The reason gets a row of its own, under its webhook, worded to stand alone when read out of the table.
  return html`<tr>
<th scope="row">${w.name}</th>
<td>${breakableUrl(w.url)}<span class="hint">takes ${w.events.map((e, i) => html`${i > 0 && ', '}<code>${e}</code>`)}</span></td>
<td>${state}</td>
<td>${time(w.createdAt)}</td>
<td>${button}</td>
</tr>${
    w.disabledReason !== null &&
    html`
<tr><td colspan="4"><div class="alert error"><p><strong>${w.name} was disabled:</strong> ${w.disabledReason}. Re-enable it once its endpoint answers 2xx again.</p></div></td><td></td></tr>`
  }`;
}

/** One webhook's actions and its recent deliveries. */
function webhookItem(frame: PageFrame, w: AccountWebhook): SafeHtml {
  const id = `webhook-${w.id}`;
  const form = (action: string, kind: string, label: SafeHtml) =>
    html`<form method="post" action="/account/webhooks/${encode(w.id)}/${action}">${csrfField(frame)}<button type="submit" class="button ${kind} small">${label}</button></form>`;
  return html`<li class="item" aria-labelledby="${id}">
<div class="item-head">
<h3 id="${id}">${w.name}</h3>
<div class="actions">
${w.isActive && form('test', 'primary', html`Send a test event<span class="visually-hidden"> to ${w.name}</span>`)}
${form('rotate', 'secondary', html`Rotate the secret<span class="visually-hidden"> of ${w.name}</span>`)}
${form('delete', 'danger', html`Delete<span class="visually-hidden"> the webhook ${w.name}</span>`)}
</div>
</div>
${
  w.deliveries.length === 0
    ? html`<p class="empty">Nothing delivered yet.</p>`
    : html`<div class="table-wrap" role="region" aria-labelledby="${id}-deliveries" tabindex="0">
<table>
<caption id="${id}-deliveries">Recent deliveries to ${w.name}, newest first</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Outcome</th><th scope="col">Attempt</th><th scope="col">Response</th><th scope="col">Time</th></tr></thead>
<tbody>${w.deliveries.map(
        (d) => html`<tr>
<th scope="row"><code>${d.eventType}</code><span class="hint"><code>${d.eventId}</code></span></th>
<td>${d.outcome === 'delivered' ? 'Delivered' : d.outcome === 'retrying' ? 'Failed, will retry' : html`<strong>Failed</strong>`}</td>
<td>${d.attempt}</td>
<td>${d.status === null ? html`<span class="empty">${d.error ?? 'no response'}</span>` : d.status}</td>
<td>${time(d.at)}</td>
</tr>`,
      )}</tbody>
</table>
</div>`
}
</li>`;
}

function addWebhookForm(data: AccountPage): SafeHtml {
  const d = data.webhookDraft;
  const checked = (e: string) => (d === null ? false : d.events.includes(e));
  return html`<form method="post" action="/account/webhooks" class="card stack" aria-labelledby="add-webhook-heading">
${csrfField(data)}
<h3 id="add-webhook-heading">Add a webhook</h3>
<div class="field">
<label for="webhook-name">Name</label>
<span class="hint" id="webhook-name-hint">So you know it in this list, such as “orders to Slack”.</span>
<input id="webhook-name" name="name" type="text" required maxlength="${webhookNameCharsMax}" autocomplete="off" value="${d?.name ?? ''}" aria-describedby="webhook-name-hint">
</div>
<div class="field">
<label for="webhook-url">Endpoint URL</label>
<span class="hint" id="webhook-url-hint">An <code>https://</code> URL whose host resolves to public addresses only. ${
    data.webhookAllowLoopback
      ? html`This deployment runs in test mode for local development (<code>ASSAY_WEBHOOK_ALLOW_LOOPBACK=true</code>): loopback URLs such as <code>https://localhost:8443/hook</code> are allowed too.`
      : html`Loopback URLs (<code>localhost</code>, <code>127.0.0.1</code>) are refused: they are a test-mode setting for local development (<code>ASSAY_WEBHOOK_ALLOW_LOOPBACK=true</code>), off on this deployment.`
  }</span>
<input id="webhook-url" name="url" type="url" required maxlength="${webhookUrlCharsMax}" spellcheck="false" autocomplete="off" value="${d?.url ?? ''}" aria-describedby="webhook-url-hint">
</div>
<fieldset class="field">
<legend>Events to send</legend>
<div class="checks">${eventTypeNames.map(
    (e) => html`<div class="check">
<input id="webhook-event-${e}" name="events" type="checkbox" value="${e}"${checked(e) && html` checked`}>
<label for="webhook-event-${e}"><code>${e}</code></label>
</div>`,
  )}</div>
</fieldset>
<div><button type="submit" class="button primary">Add the webhook</button></div>
</form>`;
}
