// The web pages as HTML: one function per page, each taking its data from page-data.ts and returning the whole
// document as a string. Plain forms, no script; the route decides the status code and sends
// `pageContentSecurityPolicy` with the page.
import type { ApprovalT } from '../../contracts/index.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { html, type SafeHtml } from './html.ts';
import type {
  AccountApiKey,
  AccountClient,
  AccountGrant,
  AccountPage,
  AccountWebhook,
  ConsentPage,
  DeviceConfirmPage,
  DeviceEntryPage,
  MessagePage,
  PageFrame,
  ScopeWords,
  SignInPage,
  SignUpPage,
} from './page-data.ts';
import { pageStylesheet } from './style.ts';

/**
 * The Content-Security-Policy these pages are written for: nothing loads, nothing runs, the one stylesheet is allowed
 * by its hash. `form-action` is left out on purpose: Chrome applies it to the redirect that follows a form, and the
 * consent form's answer is a redirect to the client's own redirect URI.
 */
export const pageContentSecurityPolicy = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(pageStylesheet.toString()).digest('base64')}'`,
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

// ----- the frame every page shares -----

function layout(frame: PageFrame, page: { title: string; wide?: boolean; brandHref?: string }, main: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="same-origin">
<title>${page.title} · Assay</title>
<style>${pageStylesheet}</style>
</head>
<body${page.wide ? html` class="wide"` : null}>
<a class="skip" href="#main">Skip to the main content</a>
<header class="site-header">
<div class="bar">
${frame.signedInAs === null ? html`<span class="brand">Assay</span>` : html`<a class="brand" href="/account">Assay</a>`}
${frame.signedInAs !== null && signOut(frame, frame.signedInAs)}
</div>
</header>
<main id="main">
${main}
</main>
<footer class="site-footer">
<div class="bar"><p>Assay: verified artifacts for AI agents, bought under the mandate you set.</p></div>
</footer>
</body>
</html>
`.toString();
}

function signOut(frame: PageFrame, email: string): SafeHtml {
  return html`<p class="who">Signed in as <strong>${email}</strong></p>
<form method="post" action="/signout">${csrfField(frame)}<button type="submit" class="button secondary small">Sign out</button></form>`;
}

// ----- pieces of forms -----

function csrfField(frame: PageFrame): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${frame.csrf}">`;
}

function hidden(name: string, value: string): SafeHtml {
  return html`<input type="hidden" name="${name}" value="${value}">`;
}

/** The error of a form, announced, placed before the form; fields name it in `aria-describedby`. */
function errorAlert(id: string, error: string | null): SafeHtml | null {
  return error === null ? null : html`<div class="alert error" role="alert" id="${id}"><p>${error}</p></div>`;
}

function noticeStatus(notice: string | null): SafeHtml | null {
  return notice === null ? null : html`<div class="alert notice" role="status"><p>${notice}</p></div>`;
}

/** The ids a field's `aria-describedby` lists: its hint and the form's error, those that are on the page. */
function describedBy(...ids: (string | null)[]): SafeHtml | null {
  const present = ids.filter((id): id is string => id !== null);
  return present.length === 0 ? null : html` aria-describedby="${present.join(' ')}"`;
}

function submit(label: string, kind: 'primary' | 'secondary' = 'primary'): SafeHtml {
  return html`<button type="submit" class="button ${kind} full">${label}</button>`;
}

/** A form of one button that posts to `action`: the revoke buttons of the account page. */
function buttonForm(frame: PageFrame, action: string, label: SafeHtml): SafeHtml {
  return html`<form method="post" action="${action}">${csrfField(frame)}<button type="submit" class="button danger small">${label}</button></form>`;
}

/** A query string value or path segment, URL-encoded, for a link or a form action. */
const encode = encodeURIComponent;

// ----- words -----

/** "2026-11-23 14:05 UTC" in a <time> carrying the ISO timestamp. */
function time(iso: string): SafeHtml {
  const at = new Date(iso);
  assert(!Number.isNaN(at.getTime()), `not a timestamp: ${iso}`);
  const text = `${at.toISOString().slice(0, 10)} ${at.toISOString().slice(11, 16)} UTC`;
  return html`<time datetime="${at.toISOString()}">${text}</time>`;
}

