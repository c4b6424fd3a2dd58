// Live money end to end (docs/money.md), against real NATS and PostgreSQL and the `stripe` SDK talking to the local
// processor (test/support/stripe-processor.ts), which speaks Stripe's wire protocol and signs its webhooks as Stripe
// does: saving a card, live top-ups credited only by the processor's signed webhook (once, however often it comes),
// typed refusals, forged and stale webhooks refused, 50 principals topping up with webhooks out of order and
// duplicated, and payout runs that pay each released accrual once through a crash and a rerun.
import { internalRequest } from '../../contracts/index.ts';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import Stripe from 'stripe';
import { askInternal } from '../../actors/index.ts';
import { sellerScopes, verifiedListing } from '../support/catalog.ts';
import { contextCall, issueApiKey } from '../support/context-api.ts';
import { isTypedError } from '../support/http.ts';
import {
  balanceOf as balanceOfPerson,
  buyerScopes,
  type LivePerson,
  livePerson as livePersonOf,
  saveCard as saveCardOf,
  topUp as topUpOf,
} from '../support/live-money.ts';
import { signatureHeader, type StripeProcessor, startStripeProcessor } from '../support/stripe-processor.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let processor: StripeProcessor;
let stripe: Stripe;

before(async () => {
  processor = await startStripeProcessor({ webhookRetryDelaysMs: [50, 100, 200] });
  sys = await startSystem({
    STRIPE_SECRET_KEY: processor.apiKey,
    STRIPE_WEBHOOK_SECRET: processor.webhookSecret,
    STRIPE_API_BASE: processor.url,
    ASSAY_PAYOUT_INTERVAL_MS: '0',
    // Webhooks in the export test point at a loopback address nothing listens on.
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
    // People sign up on the web here: the per-address sign-up limit is out of their way.
    ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE: '100',
  });
  processor.setWebhookUrl(`${sys.config.webUrl}/api/stripe/webhook`);
  stripe = new Stripe(processor.apiKey, { host: '127.0.0.1', port: processor.port, protocol: 'http' });
});
after(async () => {
  await sys?.stop();
  await processor?.close();
});

type Person = LivePerson;

const livePerson = (email: string, scopes = buyerScopes) => livePersonOf(sys, email, scopes);
const saveCard = (p: Person, card: Parameters<typeof saveCardOf>[2]) => saveCardOf(processor, p, card);
const balanceOf = (p: Person) => balanceOfPerson(sys, p);
const topUp = (p: Person, credits: number, key: string) => topUpOf(sys, p, credits, key);

test('[MONEY-TOPUP] a saved card tops up 25 credits: pending, then the signed webhook credits 2,500 cents once, however often it comes', async () => {
  const p = await livePerson('topup@example.com');
  await saveCard(p, 'pm_card_visa');
  const page = await (await p.jar.get('/account')).text();
  assert.match(page, /visa ending in 4242/);

  const r = await topUp(p, 25, 'topup-1');
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  assert.equal(r.body.amount_cents, 2500);
  assert.equal(r.body.sandbox, false);
  const topupId = r.body.topup_id as string;

  await eventually('the credits landed', async () => ((await balanceOf(p)) === 2500 ? true : undefined));
  const mine = processor.paymentIntents.filter((pi) => pi.metadata.principal_id === p.principalId);
  assert.equal(mine.length, 1);
  assert.equal(mine[0]!.amount, 2500);
  assert.equal(mine[0]!.metadata.topup_id, topupId);

  // The same event twice more: still credited once.
  const succeeded = processor.events.find(
    (e) => e.type === 'payment_intent.succeeded' && e.data.object.id === mine[0]!.id,
  )!;
  assert.equal(await processor.resend(succeeded.id), 200);
  assert.equal(await processor.resend(succeeded.id), 200);
  // A replay of the request with its key: the same answer, no second PaymentIntent.
  const replay = await topUp(p, 25, 'topup-1');
  assert.equal(replay.status, 201);
  assert.deepEqual(replay.body, r.body);
  assert.equal(processor.paymentIntents.filter((pi) => pi.metadata.principal_id === p.principalId).length, 1);
  // The same key with another amount is a conflict, and charges nothing.
  const conflict = await topUp(p, 30, 'topup-1');
  assert.equal(conflict.status, 422);
  assert.ok(isTypedError(conflict.body, 'idempotency_conflict'));

  const events = await eventually('topup.credited pollable', async () => {
    const e = await sys.call('GET', '/v1/events?type=topup.credited', { token: p.token });
    return e.body.items.length > 0 ? e.body.items : undefined;
  });
  assert.equal(events.length, 1);
  assert.equal(events[0].data.topup_id, topupId);
  assert.equal(events[0].data.amount_cents, 2500);
  const ledger = await sys.call('GET', '/v1/ledger', { token: p.token });
  const credits = ledger.body.items.filter((e: any) => e.type === 'topup_credited');
  assert.deepEqual(
    credits.map((e: any) => [e.amount_cents, e.reference]),
    [[2500, topupId]],
  );
  assert.equal(await balanceOf(p), 2500);
});

