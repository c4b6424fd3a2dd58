// Live money (docs/money.md): the payment processor's part. What the principal actor keeps of a person's billing
// (the saved card, the seller's connected account, the payouts it has made) and the messages between the payments
// service (the only code that talks to the processor), the principal actor and the web face.
import Type, { type Static } from 'typebox';

/** Credits are whole cents of this currency at the processor: one credit is 100 cents. */
export const processorCurrency = 'usd';

const Id = Type.String({ minLength: 1, maxLength: 255 });

export const SavedCardView = Type.Object({
  customerId: Id,
  paymentMethodId: Id,
  brand: Type.String(),
  last4: Type.String(),
  savedAt: Type.String(),
});

export const PayoutInFlight = Type.Object({
  transferId: Type.String(),
  accountId: Type.String(),
  amountCents: Type.Integer({ minimum: 1 }),
  fromSeq: Type.Integer({ minimum: 0 }),
  throughSeq: Type.Integer({ minimum: 1 }),
});
export type PayoutInFlight = Static<typeof PayoutInFlight>;

/** What the principal actor holds of the person's money outside the ledger's credits. */
export const BillingView = Type.Object({
  card: Type.Union([SavedCardView, Type.Null()]),
  payoutAccount: Type.Union([Type.Object({ accountId: Type.String(), payoutsEnabled: Type.Boolean() }), Type.Null()]),
  /** Released accruals up to this LEDGER sequence are paid out or in the transfer in flight. */
  payoutThroughSeq: Type.Integer({ minimum: 0 }),
  payoutInFlight: Type.Union([PayoutInFlight, Type.Null()]),
  paidOutCents: Type.Integer({ minimum: 0 }),
});
export type BillingView = Static<typeof BillingView>;

export const BillingGetCommand = Type.Object({ principalId: Type.String() });

export const CardSavedCommand = Type.Object({
  principalId: Type.String(),
  customerId: Id,
  paymentMethodId: Id,
  brand: Type.String({ maxLength: 40 }),
  last4: Type.String({ maxLength: 4 }),
});

/** The processor's word on a live top-up's PaymentIntent, from its signed webhook. */
export const TopupSettleCommand = Type.Object({
  principalId: Type.String(),
  paymentIntentId: Id,
  topupId: Type.String(),
  amountCents: Type.Integer({ minimum: 1 }),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  code: Type.Optional(Type.String()),
  declineCode: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  message: Type.Optional(Type.String()),
});
export const TopupSettled = Type.Object({ recorded: Type.Boolean({ description: 'False: already recorded.' }) });

const Cents = Type.Integer({ minimum: 0 });

/** The live top-up a processor charge paid, as the payments service read it from the charge's PaymentIntent. */
const ChargeOfTopup = {
  principalId: Type.String(),
  topupId: Type.String(),
  paymentIntentId: Id,
  chargeId: Id,
  /** The charge's captured amount: nothing taken back from it may exceed it. */
  chargeCents: Type.Integer({ minimum: 1 }),
};

/** `charge.refunded`: the processor's refunded total of the charge (Stripe's `amount_refunded`, cumulative). */
export const TopupRefundCommand = Type.Object({ ...ChargeOfTopup, amountRefundedCents: Cents });

/**
 * `charge.dispute.*`: a dispute of the charge as its event shows it. `open` withholds its amount; `won` (also an
 * inquiry closed, or a dispute prevented) returns it; `lost` keeps it.
 */
export const TopupDisputeCommand = Type.Object({
  ...ChargeOfTopup,
  disputeId: Id,
  amountCents: Cents,
  status: Type.Union([Type.Literal('open'), Type.Literal('won'), Type.Literal('lost')]),
});

export const PayoutAccountCommand = Type.Object({
  principalId: Type.String(),
  accountId: Id,
  payoutsEnabled: Type.Boolean(),
});