function scopeList(scopes: ScopeWords[]): SafeHtml {
  if (scopes.length === 0) return html`<p class="empty">No permissions beyond knowing it is you.</p>`;
  return html`<ul class="scopes">${scopes.map((s) => html`<li>${s.words} <code>${s.scope}</code></li>`)}</ul>`;
}

function dollars(cents: number): string {
  return `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

// ----- sign-in and sign-up -----

/**
 * The email and password of the sign-in and sign-up forms (with the CSRF token and `next`). A new password
 * (`newPasswordMin` set) says its minimum and asks the browser for a new one, not a saved one.
 */
function credentialFields(data: SignInPage, errorId: string | null, newPasswordMin: number | null): SafeHtml {
  const password =
    newPasswordMin === null
      ? html`<input id="password" name="password" type="password" autocomplete="current-password" required${describedBy(errorId)}>`
      : html`<span class="hint" id="password-hint">At least ${newPasswordMin} characters.</span>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${newPasswordMin}"${describedBy('password-hint', errorId)}>`;
  return html`${csrfField(data)}${hidden('next', data.next)}
<div class="field">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${data.email}"${describedBy(errorId)}>
</div>
<div class="field">
<label for="password">Password</label>
${password}
</div>`;
}

export function signInPage(data: SignInPage): string {
  const errorId = data.error === null ? null : 'signin-error';
  return layout(
    data,
    { title: 'Sign in' },
    html`<h1>Sign in to Assay</h1>
<div class="card">
${errorAlert('signin-error', data.error)}
<form method="post" action="/signin" class="stack">
${credentialFields(data, errorId, null)}
${submit('Sign in')}
</form>
</div>
<p class="after">No account yet? <a href="/signup?next=${encode(data.next)}">Create one</a></p>`,
  );
}

export function signUpPage(data: SignUpPage): string {
  const errorId = data.error === null ? null : 'signup-error';
  return layout(
    data,
    { title: 'Create an account' },
    html`<h1>Create your Assay account</h1>
<div class="card">
${errorAlert('signup-error', data.error)}
<form method="post" action="/signup" class="stack">
${credentialFields(data, errorId, data.passwordMinLength)}
${submit('Create account')}
</form>
</div>
<p class="after">Already have an account? <a href="/signin?next=${encode(data.next)}">Sign in</a></p>`,
  );
}

// ----- the account page -----

export function accountPage(data: AccountPage): string {
  return layout(
    data,
    { title: 'Your account', wide: true },
    html`<h1>Your account</h1>
${noticeStatus(data.notice)}
${data.error !== null && html`<div class="alert error" role="alert"><p>${data.error}</p></div>`}
${data.newInitialAccessToken !== null && newTokenPanel(data.newInitialAccessToken)}
${data.newApiKey !== null && newApiKeyPanel(data.newApiKey, data.apiUrl)}
${data.webhooks.some((w) => w.disabledReason !== null) && disabledWebhooksNotice()}
<dl class="facts">
<dt>Email</dt><dd>${data.email}</dd>
<dt>Principal id</dt><dd><code>${data.principalId}</code></dd>
</dl>
<nav class="toc" aria-label="On this page">
<ul>
<li><a href="#approvals">Purchases waiting for you</a></li>
<li><a href="#money">Card, credits and payouts</a></li>
<li><a href="#mandate">Your mandate</a></li>
<li><a href="#grants">Access granted to agents</a></li>
<li><a href="#clients">Registered clients</a></li>
<li><a href="#initial-access-tokens">Initial access tokens</a></li>
<li><a href="#api-keys">API keys</a></li>
<li><a href="#webhooks">Webhooks</a></li>
</ul>
</nav>
${approvalsSection(data)}
${moneySection(data)}
${mandateSection(data)}
${grantsSection(data)}
${clientsSection(data)}
${initialAccessTokensSection(data)}
${apiKeysSection(data)}
${webhooksSection(data)}`,
  );
}

