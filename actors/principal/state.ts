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

/**
 * A card top-up's charge the processor took money back from (refunds, disputes; docs/money.md). Everything taken
 * from it, refunds and the disputes open or lost, stays within `chargeCents`.
 */
export interface ChargeTakenBack {
  topupId: string;
  paymentIntentId: string;
  chargeCents: number;
  /** Debited for the charge's refunds so far. */
  refundedCents: number;
  /** Open disputes withhold `amountCents`, lost ones kept it, won ones returned it (or never took any). */
  disputes: { id: string; amountCents: number; state: 'open' | 'won' | 'lost' }[];
}

/**
 * What the processor took back from the principal's card top-ups: the totals the conservation equation adds, and
 * each charge's record. Most principals never have any, and share one frozen empty record (`ownChargebacks`).
 */
export interface Chargebacks {
  /** Withheld while the processor's disputes of card top-ups are open. */
  withheldCents: number;
  /** Taken back for good: refunds and lost disputes of card top-ups. */
  reversedCents: number;
  /** Card top-up charges the processor took money back from, by charge id. */
  charges: Map<string, ChargeTakenBack>;
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
  /**
   * Everything ever credited (top-ups and grants), in cents: always available + held + spent + withheld + reversed
   * (the last two in `chargebacks`). Available alone may be negative, and only after a chargeback (fold.ts).
   */
  creditedCents: number;
  chargebacks: Chargebacks;
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

/**
 * The empty map every state starts with, one for all: most principals never hold an order past its purchase, a
 * subscription, an approval, a context file, a skill or a webhook, and eight empty Maps of their own were half of
 * an idle cached actor's memory. The fold makes a state's own map at its first write (`own`); a write to the
 * shared one throws, so a write that skips `own` cannot leak between principals.
 */
class SharedEmptyMap extends Map<never, never> {
  override set(): this {
    throw new Error("a principal's state map is written without own(): the shared empty map stays empty");
  }
  override clear(): void {}
}
const sharedEmpty = new SharedEmptyMap();
const noEntries = <K, V>(): Map<K, V> => sharedEmpty as unknown as Map<K, V>;

type MapField = {
  [F in keyof PrincipalState]: PrincipalState[F] extends Map<unknown, unknown> ? F : never;
}[keyof PrincipalState];

/** The state's own map `f`, made at its first write (reads may use the shared empty one). */
export function own<F extends MapField>(state: PrincipalState, f: F): PrincipalState[F] {
  if (state[f] === (sharedEmpty as unknown)) state[f] = new Map() as PrincipalState[F];
  return state[f];
}

/** Billing as every principal starts it, one frozen object for all (a write to it throws): most never bill. */
const noBilling: BillingView = Object.freeze({
  card: null,
  payoutAccount: null,
  payoutThroughSeq: 0,
  payoutInFlight: null,
  paidOutCents: 0,
});

/** The state's own billing, made at its first write. */
export function ownBilling(state: PrincipalState): BillingView {
  if (state.billing === noBilling) state.billing = { ...noBilling };
  return state.billing;
}

const isNoBilling = (b: BillingView) =>
  b.card === null &&
  b.payoutAccount === null &&
  b.payoutThroughSeq === 0 &&
  b.payoutInFlight === null &&
  b.paidOutCents === 0;

/** Chargebacks as every principal starts them, one frozen record for all (a write to it throws). */
const noChargebacks: Chargebacks = Object.freeze({
  withheldCents: 0,
  reversedCents: 0,
  charges: noEntries<string, ChargeTakenBack>(),
});

/** The state's own chargebacks record, made at its first write. */
export function ownChargebacks(state: PrincipalState): Chargebacks {
  if (state.chargebacks === noChargebacks)
    state.chargebacks = { withheldCents: 0, reversedCents: 0, charges: new Map() };
  return state.chargebacks;
}

/** A map of snapshot entries; the shared empty one when there are none. */
const mapOf = <K, V>(entries: [K, V][]): Map<K, V> => (entries.length === 0 ? noEntries() : new Map(entries));

export function initialState(principalId: string): PrincipalState {
  return {
    principalId,
    availableCents: 0,
    heldCents: 0,
    spentCents: 0,
    creditedCents: 0,
    chargebacks: noChargebacks,
    held: noEntries(),
    mandates: [],
    subscriptions: noEntries(),
    approvals: noEntries(),
    contexts: noEntries(),
    contextSlugs: noEntries(),
    skills: noEntries(),
    webhooks: noEntries(),
    billing: noBilling,
    idempotency: noEntries(),
    evictedThroughSeq: 0,
    plan: null,
    quotaDayStartMs: 0,
    purchasesToday: 0,
    spentTodayCents: 0,
  };
}

/** The principal's disputes of card top-ups still open. */
export function openDisputes(s: PrincipalState): number {
  let open = 0;
  for (const c of s.chargebacks.charges.values()) for (const d of c.disputes) if (d.state === 'open') open++;
  return open;
}

/** The principal's current mandate (revoked or not), or null before the first. */
export const currentMandate = (s: PrincipalState): MandateRecord | null => s.mandates.at(-1) ?? null;

export function toSnapshot(s: PrincipalState): unknown {
  return {
    ...s,
    held: [...s.held],
    chargebacks: { ...s.chargebacks, charges: [...s.chargebacks.charges] },
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
    | 'idempotency'
    | 'held'
    | 'chargebacks'
    | 'subscriptions'
    | 'approvals'
    | 'contexts'
    | 'contextSlugs'
    | 'skills'
    | 'webhooks'
  > & {
    webhooks: [string, WebhookRecord][];
    contexts: [string, HeldContext][];
    skills: [string, HeldSkill][];
    idempotency: [string, HotRecord][];
    held: [string, HeldOrder][];
    chargebacks: Omit<Chargebacks, 'charges'> & { charges: [string, ChargeTakenBack][] };
    subscriptions: [string, SubscriptionRecord][];
    approvals: [string, HeldRequest][];
  };
  return {
    ...s,
    billing: isNoBilling(s.billing) ? noBilling : s.billing,
    held: mapOf(s.held),
    chargebacks:
      s.chargebacks.charges.length === 0
        ? noChargebacks
        : { ...s.chargebacks, charges: new Map(s.chargebacks.charges) },
    subscriptions: mapOf(s.subscriptions),
    approvals: mapOf(s.approvals),
    contexts: mapOf(s.contexts),
    // Derived from the files, so not in the snapshot.
    contextSlugs: mapOf(s.contexts.map(([id, c]) => [c.record.slug, id])),
    skills: mapOf(s.skills),
    webhooks: mapOf(s.webhooks),
    idempotency: mapOf(s.idempotency),
  };
}
