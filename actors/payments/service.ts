// The payments service (docs/money.md): the only code that talks to the payment processor. It opens the
// processor's hosted pages (saving a card, seller onboarding), charges saved cards for live top-ups (asked by the
// principal actor), acts on the processor's verified webhook events by asking principal actors to record facts
// (top-ups landed or failed, cards saved, accounts updated, and top-ups refunded or disputed), and runs payouts. It
// keeps no state of its own: facts on the principals' ledgers do.
import type { Logger } from 'pino';
import type Stripe from 'stripe';
import { Value } from 'typebox/value';
import {
  type BusReply,
  errorReply,
  type InternalOpId,
  okReply,
  processorCurrency,
  type RequestOf,
  type ServiceHandlers,
  internalRequest,
} from '../../contracts/index.ts';
import { askInternal } from '../runtime/service.ts';
import type { PaymentsDeps } from './deps.ts';
import { HandledEvent, handledEventTypes } from './processor-event.ts';
import { runPayouts } from './payouts.ts';
import { isProcessorError, type Processor, processorOf } from './processor.ts';

export const notConfigured = (): BusReply<never> =>
  errorReply(
    'payments_not_configured',
    'this deployment takes no card payments: its operator has configured no payment processor (STRIPE_SECRET_KEY), so there are no saved cards, live top-ups or payouts',
  );

/** The metadata that marks a processor object as Assay's and names its principal. */
const topupKind = 'assay_topup';

