// TypeBox schemas of every resource in the spec. They are plain JSON Schema 2020-12, so the same objects validate
// requests in the gateway, become MCP tool schemas and drop into the OpenAPI 3.1 document unchanged.
import Type, { type Static, type TSchema } from 'typebox';
import { errorCodes } from './errors.ts';

export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });
/** A lower-case UUID as the service issues them; checked before an id reaches a uuid column. */
export const isUuid = (s: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s);
export const Timestamp = (description = 'ISO 8601 timestamp with milliseconds, UTC.') =>
  Type.String({ format: 'date-time', description });
export const Sha256 = Type.String({ pattern: '^sha256:[0-9a-f]{64}$', description: 'Form sha256:<hex>.' });
const Cursor = Type.String({ minLength: 1, maxLength: 200, description: 'Opaque cursor from a previous page.' });
const Cents = (description: string) => Type.Integer({ description });

/**
 * Largest amount of cents any request may name (a price, a cap, a price filter): a million credits. Every number a
 * request carries is bounded, so none can overflow a column or an integer on its way through.
 */
export const centsMax = 100_000_000;
/** A UUID in its canonical textual form (any case), as PostgreSQL's uuid type parses it. */
const uuidPattern = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/** Page size on every cursor-paginated agent route. */
export const pageLimits = { default: 50, max: 200 } as const;
const Limit = Type.Integer({
  minimum: 1,
  maximum: pageLimits.max,
  description: `Page size, 1 to ${pageLimits.max}; default ${pageLimits.default}.`,
});

export const PageQuery = Type.Object(
  { cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) },
  { additionalProperties: false },
);

const Page = <T extends TSchema>(item: T) =>
  Type.Object({
    items: Type.Array(item),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Cursor of the next page, null on the last.',
    }),
  });

export const ErrorObject = Type.Object(
  {
    code: Type.Union(
      errorCodes.map((c) => Type.Literal(c)),
      { description: 'Stable code; see the errors page.' },
    ),
    message: Type.String({ description: 'Human-readable.' }),
    remediation: Type.String({ description: 'Machine-readable next step.' }),
    retryable: Type.Boolean(),
    docs_url: Type.String({ format: 'uri', description: 'Ends with #<code>.' }),
    approval_id: Type.Optional(
      Uuid('Only on pending_approval: the approval request the purchase waits in (GET /v1/approvals).'),
    ),
  },
  { description: 'The typed error object every agent route answers with.' },
);

export const Trust = Type.Object({
  score: Type.Number({ minimum: 0, maximum: 1 }),
  sampleSize: Type.Integer({ minimum: 0 }),
  passRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
});

export const JudgeQuality = Type.Object(
  {
    referenceSet: Type.Object(
      {
        digest: Sha256,
        cases: Type.Integer({ minimum: 0 }),
        positives: Type.Integer({ minimum: 0, description: 'Cases labelled true (the passage supports the claim).' }),
        negatives: Type.Integer({ minimum: 0 }),
      },
      { description: "The project's published reference set the figures were measured on, named by its sha256." },
    ),
    sensitivity: Type.Number({ minimum: 0, maximum: 1, description: 'Share of true claims the judge verifies.' }),
    specificity: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'Share of false claims the judge does not verify: how far a verified claim can be trusted.',
    }),
    balancedAccuracy: Type.Number({ minimum: 0, maximum: 1, description: 'Mean of sensitivity and specificity.' }),
  },
  {
    description:
      "The judge version's measured quality on the project's published reference set (docs/verification.md, Judge quality).",
  },
);

/** What a search item says of the judge behind its artifact's current report. */
export const TrustJudge = Type.Union(
  [
    Type.Object({
      version: Type.String({ description: 'judgePromptVersion of the current report.' }),
      quality: Type.Union([JudgeQuality, Type.Null()], {
        description: 'null: no figures are published for this judge (a model judge).',
      }),
    }),
    Type.Null(),
  ],
  { description: "The judge of the artifact's current report and its measured quality; null until it has a report." },
);

export const SearchTrust = Type.Evaluate(Type.Intersect([Trust, Type.Object({ judge: TrustJudge })]));

export const Format = Type.Union([Type.Literal('md'), Type.Literal('pdf')]);

export const ArtifactManifest = Type.Object(
  {
    title: Type.String(),
    topics: Type.Array(Type.String()),
    description: Type.String(),
    floor: Type.Number({ minimum: 0, maximum: 1, description: 'The floor the publisher declares for its reports.' }),
  },
  { additionalProperties: true },
);