function moneySection(data: AccountPage): SafeHtml {
  const m = data.money;
  const card = m.card;
  const payouts = m.payouts;
  return html`<section class="part" id="money" aria-labelledby="money-heading">
<h2 id="money-heading">Card, credits and payouts</h2>
<dl class="facts">
<dt>Available credits</dt><dd>${dollars(m.balanceCents)} (${m.balanceCents} cents)</dd>
<dt>Saved card</dt><dd>${card === null ? 'None' : html`${card.brand} ending in ${card.last4}`}</dd>
<dt>Seller payouts</dt><dd>${payouts === null ? 'Not set up' : payouts.enabled ? html`Enabled; ${dollars(payouts.paidOutCents)} paid out so far` : 'Set up started; the processor has not enabled payouts yet'}</dd>
</dl>
${
  m.processor
    ? html`<p>Your agents top up credits with <code>POST /v1/topups</code>: each top-up charges the saved card, and the credits land once the payment processor confirms the payment. Saving a card takes you to the processor’s page and back.</p>
<div class="actions">
<form method="post" action="/account/card">${csrfField(data)}<button type="submit" class="button primary">${card === null ? 'Save a card' : 'Replace the card'}</button></form>
<form method="post" action="/account/payouts">${csrfField(data)}<button type="submit" class="button secondary">${payouts === null ? 'Set up seller payouts' : 'Continue payout set-up'}</button></form>
</div>`
    : html`<p class="empty">Card payments are not configured on this deployment: live top-ups and payouts are unavailable.</p>`
}
<p><a href="/api/account/export" download>Download everything we hold about you</a> (JSON).</p>
</section>`;
}

function mandateSection(data: AccountPage): SafeHtml {
  const m = data.mandate;
  return html`<section class="part" id="mandate" aria-labelledby="mandate-heading">
<h2 id="mandate-heading">Your mandate</h2>
<p>The mandate is what your agents may buy for you: without one, agents cannot buy anything.</p>
${
  m === null
    ? html`<p><strong>You have not set a mandate yet.</strong></p>`
    : html`<p>Now: up to <strong>${dollars(m.perItemCapCents)}</strong> an item, trust at least ${m.minTrust}${
        m.minFloor > 0 && html`, a verification floor of at least ${m.minFloor}`
      }${
        m.minJudgeVersion !== null && html`, judged by version ${m.minJudgeVersion} or later`
      }${m.rejectOpenJudgeErrata && html`, nothing judged by a judge with an open erratum`}${
        m.approvalAboveCents !== null && html`; anything above ${dollars(m.approvalAboveCents)} waits for your approval`
      }.</p>`
}
<form method="post" action="/account/mandate" class="card stack">
${csrfField(data)}${hidden('idempotency_key', data.mandateKey)}
<div class="field">
<label for="per-item-cap">Most an agent may pay for one item, in cents</label>
<span class="hint" id="per-item-cap-hint">100 cents is one dollar.</span>
<input id="per-item-cap" name="per_item_cap_cents" type="number" class="short" inputmode="numeric" min="0" step="1" required value="${m?.perItemCapCents ?? ''}" aria-describedby="per-item-cap-hint">
</div>
<div class="field">
<label for="min-trust">Lowest trust score an item may have</label>
<span class="hint" id="min-trust-hint">From 0 to 1; 0 allows any.</span>
<input id="min-trust" name="min_trust" type="number" class="short" inputmode="decimal" min="0" max="1" step="0.01" value="${m?.minTrust ?? 0}" aria-describedby="min-trust-hint">
</div>
<div class="field">
<label for="min-floor">Lowest verification floor an item may have</label>
<span class="hint" id="min-floor-hint">From 0 to 1: the listing's floor and its report's score must both reach it; 0 allows any.</span>
<input id="min-floor" name="min_floor" type="number" class="short" inputmode="decimal" min="0" max="1" step="0.01" value="${m?.minFloor ?? 0}" aria-describedby="min-floor-hint">
</div>
<div class="field">
<label for="min-judge-version">Oldest judge version allowed (optional)</label>
<span class="hint" id="min-judge-version-hint">A version such as 2.0.0; leave empty to allow any.</span>
<input id="min-judge-version" name="min_judge_version" type="text" class="short" pattern="[0-9]+\\.[0-9]+\\.[0-9]+" spellcheck="false" autocomplete="off" value="${m?.minJudgeVersion ?? ''}" aria-describedby="min-judge-version-hint">
</div>
<div class="field">
<label for="approval-above">Ask me before any purchase above this many cents (optional)</label>
<span class="hint" id="approval-above-hint">Such a purchase is not charged until you approve it below; leave empty to never ask.</span>
<input id="approval-above" name="approval_above_cents" type="number" class="short" inputmode="numeric" min="0" step="1" value="${m?.approvalAboveCents ?? ''}" aria-describedby="approval-above-hint">
</div>
<div class="check">
<input id="reject-open-judge-errata" name="reject_open_judge_errata" type="checkbox" value="true"${m?.rejectOpenJudgeErrata && html` checked`}>
<label for="reject-open-judge-errata">Refuse items judged by a judge version with an open erratum</label>
</div>
<div><button type="submit" class="button primary">${m === null ? 'Set the mandate' : 'Save the mandate'}</button></div>
</form>
</section>`;
}