test('[MONEY-REFUSALS] no saved card, a declined card and a card that needs its holder: typed errors, nothing credited', async () => {
  const none = await livePerson('nocard@example.com');
  const r0 = await topUp(none, 5, 'k');
  assert.equal(r0.status, 409);
  assert.ok(isTypedError(r0.body, 'payment_method_required'), JSON.stringify(r0.body));
  assert.equal(r0.body.remediation, 'save_a_card');

  const declined = await livePerson('declined@example.com');
  await saveCard(declined, 'pm_card_chargeDeclined');
  const r1 = await topUp(declined, 5, 'k');
  assert.equal(r1.status, 409);
  assert.ok(isTypedError(r1.body, 'card_declined'), JSON.stringify(r1.body));
  assert.match(r1.body.message, /card_declined/);

  const auth = await livePerson('auth@example.com');
  await saveCard(auth, 'pm_card_authenticationRequired');
  const r2 = await topUp(auth, 5, 'k');
  assert.equal(r2.status, 409);
  assert.ok(isTypedError(r2.body, 'card_authentication_required'), JSON.stringify(r2.body));

  // The processor's payment_failed events are recorded as topup.failed; nothing is credited.
  const failed = await eventually('topup.failed for the declined card', async () => {
    const e = await sys.call('GET', '/v1/events?type=topup.failed', { token: declined.token });
    return e.body.items.length > 0 ? e.body.items : undefined;
  });
  assert.equal(failed[0].data.amount_cents, 500);
  await processor.webhooksIdle();
  for (const p of [none, declined, auth]) assert.equal(await balanceOf(p), 0);
});

test('[MONEY-WEBHOOK-FORGED] a bad signature, a stale timestamp or a body changed after signing is 400 and credits nothing', async () => {
  const p = await livePerson('forged@example.com');
  const event = {
    id: `evt_${randomUUID().replaceAll('-', '')}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000),
    data: {
      object: {
        id: `pi_${randomUUID().replaceAll('-', '')}`,
        object: 'payment_intent',
        amount: 999,
        amount_received: 999,
        status: 'succeeded',
        metadata: { kind: 'assay_topup', principal_id: p.principalId, topup_id: 'top_forged' },
      },
    },
  };
  const payload = JSON.stringify(event);
  const now = Math.floor(Date.now() / 1000);
  const post = (body: string, signature: string) =>
    fetch(`${sys.config.webUrl}/api/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      body,
    });
  const cases: [string, string, string][] = [
    ['no signature', payload, ''],
    ['another secret', payload, signatureHeader(payload, 'whsec_not_ours', now)],
    ['stale timestamp', payload, signatureHeader(payload, processor.webhookSecret, now - 600)],
    ['body changed', payload.replace('999', '99900'), signatureHeader(payload, processor.webhookSecret, now)],
  ];
  for (const [name, body, signature] of cases) {
    const res = await post(body, signature);
    assert.equal(res.status, 400, name);
    const answer = (await res.json()) as any;
    assert.equal(answer.code, 'validation_failed', name);
  }
  assert.equal(await balanceOf(p), 0);
  // The same event signed as the processor signs it is accepted: the refusals above were the signature's.
  const ok = await post(payload, signatureHeader(payload, processor.webhookSecret, now));
  assert.equal(ok.status, 200);
  assert.equal(await balanceOf(p), 999);
  // An event type Assay does not act on is acknowledged and ignored.
  const other = JSON.stringify({ ...event, id: 'evt_other', type: 'customer.tax_id.created' });
  const ignored = await post(other, signatureHeader(other, processor.webhookSecret, now));
  assert.equal(ignored.status, 200);
  assert.deepEqual(await ignored.json(), { received: true, handled: false });
});

