// What each web page shows: the data the web face (gateway/web/) hands to the page functions (pages.ts), which turn
// it into HTML. Plain data, already decided: a page function makes no choices beyond layout and wording.

import type { ApprovalT, ClientShownT } from '../../contracts/index.ts';

/** Every page: where it is served and the person's email when signed in. */
export interface PageFrame {
  /** `ASSAY_WEB_URL`: absolute links on pages start with it. */
  webUrl: string;
  /** The signed-in person's email, or null on the sign-in and sign-up pages. */
  signedInAs: string | null;
  /** The CSRF token every form carries as the hidden field `csrf` (double-submit: it equals the `assay_csrf` cookie). */
  csrf: string;
}

/** A scope as the person reads it on consent screens. */
export interface ScopeWords {
  scope: string;
  words: string;
}

export interface SignInPage extends PageFrame {
  /** Where to go after signing in (a path on this server), sent back as the hidden field `next`. */
  next: string;
  /** The email typed before, kept on a failed attempt. */
  email: string;
  /** One sentence when the last attempt failed (the same for a wrong password and an unknown email). */
  error: string | null;
}

export interface SignUpPage extends PageFrame {
  next: string;
  email: string;
  error: string | null;
  /** Shortest password accepted (characters). */
  passwordMinLength: number;
  /** This form's submission id: sent again, the same form signs in to the account it made. */
  submission: string;
}

export interface AccountClient {
  clientId: string;
  name: string | null;
  redirectUris: string[];
  grantTypes: string[];
  createdAt: string;
}

export interface AccountGrant {
  id: string;
  clientId: string;
  clientName: string | null;
  scopes: ScopeWords[];
  resource: string;
  createdAt: string;
  /** Access tokens of this grant that have not expired or been revoked. */
  liveTokens: { jti: string; expiresAt: string; exchanged: boolean }[];
}

/** An API key of the context-file API as the account page lists it. */
export interface AccountApiKey {
  id: string;
  name: string;
  /** The key's last four characters, so the person can tell which key a program holds. */
  hint: string;
  createdAt: string;
  /** When a request last authenticated with it (recorded at most once a minute), or null if never. */
  lastUsedAt: string | null;
}

/** A webhook registration as the account page lists it (docs/webhooks.md), without its secret. */
export interface AccountWebhook {
  id: string;
  name: string;
  url: string;
  /** The event types it takes. */
  events: string[];
  isActive: boolean;
  /** Why delivery disabled it, or null when it is active or its owner paused it. */
  disabledReason: string | null;
  createdAt: string;
  /** Its newest delivery attempts, newest first. */
  deliveries: {
    eventId: string;
    eventType: string;
    attempt: number;
    at: string;
    /** The endpoint's HTTP status, or null when no response came (then `error` says why). */
    status: number | null;
    error: string | null;
    outcome: 'delivered' | 'retrying' | 'failed';
  }[];
}

/** A webhook's form as the person filled it, kept when the service refused it so nothing has to be typed again. */
export interface WebhookDraft {
  name: string;
  url: string;
  events: string[];
}

/** A listing as the page names it: its artifact's title, its price and floor, and its current report's verdict. */
export interface ListingWords {
  title: string;
  priceCents: number;
  floor: number;
  /** The artifact's current report's mean entailment, or null before it is verified. */
  meanEntailment: number | null;
}

/** What the page names ids by (the listings and agents it shows); an id missing here is shown as it is. */
export interface PageLabels {
  listings: Record<string, ListingWords>;
  /** An agent's name: an OAuth client's agent carries the client's name; null when it has none. */
  agents: Record<string, string | null>;
}

/** An order as the account page lists it. */
export interface AccountOrder {
  id: string;
  listingId: string;
  agentId: string;
  state: 'held' | 'released' | 'auto_refunded';
  escrowCents: number;
  refundReason: 'floor_missed' | 'no_report' | null;
  createdAt: string;
}

/** An event as the account page lists it. */
export interface AccountEvent {
  id: string;
  type: string;
  createdAt: string;
}

/** One side of the account (live, or test mode's sandbox): its newest orders and events. */
export interface AccountActivity {
  orders: AccountOrder[];
  events: AccountEvent[];
}

/** Test mode: the account's own sandbox principal, its test credits and agents, and its orders and events. */
export interface AccountTestMode {
  /** `ASSAY_BASE_URL`: where sandbox agents send their calls. */
  baseUrl: string;
  /** Test credits a sandbox starts with (cents). */
  grantCents: number;
  /** null before the person first issued a sandbox agent token (the sandbox is made then). */
  sandbox: {
    principalId: string;
    balanceCents: number;
    agents: { id: string; name: string | null; createdAt: string }[];
    activity: AccountActivity;
  } | null;
  /** Shown once, right after the person issued it: the token itself. */
  newToken: { name: string; token: string; expiresAt: string; scopes: string[] } | null;
  /** The issue form's hidden `agent_id`: the form sent again (a reload) gets a token for the agent it made. */
  formAgentId: string;
}