function approvalsSection(data: AccountPage): SafeHtml {
  const pending = data.approvals.filter((a) => a.state === 'pending');
  const decided = data.approvals.filter((a) => a.state !== 'pending');
  return html`<section class="part" id="approvals" aria-labelledby="approvals-heading">
<h2 id="approvals-heading">Purchases waiting for you</h2>
<p>Purchases above your approval threshold are not charged until you approve them. Approving buys the item once, for the agent that asked; declining buys nothing. A request nobody decides expires.</p>
${
  pending.length === 0
    ? html`<p class="empty">No purchase is waiting for your approval.</p>`
    : html`<ul class="items">${pending.map((a) => approvalItem(data, a))}</ul>`
}
${
  decided.length > 0 &&
  html`<h3>Recent decisions</h3>
<ul class="tokens">${decided.map(
    (a) =>
      html`<li><span>${dollars(a.priceCents)} for listing <code>${a.listingId}</code>: <strong>${a.state}</strong> ${a.decidedAt !== null && time(a.decidedAt)}${a.orderId !== null && html` (order <code>${a.orderId}</code>)`}</span></li>`,
  )}</ul>`
}
</section>`;
}

function approvalItem(frame: PageFrame, a: ApprovalT): SafeHtml {
  const what = `${dollars(a.priceCents)} for listing ${a.listingId}`;
  return html`<li class="item">
<div class="item-head">
<h3>${dollars(a.priceCents)}</h3>
<div class="actions">
${decisionForm(frame, `/account/approvals/${encode(a.id)}/approve`, 'primary', html`Approve<span class="visually-hidden"> ${what}</span>`)}
${decisionForm(frame, `/account/approvals/${encode(a.id)}/decline`, 'danger', html`Decline<span class="visually-hidden"> ${what}</span>`)}
</div>
</div>
<dl class="facts">
<dt>Listing</dt><dd><code>${a.listingId}</code></dd>
<dt>Formats</dt><dd>${a.formats.join(', ')}</dd>
<dt>Asked by agent</dt><dd><code>${a.agentId}</code></dd>
<dt>Asked</dt><dd>${time(a.requestedAt)}</dd>
<dt>Expires</dt><dd>${time(a.expiresAt)}</dd>
<dt>Request id</dt><dd><code>${a.id}</code></dd>
</dl>
</li>`;
}

function decisionForm(frame: PageFrame, action: string, kind: 'primary' | 'danger', label: SafeHtml): SafeHtml {
  return html`<form method="post" action="${action}">${csrfField(frame)}<button type="submit" class="button ${kind} small">${label}</button></form>`;
}

function grantsSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="grants" aria-labelledby="grants-heading">
<h2 id="grants-heading">Access granted to agents</h2>
<p>Agents you allowed to act for you. Revoking a grant ends its tokens at once.</p>
${
  data.grants.length === 0
    ? html`<p class="empty">You have not granted access to any agent.</p>`
    : html`<ul class="items">${data.grants.map((g) => grantItem(data, g))}</ul>`
}
</section>`;
}

function grantItem(frame: PageFrame, g: AccountGrant): SafeHtml {
  const name = g.clientName ?? 'Unnamed client';
  return html`<li class="item">
