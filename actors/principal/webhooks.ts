// A principal's webhook registrations (docs/webhooks.md). Like its context files, each registration is kept by the
// principal's actor and every change is one fact on its ledger, which the events projection turns into the routing
// table delivery reads, in stream order with the events themselves. A URL is checked by the webhooks service (the
// URL rule: HTTPS, and a host that resolves to public addresses only) before it is recorded; delivery checks again.
import { randomBytes } from 'node:crypto';
import {
  type BusReply,
  type Caller,
  errorReply,
  type LedgerFact,
  okReply,
  type RequestOf,
  type WebhookRecord,
  webhookSecretOverlapMs,
  webhookSecretPrefix,
  webhooksPerPrincipalMax,
  webhookView,
  internalRequest,
} from '../../contracts/index.ts';
import { askThen, type Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import { recordedCall } from './forwarding.ts';
import type { PrincipalState } from './state.ts';

const noSuchWebhook = 'no webhook of yours has this id';

const newSecret = () => `${webhookSecretPrefix}${randomBytes(32).toString('base64')}`;

function saved(
  d: PrincipalDeps,
  state: PrincipalState,
  caller: Caller,
  change: 'created' | 'updated' | 'rotated' | 'disabled' | 'tested',
  webhook: WebhookRecord,
  reply: BusReply,
): Decision<LedgerFact> {
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, caller.sandbox, state.availableCents),
    type: 'webhook_saved',
    change,
    webhook,
  };
  return { fact, reply };
}

/** Ask the webhooks service whether `url` may be delivered to, then decide with its answer. */
function withCheckedUrl(
  d: PrincipalDeps,
  req: { caller: Caller; requestId: string },
  url: string,
  next: () => Decision<LedgerFact>,
): Decision<LedgerFact> {
  return askThen(
    d.names.serviceSubject('webhooks'),
    internalRequest('webhook.check_url', { url }, { requestId: req.requestId, caller: req.caller }),
    (checked) => (checked.ok ? next() : { reply: checked.reply }),
  );
}

export function createWebhook(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.create'>,
): Decision<LedgerFact> {
  if (state.webhooks.size >= webhooksPerPrincipalMax) {
    return {
      reply: errorReply(
        'validation_failed',
        `a principal holds at most ${webhooksPerPrincipalMax} webhooks; delete one first`,
      ),
    };
  }
  const b = req.body;
  return withCheckedUrl(d, req, b.url, () => {
    const at = d.clock.nowIso();
    const webhook: WebhookRecord = {
      id: d.ids.uuid(),
      name: b.name,
      url: b.url,
      events: b.events,
      isActive: true,
      disabledReason: null,
      secret: newSecret(),
      previousSecret: null,
      previousSecretUntil: null,
      createdAt: at,
      updatedAt: at,
    };
    return saved(d, state, req.caller, 'created', webhook, okReply(201, webhookView(webhook, true)));
  });
}

export function updateWebhook(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.update'>,
): Decision<LedgerFact> {
  const before = state.webhooks.get(req.body.id);
  if (!before) return { reply: errorReply('not_found', noSuchWebhook) };
  const p = req.body.patch;
  const decide = () => {
    const webhook: WebhookRecord = {
      ...before,
      name: p.name ?? before.name,
      url: p.url ?? before.url,
      events: p.events ?? before.events,
      isActive: p.is_active ?? before.isActive,
      // Re-enabled (or paused) by its owner: the reason delivery gave no longer applies.
      disabledReason: p.is_active === undefined ? before.disabledReason : null,
      updatedAt: d.clock.nowIso(),
    };
    return saved(d, state, req.caller, 'updated', webhook, okReply(200, webhookView(webhook, false)));
  };
  return p.url === undefined || p.url === before.url ? decide() : withCheckedUrl(d, req, p.url, decide);
}

/** A new secret; the previous one keeps signing beside it for the overlap, so receivers can switch without a gap. */
export function rotateWebhookSecret(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.rotate'>,
): Decision<LedgerFact> {
  const before = state.webhooks.get(req.body.id);
  if (!before) return { reply: errorReply('not_found', noSuchWebhook) };
  const now = d.clock.nowMs();
  const webhook: WebhookRecord = {
    ...before,
    secret: newSecret(),
    previousSecret: before.secret,
    previousSecretUntil: new Date(now + webhookSecretOverlapMs).toISOString(),
    updatedAt: new Date(now).toISOString(),
  };
  return saved(d, state, req.caller, 'rotated', webhook, okReply(200, webhookView(webhook, true)));
}

/**
 * A test event for one webhook (the account page's button): a fact that changes nothing of the record and makes a
 * `webhook.test` event, which delivery sends, signed like any other, to this webhook alone. A paused or disabled
 * webhook is sent nothing, so it is refused rather than silently kept.
 */
export function testWebhook(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.test'>,
): Decision<LedgerFact> {
  const w = state.webhooks.get(req.body.id);
  if (!w) return { reply: errorReply('not_found', noSuchWebhook) };
  if (!w.isActive) {
    return {
      reply: errorReply(
        'validation_failed',
        'this webhook is paused or disabled: re-enable it to send it a test event',
      ),
    };
  }
  return saved(d, state, req.caller, 'tested', w, okReply(200, webhookView(w, false)));
}

/** Delivery kept failing: stop, and tell the owner (the fact makes the `webhook.disabled` event). Once. */
export function disableWebhook(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.disable'>,
): Decision<LedgerFact> {
  const before = state.webhooks.get(req.body.id);
  if (!before) return { reply: errorReply('not_found', noSuchWebhook) };
  if (!before.isActive) return { reply: okReply(200, webhookView(before, false)) };
  const webhook: WebhookRecord = {
    ...before,
    isActive: false,
    disabledReason: req.body.reason,
    updatedAt: d.clock.nowIso(),
  };
  return saved(d, state, req.caller, 'disabled', webhook, okReply(200, webhookView(webhook, false)));
}

export function deleteWebhook(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'webhook.delete'>,
): Decision<LedgerFact> {
  const before = state.webhooks.get(req.body.id);
  if (!before) return { reply: errorReply('not_found', noSuchWebhook) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'webhook_deleted',
    webhook: before,
  };
  return { fact, reply: okReply(200, webhookView(before, false)) };
}

export function getWebhook(state: PrincipalState, req: RequestOf<'webhook.get'>): Decision<LedgerFact> {
  const w = state.webhooks.get(req.body.id);
  return { reply: w ? okReply(200, webhookView(w, false)) : errorReply('not_found', noSuchWebhook) };
}

/** The owner's webhooks, newest first, without secrets. */
export function listWebhooks(state: PrincipalState, req: RequestOf<'webhook.list'>): Decision<LedgerFact> {
  const all = [...state.webhooks.values()].reverse();
  const items = all.slice(req.body.offset, req.body.offset + req.body.limit).map((w) => webhookView(w, false));
  return { reply: okReply(200, { items, total: all.length }) };
}

/**
 * Re-arm one of the principal's events for its webhooks (the webhooks service does it), recorded under the call's
 * Idempotency-Key so a retry replays the answer instead of re-arming again.
 */
export function redeliverEvent(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'redeliverEvent'>,
): Decision<LedgerFact> {
  return askThen(
    d.names.serviceSubject('webhooks'),
    { ...req, op: 'webhook.redeliver', body: { eventId: req.params.id } },
    (redelivered) =>
      redelivered.ok
        ? recordedCall(d, state, req, { status: redelivered.status, body: redelivered.body })
        : { reply: redelivered.reply },
  );
}
