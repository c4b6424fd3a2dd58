// The local payment processor (test/support/stripe-processor.ts) driven through the real `stripe` SDK, as the app
// drives it: saved cards through a setup Checkout Session, off-session payments with each test card's outcome,
// idempotent replays and conflicts, Connect onboarding and transfers, and webhook events that the SDK's own
// `constructEvent` accepts, delivered in order, held, reordered, duplicated, retried and resent.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import Stripe from 'stripe';
import {
  type ProcessorEvent,
  parseForm,
  type StripeProcessor,
  signatureHeader,
  startStripeProcessor,
} from '../support/stripe-processor.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  event: ProcessorEvent;
}

/** A loopback webhook endpoint that records what arrives and answers the scripted statuses in turn, then 200. */
class Receiver {
  readonly received: Received[] = [];
  readonly statuses: number[] = [];
  constructor(readonly server: Server) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/stripe/webhook`;
  }

  ofType(type: string): Received[] {
    return this.received.filter((r) => r.event.type === type);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = new Receiver(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        receiver.received.push({ headers: req.headers, body, event: JSON.parse(body) });
        res.writeHead(receiver.statuses.shift() ?? 200).end();
      });
    }),
  );
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  return receiver;
}

let processor: StripeProcessor;
let receiver: Receiver;
let stripe: Stripe;

before(async () => {
  receiver = await startReceiver();
  processor = await startStripeProcessor({ webhookUrl: receiver.url, webhookRetryDelaysMs: [10, 20] });
  stripe = new Stripe(processor.apiKey, {
    host: '127.0.0.1',
    port: processor.port,
    protocol: 'http',
    apiVersion: Stripe.API_VERSION,
    maxNetworkRetries: 0,
  });
});

after(async () => {
  await processor.close();
  await receiver.close();
});

/** Verifies a received event with the SDK exactly as the app's webhook route will. */
function verified(r: Received, secret = processor.webhookSecret): Stripe.Event {
  return stripe.webhooks.constructEvent(r.body, String(r.headers['stripe-signature']), secret);
}

async function customerWithCard(card: string): Promise<[string, string]> {
  const customer = await stripe.customers.create({ email: 'buyer@example.test', metadata: { principal_id: 'p1' } });
  const pm = await stripe.paymentMethods.attach(card, { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
  return [customer.id, pm.id];
}

async function cardError(work: Promise<unknown>): Promise<Stripe.errors.StripeCardError> {
  const error = await work.then(
    () => assert.fail('expected a card error'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof Stripe.errors.StripeCardError, `got ${String(error)}`);
  return error;
}

test('form bodies decode bracket notation as the SDK writes it', () => {
  const params = parseForm(
    'metadata[principal_id]=p%201&expand[0]=setup_intent&expand[]=customer&capabilities[transfers][requested]=true',
  );
  assert.deepEqual(params, {
    metadata: { principal_id: 'p 1' },
    expand: { '0': 'setup_intent', '1': 'customer' },
    capabilities: { transfers: { requested: 'true' } },
  });
});

test('a setup Checkout Session saves a card on the customer, through the hosted page or the handle', async () => {
  const customer = await stripe.customers.create({
    email: 'a@example.test',
    name: 'A',
    metadata: { principal_id: 'p' },
  });
  assert.match(customer.id, /^cus_/);
  assert.equal(customer.livemode, false);
  assert.equal(customer.metadata['principal_id'], 'p');
  const session = await stripe.checkout.sessions.create({
    mode: 'setup',
    customer: customer.id,
    currency: 'usd',
    allowed_payment_method_types: ['card'],
    success_url: 'http://127.0.0.1:9/done?session={CHECKOUT_SESSION_ID}',
    cancel_url: 'http://127.0.0.1:9/cancelled',
    metadata: { principal_id: 'p' },
  });
  assert.match(session.id, /^cs_test_/);
  assert.equal(session.status, 'open');
  assert.match(String(session.setup_intent), /^seti_/);
  assert.ok(session.url?.startsWith(`${processor.url}/`));

  // The hosted page is a plain form; submitting it saves the card and redirects to success_url.
  const page = await fetch(session.url!);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /pm_card_chargeDeclined/);
  assert.match(html, /http:\/\/127\.0\.0\.1:9\/cancelled/);
  const formToken = /name="form_token" value="([^"]+)"/.exec(html)![1]!;
  const submit = await fetch(session.url!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ form_token: formToken, card: 'pm_card_visa' }).toString(),
    redirect: 'manual',
  });
  assert.equal(submit.status, 303);
  assert.equal(submit.headers.get('location'), `http://127.0.0.1:9/done?session=${session.id}`);