export function paymentsService(d: PaymentsDeps): ServiceHandlers<'payments'> {
  const processor = d.processor === undefined ? processorOf(d.config) : d.processor;
  const askPrincipal = <Id extends InternalOpId>(
    op: Id,
    principalId: string,
    body: RequestOf<Id>['body'],
    id: string,
  ) =>
    askInternal(
      d.nc,
      d.names.actorSubject('principal', principalId),
      internalRequest(op, body, { requestId: id }),
      d.config.requestTimeoutMs,
      d.log,
    );

  return {
    async 'payments.card_setup'(req) {
      if (!processor) return notConfigured();
      const { principalId, email, successUrl, cancelUrl } = req.body;
      const billing = await askPrincipal('billing.get', principalId, { principalId }, req.requestId);
      if (!billing.ok) return billing.reply;
      return processorCall(d.log, async () => {
        const customerId =
          billing.body.card?.customerId ??
          (
            await processor.customers.create(
              { email, metadata: { principal_id: principalId } },
              // One customer per person, however often the page is opened before a card is saved.
              { idempotencyKey: `assay-customer-${principalId}` },
            )
          ).id;
        const session = await processor.checkout.sessions.create({
          mode: 'setup',
          customer: customerId,
          currency: processorCurrency,
          success_url: successUrl,
          cancel_url: cancelUrl,
          client_reference_id: principalId,
          metadata: { principal_id: principalId },
        });
        if (!session.url) throw new Error('the processor opened a checkout session without a page');
        return okReply(200, { url: session.url });
      });
    },

    async 'payments.onboarding'(req) {
      if (!processor) return notConfigured();
      const { principalId, email, refreshUrl, returnUrl } = req.body;
      const billing = await askPrincipal('billing.get', principalId, { principalId }, req.requestId);
      if (!billing.ok) return billing.reply;
      return processorCall(d.log, async () => {
        let accountId = billing.body.payoutAccount?.accountId;
        if (!accountId) {
          const account = await processor.accounts.create(
            {
              type: 'express',
              email,
              capabilities: { transfers: { requested: true } },
              metadata: { principal_id: principalId },
            },
            { idempotencyKey: `assay-connect-${principalId}` },
          );
          accountId = account.id;
          // Recorded now, so the account's `account.updated` finds its principal's account already known.
          const recorded = await askPrincipal(
            'payout.account',
            principalId,
            { principalId, accountId, payoutsEnabled: account.payouts_enabled ?? false },
            req.requestId,
          );
          if (!recorded.ok) return recorded.reply;
        }
        const link = await processor.accountLinks.create({
          account: accountId,
          refresh_url: refreshUrl,
          return_url: returnUrl,
          type: 'account_onboarding',
        });
        return okReply(200, { url: link.url });
      });
    },

    async 'payments.charge'(req) {
      if (!processor) return notConfigured();
      const b = req.body;
      try {
        const intent = await processor.paymentIntents.create(
          {
            amount: b.amountCents,
            currency: processorCurrency,
            customer: b.customerId,
            payment_method: b.paymentMethodId,
            off_session: true,
            confirm: true,
            description: `Assay credits (${b.amountCents / 100})`,
            metadata: { kind: topupKind, principal_id: b.principalId, topup_id: b.topupId },
          },
          { idempotencyKey: b.idempotencyKey },
        );
        return okReply(200, { paymentIntentId: intent.id, status: intent.status });
      } catch (err) {
        return chargeRefusal(d.log, err);
      }
    },

    async 'payments.event'(req) {
      if (!processor) return notConfigured();
      const event: unknown = req.body.event;
      if (!Value.Check(HandledEvent, event)) {
        // A type Assay does not act on is acknowledged; one it acts on in a shape it cannot read is refused, so the
        // processor sends it again and the log says which (money must not be dropped silently).
        if (!handledEventTypes.has(req.body.event.type)) return okReply(200, { handled: false });
        d.log.error({ eventId: req.body.event.id, type: req.body.event.type }, 'processor event not in the shape read');
        return errorReply('unavailable', 'the processor event could not be read');
      }
      switch (event.type) {
        case 'payment_intent.succeeded':
        case 'payment_intent.payment_failed': {
          const intent = event.data.object;
          const m = intent.metadata ?? {};
          // A payment Assay did not make (another product on the same processor account) is not ours to record.
          if (m.kind !== topupKind || !m.principal_id || !m.topup_id) return okReply(200, { handled: false });
          const succeeded = event.type === 'payment_intent.succeeded';
          const failure = intent.last_payment_error;
          const settled = await askPrincipal(
            'topup.settle',
            m.principal_id,
            {
              principalId: m.principal_id,
              paymentIntentId: intent.id,
              topupId: m.topup_id,
              // What landed, not what was asked: the processor's word is the credit.
              amountCents: succeeded ? intent.amount_received || intent.amount : intent.amount,
              outcome: succeeded ? 'succeeded' : 'failed',
              ...(succeeded
                ? {}
                : {
                    code: failure?.code ?? 'payment_failed',
                    declineCode: failure?.decline_code ?? null,
                    message: failure?.message ?? 'the payment failed',
                  }),
            },
            event.id,
          );
          return settled.ok ? okReply(200, { handled: true }) : settled.reply;
        }
        case 'checkout.session.completed': {
          const session = event.data.object;
          const principalId = session.metadata?.principal_id ?? session.client_reference_id;
          const setupIntent = session.setup_intent;
          if (session.mode !== 'setup' || !principalId || !setupIntent) return okReply(200, { handled: false });
          return processorCall(d.log, async () => {
            const intentId = typeof setupIntent === 'string' ? setupIntent : setupIntent.id;
            const intent = await processor.setupIntents.retrieve(intentId, { expand: ['payment_method'] });
            const method = intent.payment_method;
            if (!method || typeof method === 'string' || !intent.customer) {
              throw new Error(`setup intent ${intentId} has no payment method yet`);
            }
            const customerId = typeof intent.customer === 'string' ? intent.customer : intent.customer.id;
            await processor.customers.update(customerId, {
              invoice_settings: { default_payment_method: method.id },
            });
            const saved = await askPrincipal(
              'billing.card_saved',
              principalId,
              {
                principalId,
                customerId,
                paymentMethodId: method.id,
                brand: method.card?.brand ?? 'card',
                last4: method.card?.last4 ?? '',
              },
              event.id,
            );
            return saved.ok ? okReply(200, { handled: true }) : saved.reply;
          });
        }
        case 'charge.refunded': {
          const charge = event.data.object;
          return processorCall<{ handled: boolean }>(d.log, async () => {
            const topup = await topupOf(processor, charge.payment_intent);
            if (!topup) return okReply(200, { handled: false });
            const refunded = await askPrincipal(
              'topup.refund',
              topup.principalId,
              { ...topup, chargeId: charge.id, amountRefundedCents: charge.amount_refunded },
              event.id,
            );
            return refunded.ok ? okReply(200, { handled: true }) : refunded.reply;
          });
        }
        case 'charge.dispute.created':
        case 'charge.dispute.updated':
        case 'charge.dispute.closed': {
          // Each carries the dispute as it stood; the actor moves money only on a change of its state, so the
          // order these arrive in does not matter (actors/principal/chargebacks.ts).
          const dispute = event.data.object;
          return processorCall<{ handled: boolean }>(d.log, async () => {
            const topup = await topupOf(processor, dispute.payment_intent ?? null);
            if (!topup) return okReply(200, { handled: false });
            const recorded = await askPrincipal(
              'topup.dispute',
              topup.principalId,
              {
                ...topup,
                chargeId: typeof dispute.charge === 'string' ? dispute.charge : dispute.charge.id,
                disputeId: dispute.id,
                amountCents: dispute.amount,
                status: disputeState(dispute.status),
              },
              event.id,
            );
            return recorded.ok ? okReply(200, { handled: true }) : recorded.reply;
          });
        }
        case 'account.updated': {
          const principalId = event.data.object.metadata?.principal_id;
          if (!principalId) return okReply(200, { handled: false });
          return processorCall(d.log, async () => {
            // Events can arrive out of order: the account as it is now is the truth, not the event's copy.
            const account = await processor.accounts.retrieve(event.data.object.id);
            const recorded = await askPrincipal(
              'payout.account',
              principalId,
              { principalId, accountId: account.id, payoutsEnabled: account.payouts_enabled ?? false },
              event.id,
            );
            return recorded.ok ? okReply(200, { handled: true }) : recorded.reply;
          });
        }
        default:
          return okReply(200, { handled: false });
      }
    },

    async 'payouts.run'(req) {
      if (!processor) return notConfigured();
      return okReply(200, await runPayouts({ ...d, processor }, req.body.principalId));
    },
  };
}

