// Human approval on real services: a purchase above the mandate's approval threshold is not charged but waits
// (403 pending_approval with the request's id); approving buys it once with the original request, however many
// approvals race; declining buys nothing; a request nobody decides expires (the actors' clock is in the test's
// hand); the agent learns each outcome from events and from replaying its own request. The account page's buttons
// are driven in headless Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Clock } from '../../actors/index.ts';
import { launchBrowser, loopbackContext, screenshot, signInToAccount } from '../support/browser.ts';
import { registerSeller, registerWithScopes, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type StripeProcessor, startStripeProcessor } from '../support/stripe-processor.ts';
import { accountWithClient, approvedTokens, discover, type oauth } from '../support/oauth.ts';
import { type Agent, eventually, projectionsCaughtUp, startSystem, type TestSystem } from '../support/system.ts';

let offsetMs = 0;
const clock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  nowIso: () => new Date(Date.now() + offsetMs).toISOString(),
};
const ttlSeconds = 3600;

let sys: TestSystem;
let buyer: Agent;
let listingId: string;
let cheapListingId: string;
const price = 2_000;
const threshold = 1_000;

let processor: StripeProcessor;

before(async () => {
  // Live credits for the page test come through the local payment processor (docs/money.md).
  processor = await startStripeProcessor({ webhookRetryDelaysMs: [50, 100, 200] });
  sys = await startSystem(
    {
      ASSAY_APPROVAL_TTL_SECONDS: String(ttlSeconds),
      ASSAY_APPROVAL_SWEEP_MS: '100',
      STRIPE_SECRET_KEY: processor.apiKey,
      STRIPE_WEBHOOK_SECRET: processor.webhookSecret,
      STRIPE_API_BASE: processor.url,
      ASSAY_PAYOUT_INTERVAL_MS: '0',
    },
    undefined,
    undefined,
    { clock },
  );
  const seller = await registerSeller(sys);
  ({ listingId } = await verifiedListing(sys, seller.token, 'approve-me', { price, good: true }));
  ({ listingId: cheapListingId } = await verifiedListing(sys, seller.token, 'cheap', { price: 500, good: true }));
  buyer = await registerWithScopes(sys, ['read:artifact', 'purchase', 'manage:mandate']);
  const mandate = await sys.call('POST', '/v1/mandates', {
    token: buyer.token,
    key: 'mandate-with-threshold',
    body: { per_item_cap_cents: 10_000, approval_above_cents: threshold },
  });
  assert.equal(mandate.status, 201, JSON.stringify(mandate.body));
  assert.equal(mandate.body.approvalAboveCents, threshold);
  processor.setWebhookUrl(`${sys.config.webUrl}/api/stripe/webhook`);
});
after(async () => {
  await sys?.stop();
  await processor?.close();
});

const buy = (token: string, listing: string, key: string) =>
  sys.call('POST', '/v1/orders', { token, key, body: { listing_id: listing, formats: ['md'] } });
const decide = (token: string, id: string, action: 'approve' | 'decline', key: string) =>
  sys.call('POST', `/v1/approvals/${id}/${action}`, { token, key, body: {} });
const balanceOf = async (token: string) =>
  (await sys.call('GET', '/v1/balance', { token })).body.balance_cents as number;
const ordersOf = async (token: string) => (await sys.call('GET', '/v1/orders', { token })).body.items as any[];
const eventsOf = async (token: string, type: string) =>
  (await sys.call('GET', `/v1/events?type=${type}&limit=100`, { token })).body.items as any[];

/** A purchase that waits: the typed refusal names its approval request. */
async function waitingPurchase(key: string): Promise<string> {
  const r = await buy(buyer.token, listingId, key);
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.ok(isTypedError(r.body, 'pending_approval'));
  assert.equal(r.body.remediation, 'await_principal_approval');
  assert.equal(r.body.retryable, false);
  assert.match(r.body.approval_id, /^[0-9a-f-]{36}$/);
  assert.ok(r.body.message.includes(r.body.approval_id));
  return r.body.approval_id;
}

