// Live money on the principal's ledger (docs/money.md): the card a person saved, live top-ups (charged through the
// payments service, credited only when the processor's signed webhook confirms), and the seller's payouts. The
// processor is reached only by the payments service; this actor decides and records, one fact per change.
import { createHash } from 'node:crypto';
import {
  type BillingView,
  type ErrorCode,
  errorReply,
  firstByPrecedence,
  type LedgerFact,
  okReply,
  type RequestOf,
  type TopUpResultT,
  internalRequest,
} from '../../contracts/index.ts';
import { askThen, type Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { keyOf, recordOf, replayOrConflict } from './idempotency.ts';
import type { PrincipalState } from './state.ts';

const billingOf = (s: PrincipalState): BillingView => s.billing;

/**
 * A live top-up: the payments service charges the saved card off-session; the answer is `pending` and the credits
 * land with the processor's `payment_intent.succeeded`. The top-up id and the processor's idempotency key derive
 * from the principal and the request's Idempotency-Key, so a retry after a crash sends the processor the very same
 * request and never charges twice.
 */
export function liveTopUp(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'topUp'>): Decision<LedgerFact> {
  if (!d.processorConfigured) {
    return {
      reply: errorReply(
        'payments_not_configured',
        'this deployment takes no card payments, so there are no live top-ups (its operator has configured no payment processor, STRIPE_SECRET_KEY); the sandbox tops up test credits',
      ),
    };
  }
  const card = state.billing.card;
  if (!card) {
    return {
      reply: errorReply(
        'payment_method_required',
        'no card is saved for this principal: a person saves one on the account page, then top up again',
      ),
    };
  }
  const { key } = keyOf(req);
  const digest = createHash('sha256').update(`${state.principalId}\n${key}`).digest('hex');
  const topupId = `top_${digest.slice(0, 32)}`;
  const amountCents = req.body.credits * 100;
  const charge = internalRequest(
    'payments.charge',
    {
      principalId: state.principalId,
      topupId,
      amountCents,
      customerId: card.customerId,
      paymentMethodId: card.paymentMethodId,
      idempotencyKey: `assay-topup-${digest}`,
    },
    { requestId: req.requestId },
  );
  return askThen(d.names.serviceSubject('payments'), charge, (charged) => {
    if (!charged.ok) return { reply: charged.reply };
    const body: TopUpResultT = { status: 'pending', amount_cents: amountCents, sandbox: false, topup_id: topupId };
    const fact: LedgerFact = {
      ...factBase(d, state.principalId, false, state.availableCents),
      type: 'topup_requested',
      topupId,
      paymentIntentId: charged.body.paymentIntentId,
      amountCents,
      idempotency: recordOf(req, req.caller.agentId, { status: 201, body }),
    };
    return { fact, reply: okReply(201, body) };
  });
}

export function getBilling(state: PrincipalState): Decision<LedgerFact> {
  return { reply: okReply(200, billingOf(state)) };
}

export function saveCard(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'billing.card_saved'>,
): Decision<LedgerFact> {
  const { customerId, paymentMethodId, brand, last4 } = req.body;
  // A re-delivered checkout event saves nothing new.
  if (state.billing.card?.paymentMethodId === paymentMethodId) return { reply: okReply(200, billingOf(state)) };
  const card = { customerId, paymentMethodId, brand, last4, savedAt: d.clock.nowIso() };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents),
    type: 'payment_method_saved',
    card,
  };
  return { fact, reply: okReply(200, { ...billingOf(state), card }) };
}

/**
 * The processor's word on a PaymentIntent: `succeeded` credits its amount, `failed` records why. Keyed by the
 * PaymentIntent, so an event the processor delivers again (or twice at once) is recorded once.
 */