/**
 * The live top-up a charge paid, read from its PaymentIntent (the metadata Assay set when it charged), with the
 * amount the processor received; null for a payment that is not an Assay top-up, or received nothing.
 */
async function topupOf(
  processor: Processor,
  intent: string | { id: string } | null,
): Promise<{ principalId: string; topupId: string; paymentIntentId: string; chargeCents: number } | null> {
  if (!intent) return null;
  // The intent as it is now: its metadata and amount are Assay's own, whatever the event's copy says.
  const pi = await processor.paymentIntents.retrieve(typeof intent === 'string' ? intent : intent.id);
  const m = pi.metadata ?? {};
  if (m.kind !== topupKind || !m.principal_id || !m.topup_id || !(pi.amount_received > 0)) return null;
  return { principalId: m.principal_id, topupId: m.topup_id, paymentIntentId: pi.id, chargeCents: pi.amount_received };
}

/**
 * A dispute's status as the ledger reads it: `lost` keeps the withheld amount; `won`, an inquiry closed without a
 * chargeback (`warning_closed`) and a dispute `prevented` return it; every other status is still open.
 */
function disputeState(status: string): 'open' | 'won' | 'lost' {
  if (status === 'lost') return 'lost';
  if (status === 'won' || status === 'warning_closed' || status === 'prevented') return 'won';
  return 'open';
}

/** A call to the processor whose failure is the processor's, not the caller's: 503 with what it said, logged. */
async function processorCall<B>(log: Logger, run: () => Promise<BusReply<B>>): Promise<BusReply<B>> {
  try {
    return await run();
  } catch (err) {
    log.warn({ err }, 'payment processor call failed');
    const said = isProcessorError(err) ? `: ${err.message}` : '';
    return errorReply('unavailable', `the payment processor did not complete the request${said}; retry shortly`, 5);
  }
}

/** A refused off-session charge as the agent API's typed error, with the processor's codes in the message. */
function chargeRefusal(log: Logger, err: unknown): BusReply<never> {
  if (isProcessorError(err)) {
    if (err.type === 'StripeCardError') {
      const decline = (err as Stripe.errors.StripeCardError).decline_code;
      if (err.code === 'authentication_required') {
        return errorReply(
          'card_authentication_required',
          'the bank wants the cardholder to authenticate this payment, which a top-up made by an agent cannot do: save a card that allows off-session payments on the account page',
        );
      }
      return errorReply(
        'card_declined',
        `the processor declined the saved card (${err.code ?? 'card_declined'}${decline ? `, ${decline}` : ''}): save another card on the account page`,
      );
    }
    if (err.type === 'StripeIdempotencyError') {
      return errorReply('idempotency_conflict', 'this Idempotency-Key was already used with a different top-up');
    }
  }
  log.warn({ err }, 'live top-up charge failed');
  const said = isProcessorError(err) ? `: ${err.message}` : '';
  return errorReply(
    'unavailable',
    `the payment processor did not answer the charge${said}; retry with the same Idempotency-Key`,
    5,
  );
}