test('[FLEET-APPROVAL] above the threshold nothing is charged and pending_approval names the request; approving buys it exactly once, however many approvals race', async () => {
  const balance = await balanceOf(buyer.token);
  const id = await waitingPurchase('wants-approval');
  assert.equal(await balanceOf(buyer.token), balance, 'nothing charged while it waits');
  await projectionsCaughtUp(sys);
  assert.deepEqual(await ordersOf(buyer.token), [], 'no order while it waits');
  // The agent retrying its request is told the same, with the same request.
  const again = await buy(buyer.token, listingId, 'wants-approval');
  assert.equal(again.body.approval_id, id);
  const listed = await sys.call('GET', '/v1/approvals?state=pending', { token: buyer.token });
  assert.equal(listed.status, 200);
  assert.deepEqual(
    listed.body.items.map((a: any) => [a.id, a.state, a.priceCents, a.agentId]),
    [[id, 'pending', price, buyer.agentId]],
  );
  const requested = await eventually('approval.requested', async () =>
    (await eventsOf(buyer.token, 'approval.requested')).find((e) => e.data.approval_id === id),
  );
  assert.equal(requested.data.price_cents, price);

  // A purchase at or below the threshold does not wait.
  const cheap = await buy(buyer.token, cheapListingId, 'cheap-one');
  assert.equal(cheap.status, 201, JSON.stringify(cheap.body));

  // Eight approvals at once, each its own call: one buys, the rest answer the decision already made.
  const before = await balanceOf(buyer.token);
  const approvals = await Promise.all(
    Array.from({ length: 8 }, (_, i) => decide(buyer.token, id, 'approve', `approve-${i}`)),
  );
  for (const a of approvals) {
    assert.ok(a.status === 201 || a.status === 200, JSON.stringify(a.body));
    assert.equal(a.body.state, 'approved');
    assert.equal(a.body.decidedBy, 'principal');
  }
  assert.equal(approvals.filter((a) => a.status === 201).length, 1, 'one approval decided; the others found it done');
  const orderId = approvals[0]!.body.orderId;
  assert.ok(approvals.every((a) => a.body.orderId === orderId));
  assert.equal(before - (await balanceOf(buyer.token)), price, 'charged once');
  const bought = (await ordersOf(buyer.token)).filter((o) => o.listingId === listingId);
  assert.deepEqual(
    bought.map((o) => [o.id, o.buyerAgentId]),
    [[orderId, buyer.agentId]],
    'one order, the asking agent’s',
  );

  // The agent's own request now answers with the order it made, and an event says so.
  const replay = await buy(buyer.token, listingId, 'wants-approval');
  assert.equal(replay.status, 201, JSON.stringify(replay.body));
  assert.equal(replay.body.order_id, orderId);
  const decided = await eventually('approval.decided', async () =>
    (await eventsOf(buyer.token, 'approval.decided')).find((e) => e.data.approval_id === id),
  );
  assert.deepEqual([decided.data.state, decided.data.order_id], ['approved', orderId]);
  // An approve call replayed with its key answers as it did.
  const replayedApproval = await decide(buyer.token, id, 'approve', 'approve-3');
  assert.equal(replayedApproval.body.orderId, orderId);
  // The order settles like any other: the report met the floor.
  await eventually('the approved order settles', async () =>
    (await ordersOf(buyer.token)).find((o) => o.id === orderId && o.state === 'released'),
  );
});

test('[FLEET-APPROVAL] declining buys nothing and the agent is told; a decided request does not change again', async () => {
  const balance = await balanceOf(buyer.token);
  const id = await waitingPurchase('to-decline');
  const declined = await decide(buyer.token, id, 'decline', 'decline-1');
  assert.equal(declined.status, 201, JSON.stringify(declined.body));
  assert.deepEqual([declined.body.state, declined.body.orderId], ['declined', null]);
  const approveLater = await decide(buyer.token, id, 'approve', 'approve-after-decline');
  assert.equal(approveLater.status, 200);
  assert.equal(approveLater.body.state, 'declined', 'approving a declined request buys nothing');
  assert.equal(await balanceOf(buyer.token), balance);

  const replay = await buy(buyer.token, listingId, 'to-decline');
  assert.equal(replay.status, 403);
  assert.ok(isTypedError(replay.body, 'mandate_exceeded'));
  assert.match(replay.body.message, /declined/);
  await eventually('approval.decided (declined)', async () =>
    (await eventsOf(buyer.token, 'approval.decided')).find(
      (e) => e.data.approval_id === id && e.data.state === 'declined',
    ),
  );
});

