// The internal operations: messages actors and services send each other over the bus, never routed from HTTP.
// Like the operation table, each row names its target and the TypeBox schema of its body (and of its reply where
// the caller reads one), so handlers and callers are typed from the same definition.
import Type, { type Static, type TSchema } from 'typebox';
import type { ActorKind, ServiceName } from './bus.ts';
import { oauthMessages } from './oauth.ts';
import { PlanName, RateClass } from './plans.ts';
import * as C from './context.ts';
import * as O from './okf.ts';
import * as K from './skill.ts';
import * as W from './webhook.ts';
import * as P from './payments.ts';
import * as S from './schemas.ts';
import * as X from './x402.ts';

export interface InternalOperation {
  id: string;
  dispatch: { to: 'service'; service: ServiceName } | { to: 'actor'; kind: ActorKind };
  /** Whether the request carries the caller it acts for (forwarded seller commands) or none (system commands). */
  caller: boolean;
  body: TSchema | null;
  /**
   * The query, for an internal operation the gateway's pipeline dispatches in place of a table row's own
   * (`CallInput.dispatchAs`): the pipeline has validated it against that row's query schema.
   */
  query?: TSchema;
  /** The reply body, where a caller reads it. */
  reply: TSchema | null;
  /** Internal operations are always built; the field lets handler registries treat both tables alike. */
  available: true;
  summary: string;
}

const internalDefaults = { reply: null, available: true as const };
const internal = <const R extends Omit<InternalOperation, 'available' | 'reply'> & { reply?: TSchema | null }>(r: R) =>
  ({ ...internalDefaults, ...r }) as Omit<typeof internalDefaults, keyof R> & R;

/** A mandate as the principal actor keeps it (the same schema the agent API shows, less `current`). */
export const MandateRecord = S.MandateRecord;
export const ApprovalRecord = S.ApprovalRecord;