test('[MONEY-WEBHOOK-SHAPE] a signed event of a type Assay acts on, in a shape it cannot read, is refused (the processor sends it again) and credits nothing; read right, it credits once', async () => {
  const p = await livePerson('shape@example.com');
  const intent = {
    id: `pi_${randomUUID().replaceAll('-', '')}`,
    object: 'payment_intent',
    amount: 700,
    amount_received: 700,
    status: 'succeeded',
    metadata: { kind: 'assay_topup', principal_id: p.principalId, topup_id: 'top_shape' },
  };
  const eventOf = (object: Record<string, unknown>) => ({
    id: `evt_${randomUUID().replaceAll('-', '')}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000),
    data: { object },
  });
  const post = (event: unknown) => {
    const payload = JSON.stringify(event);
    return fetch(`${sys.config.webUrl}/api/stripe/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': signatureHeader(payload, processor.webhookSecret, Math.floor(Date.now() / 1000)),
      },
      body: payload,
    });
  };
  // The amount as text: not a shape the payments service reads, so it is not taken as some other amount.
  const unreadable = await post(eventOf({ ...intent, amount_received: '700' }));
  assert.equal(unreadable.status, 503);
  assert.ok(isTypedError(await unreadable.json(), 'unavailable'));
  assert.equal(await balanceOf(p), 0);
  const read = await post(eventOf(intent));
  assert.equal(read.status, 200);
  assert.equal(await balanceOf(p), 700);
});

test('[MONEY-CONCURRENT] 50 live principals top up at once while their webhooks arrive shuffled and duplicated: every balance equals its succeeded payments', async () => {
  const people = await Promise.all(
    Array.from({ length: 50 }, async () => {
      const principalId = randomUUID();
      const customer = await stripe.customers.create({ metadata: { principal_id: principalId } });
      const method = await stripe.paymentMethods.attach('pm_card_visa', { customer: customer.id });
      const saved = await askInternal(
        sys.nc,
        sys.names.actorSubject('principal', principalId),
        internalRequest('billing.card_saved', {
          principalId,
          customerId: customer.id,
          paymentMethodId: method.id,
          brand: 'visa',
          last4: '4242',
        }),
        10_000,
      );
      assert.ok(saved.ok, JSON.stringify(saved));
      const token = await mintToken(sys.config, { principalId, sandbox: false, scopes: buyerScopes });
      return { principalId, token };
    }),
  );
  processor.holdWebhooks();
  // Two top-ups each, concurrently, one of them sent twice with its key (a client retry).
  const answers = await Promise.all(
    people.flatMap((p, i) => [
      sys.call('POST', '/v1/topups', { token: p.token, body: { credits: 1 + (i % 7) }, key: 'a' }),
      sys.call('POST', '/v1/topups', { token: p.token, body: { credits: 10 }, key: 'b' }),
      sys.call('POST', '/v1/topups', { token: p.token, body: { credits: 10 }, key: 'b' }),
    ]),
  );
  for (const a of answers) assert.ok(a.status === 201 || a.status === 503, JSON.stringify(a.body));
  await processor.releaseWebhooks({ order: 'shuffle', duplicate: 2 });
  await processor.webhooksIdle();
  for (const p of people) {
    const succeeded = processor.paymentIntents.filter(
      (pi) => pi.metadata.principal_id === p.principalId && pi.status === 'succeeded',
    );
    assert.ok(succeeded.length <= 2, 'no key made a second PaymentIntent');
    const expected = succeeded.reduce((sum, pi) => sum + pi.amount, 0);
    await eventually(`balance of ${p.principalId}`, async () => {
      const b = (await sys.call('GET', '/v1/balance', { token: p.token })).body.balance_cents;
      return b === expected ? true : undefined;
    });
  }
});

