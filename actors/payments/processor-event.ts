// The processor's events Assay acts on, as schemas of the fields it reads (Stripe's event objects carry many more,
// which are left alone). The web face verified the event's signature; these check its shape, so a field the
// handler reads is what its type says and not a cast.
import type { TSchema } from 'typebox';
import Type from 'typebox';

const Metadata = Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]);
/** A reference to another object: its id, or the object expanded. */
const Ref = Type.Union([Type.String(), Type.Object({ id: Type.String() })]);
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const PaymentIntentObject = Type.Object({
  id: Type.String(),
  amount: Type.Integer(),
  amount_received: Type.Integer(),
  metadata: Type.Optional(Metadata),
  last_payment_error: Type.Optional(
    Nullable(
      Type.Object({
        code: Type.Optional(Nullable(Type.String())),
        decline_code: Type.Optional(Nullable(Type.String())),
        message: Type.Optional(Nullable(Type.String())),
      }),
    ),
  ),
});

const eventOf = <T extends TSchema, O extends TSchema>(type: T, object: O) =>
  Type.Object({ id: Type.String(), type, data: Type.Object({ object }) });

export const PaymentIntentEvent = eventOf(
  Type.Union([Type.Literal('payment_intent.succeeded'), Type.Literal('payment_intent.payment_failed')]),
  PaymentIntentObject,
);

export const CheckoutSessionEvent = eventOf(
  Type.Literal('checkout.session.completed'),
  Type.Object({
    mode: Type.String(),
    metadata: Type.Optional(Metadata),
    client_reference_id: Type.Optional(Nullable(Type.String())),
    setup_intent: Type.Optional(Nullable(Ref)),
  }),
);

export const ChargeRefundedEvent = eventOf(
  Type.Literal('charge.refunded'),
  Type.Object({ id: Type.String(), amount_refunded: Type.Integer(), payment_intent: Nullable(Ref) }),
);

export const DisputeEvent = eventOf(
  Type.Union([
    Type.Literal('charge.dispute.created'),
    Type.Literal('charge.dispute.updated'),
    Type.Literal('charge.dispute.closed'),
  ]),
  Type.Object({
    id: Type.String(),
    amount: Type.Integer(),
    status: Type.String(),
    charge: Ref,
    payment_intent: Type.Optional(Nullable(Ref)),
  }),
);

export const AccountEvent = eventOf(
  Type.Literal('account.updated'),
  Type.Object({ id: Type.String(), metadata: Type.Optional(Metadata) }),
);

/** The event types the handler acts on; any other is acknowledged and ignored. */
export const handledEventTypes: ReadonlySet<string> = new Set([
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'checkout.session.completed',
  'charge.refunded',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
  'account.updated',
]);

export const HandledEvent = Type.Union([
  PaymentIntentEvent,
  CheckoutSessionEvent,
  ChargeRefundedEvent,
  DisputeEvent,
  AccountEvent,
]);