export interface AddCreditsPage extends PageFrame {
  /** The waiting purchase's price and when it expires; null if it could not be read. */
  priceCents: number | null;
  expiresAt: string | null;
  availableCents: number;
  /** Whether this deployment takes card payments (a payment processor is configured). */
  cardPayments: boolean;
}

export interface NewInitialAccessTokenPage extends PageFrame {
  /** The token, the one time it is shown; null when the page was shown already (a reload). */
  token: { token: string; expiresAt: string } | null;
}

export interface AccountPage extends PageFrame {
  email: string;
  principalId: string;
  clients: AccountClient[];
  grants: AccountGrant[];
  initialAccessTokens: { id: string; createdAt: string; expiresAt: string }[];
  /** `ASSAY_API_URL`: the context-file API's own base, where an API key is used (`{api_url}/v1`). */
  apiUrl: string;
  /** The context-file API's keys that still work, newest first: never the key itself, which is shown once. */
  apiKeys: AccountApiKey[];
  /** Shown once, right after the person issued it: the key itself. */
  newApiKey: { name: string; key: string } | null;
  /** Longest name an API key may have (the issue form's `maxlength`). */
  apiKeyNameLengthMax: number;
  /** The principal's webhooks, newest first, with their recent deliveries. */
  webhooks: AccountWebhook[];
  /** The add-webhook form as it was sent, when the service refused it; null for an empty form. */
  webhookDraft: WebhookDraft | null;
  /** Test mode for local development: loopback webhook URLs are allowed (ASSAY_WEBHOOK_ALLOW_LOOPBACK). */
  webhookAllowLoopback: boolean;
  /** Shown once, right after adding a webhook or rotating its secret: the signing secret itself. */
  newWebhookSecret: { name: string; secret: string; rotated: boolean } | null;
  /** `ASSAY_BASE_URL`: the agent API and the MCP endpoint (`/mcp`), for the page's first lines. */
  baseUrl: string;
  /** The live side's newest orders and events. */
  live: AccountActivity;
  /** The sandbox side of this account. */
  testMode: AccountTestMode;
  /** Names for the ids of approvals, orders and agents on the page. */
  labels: PageLabels;
  /** The principal's mandate, or null before the first (purchases are refused until one is set). */
  mandate: {
    perItemCapCents: number;
    minTrust: number;
    minFloor: number;
    minJudgeVersion: string | null;
    /** The lowest specificity the judge may have measured on the reference set; null: any judge. */
    minJudgeSpecificity: number | null;
    rejectOpenJudgeErrata: boolean;
    /** Purchases above this many cents wait for the person's approval; null: none do. */
    approvalAboveCents: number | null;
  } | null;
  /** Purchases that waited for approval: pending ones (to decide) and recent decisions, newest first. */
  approvals: ApprovalT[];
  /** Live money (docs/money.md): the saved card and the seller's payouts; `processor` false when none is configured. */
  money: {
    processor: boolean;
    balanceCents: number;
    card: { brand: string; last4: string; savedAt: string } | null;
    payouts: { enabled: boolean; paidOutCents: number } | null;
  };
  /** Hidden field `idempotency_key` of the mandate form: a double submit sets the mandate once. */
  mandateKey: string;
  /** One line after an action (\"Grant revoked.\"), or null. */
  notice: string | null;
  /** One line when an action failed (a mandate the service refused, say), or null. */
  error: string | null;
}

/** The consent screen of `/oauth/authorize`. Its form posts to `/oauth/authorize/decision`. */
export interface ConsentPage extends PageFrame {
  /** Who the client is and how the server knows it (registered by this account, first party, or a document). */
  client: ClientShownT;
  /** Where the answer goes: the redirect URI's origin, shown so the person sees who receives the code. */
  redirectOrigin: string;
  scopes: ScopeWords[];
  resource: string;
  /** The short-lived principal token minted for this one screen: hidden field `screen_token`. */
  screenToken: string;
}

/** `/device`: the person types the code their device shows. */
export interface DeviceEntryPage extends PageFrame {
  userCode: string;
  error: string | null;
}

/** `/device` after a valid code: approve or deny. Its form posts to `/device/decision`. */
export interface DeviceConfirmPage extends PageFrame {
  client: ClientShownT;
  userCode: string;
  scopes: ScopeWords[];
  screenToken: string;
}

/** A page that only tells something: an error that must not be redirected, a device approved, signed out. */
export interface MessagePage extends PageFrame {
  title: string;
  message: string;
  /** A link onward, or null. */
  link: { href: string; text: string } | null;
}
