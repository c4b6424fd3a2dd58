// The public pages a person meets before signing in: the landing page at `/` (served to a browser that asks for
// HTML; the MCP endpoint keeps every other request on that path, see `wantsPage`), the documentation index at
// `/docs`, the guides of the repository's docs/ folder as they are written, and the API reference at `/docs/api`,
// made from the operation table like `/openapi.json`.
import { readFileSync } from 'node:fs';
import { type Config, operations } from '../../contracts/index.ts';
import { html } from './html.ts';
import { page, type WebResponse } from './http.ts';
import type { PageFrame } from './page-data.ts';
import { layout, sandboxCurl } from './page-parts.ts';
import type { WebRoute } from './route.ts';
import { csrfOf, sessionCookie, sessionOf } from './session.ts';

/**
 * Whether a request to `/` asks for a page: its Accept header names `text/html` (with a non-zero q), as every browser
 * does for a navigation, and does not name `text/event-stream` (the MCP endpoint's GET stream). curl's `*∕*`, an MCP
 * client and an API caller name no `text/html`, so they keep the MCP endpoint's answers exactly.
 */
export function wantsPage(accept: string): boolean {
  let html = false;
  for (const part of accept.toLowerCase().split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (type === 'text/event-stream') return false;
    if ((type === 'text/html' || type === 'application/xhtml+xml') && weight > 0) html = true;
  }
  return html;
}

/** The guides of docs/ served at `/docs/{name}`, in the order the index lists them, read once at start. */
const guides = [
  { name: 'purchases', title: 'Buying: search, mandates, escrow, settlement and delivery' },
  { name: 'money', title: 'Money: credits, live top-ups with a card, payouts' },
  { name: 'fleet', title: 'Fleets: plans, rate limits, quotas and human approval' },
  { name: 'mcp', title: 'MCP: connecting an agent to the MCP endpoint' },
  { name: 'oauth', title: 'Accounts and OAuth 2.1: registration, consent, tokens, the device grant' },
  { name: 'webhooks', title: 'Webhooks: events, signatures, retries, test events' },
  { name: 'verification', title: 'Verification: claims, judges and signed reports' },
  { name: 'search', title: 'Search and trust' },
  { name: 'subscriptions', title: 'Subscriptions to living listings' },
  { name: 'contexts', title: 'Context files: the context-file API' },
  { name: 'sync', title: 'Device sync and the command line' },
  { name: 'operations', title: 'Operating Assay: configuration, limits, metrics' },
  { name: 'deploy', title: 'Deploying: Compose and Kubernetes' },
  { name: 'architecture', title: 'Architecture' },
] as const;

function readGuides(): Map<string, string> {
  const dir = new URL('../../docs/', import.meta.url);
  return new Map(guides.map((g) => [g.name, readFileSync(new URL(`${g.name}.md`, dir), 'utf8')]));
}

function landingPage(frame: PageFrame, baseUrl: string): string {
  const signedIn = frame.signedInAs !== null;
  return layout(
    frame,
    { title: 'Verified artifacts for AI agents', wide: true },
    html`<h1>Verified artifacts for AI agents</h1>
<p class="lead">Assay is a marketplace where your agents buy context files whose claims were checked, claim by claim, against their cited sources, and signed. They buy under the mandate you set; the price is held in escrow and paid to the seller only when the verification report meets the listing’s floor, and refunded when it misses.</p>
<div class="actions start">
${
  signedIn
    ? html`<a class="button primary" href="/account">Go to your account</a>`
    : html`<a class="button primary" href="/signup">Create an account</a>
<a class="button secondary" href="/signin">Sign in</a>`
}
</div>
<section class="part" aria-labelledby="sandbox-heading">
<h2 id="sandbox-heading">Try it in the sandbox, in one line</h2>
<p>No account needed: this makes a sandbox agent with a bearer token, test credits and a test mandate. Sandbox credits are test money: they never mix with live ones.</p>
<pre class="command"><code>${sandboxCurl(baseUrl)}</code></pre>
<p>Then search and buy with the token it answers: <code>GET ${baseUrl}/v1/search?topic=…</code>, <code>POST ${baseUrl}/v1/orders</code>. With an account, the same sandbox is on your account page, beside your live credits and clearly marked as test.</p>
</section>
<section class="part" aria-labelledby="connect-heading">
<h2 id="connect-heading">Connect an agent</h2>
<p>Every <code>/v1</code> operation is also an MCP tool. Point an MCP client at <code>${baseUrl}/mcp</code> with a bearer token: a sandbox token, or one your account grants through OAuth 2.1.</p>
</section>
<section class="part" aria-labelledby="docs-heading">
<h2 id="docs-heading">Read the docs</h2>
<ul>
<li><a href="/docs">Documentation</a>: guides to buying, money, fleets, MCP, OAuth and webhooks</li>
<li><a href="/docs/api">API reference</a>: every operation, its scope and its MCP tool (also as <a href="/openapi.json">OpenAPI 3.1</a>)</li>
<li><a href="/docs/errors">Errors</a>: every error code, what it means and what to do</li>
</ul>
</section>`,
  );
}

