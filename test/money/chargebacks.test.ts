// Refunds and disputes of card top-ups (docs/money.md, Refunds and disputes), end to end against real NATS and
// PostgreSQL, the real HTTP faces and the local Stripe processor (test/support/stripe-processor.ts), which refunds
// through its API, opens disputes as a card network does and closes them on Stripe's test-mode evidence, and signs
// every event as Stripe does. The ledger takes back exactly what the processor took, once, however the events come;
// a negative balance buys nothing and is paid nothing until a top-up pays it back; a seller's accruals paid by a
// buyer whose funds are in dispute wait; and `assay audit` finds every fact and row consistent afterwards.
import { internalRequest } from '../../contracts/index.ts';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Stripe from 'stripe';
import { askInternal } from '../../actors/index.ts';
import { sellerScopes, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import {
  balanceOf as balanceOfPerson,
  type LivePerson,
  livePerson,
  saveCard,
  topUp as topUpOf,
} from '../support/live-money.ts';
import { type StripeProcessor, startStripeProcessor } from '../support/stripe-processor.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let processor: StripeProcessor;
let stripe: Stripe;
/** A listing of a seller who is never paid out: what the buyers of the first tests spend their credits on. */
let spendOn: { listingId: string };

before(async () => {
  processor = await startStripeProcessor({ webhookRetryDelaysMs: [50, 100, 200] });
  sys = await startSystem({
    STRIPE_SECRET_KEY: processor.apiKey,
    STRIPE_WEBHOOK_SECRET: processor.webhookSecret,
    STRIPE_API_BASE: processor.url,
    ASSAY_PAYOUT_INTERVAL_MS: '0',
    // Nine people sign up on the web here: the per-address sign-up limit is out of their way.
    ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE: '100',
  });
  processor.setWebhookUrl(`${sys.config.webUrl}/api/stripe/webhook`);
  stripe = new Stripe(processor.apiKey, { host: '127.0.0.1', port: processor.port, protocol: 'http' });
  const shop = await livePerson(sys, 'shop@example.com', sellerScopes);
  spendOn = await verifiedListing(sys, shop.token, 'chargeback-spend', { price: 500, good: true });
});
after(async () => {
  await sys?.stop();
  await processor?.close();
});

const balanceOf = (p: LivePerson) => balanceOfPerson(sys, p);
const topUp = (p: LivePerson, credits: number, key: string) => topUpOf(sys, p, credits, key);
const balanceIs = (p: LivePerson, cents: number) =>
  eventually(`balance ${cents} cents`, async () => ((await balanceOf(p)) === cents ? true : undefined));

/** A person with a saved card, `credits` topped up (landed) and a mandate that lets its agent buy. */
async function fundedBuyer(email: string, credits: number, scopes?: string[]): Promise<LivePerson> {
  const p = await livePerson(sys, email, scopes);
  await saveCard(processor, p, 'pm_card_visa');
  assert.equal((await topUp(p, credits, 'funds')).status, 201);
  await balanceIs(p, credits * 100);
  const m = await sys.call('POST', '/v1/mandates', {
    token: p.token,
    body: { per_item_cap_cents: 5000, min_trust: 0, reject_open_judge_errata: false },
    key: 'mandate',
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  return p;
}

const buy = (p: LivePerson, listingId: string, key: string) =>
  sys.call('POST', '/v1/orders', { token: p.token, body: { listing_id: listingId, formats: ['md'] }, key });

async function bought(p: LivePerson, listingId: string, key: string): Promise<string> {
  const r = await buy(p, listingId, key);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.order_id ?? r.body.id;
}

/** The charge of the person's newest succeeded top-up at the processor. */
function chargeOf(p: LivePerson): { paymentIntentId: string; chargeId: string } {
  const pi = processor.paymentIntents
    .filter((i) => i.metadata.principal_id === p.principalId && i.status === 'succeeded')
    .at(-1);
  assert.ok(pi, 'a succeeded top-up');
  return { paymentIntentId: pi.id, chargeId: processor.object(pi.id)!.latest_charge };
}

/** The person's ledger entries of `types`, newest first, as [type, amount_cents]. */
async function entries(p: LivePerson, types: string[]): Promise<[string, number][]> {
  const r = await sys.call('GET', '/v1/ledger?limit=200', { token: p.token });
  return r.body.items.filter((e: any) => types.includes(e.type)).map((e: any) => [e.type, e.amount_cents]);
}

/** Wait until the person's ledger (the principal-facts projection) holds `n` entries of `type`. */
const projected = (p: LivePerson, type: string, n: number) =>
  eventually(`${n} ${type} entries projected`, async () =>
    (await entries(p, [type])).length === n ? true : undefined,
  );

async function eventsOf(p: LivePerson, type: string, n: number): Promise<any[]> {
  return eventually(`${n} ${type} events`, async () => {
    const e = await sys.call('GET', `/v1/events?type=${type}`, { token: p.token });
    return e.body.items.length === n ? e.body.items : undefined;
  });
}

/** Every delivery of the processor's events of `type` so far was answered 200. */
function deliveredOk(type: string) {
  const answers = processor.deliveries.filter((d) => d.type === type).map((d) => d.status);
  assert.ok(answers.length > 0, `${type} was delivered`);
  assert.ok(
    answers.every((s) => s === 200),
    `${type} answered ${answers.join(', ')}`,
  );
}

const chargebackTypes = ['topup_refunded', 'topup_disputed', 'dispute_won', 'dispute_lost'];

test('[MONEY-CHARGEBACK-REFUND] a refund debits what the processor refunded, once however often its event comes; the negative balance refuses purchases until a top-up pays it back', async () => {
  const p = await fundedBuyer('refund@example.com', 20);
  await bought(p, spendOn.listingId, 'spend');
  assert.equal(await balanceOf(p), 1500);
  const { paymentIntentId, chargeId } = chargeOf(p);

  // A partial refund: its 500 cents are debited.
  await stripe.refunds.create({ payment_intent: paymentIntentId, amount: 500 });
  await balanceIs(p, 1000);
  const first = processor.events.find((e) => e.type === 'charge.refunded' && e.data.object.id === chargeId)!;
  assert.equal(first.data.object.amount_refunded, 500);

  // The rest, while the processor's events come back late, three times each, shuffled, and the first again: the
  // cumulative amount_refunded makes the second debit 1,500 cents, once.
  processor.holdWebhooks();
  await stripe.refunds.create({ payment_intent: paymentIntentId });
  assert.equal(await processor.resend(first.id), 200);
  await processor.releaseWebhooks({ order: 'shuffle', duplicate: 2 });
  await processor.webhooksIdle();
  await balanceIs(p, -500);
  deliveredOk('charge.refunded');

  await projected(p, 'topup_refunded', 2);
  assert.deepEqual(await entries(p, chargebackTypes), [
    ['topup_refunded', -1500],
    ['topup_refunded', -500],
  ]);
  const events = await eventsOf(p, 'topup.refunded', 2);
  assert.deepEqual(
    events.map((e) => [e.data.amount_cents, e.data.refunded_cents, e.data.balance_cents, e.data.charge_id]),
    [
      [500, 500, 1000, chargeId],
      [1500, 2000, -500, chargeId],
    ],
  );

  // Negative: nothing is bought, not even what the credits would have covered before, with the typed error.
  const refused = await buy(p, spendOn.listingId, 'while-negative');
  assert.equal(refused.status, 409, JSON.stringify(refused.body));
  assert.ok(isTypedError(refused.body, 'insufficient_credits'), JSON.stringify(refused.body));
  assert.match(refused.body.message, /balance is -500 cents/);
  assert.match(refused.body.message, /top up at least 500 cents to pay it back/);
  assert.equal(refused.body.remediation, 'top_up');
  // The person sees it on the account page, in words.
  const page = await (await p.jar.get('/account')).text();
  assert.match(page, /\$5\.00 owed<\/strong> \(-500 cents\)/);
  assert.match(page, /until a top-up pays it back/);

  // A top-up pays it back, and purchases go through again.
  assert.equal((await topUp(p, 10, 'pay-back')).status, 201);
  await balanceIs(p, 500);
  await bought(p, spendOn.listingId, 'after-pay-back');
  assert.equal(await balanceOf(p), 0);
});

test('[MONEY-CHARGEBACK-DISPUTE] a dispute withholds its amount (balance negative), a won one returns it, a lost one keeps it; replays and events out of order move the money once', async () => {
  const won = await fundedBuyer('dispute-won@example.com', 30);
  await bought(won, spendOn.listingId, 'spend');
  const wonCharge = chargeOf(won);
  const dispute = processor.disputeCharge(wonCharge.chargeId);
  assert.equal(dispute.amount, 3000);
  await balanceIs(won, -500);
  const disputed = await eventsOf(won, 'topup.disputed', 1);
  assert.equal(disputed[0].data.dispute_id, dispute.id);
  assert.equal(disputed[0].data.amount_cents, 3000);
  assert.equal(disputed[0].data.balance_cents, -500);
  // The created event once more: withheld once.
  const created = processor.events.find((e) => e.type === 'charge.dispute.created' && e.data.object.id === dispute.id)!;
  assert.equal(await processor.resend(created.id), 200);
  assert.equal(await balanceOf(won), -500);
  const refused = await buy(won, spendOn.listingId, 'while-disputed');
  assert.ok(isTypedError(refused.body, 'insufficient_credits'), JSON.stringify(refused.body));

  // The merchant's evidence wins (Stripe's test mode): the withheld 3,000 cents come back, once.
  await stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'winning_evidence' } });
  await balanceIs(won, 2500);
  const closed = await eventsOf(won, 'topup.dispute_closed', 1);
  assert.equal(closed[0].data.outcome, 'won');
  assert.equal(closed[0].data.returned_cents, 3000);
  for (const e of processor.events.filter((x) => x.data.object.id === dispute.id))
    assert.equal(await processor.resend(e.id), 200);
  await processor.webhooksIdle();
  assert.equal(await balanceOf(won), 2500);
  await projected(won, 'dispute_won', 1);
  assert.deepEqual(await entries(won, chargebackTypes), [
    ['dispute_won', 3000],
    ['topup_disputed', -3000],
  ]);

  // Accepted (lost): the withheld amount is kept, and the balance stays negative.
  const lost = await fundedBuyer('dispute-lost@example.com', 10);
  await bought(lost, spendOn.listingId, 'spend');
  const lostDispute = processor.disputeCharge(chargeOf(lost).chargeId);
  await balanceIs(lost, -500);
  await stripe.disputes.close(lostDispute.id);
  const lostClosed = await eventsOf(lost, 'topup.dispute_closed', 1);
  assert.equal(lostClosed[0].data.outcome, 'lost');
  assert.equal(lostClosed[0].data.returned_cents, 0);
  assert.equal(await balanceOf(lost), -500);
  await projected(lost, 'dispute_lost', 1);
  assert.deepEqual(await entries(lost, chargebackTypes), [
    ['dispute_lost', 0],
    ['topup_disputed', -1000],
  ]);

  // Out of order: the close arrives before the dispute was seen open. Lost: its amount is taken once; won: nothing
  // moves, and the late `created` withholds nothing.
  const late = await fundedBuyer('dispute-late@example.com', 10);
  processor.holdWebhooks();
  const lateLost = processor.disputeCharge(chargeOf(late).chargeId);
  await stripe.disputes.close(lateLost.id);
  await processor.releaseWebhooks({ order: 'reverse', duplicate: 1 });
  await processor.webhooksIdle();
  await balanceIs(late, 0);
  assert.equal((await topUp(late, 10, 'again')).status, 201);
  await balanceIs(late, 1000);
  processor.holdWebhooks();
  const lateWon = processor.disputeCharge(chargeOf(late).chargeId);
  await stripe.disputes.update(lateWon.id, { evidence: { uncategorized_text: 'winning_evidence' } });
  await processor.releaseWebhooks({ order: 'reverse', duplicate: 1 });
  await processor.webhooksIdle();
  assert.equal(await balanceOf(late), 1000);
  deliveredOk('charge.dispute.created');
  deliveredOk('charge.dispute.closed');
  await projected(late, 'dispute_lost', 1);
  assert.deepEqual(await entries(late, chargebackTypes), [['dispute_lost', -1000]]);
  const lateEvents = await eventsOf(late, 'topup.dispute_closed', 2);
  assert.deepEqual(
    lateEvents.map((e) => [e.data.outcome, e.data.amount_cents]),
    [
      ['lost', 1000],
      ['won', 0],
    ],
  );
});