test('[MONEY-PAYOUTS] payout runs transfer each released live accrual once, never a refunded order, through a crash and a rerun', async () => {
  const seller = await livePerson('seller@example.com', sellerScopes);
  const good = await verifiedListing(sys, seller.token, 'payout-good', { price: 300, good: true });
  const bad = await verifiedListing(sys, seller.token, 'payout-bad', { price: 700, good: false });

  const buyer = await livePerson('payout-buyer@example.com');
  await saveCard(buyer, 'pm_card_visa');
  assert.equal((await topUp(buyer, 50, 'funds')).status, 201);
  await eventually('the buyer funded', async () => ((await balanceOf(buyer)) === 5000 ? true : undefined));
  const m = await sys.call('POST', '/v1/mandates', {
    token: buyer.token,
    body: { per_item_cap_cents: 1000, min_trust: 0, reject_open_judge_errata: false },
    key: 'mandate',
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  const buy = async (listingId: string, key: string) => {
    const r = await sys.call('POST', '/v1/orders', {
      token: buyer.token,
      body: { listing_id: listingId, formats: ['md'] },
      key,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.order_id ?? r.body.id;
  };
  const first = await buy(good.listingId, 'o1');
  await buy(good.listingId, 'o2');
  await buy(bad.listingId, 'o3');
  const accrued = async (n: number) =>
    eventually(`${n} accruals`, async () => {
      const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
      return r.body.items.length === n ? r.body : undefined;
    });
  let payouts = await accrued(2);
  assert.equal(payouts.payouts_enabled, false);

  // The buyer's compliance bundle on the web, by session; the seller's session is not the buyer's.
  const bundle = await buyer.jar.get(`/api/orders/${first}/compliance`);
  assert.equal(bundle.status, 200);
  assert.equal(((await bundle.json()) as any).body.bundle_version, 'compliance-bundle/1');
  const notYours = await seller.jar.get(`/api/orders/${first}/compliance`);
  assert.equal(notYours.status, 404);
  assert.equal(((await notYours.json()) as any).code, 'not_found');
  const anonymous = await fetch(`${sys.config.webUrl}/api/orders/${first}/compliance`);
  assert.equal(anonymous.status, 401);

  // Not enabled yet: a run pays nothing.
  let run = await runCli(sys, ['payouts', 'run']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(processor.transfers.length, 0);

  // Onboarding: the account page sends the seller to the processor; its account.updated enables payouts.
  const res = await seller.jar.post('/account/payouts', {});
  assert.equal(res.status, 303, await res.text());
  const accountId = (
    await eventually('the connected account recorded', async () => {
      const b = await askInternal(
        sys.nc,
        sys.names.actorSubject('principal', seller.principalId),
        internalRequest('billing.get', { principalId: seller.principalId }),
        10_000,
      );
      return b.ok && b.body.payoutAccount ? b.body.payoutAccount : undefined;
    })
  ).accountId;
  processor.completeOnboarding(accountId);
  payouts = await eventually('payouts enabled', async () => {
    const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
    return r.body.payouts_enabled ? r.body : undefined;
  });

  // The processor makes the transfer and the answer is lost, every time the run asks: the run ends unconfirmed.
  processor.failNext('POST /v1/transfers', 'drop-after', 3);
  run = await runCli(sys, ['payouts', 'run']);
  assert.equal(run.code, 2, `${run.stdout}${run.stderr}`);
  assert.equal(processor.transfers.length, 1, 'the processor made one transfer');
  // The rerun finds it by its group and records it: nothing is paid twice.
  run = await runCli(sys, ['payouts', 'run']);
  assert.equal(run.code, 0, run.stderr);
  const summary = JSON.parse(run.stdout);
  assert.equal(summary.resumed, 1);
  assert.equal(processor.transfers.length, 1);
  assert.equal(processor.transfers[0]!.amount, 600, 'two released orders of 300; the refunded 700 is not paid');
  assert.equal(processor.transfers[0]!.destination, accountId);

  const paid = await eventually('accruals shown paid', async () => {
    const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
    return r.body.items.every((i: any) => i.state === 'paid') ? r.body.items : undefined;
  });
  assert.equal(new Set(paid.map((i: any) => i.transfer_id)).size, 1);

  // A crash after the run recorded a transfer and before it asked the processor: the next run finishes it.
  await buy(good.listingId, 'o4');
  await accrued(3);
  const position = await askInternal(
    sys.nc,
    sys.names.actorSubject('principal', seller.principalId),
    internalRequest('billing.get', { principalId: seller.principalId }),
    10_000,
  );
  assert.ok(position.ok);
  const throughSeq = Number(
    (
      await sys.sql<
        { s: string }[]
      >`SELECT max(stream_seq) AS s FROM payouts WHERE seller_principal_id = ${seller.principalId}`
    )[0]!.s,
  );
  const begun = await askInternal(
    sys.nc,
    sys.names.actorSubject('principal', seller.principalId),
    internalRequest('payout.begin', {
      principalId: seller.principalId,
      fromSeq: position.body.payoutThroughSeq,
      throughSeq,
      amountCents: 300,
      // The projection holds this accrual, so its checkpoint is at least its sequence.
      checkedThroughSeq: throughSeq,
    }),
    10_000,
  );
  assert.ok(begun.ok && !begun.body.resumed, JSON.stringify(begun));
  run = await runCli(sys, ['payouts', 'run']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout).resumed, 1);
  assert.equal(processor.transfers.length, 2);
  assert.equal(processor.transfers[1]!.amount, 300);
  // And a run with nothing owed pays nothing.
  run = await runCli(sys, ['payouts', 'run']);
  assert.equal(JSON.parse(run.stdout).transfers, 0);
  assert.equal(processor.transfers.length, 2);
  const events = await eventually('payout.paid events', async () => {
    const e = await sys.call('GET', '/v1/events?type=payout.paid', { token: seller.token });
    return e.body.items.length === 2 ? e.body.items : undefined;
  });
  assert.deepEqual(
    events.map((e: any) => e.data.amount_cents),
    [600, 300],
  );
});

test("[MONEY-EXPORT] the account export holds the person's data and nobody else's, and no secret", async () => {
  const health = await fetch(`${sys.config.webUrl}/api/health`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok' });

  const people = [];
  for (const name of ['export-a', 'export-b']) {
    const p = await livePerson(`${name}@example.com`);
    await saveCard(p, 'pm_card_visa');
    assert.equal((await topUp(p, 3, 'one')).status, 201);
    const key = await issueApiKey(sys.config.webUrl, p.jar, `${name} key`);
    const api = (path: string, body: unknown) =>
      contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, 'POST', { bearer: key, body });
    const file = await api('/contexts', { name: `${name} notes`, content: `the private text of ${name}` });
    assert.equal(file.status, 201, JSON.stringify(file.body));
    const hook = await api('/webhooks', {
      name: `${name} hook`,
      url: `https://127.0.0.1:9/${name}`,
      events: ['topup.credited'],
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    await eventually(`${name} credited`, async () => ((await balanceOf(p)) === 300 ? true : undefined));
    people.push({ ...p, name, key, webhookSecret: hook.body.data.secret as string });
  }
  const [a, b] = people as [(typeof people)[0], (typeof people)[0]];
  const res = await eventually('the export has the projected rows', async () => {
    const r = await a.jar.get('/api/account/export');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    const text = await r.text();
    const doc = JSON.parse(text);
    return doc.context_files.length > 0 &&
      doc.webhooks.length > 0 &&
      doc.topups.some((t: any) => t.state === 'credited')
      ? { text, doc }
      : undefined;
  });
  const { text, doc } = res;
  assert.equal(doc.format, 'assay-account-export/1');
  assert.equal(doc.principal_id, a.principalId);
  assert.equal(doc.profile.email, 'export-a@example.com');
  assert.equal(doc.billing.card.last4, '4242');
  assert.deepEqual(
    doc.ledger.map((e: any) => [e.type, e.amount_cents]),
    [['topup_credited', 300]],
  );
  assert.equal(doc.context_files[0].content, 'the private text of export-a');
  assert.equal(doc.webhooks[0].name, 'export-a hook');
  assert.equal(doc.api_keys[0].name, 'export-a key');
  assert.deepEqual(doc.sync.locators, [], 'device sync: no folders synced yet');
  // Nobody else's records, and no secret of any kind.
  assert.ok(!text.includes(b.principalId) && !text.includes('export-b'), 'the other person is absent');
  for (const secret of [a.key, a.webhookSecret, 'whsec_', 'asyk_', 'scrypt$', a.token]) {
    assert.ok(!text.includes(secret), `the export holds no ${secret.slice(0, 6)}... secret`);
  }
  const anonymous = await fetch(`${sys.config.webUrl}/api/account/export`);
  assert.equal(anonymous.status, 401);
  assert.equal(((await anonymous.json()) as any).code, 'unauthorized');
});

test('[HARDEN-AUDIT-LIVE] after live top-ups, refusals and payout runs through a crash, assay audit finds each transfer the sum of its accruals, paid once, and every row matching its fact', async () => {
  const r = await runCli(sys, ['audit', '--json']);
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 0, JSON.stringify(report.violations ?? r.stderr));
  const transferred = processor.transfers.reduce((sum, t) => sum + Number(t.amount), 0);
  assert.ok(transferred > 0, 'the tests before this one paid sellers');
  assert.equal(report.money.live.paidCents, transferred);
  assert.ok(report.money.live.accruedCents >= transferred);
  assert.equal(report.rowsChecked.payout_transfers, processor.transfers.length);
});
