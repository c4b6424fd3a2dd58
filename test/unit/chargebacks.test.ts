// What the processor takes back from a card top-up, decided by the principal actor's real behaviour with its facts
// folded in memory (actors/principal/chargebacks.ts, fold.ts): every order and repetition of a dispute's events
// ends in the same money, a refund's increments are debited once, nothing is taken beyond the charge, and the fold
// refuses a fact that would spend from a negative balance or take back more than the charge.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { principalBehaviour } from '../../actors/principal/principal.ts';
import type { PrincipalState } from '../../actors/principal/state.ts';
import { decideCommand } from '../../actors/runtime/host.ts';
import type { BusReply, BusRequest, LedgerFact, RequestOf } from '../../contracts/index.ts';
import { names } from '../../contracts/index.ts';

let n = 0;
const behaviour = principalBehaviour({
  names: names('unit'),
  clock: { nowMs: () => Date.parse('2026-11-21T00:00:00.000Z'), nowIso: () => '2026-11-21T00:00:00.000Z' },
  ids: { uuid: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}` },
  idempotencyRetentionMs: 86_400_000,
  approvalTtlMs: 86_400_000,
  processorConfigured: true,
  hotKeysMax: 1000,
  index: { indexedThroughSeq: () => 0, lookup: async () => ({ found: null, indexedThroughSeq: 0 }) },
  loadFact: async () => null,
  defaultPlan: 'enterprise',
  sandboxPlan: 'enterprise',
  rateLeaseMs: 2000,
  quotes: { listing: async () => null, artifact: async () => null },
});
const principalId = '22222222-2222-4222-8222-222222222222';
const charge = { topupId: 'top_1', paymentIntentId: 'pi_1', chargeId: 'ch_1', chargeCents: 3000 };

const internal = (op: string, body: unknown): BusRequest => ({
  op,
  requestId: `r${++n}`,
  caller: null,
  params: {},
  query: {},
  body,
});
const credited = (amountCents: number, paymentIntentId = charge.paymentIntentId) =>
  internal('topup.settle', {
    principalId,
    paymentIntentId,
    topupId: charge.topupId,
    amountCents,
    outcome: 'succeeded',
  } satisfies RequestOf<'topup.settle'>['body']);
const refunded = (amountRefundedCents: number) =>
  internal('topup.refund', { principalId, ...charge, amountRefundedCents } satisfies RequestOf<'topup.refund'>['body']);
const disputed = (status: 'open' | 'won' | 'lost', amountCents = 3000, disputeId = 'dp_1') =>
  internal('topup.dispute', {
    principalId,
    ...charge,
    disputeId,
    amountCents,
    status,
  } satisfies RequestOf<'topup.dispute'>['body']);

async function run(state: PrincipalState, req: BusRequest, facts: LedgerFact[]): Promise<BusReply> {
  const d = await decideCommand(behaviour, state, req, { actorId: principalId, seq: facts.length });
  assert.ok(!('call' in d), 'a chargeback is decided by the principal alone');
  if ('fact' in d) {
    behaviour.check(state, d.fact);
    facts.push(d.fact);
    behaviour.apply(state, d.fact, facts.length);
  }
  return d.reply;
}

const factBase = { at: '2026-11-21T00:00:00.000Z', principalId, sandbox: false };

/** A purchase's fact: `priceCents` held (and released in the same commit unless `held`), leaving `balanceAfterCents`. */
const bought = (priceCents: number, balanceAfterCents: number, held = false): LedgerFact => ({
  ...factBase,
  id: `hold-${++n}`,
  balanceAfterCents,
  type: 'escrow_held',
  orderId: `order-${n}`,
  agentId: 'agent',
  listingId: 'listing',
  artifactId: 'artifact',
  editionId: 'edition',
  sellerPrincipalId: 'seller',
  priceCents,
  formats: ['md'],
  floor: 0,
  priceSnapshotId: 'listing@1',
  subscriptionId: null,
  ...(held
    ? {}
    : {
        settled: {
          id: `release-${n}`,
          type: 'escrow_released',
          balanceAfterCents,
          reportDigest: 'd',
          meanEntailment: 1,
        },
      }),
});

/** A live principal credited the charge's 3,000 cents, then spending 2,000 of them on a purchase. */
async function spentPrincipal(): Promise<{ state: PrincipalState; facts: LedgerFact[] }> {
  const state = behaviour.initial(principalId);
  const facts: LedgerFact[] = [];
  await run(state, credited(3000), facts);
  const purchase = bought(2000, 1000);
  behaviour.check(state, purchase);
  facts.push(purchase);
  behaviour.apply(state, purchase, facts.length);
  return { state, facts };
}

function* permutations<T>(items: T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield items;
    return;
  }
  for (let i = 0; i < items.length; i++) {
    for (const rest of permutations([...items.slice(0, i), ...items.slice(i + 1)])) yield [items[i]!, ...rest];
  }
}

test('[MONEY-CHARGEBACK-ORDER] every order and repetition of a dispute’s events ends in the same money: won returns all, lost keeps all, once', async () => {
  for (const outcome of ['won', 'lost'] as const) {
    // created, updated (still open), closed, each possibly delivered twice.
    const events = ['open', 'open', outcome, 'open', outcome] as const;
    let orders = 0;
    for (const order of permutations([...events])) {
      orders++;
      const { state, facts } = await spentPrincipal();
      for (const status of order) {
        const reply = await run(state, disputed(status), facts);
        assert.ok(reply.ok, JSON.stringify(reply));
      }
      const what = `${outcome} in the order ${order.join(', ')}`;
      assert.equal(state.availableCents, outcome === 'won' ? 1000 : -2000, what);
      assert.equal(state.chargebacks.withheldCents, 0, what);
      assert.equal(state.chargebacks.reversedCents, outcome === 'won' ? 0 : 3000, what);
      assert.equal(
        state.creditedCents,
        state.availableCents + state.spentCents + state.chargebacks.withheldCents + state.chargebacks.reversedCents,
      );
      const closes = facts.filter((f) => f.type === 'topup_dispute_closed');
      assert.equal(closes.length, 1, `${what}: closed once`);
      // Seen open first: withheld then closed; closed first: one fact, and a lost one takes its amount there.
      const firstOpen = order[0] === 'open';
      assert.equal(facts.filter((f) => f.type === 'topup_disputed').length, firstOpen ? 1 : 0, what);
    }
    assert.equal(orders, 120);
  }
});

test('[MONEY-CHARGEBACK-ORDER] refunds debit the increments of amount_refunded once, in any order, and never beyond the charge', async () => {
  // Three refunds (500, 700, 600 cents) as the processor's running totals, two of them delivered twice.
  for (const order of permutations([500, 1200, 1800, 1200, 500])) {
    const { state, facts } = await spentPrincipal();
    for (const total of order) assert.ok((await run(state, refunded(total), facts)).ok);
    const what = `refunded totals in the order ${order.join(', ')}`;
    assert.equal(state.availableCents, 1000 - 1800, what);
    assert.equal(state.chargebacks.reversedCents, 1800, what);
    const debits = facts.flatMap((f) => (f.type === 'topup_refunded' ? [f.amountCents] : []));
    assert.equal(
      debits.reduce((sum, c) => sum + c, 0),
      1800,
      what,
    );
  }
  // The processor refunding more than its charge (it would not): the ledger takes the charge, no more.
  const over = await spentPrincipal();
  await run(over.state, refunded(5000), over.facts);
  assert.equal(over.state.chargebacks.reversedCents, 3000);
  // A dispute of what a refund already took withholds only what is left.
  const { state, facts } = await spentPrincipal();
  await run(state, refunded(2500), facts);
  await run(state, disputed('open'), facts);
  assert.equal(state.chargebacks.withheldCents, 500);
  assert.equal(state.availableCents, 1000 - 2500 - 500);
  // Refunded in full, a charge has nothing left for a dispute: opened, it withholds nothing; lost, it takes nothing.
  const full = await spentPrincipal();
  await run(full.state, refunded(3000), full.facts);
  await run(full.state, disputed('open', 3000, 'dp_2'), full.facts);
  await run(full.state, disputed('lost', 3000, 'dp_2'), full.facts);
  assert.equal(full.state.availableCents, -2000);
  assert.equal(full.state.chargebacks.reversedCents, 3000);
  assert.deepEqual(
    full.facts.filter((f) => f.type === 'topup_disputed' || f.type === 'topup_dispute_closed').map((f) => f.type),
    ['topup_dispute_closed'],
  );
});

test('[MONEY-CHARGEBACK-ORDER] the fold refuses a purchase from a negative balance and a chargeback beyond its charge', async () => {
  const { state, facts } = await spentPrincipal();
  await run(state, refunded(3000), facts);
  assert.equal(state.availableCents, -2000);
  // A free order keeps the balance where it is, yet nothing is bought while it is negative.
  for (const held of [false, true])
    assert.throws(() => behaviour.check(state, bought(0, -2000, held)), /negative credits/);
  // A refund of cents the charge no longer holds.
  assert.throws(
    () =>
      behaviour.check(state, {
        ...factBase,
        id: 'f',
        ...charge,
        balanceAfterCents: -2100,
        type: 'topup_refunded',
        amountCents: 100,
        refundedCents: 3100,
        openDisputes: 0,
      }),
    /beyond the charge/,
  );
  // Paid back by a top-up of another charge: the balance only rises while negative, then purchases may go on.
  await run(state, credited(2500, 'pi_2'), facts);
  assert.equal(state.availableCents, 500);
});

test('[MONEY-CHARGEBACK-ORDER] a snapshot keeps what each charge gave back, and a principal never charged back shares the empty record', async () => {
  const { state, facts } = await spentPrincipal();
  await run(state, refunded(500), facts);
  await run(state, disputed('open', 2500), facts);
  const restored = behaviour.fromSnapshot(JSON.parse(JSON.stringify(behaviour.toSnapshot(state))));
  assert.deepEqual(restored.chargebacks, state.chargebacks);
  // The restored actor goes on from there: the dispute closes from what it withheld, once.
  const more: LedgerFact[] = [...facts];
  await run(restored, disputed('lost', 2500), more);
  await run(restored, disputed('lost', 2500), more);
  assert.equal(restored.availableCents, 1000 - 500 - 2500);
  assert.equal(restored.chargebacks.reversedCents, 3000);
  const clean = behaviour.fromSnapshot(
    JSON.parse(JSON.stringify(behaviour.toSnapshot(behaviour.initial(principalId)))),
  );
  assert.equal(clean.chargebacks, behaviour.initial('another').chargebacks);
});