/** The payout run for one seller, as an operator runs it, with its JSON summary. */
async function payoutRun(seller: LivePerson) {
  const run = await runCli(sys, ['payouts', 'run', seller.principalId]);
  assert.equal(run.code, 0, `${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as {
    transfers: number;
    paidCents: number;
    held: { principalId: string; reason: string }[];
  };
}

let seller: LivePerson;
let listing: { listingId: string };
let honest: LivePerson;

test('[MONEY-CHARGEBACK-PAYOUT-HOLD] accruals paid by a buyer whose funds are in dispute wait, those before them are paid, and they are paid once the buyer owes nothing', async () => {
  seller = await livePerson(sys, 'chargeback-seller@example.com', [...sellerScopes, 'manage:mandate']);
  listing = await verifiedListing(sys, seller.token, 'chargeback-held', { price: 500, good: true });
  const res = await seller.jar.post('/account/payouts', {});
  assert.equal(res.status, 303, await res.text());
  const accountId = await eventually('the connected account recorded', async () => {
    const b = await askInternal(
      sys.nc,
      sys.names.actorSubject('principal', seller.principalId),
      internalRequest('billing.get', { principalId: seller.principalId }),
      10_000,
    );
    return b.ok && b.body.payoutAccount ? b.body.payoutAccount.accountId : undefined;
  });
  processor.completeOnboarding(accountId);
  await eventually('payouts enabled', async () => {
    const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
    return r.body.payouts_enabled ? true : undefined;
  });

  honest = await fundedBuyer('honest@example.com', 20);
  const attacker = await fundedBuyer('attacker@example.com', 10);
  await bought(honest, listing.listingId, 'h1');
  const attackerOrder = await bought(attacker, listing.listingId, 'a1');
  await bought(honest, listing.listingId, 'h2');
  await eventually('3 accruals', async () => {
    const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
    return r.body.items.length === 3 ? true : undefined;
  });

  // The attacker's card top-up is disputed: its accrual and every later one wait; the one before it is paid.
  const dispute = processor.disputeCharge(chargeOf(attacker).chargeId);
  await balanceIs(attacker, -500);
  await projected(attacker, 'topup_disputed', 1);
  let summary = await payoutRun(seller);
  assert.equal(summary.transfers, 1);
  assert.equal(summary.paidCents, 500);
  assert.equal(summary.held.length, 1);
  assert.equal(summary.held[0]!.principalId, seller.principalId);
  assert.match(summary.held[0]!.reason, new RegExp(`order ${attackerOrder}`));
  assert.match(summary.held[0]!.reason, new RegExp(attacker.principalId));
  assert.deepEqual(
    processor.transfers.map((t) => Number(t.amount)),
    [500],
  );

  // Lost: the attacker owes 500 cents; still nothing of theirs is paid.
  await stripe.disputes.close(dispute.id);
  await projected(attacker, 'dispute_lost', 1);
  summary = await payoutRun(seller);
  assert.equal(summary.transfers, 0);
  assert.equal(summary.held.length, 1);
  assert.match(summary.held[0]!.reason, /owes 500 cents/);
  assert.equal(processor.transfers.length, 1);

  // Paid back: the waiting accruals (the attacker's and the honest buyer's after it) go out in one transfer.
  assert.equal((await topUp(attacker, 5, 'pay-back')).status, 201);
  await balanceIs(attacker, 0);
  await projected(attacker, 'topup_credited', 2);
  summary = await payoutRun(seller);
  assert.equal(summary.transfers, 1);
  assert.equal(summary.paidCents, 1000);
  assert.deepEqual(summary.held, []);
  assert.deepEqual(
    processor.transfers.map((t) => Number(t.amount)),
    [500, 1000],
  );
});

test('[MONEY-CHARGEBACK-SELLER-NEGATIVE] a seller whose own balance is negative is paid nothing (insufficient_credits) until a top-up pays it back', async () => {
  // The seller spends a card top-up, which is then refunded: its balance is -500 cents.
  await saveCard(processor, seller, 'pm_card_visa');
  assert.equal((await topUp(seller, 10, 'seller-funds')).status, 201);
  await balanceIs(seller, 1000);
  const m = await sys.call('POST', '/v1/mandates', {
    token: seller.token,
    body: { per_item_cap_cents: 5000, min_trust: 0, reject_open_judge_errata: false },
    key: 'mandate',
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  await bought(seller, spendOn.listingId, 'seller-spends');
  await stripe.refunds.create({ payment_intent: chargeOf(seller).paymentIntentId });
  await balanceIs(seller, -500);
  await projected(seller, 'topup_refunded', 1);
  // An honest buyer's purchase accrues to it.
  await bought(honest, listing.listingId, 'h3');
  await eventually('the fourth accrual', async () => {
    const r = await sys.call('GET', '/v1/payouts', { token: seller.token });
    return r.body.items.length === 4 ? true : undefined;
  });

  const summary = await payoutRun(seller);
  assert.equal(summary.transfers, 0);
  assert.equal(summary.held.length, 1);
  assert.match(summary.held[0]!.reason, /balance is -500 cents/);
  assert.equal(processor.transfers.length, 2);
  // The actor's own answer to a transfer's start is the typed refusal.
  const position = await askInternal(
    sys.nc,
    sys.names.actorSubject('principal', seller.principalId),
    internalRequest('billing.get', { principalId: seller.principalId }),
    10_000,
  );
  assert.ok(position.ok);
  const [last] = await sys.sql<{ s: number }[]>`
    SELECT max(stream_seq)::float8 AS s FROM payouts WHERE seller_principal_id = ${seller.principalId}`;
  const throughSeq = last!.s;
  const begun = await askInternal(
    sys.nc,
    sys.names.actorSubject('principal', seller.principalId),
    internalRequest('payout.begin', {
      principalId: seller.principalId,
      fromSeq: position.body.payoutThroughSeq,
      throughSeq,
      amountCents: 500,
      checkedThroughSeq: throughSeq,
    }),
    10_000,
  );
  assert.ok(!begun.ok && !begun.reply.ok, JSON.stringify(begun));
  assert.equal(begun.reply.error.code, 'insufficient_credits');

  assert.equal((await topUp(seller, 5, 'seller-pays-back')).status, 201);
  await balanceIs(seller, 0);
  const paid = await payoutRun(seller);
  assert.equal(paid.transfers, 1);
  assert.equal(paid.paidCents, 500);
  assert.deepEqual(
    processor.transfers.map((t) => Number(t.amount)),
    [500, 1000, 500],
  );
});

test('[MONEY-CHARGEBACK-AUDIT] after refunds, disputes won, lost and out of order, and held payouts, assay audit finds credits = available + held + spent + withheld + reversed and every row matching its fact', async () => {
  const r = await runCli(sys, ['audit', '--json']);
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 0, JSON.stringify(report.violations ?? r.stderr));
  const live = report.money.live;
  // Refunded 2,000 (refund@), lost 1,000 (dispute-lost@), 1,000 (dispute-late@), 1,000 (attacker@), refunded
  // 1,000 (the seller): 6,000 cents reversed; every dispute is closed, so nothing is withheld.
  assert.equal(live.reversedCents, 6000);
  assert.equal(live.withheldCents, 0);
  assert.equal(
    live.creditedCents,
    live.availableCents + live.heldCents + live.spentCents + live.withheldCents + live.reversedCents,
  );
  assert.ok(live.availableCents < live.creditedCents);
  assert.equal(report.rowsChecked.chargeback_standing, 6);
  assert.equal(report.rowsChecked.payout_transfers, processor.transfers.length);
});
