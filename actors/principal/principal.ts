// The principal actor: owns one principal's money and policy. Its state is a fold of the facts on
// `<ns>.ledger.<id>` (fold.ts); every command commits by one append. A mutating call's Idempotency-Key is checked
// first (idempotency.ts), then the operation's handler decides: purchases (purchase.ts, with the rules in
// purchase-policy.ts), settlement (settlement.ts), mandates (mandates.ts), credits (credits.ts), and the seller
// operations forwarded to the catalog and listing actors (forwarding.ts), subscriptions and their cycles
// (subscriptions.ts), the plan and its rate-limit buckets (plans.ts, rate.ts), daily quotas (quotas.ts) and
// purchases waiting for the principal's approval (approvals.ts), its context files (contexts.ts), skills
// (skills.ts) and webhook registrations (webhooks.ts), and live money: cards, top-ups and payouts (billing.ts) and
// what the payment processor takes back (chargebacks.ts).
import type { LedgerFact } from '../../contracts/index.ts';
import type { ActorBehaviour } from '../runtime/host.ts';
import { approve, decline, expire, getApprovals } from './approvals.ts';
import {
  createContext,
  deleteContext,
  getContext,
  listContexts,
  publishContext,
  syncEdition,
  updateContext,
} from './contexts.ts';
import { getBalance, grantSandbox, topUp } from './credits.ts';
import type { PrincipalDeps } from './deps.ts';
import { createListing, publishArtifact, publishEdition, repriceListing, unlistListing } from './forwarding.ts';
import { applyFact, checkFact } from './fold.ts';
import { fromSnapshot, initialState, type PrincipalState, toSnapshot } from './state.ts';
import { hotKeyPolicy, replayOrConflict } from './idempotency.ts';
import { changeMandate, createMandate, getMandates, revokeMandate } from './mandates.ts';
import { purchase } from './purchase.ts';
import { getPlan, setPlan } from './plans.ts';
import { leaseRate } from './rate.ts';
import { settle } from './settlement.ts';
import {
  createWebhook,
  deleteWebhook,
  disableWebhook,
  getWebhook,
  listWebhooks,
  redeliverEvent,
  rotateWebhookSecret,
  updateWebhook,
  testWebhook,
} from './webhooks.ts';
import { createSkill, deleteSkill, getSkill, listSkills, updateSkill } from './skills.ts';
import { cancelForSeller, cancelSubscription, runCycle, subscribeListing } from './subscriptions.ts';
import { beginPayout, finishPayout, getBilling, saveCard, settleTopUp, updatePayoutAccount } from './billing.ts';
import { disputeTopUp, refundTopUp } from './chargebacks.ts';
import { checkX402, creditX402 } from './x402.ts';

export type { PrincipalDeps } from './deps.ts';

export function principalBehaviour(d: PrincipalDeps): ActorBehaviour<'principal', PrincipalState, LedgerFact> {
  const keys = hotKeyPolicy(d);
  return {
    kind: 'principal',
    stream: d.names.streams.ledger.name,
    factSubject: (id) => d.names.ledgerSubject(id),
    initial: initialState,
    check: checkFact,
    apply: (state, fact, seq) => applyFact(state, fact, seq, keys),
    intercept: (state, req) =>
      req.idempotency ? replayOrConflict(d, state, req.idempotency.key, req.idempotency.requestHash) : null,
    handlers: {
      purchaseArtifact: (state, req) => purchase(d, state, req),
      'escrow.settle': (state, req) => settle(d, state, req),
      topUp: (state, req) => topUp(d, state, req),
      'sandbox.grant': (state, req) => grantSandbox(d, state, req),
      getBalance: (state) => getBalance(state),
      createMandate: (state, req) => createMandate(d, state, req),
      changeMandate: (state, req) => changeMandate(d, state, req),
      revokeMandate: (state, req) => revokeMandate(d, state, req),
      getMandates: (state, req) => getMandates(state, req),
      publishArtifact: (state, req) => publishArtifact(d, state, req),
      publishEdition: (state, req) => publishEdition(d, state, req),
      createListing: (state, req) => createListing(d, state, req),
      repriceListing: (state, req) => repriceListing(d, state, req),
      unlistListing: (state, req) => unlistListing(d, state, req),
      subscribeListing: (state, req) => subscribeListing(d, state, req),
      cancelSubscription: (state, req) => cancelSubscription(d, state, req),
      'subscription.cycle': (state, req) => runCycle(d, state, req),
      'subscription.cancel': (state, req) => cancelForSeller(d, state, req),
      'rate.lease': (state, req) => leaseRate(d, state, req),
      'plan.set': (state, req) => setPlan(d, state, req),
      'plan.get': (state, req) => getPlan(d, state, req),
      getApprovals: (state, req) => getApprovals(state, req),
      approvePurchase: (state, req) => approve(d, state, req),
      declinePurchase: (state, req) => decline(d, state, req),
      'approval.expire': (state, req) => expire(d, state, req),
      'context.list': (state, req) => listContexts(state, req),
      'context.get': (state, req) => getContext(d, state, req),
      'context.create': (state, req) => createContext(d, state, req),
      'context.update': (state, req) => updateContext(d, state, req),
      'context.delete': (state, req) => deleteContext(d, state, req),
      'context.publish': (state, req) => publishContext(d, state, req),
      'context.sync_edition': (state, req) => syncEdition(d, state, req),
      'skill.list': (state, req) => listSkills(state, req),
      'skill.get': (state, req) => getSkill(d, state, req),
      'skill.create': (state, req) => createSkill(d, state, req),
      'skill.update': (state, req) => updateSkill(d, state, req),
      'skill.delete': (state, req) => deleteSkill(d, state, req),
      'webhook.list': (state, req) => listWebhooks(state, req),
      'webhook.get': (state, req) => getWebhook(state, req),
      'webhook.create': (state, req) => createWebhook(d, state, req),
      'webhook.update': (state, req) => updateWebhook(d, state, req),
      'webhook.rotate': (state, req) => rotateWebhookSecret(d, state, req),
      'webhook.delete': (state, req) => deleteWebhook(d, state, req),
      'webhook.disable': (state, req) => disableWebhook(d, state, req),
      'webhook.test': (state, req) => testWebhook(d, state, req),
      redeliverEvent: (state, req) => redeliverEvent(d, state, req),
      'billing.get': (state) => getBilling(state),
      'billing.card_saved': (state, req) => saveCard(d, state, req),
      'topup.settle': (state, req) => settleTopUp(d, state, req),
      'topup.refund': (state, req) => refundTopUp(d, state, req),
      'topup.dispute': (state, req) => disputeTopUp(d, state, req),
      'payout.account': (state, req) => updatePayoutAccount(d, state, req),
      'payout.begin': (state, req) => beginPayout(d, state, req),
      'payout.finish': (state, req) => finishPayout(d, state, req),
      'x402.check': (state, req) => checkX402(d, state, req),
      'x402.credit': (state, req) => creditX402(d, state, req),
    },
    toSnapshot,
    fromSnapshot,
    // 2: records carry their fact's sequence, not their reply. 3: subscriptions. 4: plan and daily quota counts.
    // 5: approval requests. 6: context files. 7: skills. 8: webhooks. 9: billing (card, payouts). 10: chargebacks.
    snapshotVersion: 10,
  };
}
