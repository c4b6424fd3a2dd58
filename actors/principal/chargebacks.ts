// The payment processor taking money back from a live card top-up (docs/money.md, Refunds and disputes): a refund
// debits what was refunded, a dispute withholds its amount until it closes, and a lost dispute keeps it. Each is
// decided from the state the facts left (what each charge has given back so far, each dispute's state), not from
// the event's id, so the processor's events may come again, late or out of order and still move the money once.
// The balance may go negative: the purchase policy and the payout refuse while it is.
import { errorReply, type LedgerFact, okReply, type RequestOf } from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { takenCents } from './fold.ts';
import { openDisputes, type PrincipalState } from './state.ts';

type ChargeCommand = RequestOf<'topup.refund'>['body'] | RequestOf<'topup.dispute'>['body'];

const unchanged = (): Decision<LedgerFact> => ({ reply: okReply(200, { recorded: false }) });
const recorded = okReply(200, { recorded: true });

/** The fields every chargeback fact repeats of its charge. */
const chargeFields = (b: ChargeCommand, openAfter: number) => ({
  topupId: b.topupId,
  paymentIntentId: b.paymentIntentId,
  chargeId: b.chargeId,
  chargeCents: b.chargeCents,
  openDisputes: openAfter,
});

/** What the charge can still give back, or a refusal when the command names it otherwise than its facts do. */
function roomOf(state: PrincipalState, b: ChargeCommand): { roomCents: number } | { refused: Decision<LedgerFact> } {
  const taken = state.chargebacks.charges.get(b.chargeId);
  if (taken && (taken.paymentIntentId !== b.paymentIntentId || taken.chargeCents !== b.chargeCents)) {
    return {
      refused: {
        reply: errorReply(
          'validation_failed',
          `charge ${b.chargeId} is recorded as ${taken.chargeCents} cents of PaymentIntent ${taken.paymentIntentId}`,
        ),
      },
    };
  }
  return { roomCents: Math.max(0, b.chargeCents - takenCents(taken)) };
}

/**
 * `charge.refunded`: the processor's refunded total is cumulative, so the debit is what it adds to the refunds
 * recorded, bounded by what the charge still holds. A re-delivered or older event adds nothing.
 */
export function refundTopUp(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'topup.refund'>,
): Decision<LedgerFact> {
  const b = req.body;
  const room = roomOf(state, b);
  if ('refused' in room) return room.refused;
  const refundedCents = state.chargebacks.charges.get(b.chargeId)?.refundedCents ?? 0;
  const amountCents = Math.min(b.amountRefundedCents - refundedCents, room.roomCents);
  if (amountCents <= 0) return unchanged();
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents - amountCents),
    type: 'topup_refunded',
    ...chargeFields(b, openDisputes(state)),
    amountCents,
    refundedCents: refundedCents + amountCents,
  };
  return { fact, reply: recorded };
}

/**
 * `charge.dispute.*`: an open dispute not yet recorded withholds its amount; a close returns it (won) or keeps it
 * (lost). A closed dispute is final, so nothing that comes after its close changes it; a close that comes before
 * the dispute was seen open is recorded too, so its late `created` withholds nothing.
 */
export function disputeTopUp(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'topup.dispute'>,
): Decision<LedgerFact> {
  const b = req.body;
  const room = roomOf(state, b);
  if ('refused' in room) return room.refused;
  const dispute = state.chargebacks.charges.get(b.chargeId)?.disputes.find((x) => x.id === b.disputeId);
  const open = openDisputes(state);
  if (dispute && dispute.state !== 'open') return unchanged();
  if (b.status === 'open') {
    const amountCents = Math.min(b.amountCents, room.roomCents);
    // Seen open already, or the charge has nothing left to withhold (refunded in full).
    if (dispute || amountCents === 0) return unchanged();
    const fact: LedgerFact = {
      ...factBase(d, state.principalId, false, state.availableCents - amountCents),
      type: 'topup_disputed',
      ...chargeFields(b, open + 1),
      disputeId: b.disputeId,
      amountCents,
    };
    return { fact, reply: recorded };
  }
  if (dispute) {
    const fact: LedgerFact = {
      ...factBase(
        d,
        state.principalId,
        false,
        b.status === 'won' ? state.availableCents + dispute.amountCents : state.availableCents,
      ),
      type: 'topup_dispute_closed',
      ...chargeFields(b, open - 1),
      disputeId: b.disputeId,
      outcome: b.status,
      amountCents: dispute.amountCents,
      wasWithheld: true,
    };
    return { fact, reply: recorded };
  }
  const amountCents = b.status === 'lost' ? Math.min(b.amountCents, room.roomCents) : 0;
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, false, state.availableCents - amountCents),
    type: 'topup_dispute_closed',
    ...chargeFields(b, open),
    disputeId: b.disputeId,
    outcome: b.status,
    amountCents,
    wasWithheld: false,
  };
  return { fact, reply: recorded };
}