<div class="item-head">
<h3>${name}</h3>
${buttonForm(frame, `/account/grants/${encode(g.id)}/revoke`, html`Revoke<span class="visually-hidden"> the access of ${name} (${g.clientId})</span>`)}
</div>
<dl class="facts">
<dt>Client id</dt><dd><code>${g.clientId}</code></dd>
<dt>Applies to</dt><dd><code>${g.resource}</code></dd>
<dt>Granted</dt><dd>${time(g.createdAt)}</dd>
</dl>
<p class="muted">It may:</p>
${scopeList(g.scopes)}
${
  g.liveTokens.length === 0
    ? html`<p class="empty">No live access tokens.</p>`
    : html`<p class="muted">Live access tokens:</p>
<ul class="tokens">${g.liveTokens.map(
        (t) => html`<li><span><code>${t.jti}</code>${t.exchanged && html`<span class="badge">exchanged</span>`}
expires ${time(t.expiresAt)}</span>
${buttonForm(frame, `/account/tokens/${encode(t.jti)}/revoke`, html`Revoke<span class="visually-hidden"> token ${t.jti}</span>`)}</li>`,
      )}</ul>`
}
</li>`;
}

function clientsSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="clients" aria-labelledby="clients-heading">
<h2 id="clients-heading">Registered clients</h2>
<p>Agents registered as OAuth clients with your initial access tokens.</p>
${
  data.clients.length === 0
    ? html`<p class="empty">No clients are registered.</p>`
    : html`<ul class="items">${data.clients.map((c) => clientItem(data, c))}</ul>`
}
</section>`;
}

function clientItem(frame: PageFrame, c: AccountClient): SafeHtml {
  const name = c.name ?? 'Unnamed client';
  return html`<li class="item">
<div class="item-head">
<h3>${name}</h3>
${buttonForm(frame, `/account/clients/${encode(c.clientId)}/revoke`, html`Revoke<span class="visually-hidden"> the client ${name} (${c.clientId})</span>`)}
</div>
<dl class="facts">
<dt>Client id</dt><dd><code>${c.clientId}</code></dd>
<dt>Redirect URIs</dt><dd>${
    c.redirectUris.length === 0
      ? html`<span class="empty">none</span>`
      : html`<ul>${c.redirectUris.map((u) => html`<li><code>${u}</code></li>`)}</ul>`
  }</dd>
<dt>Grant types</dt><dd>${
    c.grantTypes.length === 0
      ? html`<span class="empty">none</span>`
      : html`<ul>${c.grantTypes.map((t) => html`<li><code>${t}</code></li>`)}</ul>`
  }</dd>
<dt>Registered</dt><dd>${time(c.createdAt)}</dd>
</dl>
</li>`;
}

function initialAccessTokensSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="initial-access-tokens" aria-labelledby="iat-heading">
<h2 id="iat-heading">Initial access tokens</h2>
<p>An agent uses an initial access token once, to register itself as a client with <code>POST /oauth/register</code>; you then allow it on the consent screen.</p>
${
  data.initialAccessTokens.length === 0
    ? html`<p class="empty">You have no unused initial access tokens.</p>`
    : html`<ul class="items">${data.initialAccessTokens.map(
        (t) => html`<li class="item"><div class="item-head">
<p>Issued ${time(t.createdAt)}, expires ${time(t.expiresAt)}</p>
${buttonForm(data, `/account/initial-access-tokens/${encode(t.id)}/revoke`, html`Revoke<span class="visually-hidden"> the token issued ${time(t.createdAt)}</span>`)}
</div></li>`,
      )}</ul>`
}
<form method="post" action="/account/initial-access-tokens" class="issue">${csrfField(data)}
<p><button type="submit" class="button primary">Issue an initial access token</button></p>
</form>
</section>`;
}

function newTokenPanel(t: { token: string; expiresAt: string }): SafeHtml {
  return html`<section class="panel" aria-labelledby="new-token-heading">