/** What every view of an artifact shows (a search item's, the artifact resource's). */
const ArtifactSummary = Type.Object({
  id: Uuid(),
  type: Type.Literal('context_file'),
  contentHash: Sha256,
  manifest: ArtifactManifest,
  ownerPrincipalId: Uuid(),
  sandbox: Type.Boolean(),
  createdAt: Timestamp(),
});

/** A live listing of a search item: where its offer document is, and the terms an agent buys on, inline. */
const SearchOffer = Type.Object({
  listing_id: Uuid(),
  offer_url: Type.String({ format: 'uri', description: 'The offer document (GET /offers/{id}), with its ETag.' }),
  price_cents: Type.Integer({
    minimum: 0,
    description: "The listing's live price in cents, as its offer document states it (max_price_cents of a purchase).",
  }),
  billing: Type.Union([Type.Null(), Type.Object({ interval_seconds: Type.Integer({ minimum: 1 }) })], {
    description: 'null: bought once; else a living artifact billed every interval_seconds (POST /v1/subscriptions).',
  }),
  formats: Type.Array(Format, { minItems: 1, description: 'The formats a purchase may name.' }),
});

export const SearchItem = Type.Object({
  artifact: ArtifactSummary,
  trust: SearchTrust,
  liveListingIds: Type.Array(Uuid()),
  offers: Type.Array(SearchOffer),
});
export const SearchPage = Page(SearchItem);
export const SearchQuery = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 64 })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    floor: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    max_price: Type.Optional(Type.Integer({ minimum: 0, maximum: centsMax, description: 'Cents.' })),
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(Limit),
  },
  { additionalProperties: false },
);

export const Claim = Type.Object({
  id: Type.String(),
  text: Type.String(),
  sourceId: Type.String(),
  locator: Type.String(),
  entailment: Type.Number({ minimum: 0, maximum: 1 }),
  state: Type.String({ description: 'verified, or another state documented in docs/verification.md.' }),
});

export const VerificationReport = Type.Object({
  digest: Sha256,
  pipelineVersion: Type.String(),
  subject: Type.Optional(
    Type.Object(
      { artifactId: Uuid(), editionId: Uuid(), contentHash: Sha256 },
      { description: 'What the report is about; signed with the rest, so a report cannot be moved to other content.' },
    ),
  ),
  claims: Type.Array(Claim),
  summary: Type.Object({
    claimsTotal: Type.Integer({ minimum: 0 }),
    verified: Type.Integer({ minimum: 0 }),
    floor: Type.Number(),
    meanEntailment: Type.Number(),
    humanReviewed: Type.Boolean(),
  }),
  judgeModel: Type.String(),
  judgePromptVersion: Type.String(),
  judgePromptHash: Sha256,
  judgeQuality: Type.Optional(
    Type.Union([JudgeQuality, Type.Null()], {
      description:
        "The judge version's measured quality on the reference set, signed with the report; null when none is published (a model judge). Absent in reports of pipeline assay-verify/1.0.0.",
    }),
  ),
  judge: Type.Optional(
    Type.Object(
      {
        driver: Type.Union([Type.Literal('builtin'), Type.Literal('openai'), Type.Literal('onnx')]),
        entailmentFrom: Type.Union([
          Type.Literal('rules'),
          Type.Literal('logprobs'),
          Type.Literal('verdict'),
          Type.Literal('mixed'),
          Type.Literal('classifier'),
        ]),
      },
      {
        description:
          'Which driver judged, and how entailments were obtained: rules (built-in), logprobs (P(supported) from the endpoint), verdict (1 or 0), mixed, classifier (P(entailment) from a local cross-encoder, ASSAY_JUDGE=onnx). Absent in reports made before it existed.',
      },
    ),
  ),
  signingKeyId: Type.String(),
  signature: Type.String(),
  createdAt: Timestamp(),
});

export const OrderState = Type.Union([Type.Literal('held'), Type.Literal('released'), Type.Literal('auto_refunded')]);

export const Order = Type.Object({
  id: Uuid(),
  listingId: Uuid(),
  buyerPrincipalId: Uuid(),
  buyerAgentId: Uuid(),
  subscriptionId: Type.Union([Uuid(), Type.Null()]),
  state: OrderState,
  escrowCents: Cents('Price held, in cents.'),
  formats: Type.Array(Format),
  idempotencyKey: Type.String(),
  priceSnapshotId: Type.Union([Type.String(), Type.Null()]),
  runId: Type.Union([Type.String(), Type.Null()]),
  refundReason: Type.Union([Type.Literal('floor_missed'), Type.Literal('no_report'), Type.Null()], {
    description:
      'Why an auto_refunded order was refunded: its report missed the floor, or no report arrived within the wait bound (nothing was judged). null otherwise.',
  }),
  sandbox: Type.Boolean(),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});