  const done = await stripe.checkout.sessions.retrieve(session.id, { expand: ['setup_intent.payment_method'] });
  assert.equal(done.status, 'complete');
  const setupIntent = done.setup_intent as Stripe.SetupIntent;
  assert.equal(setupIntent.status, 'succeeded');
  const pm = setupIntent.payment_method as Stripe.PaymentMethod;
  assert.match(pm.id, /^pm_/);
  assert.equal(pm.customer, customer.id);
  assert.equal(pm.card?.brand, 'visa');
  assert.equal(pm.card?.last4, '4242');
  assert.equal((await stripe.setupIntents.retrieve(setupIntent.id)).payment_method, pm.id);

  await processor.webhooksIdle();
  const completed = receiver.ofType('checkout.session.completed').find((r) => r.event.data.object['id'] === session.id);
  assert.ok(completed, 'checkout.session.completed arrived');
  const event = verified(completed);
  assert.equal((event.data.object as Stripe.Checkout.Session).metadata?.['principal_id'], 'p');

  // The handle does the same without a browser.
  const second = await stripe.checkout.sessions.create({
    currency: 'usd',
    mode: 'setup',
    customer: customer.id,
    success_url: 'http://127.0.0.1:9/ok',
  });
  processor.completeCheckout(second.id, 'pm_card_chargeDeclined');
  const seti = await stripe.setupIntents.retrieve(String(second.setup_intent), { expand: ['payment_method'] });
  assert.equal((seti.payment_method as Stripe.PaymentMethod).card?.last4, '0002');
  assert.equal((await fetch(session.url!)).status, 410, 'a completed session has no page any more');
});

test('an off-session payment succeeds and its event is signed exactly as Stripe signs', async () => {
  const [customer, pm] = await customerWithCard('pm_card_visa');
  const pi = await stripe.paymentIntents.create({
    amount: 1250,
    currency: 'usd',
    customer,
    payment_method: pm,
    off_session: true,
    confirm: true,
    metadata: { topup_id: 't1' },
    description: 'Assay credits',
  });
  assert.match(pi.id, /^pi_/);
  assert.equal(pi.status, 'succeeded');
  assert.equal(pi.amount_received, 1250);
  assert.match(String(pi.latest_charge), /^ch_/);
  assert.equal((await stripe.customers.retrieve(customer)).id, customer);

  await processor.webhooksIdle();
  const got = receiver.ofType('payment_intent.succeeded').find((r) => r.event.data.object['id'] === pi.id);
  assert.ok(got, 'payment_intent.succeeded arrived');
  const event = verified(got);
  assert.equal(event.type, 'payment_intent.succeeded');
  assert.equal(event.livemode, false);
  assert.equal(event.api_version, Stripe.API_VERSION);
  assert.match(event.id, /^evt_/);
  assert.equal((event.data.object as Stripe.PaymentIntent).metadata['topup_id'], 't1');
  assert.match(String(event.request?.idempotency_key), /^stripe-node-retry-/, 'the SDK keys every POST');

  const header = String(got.headers['stripe-signature']);
  const timestamp = Number(/^t=(\d+),/.exec(header)![1]);
  const expected = stripe.webhooks.generateTestHeaderString({
    payload: got.body,
    secret: processor.webhookSecret,
    timestamp,
  });
  assert.equal(header, expected);
  assert.equal(signatureHeader(got.body, processor.webhookSecret, timestamp), expected);
  assert.throws(() => stripe.webhooks.constructEvent(got.body, header, 'whsec_other'));
});

test('declined and authentication-required cards fail as Stripe fails them off session', async () => {
  const cases = [
    ['pm_card_chargeDeclined', 'card_declined', 'generic_decline'],
    ['pm_card_chargeDeclinedInsufficientFunds', 'card_declined', 'insufficient_funds'],
    ['pm_card_authenticationRequired', 'authentication_required', 'authentication_required'],
  ] as const;
  for (const [card, code, declineCode] of cases) {
    const [customer, pm] = await customerWithCard(card);
    const error = await cardError(
      stripe.paymentIntents.create({
        amount: 800,
        currency: 'usd',
        customer,
        payment_method: pm,
        off_session: true,
        confirm: true,
      }),
    );
    assert.equal(error.statusCode, 402, card);
    assert.equal(error.code, code, card);
    assert.equal(error.decline_code, declineCode, card);
    const pi = error.payment_intent!;
    assert.equal(pi.status, 'requires_payment_method', card);
    assert.equal(pi.last_payment_error?.code, code, card);
    assert.equal(pi.last_payment_error?.payment_method?.id, pm, card);
    assert.equal((await stripe.paymentIntents.retrieve(pi.id)).status, 'requires_payment_method');
    await processor.webhooksIdle();
    const failed = receiver.ofType('payment_intent.payment_failed').find((r) => r.event.data.object['id'] === pi.id);
    assert.ok(failed, `payment_intent.payment_failed arrived for ${card}`);
    verified(failed);
  }
});