<h2 id="new-token-heading">Your new initial access token</h2>
<p>Copy it now: it will not be shown again. It expires ${time(t.expiresAt)}.</p>
<code class="secret">${t.token}</code>
<p class="muted">Give it to your agent, which sends it as <code>Authorization: Bearer …</code> to <code>POST /oauth/register</code>.</p>
</section>`;
}

function apiKeysSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="api-keys" aria-labelledby="api-keys-heading">
<h2 id="api-keys-heading">API keys</h2>
<p>A program on a server uses an API key to read and write your context files through the context-file API, <code>${data.apiUrl}/v1</code>. A key can read, change and delete all of your context files until you revoke it; revoking stops it at once.</p>
${
  data.apiKeys.length === 0
    ? html`<p class="empty">You have no API keys.</p>`
    : html`<div class="table-wrap" role="region" aria-labelledby="api-keys-caption" tabindex="0">
<table>
<caption id="api-keys-caption">Your API keys, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Issued</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${data.apiKeys.map((k) => apiKeyRow(data, k))}</tbody>
</table>
</div>`
}
<form method="post" action="/account/api-keys" class="card stack">
${csrfField(data)}
<div class="field">
<label for="api-key-name">Name of a new key</label>
<span class="hint" id="api-key-name-hint">Where it will be used, such as “build server”, so you know which key to revoke.</span>
<input id="api-key-name" name="name" type="text" required maxlength="${data.apiKeyNameLengthMax}" autocomplete="off" aria-describedby="api-key-name-hint">
</div>
<div><button type="submit" class="button primary">Issue an API key</button></div>
</form>
</section>`;
}

function apiKeyRow(frame: PageFrame, k: AccountApiKey): SafeHtml {
  return html`<tr>
<th scope="row">${k.name}</th>
<td><code>…${k.hint}</code></td>
<td>${time(k.createdAt)}</td>
<td>${k.lastUsedAt === null ? html`<span class="empty">never</span>` : time(k.lastUsedAt)}</td>
<td>${buttonForm(frame, `/account/api-keys/${encode(k.id)}/revoke`, html`Revoke<span class="visually-hidden"> the key ${k.name} (ending ${k.hint})</span>`)}</td>
</tr>`;
}

function newApiKeyPanel(k: { name: string; key: string }, apiUrl: string): SafeHtml {
  return html`<section class="panel" aria-labelledby="new-api-key-heading">
<h2 id="new-api-key-heading">Your new API key “${k.name}”</h2>
<p><strong>Copy it now: it will not be shown again.</strong> Only a hash of it is kept, so nobody can show it to you later; if you lose it, revoke it and issue another.</p>
<code class="secret">${k.key}</code>
<p class="muted">Your program sends it as <code>Authorization: Bearer …</code> to <code>${apiUrl}/v1/contexts</code>.</p>
</section>`;
}

/** Near the top of the page while a webhook stays disabled: delivery stopped, and nothing is sent until it is re-enabled. */
function disabledWebhooksNotice(): SafeHtml {
  return html`<div class="alert error" id="webhooks-disabled-notice"><p><strong>A webhook was disabled because its deliveries kept failing.</strong> Nothing is sent to it until you re-enable it: <a href="#webhooks">see your webhooks</a>.</p></div>`;
}