export const OrderPage = Page(Order);

export const PurchaseRequest = Type.Object(
  {
    listing_id: Uuid(),
    formats: Type.Array(Format, { minItems: 1, uniqueItems: true }),
    max_price_cents: Type.Optional(
      Type.Integer({ minimum: 0, maximum: centsMax, description: 'The price the buyer agreed to.' }),
    ),
  },
  { additionalProperties: false },
);

export const PurchaseResult = Type.Object({
  order_id: Uuid(),
  state: OrderState,
  escrow_cents: Type.Integer(),
  formats: Type.Array(Format),
  poll: Type.String({ description: 'Hint: poll GET /v1/orders or watch order.state_changed events.' }),
});

export const ComplianceBundle = Type.Object({
  digest: Sha256,
  body: Type.Object({
    bundle_version: Type.Literal('compliance-bundle/1'),
    order: Type.Object({
      id: Uuid(),
      listing_id: Uuid(),
      state: OrderState,
      escrow_cents: Type.Integer(),
      formats: Type.Array(Format),
      sandbox: Type.Boolean(),
      created_at: Timestamp(),
      updated_at: Timestamp(),
    }),
    report: Type.Union(
      [
        Type.Object({
          digest: Sha256,
          url: Type.String({ format: 'uri' }),
          pipeline_version: Type.String(),
          created_at: Timestamp(),
          signing_key_id: Type.String(),
          signature: Type.String(),
        }),
        Type.Null(),
      ],
      { description: 'null when the order was refunded because no report arrived (outcome.reason no_report).' },
    ),
    judge: Type.Union([
      Type.Object({ model: Type.String(), prompt_version: Type.String(), prompt_hash: Sha256 }),
      Type.Null(),
    ]),
    outcome: Type.Object({
      kind: Type.String({ description: 'cleared_escrow or refunded_escrow.' }),
      reason: Type.Optional(
        Type.String({
          description:
            'For a refund: floor_missed (the report missed the floor) or no_report (no report within the wait bound).',
        }),
      ),
      recorded_at: Timestamp(),
    }),
    issued_at: Timestamp(),
  }),
  signature: Type.Object({ keyId: Type.String(), alg: Type.Literal('ES256'), value: Type.String() }),
});

/** The query of a delivery: which of the order's formats. */
export const DeliveryQuery = Type.Object(
  {
    format: Type.Union([Type.Literal('md'), Type.Literal('pdf')], {
      description: 'One of the formats the order bought.',
    }),
  },
  { additionalProperties: false },
);

/**
 * The query of a download (GET {web_url}/api/orders/{order_id}/content): the format, and, for a signed link handed out
 * as a delivery's download_url, the four parts that stand in for a bearer token (docs/purchases.md, Signed links).
 */
export const DownloadQuery = Type.Object(
  {
    format: DeliveryQuery.properties.format,
    expires: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 2 ** 40, description: 'Signed link: when it stops working, Unix seconds.' }),
    ),
    agent: Type.Optional(Uuid('Signed link: the agent that was handed it (its receipts name that agent).')),
    key: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,64}$',
        description: 'Signed link: the id of the key it is signed with.',
      }),
    ),
    signature: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{43}$',
        description: 'Signed link: base64url HMAC-SHA256 of the order id, format, agent, expiry and key id.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const OrderContent = Type.Object(
  {
    order_id: Uuid(),
    edition_id: Uuid('The edition the order bought, pinned at purchase; later editions do not change it.'),
    format: Format,
    media_type: Type.String({ description: 'text/markdown; charset=utf-8 or application/pdf.' }),
    content_hash: Sha256,
    report_digest: Type.Union([Sha256, Type.Null()], { description: 'The signed report that judged these bytes.' }),
    content: Type.Optional(
      Type.String({ description: 'md: the Markdown exactly; the sha256 of its UTF-8 bytes is content_hash.' }),
    ),
    content_base64: Type.Optional(Type.String({ description: 'pdf: the document, base64.' })),
    delivered_digest: Type.String({
      pattern: '^sha256:[0-9a-f]{64}$',
      description: 'sha256 of the delivered bytes: content_hash for md, the PDF file for pdf.',
    }),
    byte_length: Type.Integer({ minimum: 0 }),
    renderer: Type.Union([Type.String(), Type.Null()], { description: 'pdf: the renderer version; md: null.' }),
    download_url: Type.String({
      format: 'uri',
      description:
        'The same bytes, raw, at a signed link that needs no bearer token and expires (ASSAY_DOWNLOAD_LINK_TTL_SECONDS, 15 minutes by default); ask this route again for a fresh one.',
    }),
    receipt_id: Type.Union([Uuid(), Type.Null()], {
      description: 'The signed delivery receipt this delivery recorded; null for a HEAD, which delivers nothing.',
    }),
  },
  { description: 'The content of a settled order, in one format it bought.' },
);

