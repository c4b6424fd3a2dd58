// What each web page shows: the data the web face (gateway/web/) hands to the page functions (pages.ts), which turn
// it into HTML. Plain data, already decided: a page function makes no choices beyond layout and wording.

import type { ApprovalT } from '../../contracts/index.ts';

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
}

export interface AccountPage extends PageFrame {
  email: string;
  principalId: string;
  clients: AccountClient[];
  grants: AccountGrant[];
  initialAccessTokens: { id: string; createdAt: string; expiresAt: string }[];
  /** Shown once, right after the person asked for it: the token itself. */
  newInitialAccessToken: { token: string; expiresAt: string } | null;
  /** `ASSAY_API_URL`: the context-file API's own base, where an API key is used (`{api_url}/v1`). */
  apiUrl: string;
  /** The context-file API's keys that still work, newest first: never the key itself, which is shown once. */
  apiKeys: AccountApiKey[];
  /** Shown once, right after the person issued it: the key itself. */
  newApiKey: { name: string; key: string } | null;
  /** Longest name an API key may have (the issue form's `maxlength`). */
  apiKeyNameLengthMax: number;
  /** The principal's webhooks, newest first; registered on the context-file API, paused or re-enabled here. */
  webhooks: AccountWebhook[];
  /** The principal's mandate, or null before the first (purchases are refused until one is set). */
  mandate: {
    perItemCapCents: number;
    minTrust: number;
    minFloor: number;
    minJudgeVersion: string | null;
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
  clientName: string | null;
  clientId: string;
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
  clientName: string | null;
  clientId: string;
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