function webhooksSection(data: AccountPage): SafeHtml {
  return html`<section class="part" id="webhooks" aria-labelledby="webhooks-heading">
<h2 id="webhooks-heading">Webhooks</h2>
<p>Webhooks send your events to your HTTPS endpoints as they happen. A webhook whose deliveries keep failing is disabled; re-enable it here once its endpoint works again. Pausing one stops its deliveries: events made while it is paused are not sent later.</p>
<p>Webhooks are registered, changed and deleted on the context-file API with an API key: <code>POST ${data.apiUrl}/v1/webhooks</code> (described in <a href="${data.apiUrl}/v1/openapi.json">its OpenAPI document</a> and in <code>docs/webhooks.md</code>).</p>
${
  data.webhooks.length === 0
    ? html`<p class="empty">You have no webhooks.</p>`
    : html`<div class="table-wrap" role="region" aria-labelledby="webhooks-caption" tabindex="0">
<table>
<caption id="webhooks-caption">Your webhooks, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">URL and events</th><th scope="col">State</th><th scope="col">Registered</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${data.webhooks.map((w) => webhookRow(data, w))}</tbody>
</table>
</div>`
}
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

/** A URL that may wrap before each `/` of its path, so a long one does not widen the table past the page. */
function breakableUrl(url: string): SafeHtml {
  const at = url.indexOf('://') + 3;
  return html`${url.slice(0, at)}${url
    .slice(at)
    .split('/')
    .map((part, i) => html`${i > 0 && html`<wbr>/`}${part}`)}`;
}

// ----- consent and device -----

function clientFacts(clientName: string | null, clientId: string): SafeHtml {
  return html`<dt>Client</dt><dd>${clientName ?? 'An unnamed client'}</dd>
<dt>Client id</dt><dd><code>${clientId}</code></dd>`;
}

function decisionButtons(): SafeHtml {
  return html`<div class="actions">
<button type="submit" name="decision" value="approve" class="button primary">Allow</button>
<button type="submit" name="decision" value="deny" class="button secondary">Deny</button>
</div>`;
}

export function consentPage(data: ConsentPage): string {
  return layout(
    data,
    { title: 'Allow access' },
    html`<h1>Allow ${data.clientName ?? 'an unnamed client'} to act for you?</h1>
<p class="lead">It is asking to use your Assay account.</p>
<div class="card">
<dl class="facts">
${clientFacts(data.clientName, data.clientId)}
<dt>Answers go to</dt><dd><strong>${data.redirectOrigin}</strong></dd>
<dt>Applies to</dt><dd><code>${data.resource}</code></dd>
</dl>
<p>If you allow it, it will be able to:</p>
${scopeList(data.scopes)}
<form method="post" action="/oauth/authorize/decision">
${csrfField(data)}${hidden('screen_token', data.screenToken)}
${decisionButtons()}
</form>
</div>
<p class="after">You can take this access back at any time on <a href="/account#grants">your account page</a>.</p>`,
  );
}

export function deviceEntryPage(data: DeviceEntryPage): string {
  const errorId = data.error === null ? null : 'device-error';
  return layout(
    data,
    { title: 'Connect a device' },
    html`<h1>Connect a device</h1>
<p class="lead">Enter the code shown on your device.</p>
<div class="card">
${errorAlert('device-error', data.error)}
<form method="post" action="/device" class="stack">
${csrfField(data)}
<div class="field">
<label for="user-code">Code</label>
<span class="hint" id="user-code-hint">Eight letters, such as BCDF-GHJK.</span>
<input id="user-code" name="user_code" type="text" class="user-code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" inputmode="text" required value="${data.userCode}"${describedBy('user-code-hint', errorId)}>
</div>
${submit('Continue')}
</form>
</div>`,
  );
}

export function deviceConfirmPage(data: DeviceConfirmPage): string {
  return layout(
    data,
    { title: 'Connect a device' },
    html`<h1>Allow ${data.clientName ?? 'an unnamed client'} to act for you?</h1>
<p class="lead">Check that your device shows this code:</p>
<p class="user-code-shown">${data.userCode}</p>
<div class="card">
<dl class="facts">
${clientFacts(data.clientName, data.clientId)}
</dl>
<p>If you allow it, it will be able to:</p>
${scopeList(data.scopes)}
<form method="post" action="/device/decision">
${csrfField(data)}${hidden('screen_token', data.screenToken)}${hidden('user_code', data.userCode)}
${decisionButtons()}
</form>
</div>
<p class="after">If the codes differ, deny: someone else may be asking.</p>`,
  );
}

// ----- messages -----

export function messagePage(data: MessagePage): string {
  // The link is the server's own, but a javascript: URL here would run on a click, so only web URLs pass.
  assert(data.link === null || /^(https?:\/\/|\/(?!\/))/.test(data.link.href), 'a message link is a path or http(s)');
  return layout(
    data,
    { title: data.title },
    html`<h1>${data.title}</h1>
<div class="card">
<p>${data.message}</p>
${data.link !== null && html`<p><a class="button primary" href="${data.link.href}">${data.link.text}</a></p>`}
</div>`,
  );
}