export const DeliveryReceipt = Type.Object({
  id: Uuid(),
  digest: Sha256,
  body: Type.Object({
    receipt_version: Type.Literal('delivery-receipt/1'),
    receipt_id: Uuid(),
    order_id: Uuid(),
    listing_id: Uuid(),
    artifact_id: Uuid(),
    edition_id: Uuid(),
    buyer_principal_id: Uuid(),
    agent_id: Uuid('The agent whose token fetched the content, or to which the signed link used was handed.'),
    format: Format,
    media_type: Type.String(),
    content_hash: Sha256,
    report_digest: Type.Union([Sha256, Type.Null()]),
    delivered_digest: Sha256,
    byte_length: Type.Integer({ minimum: 0 }),
    renderer: Type.Union([Type.String(), Type.Null()]),
    via: Type.Union([Type.Literal('api'), Type.Literal('download')], {
      description: 'api: the JSON route or its MCP tool; download: the raw bytes at download_url.',
    }),
    delivered_at: Timestamp(),
  }),
  signature: Type.Object({ keyId: Type.String(), alg: Type.Literal('ES256'), value: Type.String() }),
});
export const DeliveryReceiptPage = Page(DeliveryReceipt);

export const SubscriptionState = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('canceled')]);
export const SubscriptionCanceledBy = Type.Union(
  [Type.Literal('buyer'), Type.Literal('seller'), Type.Literal('listing_unlisted'), Type.Null()],
  {
    description:
      'Who canceled: the buyer, the seller, or the service because the listing was unlisted; null until canceled.',
  },
);
export const SubscriptionCycle = Type.Object(
  {
    number: Type.Integer({ minimum: 1, description: 'Cycles are numbered from 1 per subscription.' }),
    at: Timestamp(),
    outcome: Type.Union([Type.Literal('held'), Type.Literal('failed')], {
      description:
        'held: the cycle bought (its order settles like any order); failed: a rule refused it and nothing was billed.',
    }),
    orderId: Type.Union([Uuid(), Type.Null()]),
    errorCode: Type.Union([Type.String(), Type.Null()], {
      description: 'The refusal of a failed cycle, from the error table.',
    }),
    message: Type.Union([Type.String(), Type.Null()]),
  },
  { description: 'The last cycle the subscription ran.' },
);
export const Subscription = Type.Object({
  id: Uuid(),
  listingId: Uuid(),
  buyerPrincipalId: Uuid(),
  sellerPrincipalId: Uuid(),
  role: Type.Union([Type.Literal('buyer'), Type.Literal('seller')], {
    description: "The caller's side of this subscription: the buyer who pays, or the seller of the listing.",
  }),
  state: SubscriptionState,
  billing: Type.Object({
    intervalSeconds: Type.Integer({ minimum: 1 }),
    priceCents: Type.Integer({ minimum: 0, description: "The listing's live price: what the next cycle bills." }),
  }),
  consecutiveFailures: Type.Integer({ minimum: 0, description: 'Failed cycles in a row; 3 pause the subscription.' }),
  cycles: Type.Integer({ minimum: 0, description: 'Cycles run so far, failed ones included.' }),
  nextCycleAt: Type.Union([Timestamp(), Type.Null()], {
    description: 'When the next cycle is due; null unless active.',
  }),
  lastCycle: Type.Union([SubscriptionCycle, Type.Null()]),
  canceledBy: SubscriptionCanceledBy,
  sandbox: Type.Boolean(),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});
export const SubscriptionPage = Page(Subscription);
export const SubscriptionQuery = Type.Object(
  {
    role: Type.Optional(
      Type.Union([Type.Literal('buyer'), Type.Literal('seller')], {
        description:
          "buyer (the default): the caller's own subscriptions; seller: subscriptions to the caller's listings.",
      }),
    ),
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(Limit),
  },
  { additionalProperties: false },
);
export const SubscribeRequest = Type.Object({ listing_id: Uuid() }, { additionalProperties: false });
export const EmptyBody = Type.Object({}, { additionalProperties: false });