function docsIndexPage(frame: PageFrame, baseUrl: string): string {
  return layout(
    frame,
    { title: 'Documentation', wide: true },
    html`<h1>Documentation</h1>
<p class="lead">How to use Assay: start in the sandbox, then connect your agents to your account.</p>
<section class="part" aria-labelledby="start-heading">
<h2 id="start-heading">Start</h2>
<ol>
<li>Make a sandbox agent: <code>${sandboxCurl(baseUrl)}</code>, or <a href="/signup">create an account</a> and issue sandbox agent tokens on its page.</li>
<li>Search with the token: <code>GET /v1/search</code>; buy a listing: <code>POST /v1/orders</code> with an <code>Idempotency-Key</code>.</li>
<li>Connect an MCP client to <code>${baseUrl}/mcp</code>; see the MCP guide.</li>
</ol>
</section>
<section class="part" aria-labelledby="reference-heading">
<h2 id="reference-heading">Reference</h2>
<ul>
<li><a href="/docs/api">API reference</a> (<a href="/openapi.json">OpenAPI 3.1 document</a>)</li>
<li><a href="/docs/errors">Error codes</a></li>
<li><a href="/docs/changelog">Changelog</a> and <a href="/docs/deprecation">deprecation policy</a></li>
</ul>
</section>
<section class="part" aria-labelledby="guides-heading">
<h2 id="guides-heading">Guides</h2>
<p>Plain Markdown, as they are kept in the repository.</p>
<ul>${guides.map((g) => html`<li><a href="/docs/${g.name}">${g.title}</a></li>`)}</ul>
</section>`,
  );
}

function apiReferencePage(frame: PageFrame): string {
  const rows = operations.filter((op) => op.audience === 'agent' && op.available);
  return layout(
    frame,
    { title: 'API reference', wide: true },
    html`<h1>API reference</h1>
<p class="lead">Every operation of the agent API: its route, the scope its token needs and its MCP tool. Bodies and answers are in the <a href="/openapi.json">OpenAPI 3.1 document</a>; errors are <a href="/docs/errors">the typed error object</a>.</p>
<div class="table-wrap" role="region" aria-labelledby="operations-caption" tabindex="0">
<table>
<caption id="operations-caption">Operations</caption>
<thead><tr><th scope="col">Route</th><th scope="col">What it does</th><th scope="col">Scope</th><th scope="col">MCP tool</th></tr></thead>
<tbody>${rows.map(
      (op) => html`<tr>
<th scope="row"><code>${op.method} ${op.path}</code></th>
<td>${op.summary}</td>
<td>${op.scope === null ? html`<span class="empty">none</span>` : html`<code>${op.scope}</code>`}</td>
<td>${op.tool === null ? html`<span class="empty">none</span>` : html`<code>${op.tool}</code>`}</td>
</tr>`,
    )}</tbody>
</table>
</div>`,
  );
}

/** A public page: the frame knows the signed-in person when there is one, so the header says who. */
function publicPage(path: string, body: (frame: PageFrame, config: Config) => string, vary = false): WebRoute {
  return {
    method: 'GET',
    path,
    body: 'none',
    async handle(ctx, req) {
      const session = req.cookies[sessionCookie] ? await sessionOf(ctx, req) : null;
      const { csrf, setCookie } = csrfOf(ctx.config, req);
      const frame = { webUrl: ctx.config.webUrl, signedInAs: session?.email ?? null, csrf };
      const r = page(200, body(frame, ctx.config), setCookie);
      // `/` answers by the Accept header: a cache must keep the page apart from the MCP endpoint's answers.
      if (vary) r.headers.vary = 'Accept';
      return r;
    },
  };
}

const markdown = 'text/markdown; charset=utf-8';

export function landingRoutes(): WebRoute[] {
  const texts = readGuides();
  return [
    publicPage('/', (frame, config) => landingPage(frame, config.baseUrl), true),
    publicPage('/docs', (frame, config) => docsIndexPage(frame, config.baseUrl)),
    publicPage('/docs/api', (frame) => apiReferencePage(frame)),
    {
      method: 'GET',
      path: '/docs/{guide}',
      body: 'none',
      async handle(ctx, req): Promise<WebResponse> {
        const text = texts.get(req.params.guide ?? '');
        if (text !== undefined) {
          return {
            status: 200,
            headers: { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' },
            contentType: markdown,
            body: text,
          };
        }
        const { csrf, setCookie } = csrfOf(ctx.config, req);
        return page(404, notFoundGuide({ webUrl: ctx.config.webUrl, signedInAs: null, csrf }), setCookie);
      },
    },
  ];
}

function notFoundGuide(frame: PageFrame): string {
  return layout(
    frame,
    { title: 'No such page' },
    html`<h1>No such page</h1>
<div class="card"><p>There is no guide here. <a href="/docs">See every guide</a>.</p></div>`,
  );
}