test('[FLEET-APPROVAL] an approval runs the purchase rules again: refused, it stays pending and changes nothing', async () => {
  const id = await waitingPurchase('rules-again');
  const mandates = await sys.call('GET', '/v1/mandates', { token: buyer.token });
  const mandateId = mandates.body.items[0].id;
  const lower = await sys.call('POST', `/v1/mandates/${mandateId}/change`, {
    token: buyer.token,
    key: 'lower-cap',
    body: { per_item_cap_cents: price - 1 },
  });
  assert.equal(lower.status, 201);
  const balance = await balanceOf(buyer.token);
  await projectionsCaughtUp(sys);
  const orders = await ordersOf(buyer.token);
  const refused = await decide(buyer.token, id, 'approve', 'approve-over-cap');
  assert.equal(refused.status, 403);
  assert.ok(isTypedError(refused.body, 'mandate_exceeded'));
  assert.match(refused.body.message, /stays pending.*per-item cap/);
  assert.equal(await balanceOf(buyer.token), balance);
  await projectionsCaughtUp(sys);
  assert.deepEqual(await ordersOf(buyer.token), orders, 'no order');
  const listed = await sys.call('GET', '/v1/approvals?state=pending', { token: buyer.token });
  assert.ok(listed.body.items.some((a: any) => a.id === id));

  const raise = await sys.call('POST', `/v1/mandates/${mandateId}/change`, {
    token: buyer.token,
    key: 'raise-cap',
    body: { per_item_cap_cents: 10_000 },
  });
  assert.equal(raise.status, 201);
  // The refused call recorded nothing: the same key now approves.
  const approved = await decide(buyer.token, id, 'approve', 'approve-over-cap');
  assert.equal(approved.status, 201, JSON.stringify(approved.body));
  assert.equal(approved.body.state, 'approved');
  assert.equal(balance - (await balanceOf(buyer.token)), price);
});

test('[FLEET-APPROVAL] a request nobody decides expires: the sweep declines it, the agent is told, and a late approval buys nothing', async () => {
  const balance = await balanceOf(buyer.token);
  const id = await waitingPurchase('left-alone');
  const pending = (await sys.call('GET', '/v1/approvals?state=pending', { token: buyer.token })).body.items.find(
    (a: any) => a.id === id,
  );
  assert.equal(Date.parse(pending.expiresAt) - Date.parse(pending.requestedAt), ttlSeconds * 1000);
  offsetMs += (ttlSeconds + 1) * 1000;
  const expired = await eventually('approval.decided (expired)', async () =>
    (await eventsOf(buyer.token, 'approval.decided')).find((e) => e.data.approval_id === id),
  );
  assert.deepEqual([expired.data.state, expired.data.decided_by], ['expired', 'expiry']);
  const late = await decide(buyer.token, id, 'approve', 'too-late');
  assert.equal(late.body.state, 'expired');
  assert.equal(await balanceOf(buyer.token), balance);
  const replay = await buy(buyer.token, listingId, 'left-alone');
  assert.ok(isTypedError(replay.body, 'mandate_exceeded'));
  assert.match(replay.body.message, /expired/);
});

test('[FLEET-APPROVAL] only the principal decides, and only its own requests: scope and ownership hold', async () => {
  const id = await waitingPurchase('ownership');
  const stranger = await registerWithScopes(sys, ['read:artifact', 'purchase', 'manage:mandate']);
  const foreign = await decide(stranger.token, id, 'approve', 'steal');
  assert.equal(foreign.status, 404);
  assert.ok(isTypedError(foreign.body, 'not_found'));
  const agentOnly = await sys.register();
  const noScope = await decide(agentOnly.token, id, 'approve', 'no-scope');
  assert.equal(noScope.status, 403);
  assert.ok(isTypedError(noScope.body, 'forbidden'));
  const still = await sys.call('GET', '/v1/approvals?state=pending', { token: buyer.token });
  assert.ok(still.body.items.some((a: any) => a.id === id));
});

// ----- the account page, in Chromium -----

let browser: Browser | null = null;
let as: oauth.AuthorizationServer;