export const TopUpRequest = Type.Object(
  { credits: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Whole credits; one credit is 100 cents.' }) },
  { additionalProperties: false },
);
export const TopUpResult = Type.Object({
  status: Type.Union([Type.Literal('credited'), Type.Literal('pending')], {
    description:
      '`credited`: the credits are available now (sandbox). `pending`: the card was charged and the credits land when the processor confirms (`topup.credited` names this topup_id).',
  }),
  amount_cents: Type.Integer(),
  sandbox: Type.Boolean(),
  topup_id: Type.Optional(Type.String({ description: 'The top-up, as `topup.credited` and the ledger name it.' })),
});

export const Balance = Type.Object({
  balance_cents: Type.Integer({
    description:
      'Available credits, in cents (held escrow excluded). Negative after a card top-up was refunded or disputed at the processor once its credits were spent: purchases and payouts wait until a top-up pays it back.',
  }),
  currency: Type.Literal('credit'),
});

export const LedgerEntryType = Type.Union([
  Type.Literal('topup_credited'),
  Type.Literal('sandbox_grant'),
  Type.Literal('escrow_held'),
  Type.Literal('escrow_released'),
  Type.Literal('escrow_refunded'),
  Type.Literal('payout_accrued'),
  Type.Literal('topup_refunded'),
  Type.Literal('topup_disputed'),
  Type.Literal('dispute_won'),
  Type.Literal('dispute_lost'),
]);
export const LedgerEntry = Type.Object({
  id: Uuid('Stable id: the id of the ledger fact.'),
  type: LedgerEntryType,
  amount_cents: Type.Integer({ description: 'Signed change of available credits: credit > 0, debit < 0.' }),
  balance_after_cents: Type.Integer({ description: 'Available credits after this entry.' }),
  reference: Type.Union([Type.String(), Type.Null()], { description: 'Top-up or order id this entry belongs to.' }),
  run_id: Type.Union([Type.String(), Type.Null()], { description: 'For debits: the run (order) it links to.' }),
  sandbox: Type.Boolean(),
  created_at: Timestamp(),
});
export const LedgerPage = Page(LedgerEntry);

export const Payout = Type.Object({
  id: Uuid(),
  order_id: Uuid(),
  listing_id: Uuid(),
  amount_cents: Type.Integer(),
  state: Type.Union([Type.Literal('accrued'), Type.Literal('paid')], {
    description: '`accrued`: released to the seller, not yet transferred; `paid`: a transfer to the seller made it.',
  }),
  transfer_id: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description: 'The payout transfer that pays (or, while `accrued`, is paying) this accrual; null if none yet.',
    }),
  ),
  sandbox: Type.Boolean(),
  created_at: Timestamp(),
});
export const PayoutPage = Type.Object({
  items: Type.Array(Payout),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  payouts_enabled: Type.Boolean(),
});

export const Erratum = Type.Object({
  id: Uuid(),
  state: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
  title: Type.String(),
  description: Type.String(),
  judgeModel: Type.String(),
  judgeVersions: Type.Array(Type.String(), { description: 'judgePromptVersion values the erratum affects.' }),
  artifactIds: Type.Array(Uuid(), {
    description: 'Affected artifacts relevant to this query: the one asked about, or those the caller bought.',
  }),
  affectedArtifactsTotal: Type.Integer({ minimum: 0, description: 'All artifacts whose current report it touches.' }),
  openedAt: Timestamp(),
  closedAt: Type.Union([Timestamp(), Type.Null()]),
});
export const ErrataPage = Page(Erratum);
export const ErrataQuery = Type.Object(
  { artifact_id: Type.Optional(Uuid()), cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) },
  { additionalProperties: false },
);

export const EventType = Type.Union([
  Type.Literal('order.state_changed'),
  Type.Literal('topup.credited'),
  Type.Literal('topup.failed'),
  Type.Literal('topup.refunded'),
  Type.Literal('topup.disputed'),
  Type.Literal('topup.dispute_closed'),
  Type.Literal('payout.paid'),
  Type.Literal('payout.failed'),
  Type.Literal('subscription.state_changed'),
  Type.Literal('subscription.cycle_failed'),
  Type.Literal('approval.requested'),
  Type.Literal('approval.decided'),
  Type.Literal('context.created'),
  Type.Literal('context.updated'),
  Type.Literal('context.deleted'),
  Type.Literal('context.published'),
  Type.Literal('context.unpublished'),
  Type.Literal('webhook.disabled'),
  Type.Literal('webhook.test'),
]);
export const OutboxEvent = Type.Object({
  id: Type.String({ description: 'Stable event id; receivers deduplicate by it.' }),
  type: EventType,
  created_at: Timestamp(),
  data: Type.Object({}, { additionalProperties: true }),
});
export const EventPage = Page(OutboxEvent);
export const EventQuery = Type.Object(
  { type: Type.Optional(EventType), cursor: Type.Optional(Cursor), limit: Type.Optional(Limit) },
  { additionalProperties: false },
);

