// The fold of a principal's facts into its state (state.ts). `checkFact` is the one place the money invariants live: the host runs it before an append (so a fact that would break one never becomes
// durable), and `applyFact` runs it again when it folds the fact in.
import assert from 'node:assert/strict';
import type { LedgerFact } from '../../contracts/index.ts';
import { type HotKeyPolicy, rememberKey } from './idempotency.ts';
import type { PrincipalState } from './state.ts';

interface Totals {
  availableCents: number;
  heldCents: number;
  spentCents: number;
  creditedCents: number;
}

/** The money after `fact`, asserting every invariant it must keep; `state` is not changed. */
export function checkFact(state: PrincipalState, fact: LedgerFact): Totals {
  assert.equal(fact.principalId, state.principalId, 'fact on the wrong principal subject');
  let { availableCents, heldCents, spentCents, creditedCents } = state;
  switch (fact.type) {
    case 'credited':
      assert(Number.isInteger(fact.amountCents) && fact.amountCents > 0, 'credit must be positive cents');
      availableCents += fact.amountCents;
      creditedCents += fact.amountCents;
      break;
    case 'escrow_held':
      assert(Number.isInteger(fact.priceCents) && fact.priceCents >= 0, 'price is whole cents');
      assert(!state.held.has(fact.orderId), 'an order is held once');
      availableCents -= fact.priceCents;
      heldCents += fact.priceCents;
      break;
    case 'escrow_released':
    case 'escrow_refunded': {
      const order = state.held.get(fact.orderId);
      assert(order && order.priceCents === fact.priceCents, 'only a held order settles, once');
      heldCents -= fact.priceCents;
      if (fact.type === 'escrow_released') spentCents += fact.priceCents;
      else availableCents += fact.priceCents;
      break;
    }
    case 'mandate_revoked':
      assert(
        state.mandates.some((m) => m.id === fact.mandateId),
        'only a known mandate is revoked',
      );
      break;
    case 'mandate_set':
    case 'call_recorded':
      break;
    default:
      return unknownFact(fact);
  }
  assert.equal(availableCents, fact.balanceAfterCents, 'fold and fact disagree on the balance');
  assert(availableCents >= 0 && heldCents >= 0, 'negative credits after a fact');
  assert.equal(
    creditedCents,
    availableCents + heldCents + spentCents,
    'credits in must equal available + held + spent',
  );
  return { availableCents, heldCents, spentCents, creditedCents };
}

/** Fold one fact at its LEDGER sequence into the state (checked first, so a bad fact changes nothing). */
export function applyFact(state: PrincipalState, fact: LedgerFact, seq: number, keys: HotKeyPolicy): PrincipalState {
  const totals = checkFact(state, fact);
  state.availableCents = totals.availableCents;
  state.heldCents = totals.heldCents;
  state.spentCents = totals.spentCents;
  state.creditedCents = totals.creditedCents;
  switch (fact.type) {
    case 'credited':
      if (fact.mandate) state.mandates.push(fact.mandate);
      break;
    case 'escrow_held':
      state.held.set(fact.orderId, {
        priceCents: fact.priceCents,
        floor: fact.floor,
        listingId: fact.listingId,
        artifactId: fact.artifactId,
        sellerPrincipalId: fact.sellerPrincipalId,
        agentId: fact.agentId,
        sandbox: fact.sandbox,
      });
      break;
    case 'escrow_released':
    case 'escrow_refunded':
      state.held.delete(fact.orderId);
      break;
    case 'mandate_set': {
      const i = state.mandates.findIndex((m) => m.id === fact.mandate.id);
      if (i >= 0) state.mandates.splice(i, 1);
      state.mandates.push(fact.mandate);
      break;
    }
    case 'mandate_revoked':
      state.mandates.find((m) => m.id === fact.mandateId)!.revoked = true;
      break;
    case 'call_recorded':
      break;
    default:
      return unknownFact(fact);
  }
  if (fact.idempotency) rememberKey(state, fact.idempotency, seq, Date.parse(fact.at), keys);
  return state;
}

function unknownFact(fact: never): never {
  throw new Error(`unknown ledger fact type ${(fact as { type?: unknown }).type}`);
}
