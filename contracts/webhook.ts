// Webhooks (docs/webhooks.md): a principal's registrations of HTTPS endpoints for its events, kept by its principal
// actor as facts, and what the context-file API's `/webhooks` routes take and answer.
import Type, { type Static } from 'typebox';
import { EventType, Uuid } from './schemas.ts';

export const webhookUrlCharsMax = 2048;
/** Registrations one principal may hold. */
export const webhooksPerPrincipalMax = 20;

/** A registration as the principal actor keeps it and its facts carry it (the secrets included: they sign). */
export const WebhookRecord = Type.Object({
  id: Uuid(),
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  isActive: Type.Boolean(),
  /** Why it was disabled (delivery kept failing); null when active or disabled by its owner. */
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  secret: Type.String(),
  /** The secret before the last rotation, still signing (beside the new one) until `previousSecretUntil`. */
  previousSecret: Type.Union([Type.String(), Type.Null()]),
  previousSecretUntil: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type WebhookRecord = Static<typeof WebhookRecord>;

/** An event type's name (`order.state_changed`, ...). */
export type EventTypeName = Static<typeof EventType>;
/** Every event type, in the order the schema declares them: what a webhook may take. */
export const eventTypeNames: readonly EventTypeName[] = EventType.anyOf.map((t) => t.const);

/** A webhook's name: at most this many characters. */
export const webhookNameCharsMax = 200;
const Name = Type.String({ minLength: 1, maxLength: webhookNameCharsMax });
const Url = Type.String({ minLength: 1, maxLength: webhookUrlCharsMax, description: 'An https:// URL.' });
const Events = Type.Array(EventType, {
  minItems: 1,
  uniqueItems: true,
  description: 'Event types to deliver, from those the service emits (GET /v1/events lists them).',
});

export const WebhookCreateBody = Type.Object({ name: Name, url: Url, events: Events }, { additionalProperties: false });
export type WebhookCreateBody = Static<typeof WebhookCreateBody>;

export const WebhookPatchBody = Type.Object(
  {
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    is_active: Type.Optional(Type.Boolean({ description: 'false pauses deliveries; true re-enables them.' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type WebhookPatchBody = Static<typeof WebhookPatchBody>;

/** A registration as the API shows it: the secret only on create and rotate. */
export const WebhookView = Type.Object({
  id: Uuid(),
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  is_active: Type.Boolean(),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  secret: Type.Optional(Type.String({ description: 'The signing secret: shown on create and on rotation only.' })),
  previous_secret_expires_at: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type WebhookView = Static<typeof WebhookView>;

export function webhookView(r: WebhookRecord, withSecret: boolean): WebhookView {
  return {
    id: r.id,
    name: r.name,
    url: r.url,
    events: r.events,
    is_active: r.isActive,
    disabled_reason: r.disabledReason,
    ...(withSecret ? { secret: r.secret } : {}),
    previous_secret_expires_at: r.previousSecretUntil,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

/** One delivery attempt, as its owner sees it. */
export const WebhookAttemptView = Type.Object({
  event_id: Type.String(),
  event_type: Type.String(),
  attempt: Type.Integer(),
  at: Type.String(),
  status: Type.Union([Type.Integer(), Type.Null()]),
  duration_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('retrying'), Type.Literal('failed')]),
});
export type WebhookAttemptView = Static<typeof WebhookAttemptView>;

// Internal commands to the owner's principal actor (the caller is the owner) and the ledger service.
export const WebhookListCommand = Type.Object({
  offset: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
});
export const WebhookListReply = Type.Object({ items: Type.Array(WebhookView), total: Type.Integer() });
export const WebhookIdCommand = Type.Object({ id: Type.String() });
export const WebhookPatchCommand = Type.Object({ id: Type.String(), patch: WebhookPatchBody });
/** From the delivery worker: the endpoint kept failing, so the webhook stops (the owner is told by an event). */
export const WebhookDisableCommand = Type.Object({ id: Type.String(), reason: Type.String() });
export const WebhookAttemptsCommand = Type.Object({
  id: Type.String(),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
});
export const WebhookAttemptsReply = Type.Object({ items: Type.Array(WebhookAttemptView) });

/** After a rotation, how long the previous secret still signs beside the new one. */
export const webhookSecretOverlapMs = 24 * 3600 * 1000;
/** Webhook secrets: `whsec_` and the base64 of 32 random bytes (the Standard Webhooks form). */
export const webhookSecretPrefix = 'whsec_';
