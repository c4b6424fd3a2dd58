// The web pages as HTML: one function per page, each taking its data from page-data.ts and returning the whole
// document as a string. Plain forms, no script; the route decides the status code and sends
// `pageContentSecurityPolicy` with the page.
import type { ApprovalT, ClientShownT } from '../../contracts/index.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { html, type SafeHtml } from './html.ts';
import {
  buttonForm,
  csrfField,
  describedBy,
  dollars,
  encode,
  errorAlert,
  hidden,
  layout,
  noticeStatus,
  scopeList,
  submit,
  time,
} from './page-parts.ts';
import { disabledWebhooksNotice, newWebhookSecretPanel, webhooksSection } from './webhook-views.ts';
import {
  activitySection,
  agentName,
  listingName,
  listingTerms,
  startHere,
  testBadge,
  testModeSection,
} from './activity-views.ts';
import type {
  AccountApiKey,
  AccountClient,
  AccountGrant,
  AccountPage,
  AddCreditsPage,
  ConsentPage,
  DeviceConfirmPage,
  DeviceEntryPage,
  MessagePage,
  NewInitialAccessTokenPage,
  PageFrame,
  PageLabels,
  SignInPage,
  SignUpPage,
} from './page-data.ts';
import { copyScriptHash } from './copy-script.ts';
import { pageStylesheet } from './style.ts';

/**
 * The Content-Security-Policy these pages are written for: nothing loads, nothing runs, the one stylesheet is allowed
 * by its hash. `form-action` is left out on purpose: Chrome applies it to the redirect that follows a form, and the
 * consent form's answer is a redirect to the client's own redirect URI.
 */
export const pageContentSecurityPolicy = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(pageStylesheet.toString()).digest('base64')}'`,
  // The copy buttons' script, by its hash: no other script runs (copy-script.ts).
  `script-src '${copyScriptHash}'`,
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

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
${hidden('submission', data.submission)}
${credentialFields(data, errorId, data.passwordMinLength)}
${submit('Create account')}
</form>
</div>
<p class="after">Already have an account? <a href="/signin?next=${encode(data.next)}">Sign in</a></p>`,
  );
}

// ----- an approval that needs credits first -----

/** An approval refused for want of credits: what to do next, and where (the request waits on). */
export function addCreditsPage(data: AddCreditsPage): string {
  return layout(
    data,
    { title: 'Add credits to approve this purchase' },
    html`<h1>Add credits to approve this purchase</h1>
<div class="card stack">
<p>Nothing was bought: ${
      data.priceCents === null
        ? 'your available credits do not cover this purchase'
        : html`this purchase costs <strong>${dollars(data.priceCents)}</strong> and you have <strong>${dollars(Math.max(0, data.availableCents))}</strong> available`
    }.</p>
<p>${
      data.cardPayments
        ? html`Add credits: save a card on your account page, and your agents top up with <code>POST /v1/topups</code>; the credits land once the payment processor confirms. Then approve the purchase again.`
        : html`This deployment takes no card payments, so live credits cannot be added here; ask its operator. The sandbox has test credits.`
    }</p>
<p>The purchase waits for you${data.expiresAt === null ? '' : html` until ${time(data.expiresAt)}`}: approve it again once the credits are there.</p>
<p><a class="button primary" href="/account#money">Add credits</a> <a href="/account#approvals">Back to the purchases waiting for you</a></p>
</div>`,
  );
}

// ----- a new initial access token, shown once -----

/**
 * The page a new initial access token is shown on, once: the form that issued it redirected here (post, redirect,
 * get), so a reload shows the page again without issuing another, and without the token, which it shows only once.
 */
export function newInitialAccessTokenPage(data: NewInitialAccessTokenPage): string {
  const t = data.token;
  return layout(
    data,
    { title: 'New initial access token', copyButtons: t !== null },
    t === null
      ? html`<h1>Initial access token</h1>
<div class="card">
<p>This page showed a new initial access token once, and does not show it again. If you did not copy it, revoke it on your account page and issue another.</p>
<p><a class="button primary" href="/account#initial-access-tokens">Your initial access tokens</a></p>
</div>`
      : html`<h1>Your new initial access token</h1>