test('[FLEET-APPROVAL-PAGE] [FLEET-APPROVAL-CREDITS] on the account page a person sets the threshold, sees the waiting purchases, declines one and approves another', async (t) => {
  browser = await launchBrowser();
  if (!browser) return t.skip('chromium is not installed');
  as = await discover(sys.baseUrl);
  const email = 'approver@example.com';
  const { jar, client } = await accountWithClient(as, sys.baseUrl, email);
  const agentToken = (await approvedTokens(as, jar, client, { scope: 'read:artifact purchase' })).access_token;
  const sellerAccount = await accountWithClient(as, sys.baseUrl, 'live-seller@example.com');
  const sellerToken = (
    await approvedTokens(as, sellerAccount.jar, sellerAccount.client, {
      scope: 'read:artifact read:trust purchase publish',
    })
  ).access_token;
  const live = await verifiedListing(sys, sellerToken, 'live-approval', { price, good: true });

  const { context } = await loopbackContext(browser, { viewport: { width: 1280, height: 900 } });
  const page: Page = await context.newPage();
  try {
    await signInToAccount(page, sys.baseUrl, email, 'correct horse battery staple');

    await page.getByLabel(/most an agent may pay/i).fill('10000');
    await page.getByLabel(/ask me before any purchase above/i).fill(String(threshold));
    await page.getByRole('button', { name: /set the mandate/i }).click();
    await page.getByText(/anything above \$10\.00 waits for your approval/).waitFor();

    const waiting = async (key: string) => {
      const r = await buy(agentToken, live.listingId, key);
      assert.ok(isTypedError(r.body, 'pending_approval'), JSON.stringify(r.body));
      return r.body.approval_id as string;
    };
    const toDecline = await waiting('page-decline');
    const toApprove = await waiting('page-approve');
    await page.goto(`${sys.baseUrl}/account#approvals`);
    const section = page.locator('#approvals');
    assert.equal(await section.locator('li.item').count(), 2);
    await screenshot(page, 'fleet-approvals-pending');

    await section
      .getByRole('button', { name: /decline.*/i })
      .first()
      .waitFor();
    await page.locator(`form[action$="/account/approvals/${toDecline}/decline"] button`).click();
    await page.getByText(/purchase declined/i).waitFor();
    const declinedReplay = await buy(agentToken, live.listingId, 'page-decline');
    assert.ok(isTypedError(declinedReplay.body, 'mandate_exceeded'));

    // [FLEET-APPROVAL-CREDITS] A live principal has no credits until live top-ups land: the approval is refused with
    // a page that says what to do (add credits, then approve again), with the price and a link, and no request id.
    await page.locator(`form[action$="/account/approvals/${toApprove}/approve"] button`).click();
    await page.getByRole('heading', { name: 'Add credits to approve this purchase' }).waitFor();
    const refusedPage = await page.content();
    assert.match(refusedPage, /costs <strong>\$20\.00<\/strong> and you have <strong>\$0\.00<\/strong> available/);
    assert.match(refusedPage, /save a card on your account page/);
    assert.ok(!refusedPage.includes(toApprove), 'no request id on the page');
    await screenshot(page, 'fleet-approvals-refused');
    await page.getByRole('link', { name: 'Add credits' }).click();
    await page.waitForURL(`${sys.baseUrl}/account#money`);
    const stillWaiting = await buy(agentToken, live.listingId, 'page-approve');
    assert.ok(isTypedError(stillWaiting.body, 'pending_approval'));
    assert.equal(stillWaiting.body.approval_id, toApprove);
    await projectionsCaughtUp(sys);
    assert.deepEqual(await ordersOf(agentToken), [], 'nothing was bought');
    // The decided request is listed under recent decisions; the other still has its buttons.
    assert.equal(await page.locator('#approvals li.item').count(), 1);
    await page
      .locator('#approvals')
      .getByText(/declined/)
      .first()
      .waitFor();

    // The person saves a card at the processor's page and comes back; the agent tops up live credits.
    await page.getByRole('button', { name: /save a card/i }).click();
    await page.getByRole('button', { name: /save card/i }).waitFor();
    await screenshot(page, 'money-processor-checkout');
    await page.getByRole('button', { name: /save card/i }).click();
    await page.getByText(/card saved at the payment processor/i).waitFor();
    await eventually('the saved card on the page', async () => {
      await page.goto(`${sys.baseUrl}/account#money`);
      return (await page.getByText(/visa ending in 4242/i).count()) > 0 ? true : undefined;
    });
    await screenshot(page, 'money-card-saved');
    const topUp = await sys.call('POST', '/v1/topups', {
      token: agentToken,
      key: 'live-credits',
      body: { credits: 30 },
    });
    assert.equal(topUp.status, 201, JSON.stringify(topUp.body));
    assert.equal(topUp.body.status, 'pending');
    await eventually('the live credits landed', async () =>
      (await balanceOf(agentToken)) === 3000 ? true : undefined,
    );

    // Now approving buys, once: the waiting agent's request replays that order.
    await page.goto(`${sys.baseUrl}/account#approvals`);
    await page.locator(`form[action$="/account/approvals/${toApprove}/approve"] button`).click();
    await page.getByText(/purchase approved and bought/i).waitFor();
    await screenshot(page, 'fleet-approvals-approved-live');
    const bought = await buy(agentToken, live.listingId, 'page-approve');
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    const orders = await ordersOf(agentToken);
    assert.equal(orders.length, 1, 'one order');
    assert.equal(await balanceOf(agentToken), 3000 - price);
  } finally {
    await context.close();
  }
});

after(async () => {
  await browser?.close();
});