test('invalid calls get Stripe’s error types', async () => {
  const [customer] = await customerWithCard('pm_card_visa');
  await assert.rejects(
    stripe.paymentIntents.create({ amount: 800, currency: 'usd', customer, off_session: true, confirm: true }),
    (e: unknown) =>
      e instanceof Stripe.errors.StripeInvalidRequestError && e.statusCode === 400 && e.param === 'payment_method',
  );
  await assert.rejects(
    stripe.paymentIntents.create({ amount: 800, currency: 'usd', bogus: 1 } as Stripe.PaymentIntentCreateParams),
    (e: unknown) => e instanceof Stripe.errors.StripeInvalidRequestError && e.message.includes('unknown parameter'),
  );
  await assert.rejects(
    stripe.customers.retrieve('cus_missing'),
    (e: unknown) =>
      e instanceof Stripe.errors.StripeInvalidRequestError && e.statusCode === 404 && e.code === 'resource_missing',
  );
  // The pinned API version filters Checkout's methods with allowed_payment_method_types; without it, a currency.
  await assert.rejects(
    stripe.checkout.sessions.create({ mode: 'setup', customer, success_url: 'http://127.0.0.1:9/ok' }),
    (e: unknown) => e instanceof Stripe.errors.StripeInvalidRequestError && e.param === 'currency',
  );
  await assert.rejects(
    stripe.checkout.sessions.create({
      mode: 'setup',
      currency: 'usd',
      success_url: 'http://127.0.0.1:9/ok',
      payment_method_types: ['card'],
    } as Stripe.Checkout.SessionCreateParams),
    (e: unknown) => e instanceof Stripe.errors.StripeInvalidRequestError && e.param === 'payment_method_types',
  );
  const stranger = new Stripe('sk_test_wrong', {
    host: '127.0.0.1',
    port: processor.port,
    protocol: 'http',
    maxNetworkRetries: 0,
  });
  await assert.rejects(stranger.customers.create({}), Stripe.errors.StripeAuthenticationError);
});

test('the same Idempotency-Key replays the first answer; other parameters with it are refused', async () => {
  const [customer, pm] = await customerWithCard('pm_card_visa');
  const params = { amount: 700, currency: 'usd', customer, payment_method: pm, off_session: true, confirm: true };
  const key = `topup-${Date.now()}`;
  const first = await stripe.paymentIntents.create(params, { idempotencyKey: key });
  const again = await stripe.paymentIntents.create(params, { idempotencyKey: key });
  assert.equal(again.id, first.id);
  assert.equal(again.lastResponse.headers['idempotent-replayed'], 'true');
  assert.deepEqual(
    processor.paymentIntents.filter((p) => p.idempotencyKey === key).map((p) => [p.id, p.amount]),
    [[first.id, 700]],
  );
  await assert.rejects(
    stripe.paymentIntents.create({ ...params, amount: 701 }, { idempotencyKey: key }),
    Stripe.errors.StripeIdempotencyError,
  );

  // A decline is kept under its key too: the retry gets the same card error, and no second intent is made.
  const [c2, declined] = await customerWithCard('pm_card_chargeDeclined');
  const declineParams = { ...params, customer: c2, payment_method: declined };
  const e1 = await cardError(stripe.paymentIntents.create(declineParams, { idempotencyKey: `${key}-d` }));
  const e2 = await cardError(stripe.paymentIntents.create(declineParams, { idempotencyKey: `${key}-d` }));
  assert.equal(e2.payment_intent?.id, e1.payment_intent?.id);
  assert.equal(processor.paymentIntents.filter((p) => p.idempotencyKey === `${key}-d`).length, 1);
});

test('a call that takes effect but loses its answer replays under its key; a 500 takes no effect', async () => {
  const [customer, pm] = await customerWithCard('pm_card_visa');
  const params = { amount: 900, currency: 'usd', customer, payment_method: pm, off_session: true, confirm: true };
  // The SDK retries a closed connection once by itself, so drop twice for the app to see it.
  processor.failNext('POST /v1/payment_intents', 'drop-after', 2);
  await assert.rejects(
    stripe.paymentIntents.create(params, { idempotencyKey: 'crash-1' }),
    Stripe.errors.StripeConnectionError,
  );
  const retried = await stripe.paymentIntents.create(params, { idempotencyKey: 'crash-1' });
  assert.equal(retried.status, 'succeeded');
  assert.equal(processor.paymentIntents.filter((p) => p.idempotencyKey === 'crash-1').length, 1);

  processor.failNext('/v1/payment_intents', 500);
  await assert.rejects(
    stripe.paymentIntents.create(params, { idempotencyKey: 'crash-2' }),
    Stripe.errors.StripeAPIError,
  );
  assert.equal(processor.paymentIntents.filter((p) => p.idempotencyKey === 'crash-2').length, 0);
});