<div class="card stack">
<p>Copy it now: it is shown only on this page, once. It registers one client, then it is spent; unused, it expires ${time(t.expiresAt)}.</p>
<code class="secret" id="new-iat">${t.token}</code>
<p><button type="button" class="button secondary" data-copy="new-iat" hidden>Copy the token</button> <span id="new-iat-status" role="status"></span></p>
<p class="muted">Give it to your agent, which sends it as <code>Authorization: Bearer …</code> to <code>POST /oauth/register</code>.</p>
<p><a href="/account#initial-access-tokens">Back to your account</a></p>
</div>`,
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
${data.newApiKey !== null && newApiKeyPanel(data.newApiKey, data.apiUrl)}
${data.newWebhookSecret !== null && newWebhookSecretPanel(data.newWebhookSecret)}
${data.webhooks.some((w) => w.disabledReason !== null) && disabledWebhooksNotice()}
${startHere(data)}
<dl class="facts">
<dt>Email</dt><dd>${data.email}</dd>
<dt>Principal id</dt><dd><code>${data.principalId}</code></dd>
</dl>
<nav class="toc" aria-label="On this page">
<ul>
<li><a href="#test-mode">Test mode</a></li>
<li><a href="#approvals">Purchases waiting for you</a></li>
<li><a href="#orders">Orders</a></li>
<li><a href="#events">Events</a></li>
<li><a href="#money">Card, credits and payouts</a></li>
<li><a href="#mandate">Your mandate</a></li>
<li><a href="#grants">Access granted to agents</a></li>
<li><a href="#clients">Registered clients</a></li>
<li><a href="#initial-access-tokens">Initial access tokens</a></li>
<li><a href="#api-keys">API keys</a></li>
<li><a href="#webhooks">Webhooks</a></li>
</ul>
</nav>
${testModeSection(data, data.testMode)}
${approvalsSection(data)}
${activitySection(data)}
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
<dt>Available credits</dt><dd>${
    m.balanceCents < 0
      ? html`<strong>${dollars(-m.balanceCents)} owed</strong> (${m.balanceCents} cents): a card top-up was refunded or disputed at the payment processor after its credits were spent. Your agents buy nothing, and your sales are paid out nothing, until a top-up pays it back.`
      : html`${dollars(m.balanceCents)} (${m.balanceCents} cents)`
  }</dd>
<dt>Test credits</dt><dd>${data.testMode.sandbox === null ? html`<a href="#test-mode">Issue a sandbox agent token</a> to start with ${dollars(data.testMode.grantCents)}` : html`${dollars(data.testMode.sandbox.balanceCents)}`} ${testBadge}<span class="hint">Sandbox money for trying things: it never mixes with your live credits.</span></dd>
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
      }${m.minJudgeVersion !== null && html`, judged by version ${m.minJudgeVersion} or later`}${
        m.minJudgeSpecificity !== null &&
        html`, judged by a judge that lets at most ${Math.round((1 - m.minJudgeSpecificity) * 1000) / 10}% of false claims through`
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
<label for="min-judge-specificity">Lowest judge specificity allowed (optional)</label>
<span class="hint" id="min-judge-specificity-hint">From 0 to 1: the share of false claims the judge refused to verify on the published reference set (0.94 lets 6% through); leave empty to allow any judge. A model judge has no published figure and meets no minimum.</span>
<input id="min-judge-specificity" name="min_judge_specificity" type="number" class="short" inputmode="decimal" min="0" max="1" step="0.01" value="${m?.minJudgeSpecificity ?? ''}" aria-describedby="min-judge-specificity-hint">
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
    : html`<ul class="items">${pending.map((a) => approvalItem(data, data.labels, a))}</ul>`
}
${
  decided.length > 0 &&
  html`<h3>Recent decisions</h3>
<ul class="tokens">${decided.map(
    (a) =>
      html`<li><span>${listingName(data.labels, a.listingId)} for ${dollars(a.priceCents)}, asked by ${agentName(data.labels, a.agentId)}: <strong>${a.state}</strong> ${a.decidedAt !== null && time(a.decidedAt)}${a.orderId !== null && html` (order <code>${a.orderId}</code>)`}</span></li>`,
  )}</ul>`
}
</section>`;
}

function approvalItem(frame: PageFrame, labels: PageLabels, a: ApprovalT): SafeHtml {
  const title = labels.listings[a.listingId]?.title ?? `listing ${a.listingId}`;
  const what = `${title} for ${dollars(a.priceCents)}`;
  const terms = listingTerms(labels, a.listingId);
  return html`<li class="item">
<div class="item-head">
<h3>${listingName(labels, a.listingId)} for ${dollars(a.priceCents)}</h3>
<div class="actions">
${decisionForm(frame, `/account/approvals/${encode(a.id)}/approve`, 'primary', html`Approve<span class="visually-hidden"> ${what}</span>`)}
${decisionForm(frame, `/account/approvals/${encode(a.id)}/decline`, 'danger', html`Decline<span class="visually-hidden"> ${what}</span>`)}
</div>
</div>
<dl class="facts">
<dt>Listing</dt><dd>${terms ?? html`<code>${a.listingId}</code>`}${a.sandbox && html` ${testBadge}`}</dd>
<dt>Formats</dt><dd>${a.formats.join(', ')}</dd>
<dt>Asked by</dt><dd>${agentName(labels, a.agentId)}</dd>
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

// ----- consent and device -----

/**
 * Who the client is, and how the server knows it: a client no account registered says so, and one known by its
 * metadata document names the host it lives on (the name is the document's own claim; the host is not).
 */
function clientFacts(client: ClientShownT): SafeHtml {
  const known =
    client.known === 'registered'
      ? null
      : client.known === 'first_party'
        ? 'Assay’s own application, not registered by your account'
        : html`Described by its document at <strong>${client.documentHost ?? ''}</strong>, not registered by your account`;
  return html`<dt>Client</dt><dd>${client.clientName ?? 'An unnamed client'}</dd>
<dt>Client id</dt><dd><code>${client.clientId}</code></dd>
${known !== null && html`<dt>Registration</dt><dd>${known}</dd>`}`;
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
    html`<h1>Allow ${data.client.clientName ?? 'an unnamed client'} to act for you?</h1>
<p class="lead">It is asking to use your Assay account.</p>
<div class="card">
<dl class="facts">
${clientFacts(data.client)}
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
    html`<h1>Allow ${data.client.clientName ?? 'an unnamed client'} to act for you?</h1>
<p class="lead">Check that your device shows this code:</p>
<p class="user-code-shown">${data.userCode}</p>
<div class="card">
<dl class="facts">
${clientFacts(data.client)}
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