/** A mandate as the principal actor keeps it. */
export const MandateRecord = Type.Object({
  id: Uuid(),
  perItemCapCents: Type.Integer({ minimum: 0 }),
  minTrust: Type.Number({ minimum: 0, maximum: 1 }),
  /**
   * The lowest floor a listing, and the lowest mean entailment its edition's report, may have; 0 allows any.
   * Optional: mandates set before the floor filter existed have none, which means 0.
   */
  minFloor: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  minJudgeVersion: Type.Union([Type.String(), Type.Null()]),
  /**
   * The lowest measured specificity of the judge (on the reference set) a purchase's edition may be judged by; null
   * or absent (mandates set before it existed): any judge.
   */
  minJudgeSpecificity: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()])),
  rejectOpenJudgeErrata: Type.Boolean(),
  /**
   * A purchase priced above this many cents waits for the principal's approval (pending_approval); null or absent
   * (mandates set before approvals existed): no purchase needs approval.
   */
  approvalAboveCents: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  revoked: Type.Boolean(),
  createdAt: Timestamp(),
});

export const Mandate = Type.Evaluate(
  Type.Intersect([MandateRecord, Type.Object({ principalId: Uuid(), sandbox: Type.Boolean() })]),
);

export const MandateResource = Type.Evaluate(
  Type.Intersect([
    MandateRecord,
    Type.Object({ current: Type.Boolean({ description: 'The mandate that binds the principal’s agents now.' }) }),
  ]),
);
export const MandatePage = Page(MandateResource);
const MinFloor = Type.Number({
  minimum: 0,
  maximum: 1,
  description:
    "The lowest floor a listing may have, and the lowest mean entailment its edition's report may show; a purchase below either is refused with floor_not_met. 0 (the default) allows any.",
});
const ApprovalAbove = Type.Union([Type.Integer({ minimum: 0, maximum: centsMax }), Type.Null()], {
  description:
    "A purchase priced above this many cents is not charged but waits for the principal's approval (pending_approval, docs/fleet.md); null (the default) lets every purchase within the mandate through.",
});
const JudgeVersion = Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+$', description: 'A judge version such as 1.2.0.' });
const MinJudgeSpecificity = Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
  description:
    "The lowest specificity the judge of a purchase's edition may have measured on the reference set (docs/verification.md, Judge quality); a judge with no published figures (a model judge) does not meet any. Refused with judge_version_rejected. null (the default): any judge.",
});
/** The properties of the rules a mandate may set besides its cap: optional in a new mandate and in a change. */
const mandateRuleProperties = {
  min_trust: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  min_floor: Type.Optional(MinFloor),
  min_judge_version: Type.Optional(Type.Union([JudgeVersion, Type.Null()])),
  min_judge_specificity: Type.Optional(MinJudgeSpecificity),
  reject_open_judge_errata: Type.Optional(Type.Boolean()),
  approval_above_cents: Type.Optional(ApprovalAbove),
};
export const CreateMandateRequest = Type.Object(
  { per_item_cap_cents: Type.Integer({ minimum: 0, maximum: centsMax }), ...mandateRuleProperties },
  { additionalProperties: false },
);
export const ChangeMandateRequest = Type.Object(
  { per_item_cap_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: centsMax })), ...mandateRuleProperties },
  { additionalProperties: false, minProperties: 1 },
);
export const MandateIdParams = Type.Object({ mandate_id: Uuid() }, { additionalProperties: false });

// Approvals: purchases above the mandate's approval threshold, waiting for the principal.

export const ApprovalState = Type.Union(
  [Type.Literal('pending'), Type.Literal('approved'), Type.Literal('declined'), Type.Literal('expired')],
  { description: 'pending until the principal decides or it expires; approved bought it (orderId).' },
);

/** An approval request: as the principal actor keeps it, as its facts carry it, and as the API shows it. */
export const ApprovalRecord = Type.Object({
  id: Uuid(),
  state: ApprovalState,
  /** The agent whose purchase waits, and what it asked for. */
  agentId: Uuid(),
  listingId: Uuid(),
  priceCents: Type.Integer({ minimum: 0, description: 'The price when it was asked: approval buys at most this.' }),
  formats: Type.Array(Format),
  sandbox: Type.Boolean(),
  requestedAt: Timestamp(),
  expiresAt: Timestamp(),
  decidedAt: Type.Union([Timestamp(), Type.Null()]),
  /** Who decided: the principal (approved or declined), or the clock (expired). */
  decidedBy: Type.Union([Type.Literal('principal'), Type.Literal('expiry'), Type.Null()]),
  /** The order an approval made; null otherwise. */
  orderId: Type.Union([Uuid(), Type.Null()]),
});

