// The principal's state: a fold of the facts on `<ns>.ledger.<id>` (fold.ts). Available, held and spent credits,
// the orders in escrow, the mandates, the idempotency records of the principal's recent mutating calls, its plan
// and today's counts toward the plan's quotas.
import type {
  ApprovalRecord,
  BillingView,
  ContextRecord,
  SkillRecord,
  WebhookRecord,
  MandateRecord,
  PlanName,
  SubscriptionRecord,
} from '../../contracts/index.ts';

/**
 * A key the actor keeps in memory, packed into one string, `<seq> <atMs> <requestHash>`: one heap object for the
 * garbage collector instead of four (idempotency.ts packs and reads it).
 */
export type HotRecord = string;

export interface HeldOrder {
  priceCents: number;
  floor: number;
  listingId: string;
  artifactId: string;
  sellerPrincipalId: string;
  agentId: string;
  sandbox: boolean;
  subscriptionId: string | null;
}

/** An approval request with the purchase request it holds back: approving buys under that request's key. */
export interface HeldRequest {
  record: ApprovalRecord;
  key: string;
  requestHash: string;
}

/** A context file: its record, and the LEDGER sequence of the fact that holds its current text. */
export interface HeldContext {
  record: ContextRecord;
  contentSeq: number;
  /** The catalog artifact the file was published as, and the text (its SHA-256) of the artifact's newest edition. */
  artifact?: { id: string; contentSha256: string };
}

/** A skill: its newest record, and the LEDGER sequence of the fact that saved each version (index version - 1). */
export interface HeldSkill {
  record: SkillRecord;
  versionSeqs: number[];
}

export interface PrincipalState {
  principalId: string;
  availableCents: number;
  heldCents: number;
  spentCents: number;
  /** Everything ever credited (top-ups and grants), in cents: always available + held + spent. */
  creditedCents: number;
  /** Orders in escrow, by order id; an order leaves when it settles, so settling twice finds nothing to do. */
  held: Map<string, HeldOrder>;
  /** The current mandate last; earlier ones stay for the principal's history. */
  mandates: MandateRecord[];
  /** The principal's subscriptions as buyer, by id; canceled ones stay (a cancel twice answers the same record). */
  subscriptions: Map<string, SubscriptionRecord>;
  /**
   * The most recent idempotency records by key, oldest first (facts arrive in time order). A record leaves once
   * there are more than ASSAY_IDEMPOTENCY_HOT_KEYS or it is past the retention window, and only once the
   * idempotency index holds it.
   */
  idempotency: Map<string, HotRecord>;
  /** LEDGER sequence of the newest record that left memory; 0 if none has, and then memory alone knows every key. */
  evictedThroughSeq: number;
  /**
   * Approval requests by id: every pending one, and decided ones until the idempotency retention has passed since
   * their decision (approvals.ts).
   */
  approvals: Map<string, HeldRequest>;
  /** The principal's context files by id, oldest first (contexts.ts), and their slugs, each to its file's id (an index of `contexts`). */
  contexts: Map<string, HeldContext>;
  contextSlugs: Map<string, string>;
  /** The principal's skills by id, oldest first (skills.ts). */
  skills: Map<string, HeldSkill>;
  /** The principal's webhook registrations by id, oldest first (webhooks.ts). */
  webhooks: Map<string, WebhookRecord>;
  /** The saved card, the seller's connected account and the payouts made (docs/money.md). */
  billing: BillingView;
  /** The plan an operator set (`plan_set`); null: the configured default. */
  plan: PlanName | null;
  /** The UTC day of the newest order held, and what that day held: the daily quotas' counts (contracts/plans.ts). */
  quotaDayStartMs: number;
  purchasesToday: number;
  spentTodayCents: number;
}

export function initialState(principalId: string): PrincipalState {
  return {
    principalId,
    availableCents: 0,
    heldCents: 0,
    spentCents: 0,
    creditedCents: 0,
    held: new Map(),
    mandates: [],
    subscriptions: new Map(),
    approvals: new Map(),
    contexts: new Map(),
    contextSlugs: new Map(),
    skills: new Map(),
    webhooks: new Map(),
    billing: { card: null, payoutAccount: null, payoutThroughSeq: 0, payoutInFlight: null, paidOutCents: 0 },
    idempotency: new Map(),
    evictedThroughSeq: 0,
    plan: null,
    quotaDayStartMs: 0,
    purchasesToday: 0,
    spentTodayCents: 0,
  };
}

/** The principal's current mandate (revoked or not), or null before the first. */
export const currentMandate = (s: PrincipalState): MandateRecord | null => s.mandates.at(-1) ?? null;

export function toSnapshot(s: PrincipalState): unknown {
  return {
    ...s,
    held: [...s.held],
    subscriptions: [...s.subscriptions],
    approvals: [...s.approvals],
    contexts: [...s.contexts],
    contextSlugs: undefined,
    skills: [...s.skills],
    webhooks: [...s.webhooks],
    idempotency: [...s.idempotency],
  };
}

export function fromSnapshot(data: unknown): PrincipalState {
  const s = data as Omit<
    PrincipalState,
    'idempotency' | 'held' | 'subscriptions' | 'approvals' | 'contexts' | 'contextSlugs' | 'skills' | 'webhooks'
  > & {
    webhooks: [string, WebhookRecord][];
    contexts: [string, HeldContext][];
    skills: [string, HeldSkill][];
    idempotency: [string, HotRecord][];
    held: [string, HeldOrder][];
    subscriptions: [string, SubscriptionRecord][];
    approvals: [string, HeldRequest][];
  };
  return {
    ...s,
    held: new Map(s.held),
    subscriptions: new Map(s.subscriptions),
    approvals: new Map(s.approvals),
    contexts: new Map(s.contexts),
    // Derived from the files, so not in the snapshot.
    contextSlugs: new Map(s.contexts.map(([id, c]) => [c.record.slug, id])),
    skills: new Map(s.skills),
    webhooks: new Map(s.webhooks),
    idempotency: new Map(s.idempotency),
  };
}
