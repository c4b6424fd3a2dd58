// The account page's first lines (how to start), its test mode (the account's own sandbox: agents and their tokens,
// test credits) and the orders and events of both sides, live and test, each named by what it is (the artifact's
// title, the listing's price and floor, the report's verdict, the agent's name) rather than by its ids.
import { html, type SafeHtml } from './html.ts';
import type { AccountActivity, AccountPage, AccountTestMode, PageFrame, PageLabels } from './page-data.ts';
import { csrfField, dollars, hidden, sandboxCurl, time } from './page-parts.ts';

/** The mark every test-mode thing carries, in words a screen reader says too. */
export const testBadge = html`<span class="badge test">Test</span>`;

/** A score or floor as a share with two decimals (0.93). */
const share = (n: number) => (Math.round(n * 100) / 100).toFixed(2);

/** The listing a thing is about, named: its artifact's title, or its id when the catalog does not know it. */
export function listingName(labels: PageLabels, listingId: string): SafeHtml {
  const l = labels.listings[listingId];
  return l === undefined ? html`listing <code>${listingId}</code>` : html`<strong>${l.title}</strong>`;
}

/** A listing's price and floor, and whether its artifact's current report meets that floor. */
export function listingTerms(labels: PageLabels, listingId: string): SafeHtml | null {
  const l = labels.listings[listingId];
  if (l === undefined) return null;
  return html`${dollars(l.priceCents)}, floor ${share(l.floor)}; ${reportVerdict(l.meanEntailment, l.floor)}`;
}

/** The report's verdict against a floor, in words. */
export function reportVerdict(meanEntailment: number | null, floor: number): SafeHtml {
  if (meanEntailment === null) return html`not verified yet`;
  return meanEntailment >= floor
    ? html`report <strong>meets the floor</strong> (score ${share(meanEntailment)})`
    : html`report <strong>misses the floor</strong> (score ${share(meanEntailment)})`;
}

/** An agent, named: its name (an OAuth client's agent has the client's), or its id when it has none. */
export function agentName(labels: PageLabels, agentId: string): SafeHtml {
  const name = labels.agents[agentId];
  return name ? html`${name}` : html`an unnamed agent <code>${agentId}</code>`;
}

/** The first lines of the account page: how to start, and where the docs are. */
export function startHere(data: AccountPage): SafeHtml {
  return html`<section class="card start" aria-labelledby="start-heading">
<h2 id="start-heading">Start here</h2>
<ol>
<li><strong>Try it in test mode</strong>: <a href="#test-mode">issue a sandbox agent token</a> below. It comes with ${dollars(data.testMode.grantCents)} of test credits and a test mandate; nothing it buys costs real money.</li>
<li><strong>Connect an agent</strong>: give it the token and point it at <code>${data.baseUrl}/v1</code>, or at the MCP endpoint <code>${data.baseUrl}/mcp</code>. For your live account, an agent registers with an <a href="#initial-access-tokens">initial access token</a> and you allow it on the consent screen.</li>
<li><strong>Read the docs</strong>: <a href="/docs">the guides</a> and <a href="/docs/api">the API reference</a>.</li>
</ol>
</section>`;
}

/** Test mode: the account's own sandbox, clearly marked, with its agents, their tokens and its test credits. */
export function testModeSection(frame: PageFrame, t: AccountTestMode): SafeHtml {
  const s = t.sandbox;
  return html`<section class="part test-mode" id="test-mode" aria-labelledby="test-mode-heading">
<h2 id="test-mode-heading">Test mode ${testBadge}</h2>
<p>The sandbox side of this account: sandbox agents buy from the sandbox catalog with test credits, under a test mandate, so you can try everything before your agents spend real money. Test credits never mix with your live credits, and test orders and events are listed apart from the live ones, marked <em>Test</em>.</p>
${t.newToken !== null && newSandboxTokenPanel(t)}
<dl class="facts">
<dt>Test credits</dt><dd>${s === null ? html`${dollars(t.grantCents)} once you issue the first token` : html`${dollars(s.balanceCents)} (${s.balanceCents} cents) ${testBadge}`}</dd>
</dl>
${
  s === null || s.agents.length === 0
    ? html`<p class="empty">You have no sandbox agents yet.</p>`
    : html`<div class="table-wrap" role="region" aria-labelledby="sandbox-agents-caption" tabindex="0">
<table>
<caption id="sandbox-agents-caption">Your sandbox agents, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Agent id</th><th scope="col">Issued</th></tr></thead>
<tbody>${s.agents.map(
        (a) =>
          html`<tr><th scope="row">${a.name ?? 'Unnamed agent'}</th><td><code>${a.id}</code></td><td>${time(a.createdAt)}</td></tr>`,
      )}</tbody>
</table>
</div>`
}
<form method="post" action="/account/test-mode/agents" class="card stack">
${csrfField(frame)}${hidden('agent_id', t.formAgentId)}
<div class="field">
<label for="sandbox-agent-name">Name of a new sandbox agent</label>
<span class="hint" id="sandbox-agent-name-hint">Such as “research agent (test)”: it names the agent’s orders on this page.</span>
<input id="sandbox-agent-name" name="name" type="text" required maxlength="200" autocomplete="off" aria-describedby="sandbox-agent-name-hint">
</div>
<div><button type="submit" class="button primary">Issue a sandbox agent token</button></div>
</form>
<p class="muted">Without an account, the same sandbox is one line away: <code>${sandboxCurl(t.baseUrl)}</code> (an agent of its own, not tied to this account).</p>
</section>`;
}