/** A listing actor's state; also what a purchase quote carries of it. */
export const ListingState = Type.Object({
  id: S.Uuid(),
  exists: Type.Boolean(),
  artifactId: Type.String(),
  sellerPrincipalId: Type.String(),
  priceCents: Type.Integer({ minimum: 0 }),
  floor: Type.Number({ minimum: 0, maximum: 1 }),
  formats: Type.Array(S.Format),
  billing: Type.Union([Type.Null(), Type.Object({ intervalSeconds: Type.Integer({ minimum: 1 }) })]),
  state: S.ListingState,
  sandbox: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const ListingQuote = Type.Union([
  Type.Null(),
  Type.Object({
    state: ListingState,
    /** `<listingId>@<sequence of its last fact>`: the listing state a price was taken from. */
    snapshotId: Type.String(),
  }),
]);

/** What a purchase checks about an artifact: current edition, its judge version and report, open errata, trust. */
export const ArtifactQuote = Type.Union([
  Type.Null(),
  Type.Object({
    editionId: S.Uuid(),
    judgeVersion: Type.String(),
    openErrata: Type.Boolean(),
    trustScore: Type.Number({ minimum: 0, maximum: 1 }),
    /** The measured specificity of the judge of that version on the reference set; null when none is published. */
    judgeSpecificity: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
    /** The current edition's report, once it has one: what settlement decides with. */
    report: Type.Union([Type.Null(), Type.Object({ digest: S.Sha256, meanEntailment: Type.Number() })]),
  }),
]);

export const PublishArtifactCommand = Type.Object({
  artifactId: S.Uuid(),
  editionId: S.Uuid(),
  request: S.PublishArtifactRequest,
  /** Judge version to verify with; the current one unless a loader asks for another (the sandbox corpus does). */
  judgeVersion: Type.Optional(Type.String()),
});

export const PublishEditionCommand = Type.Object({
  artifactId: S.Uuid(),
  editionId: S.Uuid(),
  request: S.PublishEditionRequest,
});

export const GrantSandbox = Type.Object({
  registrationId: S.Uuid(),
  amountCents: Type.Integer({ minimum: 0 }),
  mandate: Type.Omit(MandateRecord, ['createdAt']),
});

export const GrantSandboxReply = Type.Object({ balance_cents: Type.Integer(), mandate: MandateRecord });

/**
 * Settle one held order: with its edition's report (released if it meets the order's floor, refunded if not), or
 * without one when the report did not arrive in time (ASSAY_REPORT_WAIT_SECONDS): refunded, nothing judged.
 */
export const SettleCommand = Type.Union([
  Type.Object({
    orderId: S.Uuid(),
    reportDigest: S.Sha256,
    meanEntailment: Type.Number({ minimum: 0, maximum: 1 }),
  }),
  Type.Object({
    orderId: S.Uuid(),
    /** How long the order waited for a report before this command refunds it. */
    noReportAfterSeconds: Type.Integer({ minimum: 0 }),
  }),
]);

/**
 * A subscription as the buyer's principal actor keeps it, and as every fact that changes it carries it. The
 * buyer is the principal whose ledger holds it; the price is the listing's, read at each cycle.
 */
export const SubscriptionRecord = Type.Object({
  id: S.Uuid(),
  listingId: S.Uuid(),
  sellerPrincipalId: S.Uuid(),
  /** The agent that subscribed (or last resumed): its cycles' orders are that agent's purchases. */
  agentId: S.Uuid(),
  intervalSeconds: Type.Integer({ minimum: 1 }),
  sandbox: Type.Boolean(),
  state: S.SubscriptionState,
  /** The last cycle run (failed ones included); 0 before the first. */
  cycle: Type.Integer({ minimum: 0 }),
  consecutiveFailures: Type.Integer({ minimum: 0 }),
  nextCycleAt: Type.Union([Type.String(), Type.Null()]),
  lastCycle: Type.Union([S.SubscriptionCycle, Type.Null()]),
  canceledBy: S.SubscriptionCanceledBy,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

/**
 * Run one cycle of a subscription (from the scheduler). Idempotent by (subscription, cycle): the actor runs cycle
 * n only when its last cycle is n - 1 and the cycle is due as of `asOf`, the scheduler's clock.
 */
export const SubscriptionCycleCommand = Type.Object({
  subscriptionId: S.Uuid(),
  cycle: Type.Integer({ minimum: 1 }),
  asOf: Type.String(),
});

export const SubscriptionCycleReply = Type.Object({
  subscription_id: S.Uuid(),
  cycle: Type.Integer(),
  /**
   * held or failed: this command ran the cycle; canceled: the listing is gone, so the subscription ended instead;
   * skipped: nothing to do (run already, not due yet, or not active).
   */
  outcome: Type.Union([
    Type.Literal('held'),
    Type.Literal('failed'),
    Type.Literal('canceled'),
    Type.Literal('skipped'),
  ]),
});

/** Cancel a subscription on behalf of its seller (forwarded by the seller's actor) or because its listing is gone. */
export const SubscriptionCancelCommand = Type.Object({
  subscriptionId: S.Uuid(),
  by: Type.Union([Type.Literal('seller'), Type.Literal('listing_unlisted')]),
  /** The principal asking: it must be the subscription's seller. */
  sellerPrincipalId: S.Uuid(),
});

/** Expire an approval request past its time (from the approvals sweep); pending ones only, once. */
export const ApprovalExpireCommand = Type.Object({ approvalId: S.Uuid(), asOf: Type.String() });

export const SubscriptionParties = Type.Union([
  Type.Null(),
  Type.Object({ buyerPrincipalId: S.Uuid(), sellerPrincipalId: S.Uuid(), sandbox: Type.Boolean() }),
]);

export const IdempotencyLookup = Type.Object({
  /** `[principalId, key]` pairs. */
  keys: Type.Array(Type.Tuple([Type.String(), Type.String()])),
});

export const IdempotencyLookupReply = Type.Object({
  /** The principal-facts checkpoint, read in the same snapshot as the keys. */
  indexedThroughSeq: Type.Integer({ minimum: 0 }),
  /** `[principalId, key, requestHash, LEDGER sequence of the fact]` per key found. */
  found: Type.Array(Type.Tuple([Type.String(), Type.String(), Type.String(), Type.Integer()])),
});

export type MandateRecord = Static<typeof MandateRecord>;
export type ApprovalRecord = Static<typeof ApprovalRecord>;
export type SubscriptionRecord = Static<typeof SubscriptionRecord>;
export type SubscriptionCycleCommand = Static<typeof SubscriptionCycleCommand>;
export type SubscriptionParties = Static<typeof SubscriptionParties>;
export type ListingState = Static<typeof ListingState>;
export type ListingQuote = Static<typeof ListingQuote>;
export type ArtifactQuote = Static<typeof ArtifactQuote>;
export type PublishArtifactCommand = Static<typeof PublishArtifactCommand>;
export type PublishEditionCommand = Static<typeof PublishEditionCommand>;
export type GrantSandbox = Static<typeof GrantSandbox>;
export type SettleCommand = Static<typeof SettleCommand>;
export type GrantSandboxReply = Static<typeof GrantSandboxReply>;
export type IdempotencyLookup = Static<typeof IdempotencyLookup>;
export type IdempotencyLookupReply = Static<typeof IdempotencyLookupReply>;

/**
 * A gateway takes rate-limit tokens from a principal actor in batches (gateway/rate-limiter.ts): `want` of the
 * agent's and the principal's buckets of one class, giving back what its previous batch left unspent.
 */
export const RateLease = Type.Object({
  /** The agent whose bucket is spent with the principal's; null: the principal's alone (it acts as a whole). */
  agentId: Type.Union([Type.String(), Type.Null()]),
  rateClass: RateClass,
  want: Type.Integer({ minimum: 1 }),
  giveBack: Type.Integer({ minimum: 0 }),
  /** The caller's side of the sandbox line: a principal no operator put on a plan is on its side's default. */
  sandbox: Type.Boolean(),
});
export const RateLeaseReply = Type.Object({
  granted: Type.Integer({ minimum: 0 }),
  /** The tighter bucket after the grant: its size, whole tokens left in it, and milliseconds until it is full. */
  limit: Type.Integer(),
  remaining: Type.Integer(),
  resetMs: Type.Integer(),
  /** With nothing granted: milliseconds until a token is there. */
  retryAfterMs: Type.Integer(),
  /** How many tokens to ask for next time, from this class's rate (the gateway's batch size). */
  batch: Type.Integer({ minimum: 1 }),
});

/** An operator sets a principal's plan (`assay plan set`). */
export const PlanSetCommand = Type.Object({
  principalId: Type.String(),
  plan: PlanName,
  /** The principal's side of the sandbox line (the operator command reads it from the principal's record). */
  sandbox: Type.Boolean(),
});
export const PlanReply = Type.Object({ principalId: Type.String(), plan: PlanName, explicit: Type.Boolean() });

/** Most agents an account's sandbox may have (its test mode on the account page). */
export const accountSandboxAgentsMax = 100;
/** Most ids one ask for labels names, of each kind (the account page names what it shows). */
export const labelIdsMax = 200;

const SandboxAgentView = Type.Object({
  id: S.Uuid(),
  name: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
});
/** The test mode of an account: its sandbox principal (null before the first use) and that principal's agents. */
export const AccountSandboxView = Type.Object({
  sandboxPrincipalId: Type.Union([S.Uuid(), Type.Null()]),
  agents: Type.Array(SandboxAgentView),
});
export const AccountSandboxToken = Type.Object({
  sandboxPrincipalId: S.Uuid(),
  agentId: S.Uuid(),
  name: Type.String(),
  token: Type.String(),
  expiresAt: Type.String(),
  scopes: Type.Array(Type.String()),
});
export const LabelsCommand = Type.Object({
  /** The principals whose agents may be named: the account's and its sandbox's. */
  principalIds: Type.Array(S.Uuid(), { minItems: 1, maxItems: 2 }),
  listingIds: Type.Array(S.Uuid(), { maxItems: labelIdsMax }),
  agentIds: Type.Array(S.Uuid(), { maxItems: labelIdsMax }),
});
export const ListingLabel = Type.Object({
  id: S.Uuid(),
  artifactId: S.Uuid(),
  title: Type.String(),
  priceCents: Type.Integer({ minimum: 0 }),
  floor: Type.Number(),
  /** The artifact's current report: its mean entailment and digest, or null before it is verified. */
  report: Type.Union([Type.Null(), Type.Object({ meanEntailment: Type.Number(), digest: Type.String() })]),
});
export const Labels = Type.Object({
  listings: Type.Array(ListingLabel),
  agents: Type.Array(Type.Object({ id: S.Uuid(), name: Type.Union([Type.String(), Type.Null()]) })),
});

const catalog = { to: 'service', service: 'catalog' } as const;
const oauth = { to: 'service', service: 'oauth' } as const;

export const internalOperations = [
  internal({
    id: 'catalog.publish_artifact',
    dispatch: catalog,
    caller: true,
    body: PublishArtifactCommand,
    summary: 'Create an artifact and its first edition (forwarded by the seller’s principal actor).',
  }),
  internal({
    id: 'catalog.publish_edition',
    dispatch: catalog,
    caller: true,
    body: PublishEditionCommand,
    summary: 'Add an edition to one of the caller’s artifacts (forwarded by the seller’s principal actor).',
  }),
  internal({
    id: 'catalog.owned_artifact',
    dispatch: catalog,
    caller: true,
    body: Type.Object({ artifactId: S.Uuid() }),
    summary: 'Is this artifact the caller’s, on the caller’s side of the sandbox line? (listing creation)',
  }),
  internal({
    id: 'catalog.purchase_info',
    dispatch: catalog,
    caller: false,
    body: Type.Object({ artifactId: S.Uuid() }),
    reply: ArtifactQuote,
    summary: 'What a purchase checks about an artifact.',
  }),
  internal({
    id: 'listing.create',
    dispatch: { to: 'actor', kind: 'listing' },
    caller: true,
    body: S.CreateListingRequest,
    summary: 'Create the listing (the id derives from the seller’s Idempotency-Key).',
  }),
  internal({
    id: 'listing.reprice',
    dispatch: { to: 'actor', kind: 'listing' },
    caller: true,
    body: S.RepriceRequest,
    summary: 'Change a live listing’s price.',
  }),
  internal({
    id: 'listing.unlist',
    dispatch: { to: 'actor', kind: 'listing' },
    caller: true,
    body: S.EmptyBody,
    summary: 'Take a listing off sale, for good.',
  }),
  internal({
    id: 'listing.state',
    dispatch: { to: 'actor', kind: 'listing' },
    caller: false,
    body: null,
    reply: ListingQuote,
    summary: 'The full state and its version, for purchase quotes (the buyer’s actor applies the sandbox line).',
  }),
  internal({
    id: 'sandbox.account',
    dispatch: { to: 'service', service: 'sandbox' },
    caller: false,
    body: Type.Object({ principalId: S.Uuid() }),
    reply: AccountSandboxView,
    summary: 'The test mode of an account: its sandbox principal and agents (the account page).',
  }),
  internal({
    id: 'sandbox.account_token',
    dispatch: { to: 'service', service: 'sandbox' },
    caller: false,
    body: Type.Object({
      principalId: S.Uuid(),
      /** Chosen by the form: the same form sent again (a reload) signs a token for the same agent, not another. */
      agentId: S.Uuid(),
      name: Type.String({ minLength: 1, maxLength: 200 }),
    }),
    reply: AccountSandboxToken,
    summary:
      "A sandbox agent of an account's own sandbox principal (made, with its test credits and mandate, on first use) and its token.",
  }),
  internal({
    id: 'account.labels',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: LabelsCommand,
    reply: Labels,
    summary: 'What the account page names listings and agents by: artifact titles, prices, floors, reports, names.',
  }),
  internal({
    id: 'sandbox.grant',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: GrantSandbox,
    reply: GrantSandboxReply,
    summary: 'Credits and a test mandate for a new sandbox principal (from the sandbox service).',
  }),
  internal({
    id: 'escrow.settle',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: SettleCommand,
    summary: 'Settle one held order with its edition’s report (the actor itself, or the settlement sweeper).',
  }),
  internal({
    id: 'subscription.cycle',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: SubscriptionCycleCommand,
    reply: SubscriptionCycleReply,
    summary: 'Run one due cycle of a subscription: an escrowed purchase, or a failed cycle (from the scheduler).',
  }),
  internal({
    id: 'subscription.cancel',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: SubscriptionCancelCommand,
    reply: S.Subscription,
    summary: 'Cancel a subscription in its buyer’s actor, for its seller or because the listing was unlisted.',
  }),
  internal({
    id: 'subscription.parties',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: Type.Object({ subscriptionId: S.Uuid() }),
    reply: SubscriptionParties,
    summary: 'The buyer and seller of a subscription, from its projection (a seller’s cancel finds the buyer’s actor).',
  }),
  internal({
    id: 'idempotency.lookup',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: IdempotencyLookup,
    reply: IdempotencyLookupReply,
    summary: 'Find idempotency keys actors no longer keep in memory (batched per actor host).',
  }),
  internal({
    id: 'events.latest',
    dispatch: { to: 'service', service: 'ledger' },
    caller: true,
    body: null,
    query: Type.Omit(S.EventQuery, ['cursor']),
    reply: S.EventPage,
    summary:
      "The caller's newest events, oldest first, and a cursor after them: GET /v1/events' scope and rules, dispatched in its place (the MCP resource assay://events).",
  }),
  internal({
    id: 'auth.token_jwks',
    dispatch: { to: 'service', service: 'auth' },
    caller: false,
    body: null,
    reply: S.JwkSet,
    summary: 'The public keys agent tokens are verified with.',
  }),
  internal({
    id: 'oauth.signUp',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.signUp.body,
    reply: oauthMessages.signUp.reply,
    summary: 'Create an account (a live principal) and start its web session.',
  }),
  internal({
    id: 'oauth.signIn',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.signIn.body,
    reply: oauthMessages.signIn.reply,
    summary:
      'Check an email and password and start a web session; the same refusal for an unknown email and a wrong password.',
  }),
  internal({
    id: 'oauth.session',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.session.body,
    reply: oauthMessages.session.reply,
    summary: 'The account behind a web session cookie.',
  }),
  internal({
    id: 'oauth.signOut',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.signOut.body,
    reply: oauthMessages.signOut.reply,
    summary: 'End a web session.',
  }),
  internal({
    id: 'oauth.account',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.account.body,
    reply: oauthMessages.account.reply,
    summary: 'What the account page shows: clients, grants with their live tokens, initial access tokens.',
  }),
  internal({
    id: 'oauth.accountAction',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.accountAction.body,
    reply: oauthMessages.accountAction.reply,
    summary: 'One action of the account page: revoke a grant, token, client or initial access token, or issue one.',
  }),
  internal({
    id: 'oauth.register',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.register.body,
    reply: oauthMessages.register.reply,
    summary: 'RFC 7591 dynamic client registration with an initial access token.',
  }),
  internal({
    id: 'oauth.authorize',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.authorize.body,
    reply: oauthMessages.authorize.reply,
    summary: 'Check an authorization request; for a signed-in person, the consent screen and its screen token.',
  }),
  internal({
    id: 'oauth.decision',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.decision.body,
    reply: oauthMessages.decision.reply,
    summary: 'The consent screen’s approval or denial: the redirect with a code or access_denied.',
  }),
  internal({
    id: 'oauth.token',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.token.body,
    reply: oauthMessages.token.reply,
    summary: 'The token endpoint: authorization_code, refresh_token, token exchange, device_code.',
  }),
  internal({
    id: 'oauth.deviceAuthorization',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.deviceAuthorization.body,
    reply: oauthMessages.deviceAuthorization.reply,
    summary: 'RFC 8628 device authorization: a device code and a user code.',
  }),
  internal({
    id: 'oauth.deviceLookup',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.deviceLookup.body,
    reply: oauthMessages.deviceLookup.reply,
    summary: 'The device verification page: the request behind a user code, and its screen token.',
  }),
  internal({
    id: 'oauth.deviceDecision',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.deviceDecision.body,
    reply: oauthMessages.deviceDecision.reply,
    summary: 'Approve or deny a device request.',
  }),
  internal({
    id: 'oauth.revoke',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.revoke.body,
    reply: oauthMessages.revoke.reply,
    summary: 'RFC 7009 revocation of a refresh or access token.',
  }),
  internal({
    id: 'oauth.apiKeyCreate',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.apiKeyCreate.body,
    reply: oauthMessages.apiKeyCreate.reply,
    summary: 'Issue an API key of the context-file API for a signed-in person (shown once).',
  }),
  internal({
    id: 'oauth.apiKeyList',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.apiKeyList.body,
    reply: oauthMessages.apiKeyList.reply,
    summary: "A principal's API keys, newest first.",
  }),
  internal({
    id: 'oauth.apiKeyRevoke',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.apiKeyRevoke.body,
    reply: oauthMessages.apiKeyRevoke.reply,
    summary: 'Revoke an API key: it stops working at once.',
  }),
  internal({
    id: 'oauth.apiKeyResolve',
    dispatch: oauth,
    caller: false,
    body: oauthMessages.apiKeyResolve.body,
    reply: oauthMessages.apiKeyResolve.reply,
    summary: 'The principal behind an API key presented to the context-file API.',
  }),
  internal({
    id: 'rate.lease',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: RateLease,
    reply: RateLeaseReply,
    summary: 'Take a batch of rate-limit tokens of one class for one agent (a gateway, when its batch is spent).',
  }),
  internal({
    id: 'plan.set',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: PlanSetCommand,
    reply: PlanReply,
    summary: "Set a principal's plan: its rate limits and quotas (the operator command).",
  }),
  internal({
    id: 'context.list',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextListCommand,
    reply: C.ContextListReply,
    summary: "The caller's context files, newest first, with the total (the context-file API's lists).",
  }),
  internal({
    id: 'context.get',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextIdCommand,
    reply: C.ContextView,
    summary: 'One of the caller’s context files, with its text.',
  }),
  internal({
    id: 'context.create',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextCreateBody,
    reply: C.ContextView,
    summary: 'Create a context file: a context_saved fact; its slug is unique among the owner’s files.',
  }),
  internal({
    id: 'context.update',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextPatchCommand,
    reply: C.ContextView,
    summary: 'Change fields of one of the caller’s context files.',
  }),
  internal({
    id: 'context.delete',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextIdCommand,
    reply: C.ContextView,
    summary: 'Delete one of the caller’s context files.',
  }),
  internal({
    id: 'context.publish',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextPublishCommand,
    reply: C.ContextView,
    summary: 'Publish one of the caller’s context files to the catalog as an artifact (once; later asks answer it).',
  }),
  internal({
    id: 'context.sync_edition',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: C.ContextIdCommand,
    reply: C.ContextView,
    summary: 'Make a published file’s current text its artifact’s newest edition (the actor’s own follow-up).',
  }),
  internal({
    id: 'context.public_get',
    dispatch: { to: 'service', service: 'ledger' },
    caller: true,
    body: C.ContextIdCommand,
    reply: C.ContextView,
    summary: 'Another principal’s public context file, from the projection.',
  }),
  internal({
    id: 'context.export_tag',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: null,
    reply: O.OkfTagReply,
    summary:
      'The OKF export’s tag: it changes whenever a public context file is added, changed, unpublished or deleted.',
  }),
  internal({
    id: 'context.export_page',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: O.OkfPageCommand,
    // Raw bytes: a head line (OkfPageHead) and the page's OKF lines, passed to the client as they are.
    reply: Type.Unsafe<Uint8Array>({}),
    summary:
      'The next page of public context files after an id, as OKF lines behind a head line (raw bytes, in parts).',
  }),
  internal({
    id: 'skill.list',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: K.SkillListCommand,
    reply: K.SkillListReply,
    summary: "The caller's skills, newest first, with the total.",
  }),
  internal({
    id: 'skill.get',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: K.SkillGetCommand,
    reply: K.SkillView,
    summary: 'One version of one of the caller’s skills (the newest by default), with its template.',
  }),
  internal({
    id: 'skill.create',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: K.SkillCreateBody,
    reply: K.SkillView,
    summary: 'Create a skill: version 1, a skill_saved fact.',
  }),
  internal({
    id: 'skill.update',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: K.SkillPatchCommand,
    reply: K.SkillView,
    summary: 'Change a skill: its next version, a skill_saved fact.',
  }),
  internal({
    id: 'skill.delete',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: K.SkillGetCommand,
    reply: K.SkillView,
    summary: 'Delete one of the caller’s skills, every version.',
  }),
  internal({
    id: 'skill.execute',
    dispatch: { to: 'service', service: 'skills' },
    caller: true,
    body: K.SkillExecuteCommand,
    reply: K.SkillExecution,
    summary: 'Run one of the caller’s skills: variables substituted, context files resolved, the executor asked.',
  }),
  internal({
    id: 'webhook.list',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookListCommand,
    reply: W.WebhookListReply,
    summary: "The caller's webhooks, newest first, without secrets.",
  }),
  internal({
    id: 'webhook.get',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookIdCommand,
    reply: W.WebhookView,
    summary: 'One of the caller’s webhooks, without its secret.',
  }),
  internal({
    id: 'webhook.create',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookCreateBody,
    reply: W.WebhookView,
    summary: 'Register a webhook once the webhooks service has checked its URL; the secret is in this answer only.',
  }),
  internal({
    id: 'webhook.update',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookPatchCommand,
    reply: W.WebhookView,
    summary: 'Change a webhook (a new URL is checked first); is_active true re-enables it.',
  }),
  internal({
    id: 'webhook.rotate',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookIdCommand,
    reply: W.WebhookView,
    summary: 'A new signing secret; the previous one signs beside it for the overlap.',
  }),
  internal({
    id: 'webhook.delete',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookIdCommand,
    reply: W.WebhookView,
    summary: 'Delete one of the caller’s webhooks; its pending deliveries are cancelled.',
  }),
  internal({
    id: 'webhook.test',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookIdCommand,
    reply: W.WebhookView,
    summary: 'Send a `webhook.test` event to one of the caller’s active webhooks, and to it alone (the account page).',
  }),
  internal({
    id: 'webhook.disable',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: true,
    body: W.WebhookDisableCommand,
    reply: W.WebhookView,
    summary: 'Disable a webhook whose deliveries kept failing (from a delivery worker): a webhook.disabled event.',
  }),
  internal({
    id: 'webhook.check_url',
    dispatch: { to: 'service', service: 'webhooks' },
    caller: true,
    body: Type.Object({ url: Type.String() }),
    reply: Type.Object({ url: Type.String() }),
    summary: 'Whether a URL may be delivered to: HTTPS, and a host whose every address is public (docs/webhooks.md).',
  }),
  internal({
    id: 'webhook.redeliver',
    dispatch: { to: 'service', service: 'webhooks' },
    caller: true,
    body: Type.Object({ eventId: Type.String() }),
    reply: S.Redelivered,
    summary: 'Re-arm one of the caller’s events for its active webhooks (the principal actor records the call).',
  }),
  internal({
    id: 'webhook.attempts',
    dispatch: { to: 'service', service: 'webhooks' },
    caller: true,
    body: W.WebhookAttemptsCommand,
    reply: W.WebhookAttemptsReply,
    summary: 'The newest delivery attempts of one of the caller’s webhooks.',
  }),
  internal({
    id: 'billing.get',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.BillingGetCommand,
    reply: P.BillingView,
    summary: "The principal's saved card, connected account and payout position (docs/money.md).",
  }),
  internal({
    id: 'billing.card_saved',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.CardSavedCommand,
    reply: P.BillingView,
    summary: 'Record the card a person saved at the processor (from its checkout.session.completed webhook).',
  }),
  internal({
    id: 'topup.settle',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.TopupSettleCommand,
    reply: P.TopupSettled,
    summary: 'Credit a live top-up the processor confirmed, or record its failure; once per PaymentIntent.',
  }),
  internal({
    id: 'topup.refund',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.TopupRefundCommand,
    reply: P.TopupSettled,
    summary:
      "Debit what the processor refunded of a live top-up's charge since the last refund recorded (docs/money.md).",
  }),
  internal({
    id: 'topup.dispute',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.TopupDisputeCommand,
    reply: P.TopupSettled,
    summary:
      "Withhold a disputed top-up's amount, or return or keep it when the dispute closes; once per dispute state.",
  }),
  internal({
    id: 'payout.account',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.PayoutAccountCommand,
    reply: P.BillingView,
    summary: "Record the seller's connected account and whether the processor lets it receive payouts.",
  }),
  internal({
    id: 'payout.begin',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.PayoutBeginCommand,
    reply: P.PayoutBegun,
    summary: "Start a transfer of the seller's released accruals, or hand back the one an earlier run left unfinished.",
  }),
  internal({
    id: 'payout.finish',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: P.PayoutFinishCommand,
    reply: P.BillingView,
    summary: 'Record what the processor did with a started transfer: paid, or failed (the accruals are owed again).',
  }),
  internal({
    id: 'payments.card_setup',
    dispatch: { to: 'service', service: 'payments' },
    caller: false,
    body: P.CardSetupCommand,
    reply: P.HostedPage,
    summary: 'A processor checkout page in setup mode where the person saves a card.',
  }),
  internal({
    id: 'payments.onboarding',
    dispatch: { to: 'service', service: 'payments' },
    caller: false,
    body: P.OnboardingCommand,
    reply: P.HostedPage,
    summary: "The processor's onboarding page for the seller's connected account (created on first use).",
  }),
  internal({
    id: 'payments.charge',
    dispatch: { to: 'service', service: 'payments' },
    caller: false,
    body: P.ChargeCommand,
    reply: P.Charged,
    summary: 'Create and confirm an off-session PaymentIntent on the saved card (from the principal actor).',
  }),
  internal({
    id: 'payments.event',
    dispatch: { to: 'service', service: 'payments' },
    caller: false,
    body: P.ProcessorEventCommand,
    reply: P.ProcessorEventHandled,
    summary: 'Act on one processor event whose signature the web face verified; answered once its fact is durable.',
  }),
  internal({
    id: 'payouts.run',
    dispatch: { to: 'service', service: 'payments' },
    caller: false,
    body: P.PayoutRunCommand,
    reply: P.PayoutRunSummary,
    summary: 'Transfer released, unpaid accruals to every enabled seller (or one), resuming unfinished transfers.',
  }),
  internal({
    id: 'account.export_page',
    dispatch: { to: 'service', service: 'ledger' },
    caller: false,
    body: Type.Object({
      principalId: Type.String(),
      section: P.AccountExportPart,
      after: Type.Union([Type.String(), Type.Null()]),
    }),
    // Raw JSON bytes of an AccountExportPage (a parts reply is not parsed on the way).
    reply: Type.Unsafe<Uint8Array>({}),
    summary:
      "One page of a section of a person's account export, as JSON bytes `{items, next}` (in parts: context files are large).",
  }),
  internal({
    id: 'approval.expire',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: ApprovalExpireCommand,
    reply: S.Approval,
    summary: 'Expire a pending approval request whose time has passed (from the approvals sweep).',
  }),
  internal({
    id: 'plan.get',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: Type.Object({ principalId: Type.String(), sandbox: Type.Boolean() }),
    reply: PlanReply,
    summary: "A principal's plan, and whether an operator set it or it is the default.",
  }),
  internal({
    id: 'x402.offer',
    dispatch: { to: 'service', service: 'x402' },
    caller: false,
    body: X.X402OfferCommand,
    reply: X.X402OfferReply,
    summary: "The payment requirements of one listing's x402 resource (its 402 answer).",
  }),
  internal({
    id: 'x402.pay',
    dispatch: { to: 'service', service: 'x402' },
    caller: false,
    body: X.X402PayCommand,
    reply: X.X402PayReply,
    summary: 'A paid request of an x402 resource: verify, buy for the payer, settle, deliver (docs/x402.md).',
  }),
  internal({
    id: 'x402.discovery',
    dispatch: { to: 'service', service: 'x402' },
    caller: false,
    body: X.X402DiscoveryQuery,
    reply: X.X402DiscoveryReply,
    summary: 'Live listings as x402 discovery ("bazaar") items, found by the search rules.',
  }),
  internal({
    id: 'x402.report',
    dispatch: { to: 'service', service: 'x402' },
    caller: false,
    body: Type.Object({ digest: Type.String() }),
    reply: Type.Unknown(),
    summary: 'A signed report of the live side, for an x402 buyer to check before it pays (no account needed).',
  }),
  internal({
    id: 'x402.check',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: X.X402CheckCommand,
    reply: X.X402CheckReply,
    summary: "The purchase rules for an x402 payer before its payment is settled, with the payment's worth counted.",
  }),
  internal({
    id: 'x402.credit',
    dispatch: { to: 'actor', kind: 'principal' },
    caller: false,
    body: X.X402CreditCommand,
    reply: X.X402CreditReply,
    summary: "Credit a settled x402 payment to its payer's principal, once per authorization.",
  }),
] as const satisfies readonly InternalOperation[];

export type InternalOperationRow = (typeof internalOperations)[number];
export type InternalOpId = InternalOperationRow['id'];