export async function settleTopUp(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'topup.settle'>,
): Promise<Decision<LedgerFact>> {
  const b = req.body;
  const key = `processor:${b.paymentIntentId}:${b.outcome}`;
  const earlier = await replayOrConflict(d, state, key, key);
  if (earlier) return { reply: earlier.ok ? okReply(200, { recorded: false }) : earlier };
  const reply = { status: 200, body: { recorded: true } };
  const idempotency = { key, requestHash: key, agentId: '', reply };
  if (b.outcome === 'succeeded') {
    const fact: LedgerFact = {
      ...factBase(d, state.principalId, false, state.availableCents + b.amountCents),
      type: 'credited',
      source: 'card_topup',
      amountCents: b.amountCents,
      topupId: b.topupId,
      paymentIntentId: b.paymentIntentId,
      idempotency,
    };
    return { fact, reply: okReply(200, reply.body) };
  }
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents),
    type: 'topup_failed',
    topupId: b.topupId,
    paymentIntentId: b.paymentIntentId,
    amountCents: b.amountCents,
    code: b.code ?? 'payment_failed',
    declineCode: b.declineCode ?? null,
    message: b.message ?? 'the payment failed',
    idempotency,
  };
  return { fact, reply: okReply(200, reply.body) };
}

export function updatePayoutAccount(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'payout.account'>,
): Decision<LedgerFact> {
  const { accountId, payoutsEnabled } = req.body;
  const now = state.billing.payoutAccount;
  if (now?.accountId === accountId && now.payoutsEnabled === payoutsEnabled) {
    return { reply: okReply(200, billingOf(state)) };
  }
  // A person has one connected account: an event about another is not this principal's (or a stale one).
  if (now && now.accountId !== accountId) {
    return { reply: errorReply('validation_failed', `the principal's connected account is ${now.accountId}`) };
  }
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents),
    type: 'payout_account_updated',
    accountId,
    payoutsEnabled,
  };
  return { fact, reply: okReply(200, { ...billingOf(state), payoutAccount: { accountId, payoutsEnabled } }) };
}

/**
 * Start a transfer of the accruals in (fromSeq, throughSeq], or hand back the one in flight: a payout run that
 * crashed after starting it resumes it, and two runs at once never both start one for the same accruals. A seller
 * whose own balance is negative (a card top-up of theirs taken back after its credits were spent) is paid nothing
 * until it is paid back.
 */
export function beginPayout(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'payout.begin'>,
): Decision<LedgerFact> {
  const b = state.billing;
  if (b.payoutInFlight) return { reply: okReply(200, { transfer: b.payoutInFlight, resumed: true }) };
  const account = b.payoutAccount;
  const { fromSeq, throughSeq, amountCents, checkedThroughSeq } = req.body;
  const refusals: { code: ErrorCode; message: string }[] = [];
  if (!account?.payoutsEnabled) {
    refusals.push({ code: 'validation_failed', message: 'payouts are not enabled for this seller' });
  }
  if (fromSeq !== b.payoutThroughSeq) {
    refusals.push({
      code: 'validation_failed',
      message: `accruals through ${b.payoutThroughSeq} are already paid or in a transfer; read the position again`,
    });
  }
  if (throughSeq > checkedThroughSeq) {
    refusals.push({
      code: 'validation_failed',
      message: `accruals through ${throughSeq} cannot have been checked at sequence ${checkedThroughSeq}`,
    });
  }
  if (state.availableCents < 0) {
    refusals.push({
      code: 'insufficient_credits',
      message: `the seller's balance is ${state.availableCents} cents (a card top-up was refunded or disputed after its credits were spent): payouts wait until a top-up pays it back`,
    });
  }
  const refusal = firstByPrecedence(refusals);
  if (refusal || !account) {
    return { reply: errorReply(refusal?.code ?? 'validation_failed', refusal?.message ?? 'no payout account') };
  }
  const transfer = { transferId: d.ids.uuid(), accountId: account.accountId, amountCents, fromSeq, throughSeq };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents),
    type: 'payout_started',
    ...transfer,
    checkedThroughSeq,
  };
  return { fact, reply: okReply(200, { transfer, resumed: false }) };
}

export function finishPayout(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'payout.finish'>,
): Decision<LedgerFact> {
  const { transferId, outcome, processorTransferId, failure } = req.body;
  const inFlight = state.billing.payoutInFlight;
  if (inFlight?.transferId !== transferId) {
    // Finished already (a rerun racing the first), or never started: nothing changes either way.
    return { reply: okReply(200, billingOf(state)) };
  }
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents),
    type: 'payout_finished',
    transferId,
    accountId: inFlight.accountId,
    amountCents: inFlight.amountCents,
    outcome,
    processorTransferId,
    failure,
  };
  return { fact, reply: okReply(200, billingOf(state)) };
}