export const PayoutBeginCommand = Type.Object({
  principalId: Type.String(),
  fromSeq: Type.Integer({ minimum: 0 }),
  throughSeq: Type.Integer({ minimum: 1 }),
  amountCents: Type.Integer({ minimum: 1 }),
  /** The projection's checkpoint the accruals and their buyers' standing were read at (at or after throughSeq). */
  checkedThroughSeq: Type.Integer({ minimum: 1 }),
});
export const PayoutBegun = Type.Object({
  transfer: PayoutInFlight,
  /** True: a transfer an earlier run started and did not finish, to be completed with the same idempotency key. */
  resumed: Type.Boolean(),
});

export const PayoutFinishCommand = Type.Object({
  principalId: Type.String(),
  transferId: Type.String(),
  outcome: Type.Union([Type.Literal('paid'), Type.Literal('failed')]),
  processorTransferId: Type.Union([Type.String(), Type.Null()]),
  failure: Type.Union([Type.String(), Type.Null()]),
});

export const CardSetupCommand = Type.Object({
  principalId: Type.String(),
  email: Type.String(),
  successUrl: Type.String(),
  cancelUrl: Type.String(),
});
export const OnboardingCommand = Type.Object({
  principalId: Type.String(),
  email: Type.String(),
  refreshUrl: Type.String(),
  returnUrl: Type.String(),
});
/** Where the person's browser goes next: the processor's hosted page. */
export const HostedPage = Type.Object({ url: Type.String() });

export const ChargeCommand = Type.Object({
  principalId: Type.String(),
  topupId: Type.String(),
  amountCents: Type.Integer({ minimum: 1 }),
  customerId: Id,
  paymentMethodId: Id,
  /** Derived from the principal and the request's Idempotency-Key: a replay never charges twice. */
  idempotencyKey: Type.String(),
});
export const Charged = Type.Object({ paymentIntentId: Type.String(), status: Type.String() });

/** A processor event whose signature the web face verified. */
export const ProcessorEventCommand = Type.Object({
  event: Type.Object({ id: Type.String(), type: Type.String() }, { additionalProperties: true }),
});
export const ProcessorEventHandled = Type.Object({
  handled: Type.Boolean({ description: 'False: a type Assay does not act on, acknowledged and ignored.' }),
});

export const PayoutRunCommand = Type.Object({
  /** Only this seller (an operator's targeted run); all enabled sellers when absent. */
  principalId: Type.Optional(Type.String()),
});
export const PayoutRunSummary = Type.Object({
  sellers: Type.Integer(),
  transfers: Type.Integer(),
  paidCents: Type.Integer(),
  resumed: Type.Integer(),
  failed: Type.Array(Type.Object({ principalId: Type.String(), reason: Type.String() })),
  /**
   * Sellers whose accruals (all, or those from the one named on) wait: the seller's own balance is negative, or a
   * buyer's funds are in dispute (docs/money.md, Payouts held). A hold is the rule working, not a failure.
   */
  held: Type.Array(Type.Object({ principalId: Type.String(), reason: Type.String() })),
});
export type PayoutRunSummary = Static<typeof PayoutRunSummary>;

/** The account export's format (GET /api/account/export): a reader checks it before reading the rest. */
export const accountExportFormat = 'assay-account-export/1';

/** The export's paged sections, in the order the document carries them (then `sync`, one object). */
export const accountExportSections = [
  'ledger',
  'orders',
  'subscriptions',
  'payouts',
  'payout_transfers',
  'topups',
  'context_files',
  'webhooks',
  'test_mode_agents',
] as const;
export type AccountExportSection = (typeof accountExportSections)[number];

/** A section to read a page of: a paged one, or `sync` (one object, in one page). */
export const AccountExportPart = Type.Unsafe<AccountExportSection | 'sync'>({
  enum: [...accountExportSections, 'sync'],
});

/** One page of a section, as the export writes its items: `next` is where the following page starts. */
export const AccountExportPage = Type.Object({
  items: Type.Array(Type.Unknown()),
  next: Type.Union([Type.String(), Type.Null()]),
});
export type AccountExportPage = Static<typeof AccountExportPage>;