export const Approval = ApprovalRecord;
export const ApprovalPage = Page(Approval);
export const ApprovalQuery = Type.Object(
  {
    state: Type.Optional(ApprovalState),
    cursor: Type.Optional(Cursor),
    limit: Type.Optional(Limit),
  },
  { additionalProperties: false },
);
export const ApprovalIdParams = Type.Object({ approval_id: Uuid() }, { additionalProperties: false });

export const SandboxAgentRequest = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Label for the agent.' })),
    scopes: Type.Optional(
      Type.Array(
        Type.Union([
          Type.Literal('read:artifact'),
          Type.Literal('read:trust'),
          Type.Literal('purchase'),
          Type.Literal('publish'),
          Type.Literal('manage:mandate'),
        ]),

        {
          minItems: 1,
          uniqueItems: true,
          description: 'Scopes of the token; default read:artifact read:trust purchase. Add publish to sell.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export const SandboxAgent = Type.Object({
  token: Type.String({ description: 'Bearer token (JWT, ES256).' }),
  token_type: Type.Literal('Bearer'),
  expires_at: Timestamp(),
  principal_id: Uuid(),
  agent_id: Uuid(),
  scopes: Type.Array(Type.String()),
  sandbox: Type.Literal(true),
  balance_cents: Type.Integer({ description: 'Test credits granted at registration, in cents.' }),
  mandate: Mandate,
});

// Catalog: artifacts, editions, listings, offers.

export const Edition = Type.Object({
  id: Uuid(),
  number: Type.Integer({ minimum: 1 }),
  contentHash: Sha256,
  reportDigest: Type.Union([Sha256, Type.Null()], { description: 'null while verification is pending.' }),
  createdAt: Timestamp(),
});

export const Artifact = Type.Evaluate(
  Type.Intersect([
    ArtifactSummary,
    Type.Object({
      currentEdition: Edition,
      /** Set on the reply to a publish: whether this call created a new edition. */
      editionCreated: Type.Optional(Type.Boolean()),
    }),
  ]),
);

export const Topics = Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 10, uniqueItems: true });
/** Largest context file accepted, in characters of its Markdown. */
export const contentCharsMax = 512_000;
const Content = Type.String({
  minLength: 1,
  maxLength: contentCharsMax,
  description: 'The context file in the artifact format (docs/verification.md).',
});

export const PublishArtifactRequest = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 200 }),
    content: Content,
    topics: Type.Optional(Topics),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    floor: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);
export const PublishEditionRequest = Type.Object(
  {
    content: Content,
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    topics: Type.Optional(Topics),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    floor: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);

export const BillingRequest = Type.Union([
  Type.Null(),
  Type.Object({ interval_seconds: Type.Integer({ minimum: 1, maximum: 31_536_000 }) }, { additionalProperties: false }),
]);
export const Billing = Type.Union([Type.Null(), Type.Object({ intervalSeconds: Type.Integer({ minimum: 1 }) })]);
export const ListingState = Type.Union([Type.Literal('live'), Type.Literal('unlisted')]);

export const Listing = Type.Object({
  id: Uuid(),
  artifactId: Uuid(),
  sellerPrincipalId: Uuid(),
  priceCents: Type.Integer({ minimum: 0 }),
  floor: Type.Number({ minimum: 0, maximum: 1 }),
  formats: Type.Array(Format),
  billing: Billing,
  state: ListingState,
  sandbox: Type.Boolean(),
  offerUrl: Type.String({ format: 'uri' }),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});
export const ListingPage = Page(Listing);

export const CreateListingRequest = Type.Object(
  {
    artifact_id: Uuid(),
    price_cents: Type.Integer({ minimum: 0, maximum: centsMax }),
    floor: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'Settlement releases escrow when meanEntailment >= floor.',
    }),
    formats: Type.Array(Format, { minItems: 1, uniqueItems: true }),
    billing: Type.Optional(BillingRequest),
  },
  { additionalProperties: false },
);
export const RepriceRequest = Type.Object(
  { price_cents: Type.Integer({ minimum: 0, maximum: centsMax }) },
  { additionalProperties: false },
);
export const ArtifactIdParams = Type.Object({ artifact_id: Uuid() }, { additionalProperties: false });
export const ListingIdParams = Type.Object({ listing_id: Uuid() }, { additionalProperties: false });
export const OfferIdParams = Type.Object({ id: Uuid() }, { additionalProperties: false });

