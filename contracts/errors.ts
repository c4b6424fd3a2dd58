// The closed error registry of the agent API. Every error on every agent route is one of these codes, with the
// status, remediation and retryable flag given here. Codes are stable API: never rename or reuse one.
//
// The spec fixes the status of seven codes; for the others (its eight, and order_refunded, payments_not_configured and the
// three card codes, ours) we chose from 400/401/403/404/409/413/422/429/503
// and say why in `statusReason`. Order is precedence: when several refusals apply to one request, the one listed
// first wins (authentication before scope before validation before business rules). Route matching comes before
// the table: an unknown route is `not_found` whatever else is wrong (a route not built yet still checks the token
// and its scope first, then answers `not_found`). The purchase policy collects its refusals and lets this order
// decide (actors/principal/purchase-policy.ts).

export interface ErrorSpec {
  readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 422 | 429 | 503;
  readonly remediation: string;
  readonly retryable: boolean;
  readonly title: string;
  /** Why this status, for the codes whose status the spec leaves open. */
  readonly statusReason?: string;
}

export const errorTable = {
  unauthorized: {
    status: 401,
    remediation: 'authenticate',
    retryable: false,
    title: 'The bearer token is missing, malformed, expired or not signed by this service.',
  },
  forbidden: {
    status: 403,
    remediation: 'request_scope',
    retryable: false,
    title: 'The token is valid but lacks the scope this operation needs.',
    statusReason: 'The caller is known but not permitted: 403, as RFC 9110 defines it.',
  },
  rate_limited: {
    status: 429,
    remediation: 'back_off_and_retry',
    retryable: true,
    title: 'Too many requests from this caller or address in the current window.',
    statusReason: '429 Too Many Requests is the standard status; a Retry-After header says when to try again.',
  },
  quota_exhausted: {
    status: 429,
    remediation: 'wait_or_upgrade_tier',
    retryable: true,
    title: "The caller's plan quota for this period is used up.",
    statusReason: 'A quota is a slower rate limit, so it shares 429; the code tells the two apart.',
  },
  validation_failed: {
    status: 422,
    remediation: 'fix_the_request_body',
    retryable: false,
    title:
      'The request does not match the operation schema (body, path or query), or the Idempotency-Key header is missing or not 1 to 200 characters.',
  },
  not_found: {
    status: 404,
    remediation: 'check_the_id',
    retryable: false,
    title:
      'No such route, or no such resource visible to this caller (including one across the sandbox line or owned by another principal).',
  },
  idempotency_conflict: {
    status: 422,
    remediation: 'use_a_new_idempotency_key',
    retryable: false,
    title: 'This Idempotency-Key was already used by this principal with a different request.',
  },
  requote_required: {
    status: 409,
    remediation: 'requote',
    retryable: true,
    title: 'The live price is above the max_price_cents the buyer agreed to.',
  },
  mandate_revoked: {
    status: 403,
    remediation: 'request_new_mandate',
    retryable: false,
    title: "The agent's mandate has been revoked by its principal.",
    statusReason: 'The mandate no longer authorises the agent to act: a permission refusal, so 403.',
  },
  mandate_exceeded: {
    status: 403,
    remediation: 'request_mandate_increase',
    retryable: false,
    title: "The price exceeds the mandate's per-item cap.",
  },
  judge_version_rejected: {
    status: 403,
    remediation: 'relax_judge_filter',
    retryable: false,
    title:
      "The report's judge version is below the mandate minimum, or open judge errata exist and the mandate rejects them.",
  },
  pending_approval: {
    status: 403,
    remediation: 'await_principal_approval',
    retryable: false,
    title: 'The action needs the principal to approve it first.',
    statusReason:
      'Not permitted until a human approves; retrying without that approval cannot succeed, so 403 rather than 409.',
  },
  insufficient_credits: {
    status: 409,
    remediation: 'top_up',
    retryable: false,
    title: "The principal's available credits do not cover the amount.",
    statusReason:
      'The request is valid but conflicts with the current balance; a top-up resolves it. 402 is not among the statuses agent routes answer.',
  },
  floor_not_met: {
    status: 409,
    remediation: 'raise_floor_or_pick_another_listing',
    retryable: false,
    title: "The edition's report does not meet the required floor.",
    statusReason: 'The request conflicts with the current state of the report, which the caller cannot change: 409.',
  },
  order_refunded: {
    status: 409,
    remediation: 'purchase_again',
    retryable: false,
    title: 'The order was refunded (its report missed the floor, or none arrived), so it has no content to deliver.',
    statusReason:
      "The request is valid but conflicts with the order's final state, which no retry changes: 409, as for floor_not_met.",
  },
  payments_not_configured: {
    status: 403,
    remediation: 'ask_the_operator',
    retryable: false,
    title:
      'This deployment takes no card payments (no payment processor is configured), so there are no live top-ups, saved cards or payouts; the sandbox has test credits.',
    statusReason:
      'A configuration, not an outage: no retry and nothing the caller changes makes it succeed, so not 503. The deployment does not permit the action: 403.',
  },
  payment_method_required: {
    status: 409,
    remediation: 'save_a_card',
    retryable: false,
    title:
      'A live top-up charges the card the principal saved, and none is saved: a person saves one on the account page.',
    statusReason:
      'The request is valid but conflicts with what the principal holds (no card); saving one resolves it: 409.',
  },
  card_declined: {
    status: 409,
    remediation: 'save_another_card',
    retryable: false,
    title:
      "The payment processor declined the saved card (the message carries the processor's decline code); nothing was charged or credited.",
    statusReason:
      'The card, not the request, is refused: 409 like the other refusals the caller resolves by changing state. 402 is not among the statuses agent routes answer.',
  },
  card_authentication_required: {
    status: 409,
    remediation: 'save_another_card',
    retryable: false,
    title:
      'The bank wants the cardholder present to authenticate this payment, which an off-session top-up cannot do; nothing was charged or credited.',
    statusReason: 'As card_declined: the saved card conflicts with an off-session charge.',
  },
  unavailable: {
    status: 503,
    remediation: 'retry_later',
    retryable: true,
    title:
      'The service could not complete the request in time (no actor owns the shard yet, NATS is unreachable, or a timeout). Nothing was committed unless a retry with the same Idempotency-Key replays it.',
    statusReason: '503 Service Unavailable with Retry-After: the condition is temporary.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorTable;

export const errorCodes = Object.keys(errorTable) as ErrorCode[];

const precedence = new Map(errorCodes.map((code, i) => [code, i]));

/**
 * The refusal that wins when several apply: the one whose code the table lists first, and of equal codes the first
 * collected. Deciders collect every refusal and let this pick, rather than returning at the first `if`.
 */
export function firstByPrecedence<R extends { code: ErrorCode }>(refusals: readonly R[]): R | null {
  let winner: R | null = null;
  for (const r of refusals) {
    if (!winner || precedence.get(r.code)! < precedence.get(winner.code)!) winner = r;
  }
  return winner;
}

/** The typed error object every agent route answers with. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  remediation: string;
  retryable: boolean;
  docs_url: string;
  /** Only on pending_approval: the approval request the purchase waits in. */
  approval_id?: string;
}

export function errorDocsUrl(baseUrl: string, code: ErrorCode): string {
  return `${baseUrl}/docs/errors#${code}`;
}

export function errorBody(baseUrl: string, code: ErrorCode, message: string, approvalId?: string): ErrorBody {
  const spec = errorTable[code];
  const body: ErrorBody = {
    code,
    message,
    remediation: spec.remediation,
    retryable: spec.retryable,
    docs_url: errorDocsUrl(baseUrl, code),
  };
  if (approvalId !== undefined) body.approval_id = approvalId;
  return body;
}

/**
 * Transport-level refusals that keep a table code but answer another status. These are the only exceptions to
 * "one code, one status", and all are about bytes or headers that never reached schema validation.
 */
export const transportStatus = {
  /** A body over ASSAY_BODY_BYTES_MAX: 413 with code validation_failed. */
  bodyTooLarge: 413,
  /** A body that is not JSON at all: 400 with code validation_failed. */
  malformedJson: 400,
  /** A body that did not arrive within ASSAY_BODY_READ_TIMEOUT_MS: 400 with code validation_failed. */
  bodyReadTimeout: 400,
  /**
   * An MCP request without the Mcp-Session-Id header, or with an MCP-Protocol-Version other than its session's:
   * 400 with code validation_failed, as the Streamable HTTP transport prescribes.
   */
  mcpSessionHeaders: 400,
} as const;