test('an Express account onboards through its account link and can then receive transfers', async () => {
  const account = await stripe.accounts.create({
    type: 'express',
    email: 'seller@example.test',
    metadata: { principal_id: 's1' },
    capabilities: { transfers: { requested: true } },
  });
  assert.match(account.id, /^acct_/);
  assert.deepEqual(
    [account.payouts_enabled, account.charges_enabled, account.details_submitted],
    [false, false, false],
  );
  await assert.rejects(
    stripe.transfers.create({ amount: 500, currency: 'usd', destination: account.id }),
    (e: unknown) =>
      e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'insufficient_capabilities_for_transfer',
  );
  await assert.rejects(
    stripe.transfers.create({ amount: 500, currency: 'usd', destination: 'acct_unknown' }),
    (e: unknown) => e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing',
  );

  const link = await stripe.accountLinks.create({
    account: account.id,
    refresh_url: 'http://127.0.0.1:9/refresh',
    return_url: 'http://127.0.0.1:9/return',
    type: 'account_onboarding',
  });
  assert.equal(link.object, 'account_link');
  assert.ok(link.expires_at > link.created);
  const html = await (await fetch(link.url)).text();
  const formToken = /name="form_token" value="([^"]+)"/.exec(html)![1]!;
  const submit = await fetch(link.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `form_token=${formToken}`,
    redirect: 'manual',
  });
  assert.equal(submit.headers.get('location'), 'http://127.0.0.1:9/return');
  const revisit = await fetch(link.url, { redirect: 'manual' });
  assert.equal(revisit.headers.get('location'), 'http://127.0.0.1:9/refresh', 'an account link works once');

  const onboarded = await stripe.accounts.retrieve(account.id);
  assert.deepEqual(
    [onboarded.payouts_enabled, onboarded.charges_enabled, onboarded.details_submitted],
    [true, true, true],
  );
  await processor.webhooksIdle();
  const updated = receiver.ofType('account.updated').find((r) => r.event.account === account.id);
  assert.ok(updated, 'account.updated arrived');
  const event = verified(updated, processor.connectWebhookSecret);
  assert.equal(event.account, account.id, 'Connect events name the account at the top level');
  assert.equal((event.data.object as Stripe.Account).payouts_enabled, true);

  const transfer = await stripe.transfers.create(
    { amount: 500, currency: 'usd', destination: account.id, transfer_group: 'run-1', metadata: { run: '1' } },
    { idempotencyKey: 'payout-run-1-s1' },
  );
  assert.match(transfer.id, /^tr_/);
  assert.equal(processor.transfers.find((t) => t.id === transfer.id)?.idempotencyKey, 'payout-run-1-s1');
  await stripe.transfers.create({ amount: 300, currency: 'usd', destination: account.id });
  const listed = await stripe.transfers.list({ destination: account.id, limit: 1 });
  assert.equal(listed.object, 'list');
  assert.equal(listed.has_more, true);
  assert.equal(listed.data[0]?.amount, 300, 'newest first');
  const rest = await stripe.transfers.list({ destination: account.id, starting_after: listed.data[0]!.id });
  assert.deepEqual(
    rest.data.map((t) => t.id),
    [transfer.id],
  );
});

test('held events are released reversed and duplicated; failed deliveries are retried; any event can be sent', async () => {
  await processor.webhooksIdle();
  const start = receiver.received.length;
  processor.holdWebhooks();
  const a = processor.sendEvent('payment_intent.succeeded', { id: 'pi_a', object: 'payment_intent' });
  const b = processor.sendEvent('assay.unknown_type', { id: 'x_b' });
  const c = processor.sendEvent('account.updated', { id: 'acct_c', object: 'account' }, { account: 'acct_c' });
  await processor.webhooksIdle();
  assert.equal(receiver.received.length, start, 'nothing is sent while held');
  await processor.releaseWebhooks({ order: 'reverse', duplicate: 1 });
  const order = receiver.received.slice(start).map((r) => r.event.id);
  assert.deepEqual(order, [c.id, b.id, a.id, c.id, b.id, a.id]);
  for (const r of receiver.received.slice(start)) verified(r);

  receiver.statuses.push(500, 503);
  const retried = processor.sendEvent('payment_intent.succeeded', { id: 'pi_retry' });
  await processor.webhooksIdle();
  assert.deepEqual(
    processor.deliveries.filter((d) => d.eventId === retried.id).map((d) => [d.attempt, d.status]),
    [
      [1, 500],
      [2, 503],
      [3, 200],
    ],
  );
  assert.equal(await processor.resend(retried.id), 200);
  assert.equal(processor.events.at(-1)?.id, retried.id);
});