/** The offer document of a live listing (`/offers/{id}`); its JSON Schema is served at /schemas/offer-v1.json. */
export const OfferDocument = Type.Object(
  {
    offer_version: Type.Literal('offer-v1'),
    listing_id: Uuid(),
    artifact_id: Uuid(),
    edition_id: Uuid(),
    title: Type.String(),
    seller_principal_id: Uuid(),
    price_cents: Type.Integer({ minimum: 0 }),
    currency: Type.Literal('credit'),
    formats: Type.Array(Format, { minItems: 1 }),
    floor: Type.Number({ minimum: 0, maximum: 1 }),
    billing: Type.Union([Type.Null(), Type.Object({ interval_seconds: Type.Integer({ minimum: 1 }) })]),
    sandbox: Type.Boolean(),
    verification: Type.Union([Type.Literal('verified'), Type.Literal('pending')]),
    judge: Type.Union([
      Type.Null(),
      Type.Object({ model: Type.String(), version: Type.String(), prompt_hash: Sha256 }),
    ]),
    report: Type.Union([
      Type.Null(),
      Type.Object({
        digest: Sha256,
        url: Type.String({ format: 'uri' }),
        mean_entailment: Type.Number({ minimum: 0, maximum: 1 }),
        meets_floor: Type.Boolean(),
      }),
    ]),
    updated_at: Timestamp(),
  },
  {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'offer-v1.json',
    title: 'Assay offer document, version 1',
    additionalProperties: false,
  },
);

export const JwkSet = Type.Object({
  keys: Type.Array(Type.Object({ kid: Type.String(), kty: Type.String() }, { additionalProperties: true })),
});

export const TrustParams = Type.Object(
  {
    subject: Type.String({
      pattern: `^(principal|agent|artifact):${uuidPattern}$`,
      maxLength: 64,
      description: 'principal:<uuid>, agent:<uuid> or artifact:<uuid>.',
    }),
  },
  { additionalProperties: false },
);
export const DigestParams = Type.Object(
  { digest: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }) },
  { additionalProperties: false },
);
export const OrderIdParams = Type.Object({ order_id: Uuid() }, { additionalProperties: false });
export const SubscriptionIdParams = Type.Object({ subscription_id: Uuid() }, { additionalProperties: false });
export const EventIdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);
export const NoParams = Type.Object({}, { additionalProperties: false });

export const HealthAlert = Type.Object({
  kind: Type.Union([Type.Literal('projection_parked'), Type.Literal('projection_stalled')]),
  subject: Type.String(),
  message: Type.String(),
  count: Type.Integer({ minimum: 1 }),
  since: Timestamp(),
  updatedAt: Timestamp(),
});
export const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
    description: 'degraded while an alert is live; the process is alive either way (200).',
  }),
  nats: Type.Boolean(),
  alerts: Type.Array(HealthAlert, { description: 'Live operational alerts (docs/operations.md).' }),
});

/** One JSON-RPC 2.0 message as MCP Streamable HTTP carries it; the MCP SDK validates the details. */
export const JsonRpcMessage = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
    method: Type.Optional(Type.String({ description: 'initialize, tools/list, tools/call, ping, notifications/...' })),
    params: Type.Optional(Type.Object({}, { additionalProperties: true })),
    result: Type.Optional(Type.Object({}, { additionalProperties: true })),
    error: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true },
);

/** OAuth 2.0 Protected Resource Metadata (RFC 9728), the fields this service fills. */
export const ProtectedResourceMetadata = Type.Object({
  resource: Type.String({ format: 'uri', description: 'The base URL: tokens are issued for it (aud).' }),
  authorization_servers: Type.Array(Type.String({ format: 'uri' })),
  bearer_methods_supported: Type.Array(Type.Literal('header')),
  scopes_supported: Type.Array(Type.String()),
  resource_name: Type.String(),
});
export const Redelivered = Type.Object({ id: Type.String(), rearmed: Type.Boolean() });

export type TopUpResultT = Static<typeof TopUpResult>;
export type ArtifactT = Static<typeof Artifact>;
export type EditionT = Static<typeof Edition>;
export type ListingT = Static<typeof Listing>;
export type OfferDocumentT = Static<typeof OfferDocument>;
export type VerificationReportT = Static<typeof VerificationReport>;
export type ClaimT = Static<typeof Claim>;
export type ErratumT = Static<typeof Erratum>;
export type TrustT = Static<typeof Trust>;
export type JudgeQualityT = Static<typeof JudgeQuality>;
export type TrustJudgeT = Static<typeof TrustJudge>;
export type SearchItemT = Static<typeof SearchItem>;
export type BalanceT = Static<typeof Balance>;
export type LedgerEntryT = Static<typeof LedgerEntry>;
export type LedgerPageT = Static<typeof LedgerPage>;
export type MandateT = Static<typeof Mandate>;
export type ApprovalT = Static<typeof Approval>;
export type SandboxAgentT = Static<typeof SandboxAgent>;