function newSandboxTokenPanel(t: AccountTestMode): SafeHtml {
  const n = t.newToken!;
  return html`<section class="panel" aria-labelledby="new-sandbox-token-heading">
<h3 id="new-sandbox-token-heading">Sandbox agent token for “${n.name}” ${testBadge}</h3>
<p><strong>Copy it now: it will not be shown again.</strong> It expires ${time(n.expiresAt)} and may ${n.scopes.join(', ')}.</p>
<code class="secret">${n.token}</code>
<p class="muted">Your agent sends it as <code>Authorization: Bearer …</code> to <code>${t.baseUrl}/v1</code> or to the MCP endpoint <code>${t.baseUrl}/mcp</code>. Try: <code>curl -s ${t.baseUrl}/v1/balance -H "authorization: Bearer …"</code></p>
</section>`;
}

/** Orders and events, live beside test. */
export function activitySection(data: AccountPage): SafeHtml {
  const test = data.testMode.sandbox?.activity ?? { orders: [], events: [] };
  return html`<section class="part" id="orders" aria-labelledby="orders-heading">
<h2 id="orders-heading">Orders</h2>
${ordersTable('live-orders', 'Live orders, newest first', data.live, data.labels, false)}
${ordersTable('test-orders', 'Test orders, newest first', test, data.labels, true)}
</section>
<section class="part" id="events" aria-labelledby="events-heading">
<h2 id="events-heading">Events</h2>
<p>What happened to your account, newest first: the events <code>GET /v1/events</code> pages and your webhooks receive.</p>
${eventsTable('live-events', 'Live events, newest first', data.live, false)}
${eventsTable('test-events', 'Test events, newest first', test, true)}
</section>`;
}

const orderStates = {
  held: 'Held in escrow',
  released: 'Settled: paid to the seller',
  auto_refunded: 'Refunded',
} as const;

function ordersTable(id: string, caption: string, a: AccountActivity, labels: PageLabels, test: boolean): SafeHtml {
  if (a.orders.length === 0) {
    return html`<p class="empty">No ${test ? 'test' : 'live'} orders yet${test && html` ${testBadge}`}.</p>`;
  }
  return html`<div class="table-wrap" role="region" aria-labelledby="${id}" tabindex="0">
<table>
<caption id="${id}">${caption}${test && html` ${testBadge}`}</caption>
<thead><tr><th scope="col">What</th><th scope="col">Paid</th><th scope="col">State</th><th scope="col">Bought by</th><th scope="col">When</th></tr></thead>
<tbody>${a.orders.map(
    (o) => html`<tr>
<th scope="row">${listingName(labels, o.listingId)}${listingTerms(labels, o.listingId) !== null && html`<span class="hint">${listingTerms(labels, o.listingId)}</span>`}<span class="hint">order <code>${o.id}</code></span></th>
<td>${dollars(o.escrowCents)}</td>
<td>${orderStates[o.state]}${o.refundReason === 'floor_missed' ? ': the report missed the floor' : o.refundReason === 'no_report' ? ': no report came in time' : ''}</td>
<td>${agentName(labels, o.agentId)}</td>
<td>${time(o.createdAt)}</td>
</tr>`,
  )}</tbody>
</table>
</div>`;
}

function eventsTable(id: string, caption: string, a: AccountActivity, test: boolean): SafeHtml {
  if (a.events.length === 0) {
    return html`<p class="empty">No ${test ? 'test' : 'live'} events yet${test && html` ${testBadge}`}.</p>`;
  }
  return html`<div class="table-wrap" role="region" aria-labelledby="${id}" tabindex="0">
<table>
<caption id="${id}">${caption}${test && html` ${testBadge}`}</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Id</th><th scope="col">When</th></tr></thead>
<tbody>${a.events.map(
    (e) =>
      html`<tr><th scope="row"><code>${e.type}</code></th><td><code>${e.id}</code></td><td>${time(e.createdAt)}</td></tr>`,
  )}</tbody>
</table>
</div>`;
}
