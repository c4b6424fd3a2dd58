// The pieces every page is built from: the frame (header, main, footer, the one stylesheet), the pieces of forms (the
// CSRF field, alerts, one-button forms) and the words (times, dollars), shared by the page modules of this face.
import assert from 'node:assert/strict';
import { copyScriptHash, copyScriptPath } from './copy-script.ts';
import { html, type SafeHtml } from './html.ts';
import type { PageFrame, ScopeWords } from './page-data.ts';
import { pageStylesheet } from './style.ts';

// ----- the frame every page shares -----

export function layout(
  frame: PageFrame,
  page: { title: string; wide?: boolean; brandHref?: string; copyButtons?: boolean },
  main: SafeHtml,
): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="same-origin">
<title>${page.title} · Assay</title>
<style>${pageStylesheet}</style>
${page.copyButtons && html`<script src="${copyScriptPath}" integrity="${copyScriptHash}" defer></script>`}
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

export function csrfField(frame: PageFrame): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${frame.csrf}">`;
}

export function hidden(name: string, value: string): SafeHtml {
  return html`<input type="hidden" name="${name}" value="${value}">`;
}

/** The error of a form, announced, placed before the form; fields name it in `aria-describedby`. */
export function errorAlert(id: string, error: string | null): SafeHtml | null {
  return error === null ? null : html`<div class="alert error" role="alert" id="${id}"><p>${error}</p></div>`;
}

export function noticeStatus(notice: string | null): SafeHtml | null {
  return notice === null ? null : html`<div class="alert notice" role="status"><p>${notice}</p></div>`;
}

/** The ids a field's `aria-describedby` lists: its hint and the form's error, those that are on the page. */
export function describedBy(...ids: (string | null)[]): SafeHtml | null {
  const present = ids.filter((id): id is string => id !== null);
  return present.length === 0 ? null : html` aria-describedby="${present.join(' ')}"`;
}

export function submit(label: string, kind: 'primary' | 'secondary' = 'primary'): SafeHtml {
  return html`<button type="submit" class="button ${kind} full">${label}</button>`;
}

/** A form of one button that posts to `action`: the revoke buttons of the account page. */
export function buttonForm(frame: PageFrame, action: string, label: SafeHtml): SafeHtml {
  return html`<form method="post" action="${action}">${csrfField(frame)}<button type="submit" class="button danger small">${label}</button></form>`;
}

/** A query string value or path segment, URL-encoded, for a link or a form action. */
export const encode = encodeURIComponent;

// ----- words -----

/** "2026-11-23 14:05 UTC" in a <time> carrying the ISO timestamp. */
export function time(iso: string): SafeHtml {
  const at = new Date(iso);
  assert(!Number.isNaN(at.getTime()), `not a timestamp: ${iso}`);
  const text = `${at.toISOString().slice(0, 10)} ${at.toISOString().slice(11, 16)} UTC`;
  return html`<time datetime="${at.toISOString()}">${text}</time>`;
}

export function scopeList(scopes: ScopeWords[]): SafeHtml {
  if (scopes.length === 0) return html`<p class="empty">No permissions beyond knowing it is you.</p>`;
  return html`<ul class="scopes">${scopes.map((s) => html`<li>${s.words} <code>${s.scope}</code></li>`)}</ul>`;
}

export function dollars(cents: number): string {
  return `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** A URL that may wrap before each `/` of its path, so a long one does not widen the table past the page. */
export function breakableUrl(url: string): SafeHtml {
  const at = url.indexOf('://') + 3;
  return html`${url.slice(0, at)}${url
    .slice(at)
    .split('/')
    .map((part, i) => html`${i > 0 && html`<wbr>/`}${part}`)}`;
}

/** The one line of curl that makes a sandbox agent: a token, test credits and a test mandate, no account needed. */
export function sandboxCurl(baseUrl: string): string {
  return `curl -s -X POST ${baseUrl}/sandbox/agents`;
}
