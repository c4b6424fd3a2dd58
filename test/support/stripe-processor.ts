// A local payment processor that speaks Stripe's wire protocol, for tests and for trying the live money path on a
// laptop. The app talks to it through the official `stripe` SDK pointed at it (`host: '127.0.0.1', port, protocol:
// 'http'`), so what runs is the app's real use of the SDK: form bodies in bracket notation, Bearer keys,
// Idempotency-Key replays and conflicts, Stripe's error shapes and statuses, test cards that succeed, decline or
// need authentication, hosted Checkout (setup mode) and Connect onboarding pages, transfers, refunds, disputes
// (opened by the handle, as a card network opens them; answered with Stripe's test-mode evidence), and events signed
// and retried as Stripe does. The handle holds, reorders, duplicates and resends events and makes chosen calls fail.
//
// It listens on 127.0.0.1 only and posts webhooks to 127.0.0.0/8 (or `localhost`, pinned to 127.0.0.1) only;
// `npm start` never starts it. It is a subset of Stripe: the endpoints and fields the app uses. A parameter it does
// not know is refused with 400 "Received unknown parameter", as Stripe refuses one, so a typo fails here first.
// State lives in memory for the life of one handle; nothing is bounded but the request body, because a handle
// lives for one test file.
import { createHmac, randomBytes } from 'node:crypto';
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/** A Stripe API object as this processor stores and renders it: plain JSON. */
export type StripeObject = Record<string, any>;

/** Decoded form or query parameters: strings and nested objects (arrays arrive as objects keyed "0", "1", ...). */
type Params = Record<string, unknown>;

/** An event as Stripe sends it to a webhook endpoint. */
export interface ProcessorEvent {
  id: string;
  object: 'event';
  /** Set on Connect events: the connected account the event is about. */
  account?: string;
  api_version: string;
  created: number;
  data: { object: StripeObject; previous_attributes?: StripeObject };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

/** One attempt to deliver an event. `status` is 0 when no HTTP answer came (refused, timeout, no URL). */
export interface Delivery {
  eventId: string;
  type: string;
  /** 1 for the first attempt of this event, counting retries, duplicates and resends. */
  attempt: number;
  url: string | null;
  status: number;
  error?: string;
  /** The `Stripe-Signature` header sent. */
  signature: string;
  atMs: number;
}

/** How a call chosen with `failNext` fails: an HTTP status (answered before anything happens), a dropped connection
 * before anything happens, or a dropped connection after the call took effect (the answer is lost, the effect and
 * its idempotency record stay: the "crash after commit" case). */
export type Failure = number | 'drop' | 'drop-after';

export interface ReleaseOptions {
  /** `created` (default), `reverse`, or `shuffle` (seeded by `seed` for a reproducible order). */
  order?: 'created' | 'reverse' | 'shuffle';
  /** Each held event is delivered this many extra times (1: twice). */
  duplicate?: number;
  seed?: number;
}

export interface PaymentIntentRecord {
  id: string;
  amount: number;
  currency: string;
  customer: string | null;
  status: string;
  metadata: Record<string, string>;
  /** The Idempotency-Key of the call that created it (the SDK sends `stripe-node-retry-...` when the app sets none). */
  idempotencyKey: string | null;
}

export interface TransferRecord {
  id: string;
  amount: number;
  currency: string;
  destination: string;
  transfer_group: string | null;
  metadata: Record<string, string>;
  idempotencyKey: string | null;
}

export interface StripeProcessorOptions {
  /** The one secret key accepted (default: a fresh `sk_test_...`). */
  apiKey?: string;
  /** Where events about this account go; may be set later with `setWebhookUrl`. Events wait until it is set. */
  webhookUrl?: string | null;
  /** Signing secret of that endpoint (default: a fresh `whsec_...`). */
  webhookSecret?: string;
  /** Where Connect events (those with `account`) go; Stripe keeps them on a separate endpoint. Default: webhookUrl. */
  connectWebhookUrl?: string | null;
  /** Signing secret of the Connect endpoint. Default: webhookSecret. */
  connectWebhookSecret?: string;
  /** Event types delivered (`*` for all); others are recorded in `events` but not sent. Default `['*']`. */
  enabledEvents?: readonly string[];
  /** The account's API version: events are rendered in it. Default: the installed SDK's pinned version. */
  apiVersion?: string;
  /** Delay before each retry of a delivery that got no 2xx; its length is the number of retries. */
  webhookRetryDelaysMs?: readonly number[];
  /** How long one delivery attempt may take. */
  webhookTimeoutMs?: number;
  /** CA certificate (PEM) to trust when a webhook URL is https (a test receiver's self-signed certificate). */
  webhookCa?: string;
  /** The platform's available balance, which transfers draw on and succeeded payments add to. */
  balanceCents?: number;
  /** Milliseconds since the epoch; `created`, signatures and link expiry read it. */
  now?: () => number;
}

export interface StripeProcessor {
  /** `http://127.0.0.1:<port>`, the base of the API and of the hosted pages. */
  readonly url: string;
  readonly port: number;
  readonly apiKey: string;
  readonly webhookSecret: string;
  readonly connectWebhookSecret: string;
  /** Every event created, in order, delivered or not. */
  readonly events: readonly ProcessorEvent[];
  /** Every delivery attempt, in order. */
  readonly deliveries: readonly Delivery[];
  /** Every PaymentIntent created, in order, as it is now. */
  readonly paymentIntents: PaymentIntentRecord[];
  /** Every transfer created, in order. */
  readonly transfers: TransferRecord[];
  readonly balanceCents: number;
  /** Any stored object by id (customer, payment method, session, intent, charge, account, transfer). */
  object(id: string): StripeObject | undefined;
  setWebhookUrl(url: string | null, connectUrl?: string | null): void;
  /** Keep new events back until `releaseWebhooks`. */
  holdWebhooks(): void;
  /** Deliver the held events (first attempts one after another in the chosen order); resolves when those are done. */
  releaseWebhooks(options?: ReleaseOptions): Promise<void>;
  /** Deliver an event once more, now (no retries); resolves to the status received (0: none). */
  resend(eventId: string): Promise<number>;
  /** Create and deliver an event of any type, also one Stripe does not have. */
  sendEvent(type: string, object: StripeObject, options?: { account?: string }): ProcessorEvent;
  /** Resolves when no event waits to be sent or retried and none is in flight (held events do not count). */
  webhooksIdle(): Promise<void>;
  /** What submitting the hosted Checkout page with this test card does. */
  completeCheckout(sessionId: string, card: TestCardToken): StripeObject;
  /** What submitting the hosted onboarding page does. */
  completeOnboarding(accountId: string): StripeObject;
  /**
   * The cardholder disputes a charge at their bank (Stripe has no API for it: the card network opens disputes):
   * `charge.dispute.created` and `charge.dispute.funds_withdrawn` follow. `amount` defaults to what is not refunded.
   * Close it with the API: evidence `winning_evidence` or `losing_evidence` (Stripe's test mode), or `close` (lost).
   */
  disputeCharge(chargeId: string, options?: { amount?: number; reason?: string }): StripeObject;
  /** The next `times` calls to `route` (`'/v1/transfers'` or `'POST /v1/transfers'`) fail so. */
  failNext(route: string, failure?: Failure, times?: number): void;
  setBalance(cents: number): void;
  close(): Promise<void>;
}

// --- Test cards -------------------------------------------------------------------------------------------------

type Outcome = 'succeed' | 'generic_decline' | 'insufficient_funds' | 'authentication_required';

interface TestCard {
  brand: string;
  last4: string;
  outcome: Outcome;
  label: string;
}

/** Stripe's test payment-method tokens this processor knows, with what a charge on each does. */
export const testCards = {
  pm_card_visa: { brand: 'visa', last4: '4242', outcome: 'succeed', label: 'Visa ending 4242: payments succeed' },
  pm_card_mastercard: {
    brand: 'mastercard',
    last4: '4444',
    outcome: 'succeed',
    label: 'Mastercard ending 4444: payments succeed',
  },
  pm_card_chargeDeclined: {
    brand: 'visa',
    last4: '0002',
    outcome: 'generic_decline',
    label: 'Visa ending 0002: saved, then every payment is declined',
  },
  pm_card_chargeDeclinedInsufficientFunds: {
    brand: 'visa',
    last4: '9995',
    outcome: 'insufficient_funds',
    label: 'Visa ending 9995: saved, then payments are declined for insufficient funds',
  },
  pm_card_authenticationRequired: {
    brand: 'visa',
    last4: '3184',
    outcome: 'authentication_required',
    label: 'Visa ending 3184: every payment needs the cardholder to authenticate',
  },
} as const satisfies Record<string, TestCard>;

export type TestCardToken = keyof typeof testCards;

const isTestCard = (id: string): id is TestCardToken => Object.hasOwn(testCards, id);

/** Stripe's words for each failed outcome. */
const declines = {
  generic_decline: { code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' },
  insufficient_funds: {
    code: 'card_declined',
    decline_code: 'insufficient_funds',
    message: 'Your card has insufficient funds.',
  },
  authentication_required: {
    code: 'authentication_required',
    decline_code: 'authentication_required',
    message: 'Your card was declined. This transaction requires authentication.',
  },
} as const;

// --- Limits and constants -----------------------------------------------------------------------------------------

const bodyBytesMax = 1024 * 1024;
const formKeyDepthMax = 6;
const idempotencyKeyCharsMax = 255;
const metadataKeysMax = 50;
const metadataKeyCharsMax = 40;
const metadataValueCharsMax = 500;
const listLimitMax = 100;
/** Stripe's smallest charge is about 50 cents; this processor uses 50 minor units for every currency. */
const amountMinimum = 50;
const checkoutLifetimeSeconds = 24 * 3600;
const accountLinkLifetimeSeconds = 300;
const retryDelaysDefaultMs = [50, 200, 800];
const webhookTimeoutDefaultMs = 5000;

// --- Ids, time, signatures -------------------------------------------------------------------------------------

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function randomToken(length: number): string {
  let token = '';
  for (const byte of randomBytes(length)) token += base62[byte % 62];
  return token;
}

const newId = (prefix: string) => `${prefix}_${randomToken(24)}`;

/** The `Stripe-Signature` header Stripe sends: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "t.payload")>`. */
export function signatureHeader(payload: string, secret: string, timestamp: number): string {
  const v1 = createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
  return `t=${timestamp},v1=${v1}`;
}

/** A small seeded generator, so a shuffled release order can be reproduced from its seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

// --- Errors in Stripe's shape ------------------------------------------------------------------------------------

interface ErrorBody {
  type: string;
  message: string;
  code?: string;
  decline_code?: string;
  param?: string;
  doc_url?: string;
  [field: string]: unknown;
}

/** A refusal answered as `{ error }` with Stripe's status for it. */
class StripeFault extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

const docUrl = (code: string) => `https://docs.stripe.com/error-codes/${code.replaceAll('_', '-')}`;

function invalidRequest(message: string, param?: string, code?: string, status = 400): StripeFault {
  return new StripeFault(status, {
    type: 'invalid_request_error',
    message,
    ...(code ? { code, doc_url: docUrl(code) } : {}),
    ...(param ? { param } : {}),
  });
}

/** An id named in the URL that does not exist is 404; one named in a parameter is 400, both `resource_missing`. */
function noSuch(label: string, id: string, param: string, status = 400): StripeFault {
  return invalidRequest(`No such ${label}: '${id}'`, param, 'resource_missing', status);
}

// --- Form decoding and parameters ----------------------------------------------------------------------------------

/** Decodes `a[b][0]=x&expand[]=y` as Stripe does into nested objects; arrays become objects keyed by index. */
export function parseForm(text: string): Params {
  const root: Params = {};
  for (const [key, value] of new URLSearchParams(text)) assignPath(root, splitKey(key), value);
  return root;
}

function splitKey(key: string): string[] {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match) throw invalidRequest(`Invalid parameter name: ${key}`, key);
  const path = [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!)];
  // Keys that reach Object.prototype never name a Stripe parameter; refusing them keeps the parser safe.
  if (
    path.length > formKeyDepthMax ||
    path.some((s) => s === '__proto__' || s === 'constructor' || s === 'prototype')
  ) {
    throw invalidRequest(`Invalid parameter name: ${key}`, key);
  }
  return path;
}

function assignPath(root: Params, path: string[], value: string): void {
  let node: Params = root;
  for (const [i, segment] of path.entries()) {
    // `[]` appends: the next free index of this list.
    const key = segment === '' ? String(Object.keys(node).length) : segment;
    if (i === path.length - 1) {
      node[key] = value;
      return;
    }
    const next = node[key] ?? {};
    if (typeof next !== 'object') throw invalidRequest(`Invalid hash: ${path[0]}`, path[0]);
    node[key] = next;
    node = next as Params;
  }
}

function known(params: Params, allowed: readonly string[]): void {
  for (const key of Object.keys(params)) {
    if (key !== 'expand' && !allowed.includes(key)) throw invalidRequest(`Received unknown parameter: ${key}`, key);
  }
}

function text(params: Params, name: string, required = false): string | undefined {
  const value = params[name];
  if (value === undefined || value === '') {
    if (required) throw invalidRequest(`Missing required param: ${name}.`, name, 'parameter_missing');
    return undefined;
  }
  if (typeof value !== 'string') throw invalidRequest(`Invalid string: ${name}`, name);
  return value;
}

function integer(params: Params, name: string, required = false): number | undefined {
  const raw = text(params, name, required);
  if (raw === undefined) return undefined;
  if (!/^-?\d{1,15}$/.test(raw)) throw invalidRequest(`Invalid integer: ${raw}`, name);
  return Number(raw);
}

function flag(params: Params, name: string): boolean {
  const raw = text(params, name);
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw invalidRequest(`Invalid boolean: ${raw}`, name);
}

function currencyParam(params: Params, required = true): string {
  const raw = text(params, 'currency', required);
  if (raw === undefined) return 'usd';
  if (!/^[a-zA-Z]{3}$/.test(raw))
    throw invalidRequest(`Invalid currency: ${raw}`, 'currency', 'parameter_invalid_string');
  return raw.toLowerCase();
}

/** A list parameter (`x[0]=a&x[1]=b` or `x[]=a`) in index order. */
function list(params: Params, name: string): string[] {
  const value = params[name];
  if (value === undefined || value === '') return [];
  if (typeof value !== 'object' || value === null) throw invalidRequest(`Invalid array`, name);
  return Object.entries(value as Params)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, item]) => {
      if (typeof item !== 'string') throw invalidRequest('Invalid array', name);
      return item;
    });
}

/** The pinned API version filters payment methods with `allowed_payment_method_types` and
 * `excluded_payment_method_types` (it has no `payment_method_types` on create). Cards are all this processor
 * offers, so a filter that leaves no card out is refused. Answers the allowed list, or null when none was given. */
function cardOffered(params: Params): string[] | null {
  const allowed =
    params['allowed_payment_method_types'] === undefined ? null : list(params, 'allowed_payment_method_types');
  if (allowed !== null && !allowed.includes('card')) {
    throw invalidRequest('The local processor offers cards only; allow `card`.', 'allowed_payment_method_types');
  }
  if (list(params, 'excluded_payment_method_types').includes('card')) {
    throw invalidRequest(
      'The local processor offers cards only; do not exclude `card`.',
      'excluded_payment_method_types',
    );
  }
  return allowed;
}

/** Stripe's metadata rules: `metadata[k]=` removes k, `metadata=` removes all, at most 50 keys of bounded size. */
function metadataParam(params: Params, current: Record<string, string> = {}): Record<string, string> {
  const value = params['metadata'];
  if (value === undefined) return current;
  if (value === '') return {};
  if (typeof value !== 'object' || value === null) throw invalidRequest('Invalid hash', 'metadata');
  const merged = { ...current };
  for (const [key, item] of Object.entries(value as Params)) {
    if (typeof item !== 'string') throw invalidRequest('Invalid metadata value', `metadata[${key}]`);
    if (key.length > metadataKeyCharsMax) {
      throw invalidRequest(`Metadata keys can have up to ${metadataKeyCharsMax} characters.`, `metadata[${key}]`);
    }
    if (item.length > metadataValueCharsMax) {
      throw invalidRequest(`Metadata values can have up to ${metadataValueCharsMax} characters.`, `metadata[${key}]`);
    }
    if (item === '') delete merged[key];
    else merged[key] = item;
  }
  if (Object.keys(merged).length > metadataKeysMax) {
    throw invalidRequest(`Metadata can have up to ${metadataKeysMax} keys.`, 'metadata');
  }
  return merged;
}

/** Parameters in a canonical form, so the same parameters in another order are the same idempotent request. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    typeof v === 'object' && v !== null
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sort((v as Params)[k])]),
        )
      : v;
  return JSON.stringify(sort(value));
}

// --- Object builders (fields as the SDK's types declare them) -------------------------------------------------------

function customerObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'customer',
    address: null,
    balance: 0,
    created,
    currency: null,
    default_source: null,
    delinquent: false,
    description: fields['description'] ?? null,
    discount: null,
    email: fields['email'] ?? null,
    invoice_prefix: randomToken(8).toUpperCase(),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false,
    metadata: fields['metadata'] ?? {},
    name: fields['name'] ?? null,
    next_invoice_sequence: 1,
    phone: fields['phone'] ?? null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
  };
}

function paymentMethodObject(id: string, created: number, card: TestCard, customer: string | null): StripeObject {
  const year = new Date(created * 1000).getUTCFullYear();
  return {
    id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: {
      address: { city: null, country: null, line1: null, line2: null, postal_code: null, state: null },
      email: null,
      name: null,
      phone: null,
      tax_id: null,
    },
    card: {
      brand: card.brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
      country: 'US',
      display_brand: card.brand,
      exp_month: 12,
      exp_year: year + 3,
      fingerprint: randomToken(16),
      funding: 'credit',
      generated_from: null,
      last4: card.last4,
      networks: { available: [card.brand], preferred: null },
      regulated_status: 'unregulated',
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created,
    customer,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: 'card',
  };
}

function setupIntentObject(id: string, created: number, customer: string | null, metadata: StripeObject): StripeObject {
  return {
    id,
    object: 'setup_intent',
    allowed_payment_method_types: null,
    application: null,
    automatic_payment_methods: null,
    cancellation_reason: null,
    client_secret: `${id}_secret_${randomToken(24)}`,
    created,
    customer,
    description: null,
    excluded_payment_method_types: null,
    flow_directions: null,
    last_setup_error: null,
    latest_attempt: null,
    livemode: false,
    mandate: null,
    metadata,
    next_action: null,
    on_behalf_of: null,
    payment_method: null,
    payment_method_configuration_details: null,
    payment_method_options: { card: { mandate_options: null, network: null, request_three_d_secure: 'automatic' } },
    payment_method_types: ['card'],
    single_use_mandate: null,
    status: 'requires_payment_method',
    usage: 'off_session',
  };
}

function checkoutSessionObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'checkout.session',
    adaptive_pricing: null,
    after_expiration: null,
    allow_promotion_codes: null,
    allowed_payment_method_types: fields['allowed_payment_method_types'],
    amount_subtotal: null,
    amount_total: null,
    automatic_tax: { enabled: false, liability: null, provider: null, status: null },
    billing_address_collection: null,
    cancel_url: fields['cancel_url'] ?? null,
    client_reference_id: fields['client_reference_id'] ?? null,
    client_secret: null,
    collected_information: null,
    consent: null,
    consent_collection: null,
    created,
    currency: fields['currency'] ?? null,
    currency_conversion: null,
    custom_fields: [],
    custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
    customer: fields['customer'] ?? null,
    customer_account: null,
    customer_creation: null,
    customer_details: null,
    customer_email: fields['customer_email'] ?? null,
    discounts: null,
    expires_at: created + checkoutLifetimeSeconds,
    integration_identifier: null,
    invoice: null,
    invoice_creation: null,
    livemode: false,
    locale: null,
    managed_payments: null,
    metadata: fields['metadata'] ?? {},
    mode: 'setup',
    origin_context: null,
    payment_intent: null,
    payment_link: null,
    payment_method_collection: 'always',
    payment_method_configuration_details: null,
    payment_method_options: {},
    payment_method_types: ['card'],
    payment_status: 'no_payment_required',
    permissions: null,
    recovered_from: null,
    saved_payment_method_options: null,
    setup_intent: fields['setup_intent'],
    shipping_address_collection: null,
    shipping_cost: null,
    shipping_options: [],
    status: 'open',
    submit_type: null,
    subscription: null,
    success_url: fields['success_url'],
    total_details: null,
    ui_mode: 'hosted',
    url: fields['url'],
    wallet_options: null,
  };
}

function paymentIntentObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'payment_intent',
    allowed_payment_method_types: fields['allowed_payment_method_types'] ?? null,
    amount: fields['amount'],
    amount_capturable: 0,
    amount_details: { tip: {} },
    amount_received: 0,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: null,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic_async',
    client_secret: `${id}_secret_${randomToken(24)}`,
    confirmation_method: 'automatic',
    created,
    currency: fields['currency'],
    customer: fields['customer'] ?? null,
    customer_account: null,
    description: fields['description'] ?? null,
    excluded_payment_method_types: null,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    managed_payments: null,
    metadata: fields['metadata'] ?? {},
    next_action: null,
    on_behalf_of: null,
    payment_method: fields['payment_method'] ?? null,
    payment_method_configuration_details: null,
    payment_method_options: { card: { installments: null, mandate_options: null, network: null } },
    payment_method_types: ['card'],
    payment_record: null,
    processing: null,
    receipt_email: null,
    review: null,
    setup_future_usage: null,
    shipping: null,
    source: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: fields['payment_method'] ? 'requires_confirmation' : 'requires_payment_method',
    transfer_data: null,
    transfer_group: fields['transfer_group'] ?? null,
  };
}

function chargeObject(id: string, created: number, pi: StripeObject, pm: StripeObject, outcome: Outcome): StripeObject {
  const failed = outcome === 'succeed' ? null : declines[outcome];
  return {
    id,
    object: 'charge',
    amount: pi['amount'],
    amount_captured: failed ? 0 : pi['amount'],
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: failed ? null : newId('txn'),
    billing_details: pm['billing_details'],
    calculated_statement_descriptor: 'ASSAY',
    captured: !failed,
    created,
    currency: pi['currency'],
    customer: pi['customer'],
    description: pi['description'],
    disputed: false,
    failure_balance_transaction: null,
    failure_code: failed?.code ?? null,
    failure_message: failed?.message ?? null,
    fraud_details: {},
    livemode: false,
    metadata: pi['metadata'],
    on_behalf_of: null,
    outcome: {
      network_status: failed ? 'declined_by_network' : 'approved_by_network',
      reason: failed?.decline_code ?? null,
      risk_level: 'normal',
      seller_message: failed ? 'The bank did not return any further details with this decline.' : 'Payment complete.',
      type: failed ? 'issuer_declined' : 'authorized',
    },
    paid: !failed,
    payment_intent: pi['id'],
    payment_method: pm['id'],
    payment_method_details: { card: { brand: pm['card'].brand, last4: pm['card'].last4 }, type: 'card' },
    receipt_email: null,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: failed ? 'failed' : 'succeeded',
    transfer_data: null,
    transfer_group: pi['transfer_group'],
  };
}

/** What an unverified Express account still owes before payouts (a short version of Stripe's list). */
const onboardingDue = ['business_type', 'external_account', 'individual.dob.day', 'tos_acceptance.date'];

function accountObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'account',
    business_profile: { mcc: null, name: null, product_description: null, support_email: null, url: null },
    business_type: null,
    capabilities: fields['capabilities'],
    charges_enabled: false,
    controller: { is_controller: true, type: 'application' },
    country: fields['country'] ?? 'US',
    created,
    default_currency: fields['default_currency'] ?? 'usd',
    details_submitted: false,
    email: fields['email'] ?? null,
    external_accounts: {
      object: 'list',
      data: [],
      has_more: false,
      total_count: 0,
      url: `/v1/accounts/${id}/external_accounts`,
    },
    future_requirements: requirements([], null),
    metadata: fields['metadata'] ?? {},
    payouts_enabled: false,
    requirements: requirements(onboardingDue, 'requirements.past_due'),
    settings: null,
    tos_acceptance: { date: null },
    type: fields['type'],
  };
}

function requirements(due: string[], disabledReason: string | null): StripeObject {
  return {
    alternatives: [],
    current_deadline: null,
    currently_due: [...due],
    disabled_reason: disabledReason,
    errors: [],
    eventually_due: [...due],
    past_due: [...due],
    pending_verification: [],
  };
}

function transferObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'transfer',
    amount: fields['amount'],
    amount_reversed: 0,
    balance_transaction: newId('txn'),
    created,
    currency: fields['currency'],
    description: fields['description'] ?? null,
    destination: fields['destination'],
    destination_payment: newId('py'),
    livemode: false,
    metadata: fields['metadata'] ?? {},
    reversals: { object: 'list', data: [], has_more: false, total_count: 0, url: `/v1/transfers/${id}/reversals` },
    reversed: false,
    source_transaction: null,
    source_type: 'card',
    transfer_group: fields['transfer_group'] ?? null,
  };
}

function refundObject(id: string, created: number, fields: StripeObject): StripeObject {
  return {
    id,
    object: 'refund',
    amount: fields['amount'],
    balance_transaction: newId('txn'),
    charge: fields['charge'],
    created,
    currency: fields['currency'],
    destination_details: {
      card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
      type: 'card',
    },
    metadata: fields['metadata'] ?? {},
    payment_intent: fields['payment_intent'],
    reason: fields['reason'] ?? null,
    receipt_number: null,
    source_transfer_reversal: null,
    status: 'succeeded',
    transfer_reversal: null,
  };
}

/** Stripe's dispute evidence fields (a subset): all empty until the merchant answers. */
const evidenceFields = [
  'access_activity_log',
  'billing_address',
  'cancellation_policy_disclosure',
  'customer_email_address',
  'customer_name',
  'customer_purchase_ip',
  'product_description',
  'refund_policy_disclosure',
  'service_date',
  'uncategorized_text',
] as const;

function disputeObject(
  id: string,
  created: number,
  charge: StripeObject,
  amount: number,
  reason: string,
): StripeObject {
  return {
    id,
    object: 'dispute',
    amount,
    balance_transactions: [],
    charge: charge['id'],
    created,
    currency: charge['currency'],
    enhanced_eligibility_types: [],
    evidence: Object.fromEntries(evidenceFields.map((f) => [f, null])),
    evidence_details: {
      due_by: created + 7 * 24 * 3600,
      enhanced_eligibility: {},
      has_evidence: false,
      past_due: false,
      submission_count: 0,
    },
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    payment_intent: charge['payment_intent'],
    payment_method_details: {
      card: {
        brand: charge['payment_method_details']?.card?.brand ?? 'visa',
        case_type: 'chargeback',
        network_reason_code: '10.4',
      },
      type: 'card',
    },
    reason,
    status: 'needs_response',
  };
}

/** Statuses of a dispute the merchant can still answer. */
const disputeOpen = ['warning_needs_response', 'warning_under_review', 'needs_response', 'under_review'];

// --- Hosted pages --------------------------------------------------------------------------------------------------

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>
<body>
<main>
<p><strong>Test mode.</strong> This local processor stands in for Stripe; no real card or bank is involved.</p>
${body}
</main>
</body>
</html>
`;
}

function checkoutPage(session: StripeObject, formToken: string): string {
  const cards = Object.entries(testCards)
    .map(
      ([token, card], i) =>
        `<p><label><input type="radio" name="card" value="${token}"${i === 0 ? ' checked' : ''}> ${escapeHtml(card.label)} (<code>${token}</code>)</label></p>`,
    )
    .join('\n');
  const cancel = session['cancel_url']
    ? `<p><a href="${escapeHtml(session['cancel_url'])}">Cancel and go back</a></p>`
    : '';
  return page(
    'Save a card',
    `<h1>Save a card for later payments</h1>
<p>The card is saved now and charged later, when you are not here, for the purchases you allow.</p>
<form method="post" action="/c/pay/${escapeHtml(session['id'])}">
<input type="hidden" name="form_token" value="${formToken}">
<fieldset><legend>Test card</legend>
${cards}
</fieldset>
<button type="submit">Save card</button>
</form>
${cancel}`,
  );
}

function onboardingPage(accountId: string, linkToken: string, formToken: string): string {
  return page(
    'Set up payouts',
    `<h1>Set up payouts</h1>
<p>Submitting fills in test business details and a test bank account for <code>${escapeHtml(accountId)}</code>, so
payouts and charges are enabled for it.</p>
<form method="post" action="/setup/e/${escapeHtml(accountId)}/${escapeHtml(linkToken)}">
<input type="hidden" name="form_token" value="${formToken}">
<button type="submit">Submit test details</button>
</form>`,
  );
}

const pageHeaders = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  // No script, style or frame is needed; form-action stays open because the submit redirects to the app's URL.
  'content-security-policy': "default-src 'none'; base-uri 'none'; frame-ancestors 'none'",
};

/** What a hosted page answers: a page, or a redirect that sends the events its submit raised once written. */
type PageAnswer = { status: number; html: string } | { location: string; raised: ProcessorEvent[] };

const notice = (status: number, words: string): PageAnswer => ({
  status,
  html: page(words, `<h1>${escapeHtml(words)}</h1>`),
});

// --- Webhook targets -----------------------------------------------------------------------------------------------

/** Refuses any webhook URL whose host is not in 127.0.0.0/8 (or `localhost`): this processor never leaves the host. */
export function loopbackUrl(raw: string): URL {
  const url = new URL(raw);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`webhook URL must be http(s): ${raw}`);
  const octet = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
  const loopback = new RegExp(`^127(\\.${octet}){3}$`);
  if (url.hostname !== 'localhost' && !loopback.test(url.hostname)) {
    throw new Error(`the local processor posts webhooks to 127.0.0.0/8 only, not to ${url.host}`);
  }
  return url;
}

interface PostResult {
  status: number;
  error?: string;
}

function postWebhook(
  target: URL,
  payload: string,
  signature: string,
  timeoutMs: number,
  ca: string | undefined,
  inFlight: Set<ClientRequest>,
): Promise<PostResult> {
  const https = target.protocol === 'https:';
  const named = target.hostname === 'localhost';
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)(
      {
        method: 'POST',
        // `localhost` is pinned to 127.0.0.1 so a resolver can never send it elsewhere.
        host: named ? '127.0.0.1' : target.hostname,
        port: target.port || (https ? 443 : 80),
        path: `${target.pathname}${target.search}`,
        agent: false,
        timeout: timeoutMs,
        headers: {
          host: target.host,
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(payload),
          'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
          'stripe-signature': signature,
          'cache-control': 'no-cache',
          accept: '*/*; q=0.5, application/xml',
        },
        ...(https ? { ca, ...(named ? { servername: 'localhost' } : {}) } : {}),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', (e) => resolve({ status: res.statusCode ?? 0, error: e.message }));
      },
    );
    inFlight.add(req);
    req.on('close', () => inFlight.delete(req));
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => resolve({ status: 0, error: e.message }));
    req.end(payload);
  });
}

// --- The processor ---------------------------------------------------------------------------------------------------

/** One API call being answered. */
interface Call {
  params: Params;
  path: Record<string, string>;
  requestId: string;
  idempotencyKey: string | null;
}

interface Route {
  method: string;
  pattern: RegExp;
  handle: (call: Call) => StripeObject;
}

/** What an API call answers; `drop` closes the connection instead (the answer is lost, the effect is not). */
interface ApiAnswer {
  status: number;
  json: string;
  headers: Record<string, string>;
  raised: ProcessorEvent[];
  drop: boolean;
}

interface IdempotencyRecord {
  method: string;
  path: string;
  params: string;
  status: number;
  body: string;
  requestId: string;
}

interface AccountLink {
  account: string;
  refreshUrl: string;
  returnUrl: string;
  expiresAt: number;
  visited: boolean;
}

interface Target {
  url: URL | null;
  secret: string;
}

class Processor implements StripeProcessor {
  readonly events: ProcessorEvent[] = [];
  readonly deliveries: Delivery[] = [];
  readonly apiKey: string;
  readonly webhookSecret: string;
  readonly connectWebhookSecret: string;
  url = '';
  port = 0;
  balanceCents: number;

  readonly #server: Server;
  readonly #now: () => number;
  readonly #apiVersion: string;
  readonly #enabledEvents: readonly string[];
  readonly #retryDelaysMs: readonly number[];
  readonly #timeoutMs: number;
  readonly #ca: string | undefined;
  readonly #routes: Route[];
  /** Every object by id; ids carry their kind in the prefix, and a Map keeps creation order for lists. */
  readonly #objects = new Map<string, StripeObject>();
  /** Which test card a payment method came from: what a charge on it does. */
  readonly #cardOf = new Map<string, TestCard>();
  readonly #createdWithKey = new Map<string, string | null>();
  readonly #idempotency = new Map<string, IdempotencyRecord>();
  readonly #accountLinks = new Map<string, AccountLink>();
  /** Hidden form tokens of the hosted pages, by page path: a submit must come from the page it was shown on. */
  readonly #formTokens = new Map<string, string>();
  readonly #failures: Array<{ method: string | null; path: string; failure: Failure; remaining: number }> = [];
  #main: Target;
  #connect: Target;
  #connectFollowsMain: boolean;

  // Delivery state: events wait in `#pending` while held or without a URL; first attempts run one after another
  // through `#queue` (so arrival order is creation order unless a test reorders), retries join it after their delay.
  #held = false;
  readonly #pending: ProcessorEvent[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #busy = 0;
  #idleWaiters: Array<() => void> = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #inFlight = new Set<ClientRequest>();
  /** Events raised while one request is handled; sent only after its answer is written. */
  #raised: ProcessorEvent[] | null = null;
  /** The API call being handled: events it raises name its request id and Idempotency-Key, as Stripe's do. */
  #call: Call | null = null;
  #closed = false;

  constructor(server: Server, options: StripeProcessorOptions) {
    this.#server = server;
    this.#now = options.now ?? Date.now;
    this.apiKey = options.apiKey ?? `sk_test_${randomToken(48)}`;
    if (!this.apiKey.startsWith('sk_test_')) throw new Error('the local processor takes test keys only (sk_test_...)');
    this.webhookSecret = options.webhookSecret ?? `whsec_${randomToken(32)}`;
    this.connectWebhookSecret = options.connectWebhookSecret ?? this.webhookSecret;
    this.#apiVersion = options.apiVersion ?? Stripe.API_VERSION;
    this.#enabledEvents = options.enabledEvents ?? ['*'];
    this.#retryDelaysMs = options.webhookRetryDelaysMs ?? retryDelaysDefaultMs;
    this.#timeoutMs = options.webhookTimeoutMs ?? webhookTimeoutDefaultMs;
    this.#ca = options.webhookCa;
    this.balanceCents = options.balanceCents ?? 1_000_000_000;
    this.#main = { url: options.webhookUrl ? loopbackUrl(options.webhookUrl) : null, secret: this.webhookSecret };
    this.#connectFollowsMain = options.connectWebhookUrl === undefined;
    const connectUrl = this.#connectFollowsMain ? options.webhookUrl : options.connectWebhookUrl;
    this.#connect = { url: connectUrl ? loopbackUrl(connectUrl) : null, secret: this.connectWebhookSecret };
    this.#routes = this.#routeTable();
  }

  // --- Routes ------------------------------------------------------------------------------------------------------

  #routeTable(): Route[] {
    const route = (method: string, path: string, handle: (call: Call) => StripeObject): Route => ({
      method,
      pattern: new RegExp(`^${path.replace(/:(\w+)/g, '(?<$1>[^/]+)')}$`),
      handle,
    });
    return [
      route('POST', '/v1/customers', (c) => this.#createCustomer(c)),
      route('GET', '/v1/customers/:id', (c) => this.#retrieve(c, 'customer', 'customer')),
      route('POST', '/v1/customers/:id', (c) => this.#updateCustomer(c)),
      route('POST', '/v1/checkout/sessions', (c) => this.#createCheckoutSession(c)),
      route('GET', '/v1/checkout/sessions/:id', (c) => this.#retrieve(c, 'checkout.session', 'checkout.session')),
      route('GET', '/v1/setup_intents/:id', (c) => this.#retrieve(c, 'setup_intent', 'setupintent')),
      route('GET', '/v1/payment_methods/:id', (c) => this.#retrieve(c, 'payment_method', 'PaymentMethod')),
      route('POST', '/v1/payment_methods/:id/attach', (c) => this.#attachPaymentMethod(c)),
      route('POST', '/v1/payment_methods/:id/detach', (c) => this.#detachPaymentMethod(c)),
      route('POST', '/v1/payment_intents', (c) => this.#createPaymentIntent(c)),
      route('GET', '/v1/payment_intents/:id', (c) => this.#retrieve(c, 'payment_intent', 'payment_intent')),
      route('GET', '/v1/charges/:id', (c) => this.#retrieve(c, 'charge', 'charge')),
      route('POST', '/v1/refunds', (c) => this.#createRefund(c)),
      route('GET', '/v1/refunds/:id', (c) => this.#retrieve(c, 'refund', 'refund')),
      route('GET', '/v1/disputes/:id', (c) => this.#retrieve(c, 'dispute', 'dispute')),
      route('POST', '/v1/disputes/:id', (c) => this.#updateDispute(c)),
      route('POST', '/v1/disputes/:id/close', (c) => this.#closeDispute(c)),
      route('POST', '/v1/accounts', (c) => this.#createAccount(c)),
      route('GET', '/v1/accounts/:id', (c) => this.#retrieve(c, 'account', 'account')),
      route('POST', '/v1/account_links', (c) => this.#createAccountLink(c)),
      route('POST', '/v1/transfers', (c) => this.#createTransfer(c)),
      route('GET', '/v1/transfers', (c) => this.#listTransfers(c)),
      route('GET', '/v1/transfers/:id', (c) => this.#retrieve(c, 'transfer', 'transfer')),
      route('GET', '/v1/events/:id', (c) => this.#retrieveEvent(c)),
    ];
  }

  // --- HTTP ----------------------------------------------------------------------------------------------------------

  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const body = await readBody(req).catch(() => null);
    if (url.pathname.startsWith('/v1/')) this.#serveApi(req, res, url, body);
    else if (body === null) res.writeHead(413).end();
    else this.#servePage(req, res, url, body);
  }

  /** Writes the answer, then sends the events the call raised; a dropped connection still sends them if the call
   * took effect. */
  #serveApi(req: IncomingMessage, res: ServerResponse, url: URL, body: string | null): void {
    const answer = this.#answerApi(req, url, body);
    if (answer.drop) {
      this.#dispatchAfter(answer.raised);
      req.socket.destroy();
      return;
    }
    res.once('close', () => this.#dispatchAfter(answer.raised));
    res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json' }).end(answer.json);
  }

  #answerApi(req: IncomingMessage, url: URL, body: string | null): ApiAnswer {
    const requestId = `req_${randomToken(14)}`;
    const method = req.method ?? 'GET';
    const headers: Record<string, string> = { 'request-id': requestId, 'stripe-version': this.#apiVersion };
    const answer = (status: number, json: string, raised: ProcessorEvent[] = [], drop = false): ApiAnswer => ({
      status,
      json,
      headers,
      raised,
      drop,
    });
    try {
      if (body === null)
        throw invalidRequest(`Request bodies are limited to ${bodyBytesMax} bytes.`, undefined, undefined, 413);
      this.#authenticate(req);
      headers['stripe-version'] = this.#version(req);
      const failure = this.#takeFailure(method, url.pathname);
      if (failure === 'drop') return answer(0, '', [], true);
      if (typeof failure === 'number') {
        throw new StripeFault(failure, { type: 'api_error', message: 'An unknown error occurred (failNext).' });
      }
      const { route, path } = this.#match(method, url.pathname);
      const params = parseForm(method === 'POST' ? body : url.search.slice(1));
      const idempotencyKey = method === 'POST' ? this.#idempotencyKey(req) : null;
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      const fingerprint = { method, path: url.pathname, params: canonical(params) };
      const earlier = idempotencyKey ? this.#idempotency.get(idempotencyKey) : undefined;
      if (earlier) {
        this.#checkSameRequest(earlier, fingerprint, idempotencyKey!);
        headers['idempotent-replayed'] = 'true';
        headers['original-request'] = earlier.requestId;
        return answer(earlier.status, earlier.body, [], failure === 'drop-after');
      }
      const call: Call = { params, path, requestId, idempotencyKey };
      const { status, json, raised } = this.#run(call, route);
      // Stripe keeps a key's result once the endpoint began executing: successes and card declines. A request
      // refused as invalid stores nothing, so the same key with corrected parameters may run later.
      if (idempotencyKey && (status < 400 || status === 402)) {
        this.#idempotency.set(idempotencyKey, { ...fingerprint, status, body: json, requestId });
      }
      return answer(status, json, raised, failure === 'drop-after');
    } catch (e) {
      if (!(e instanceof StripeFault)) throw e;
      return answer(e.status, this.#errorJson(e, requestId));
    }
  }

  /** Runs a handler with events collected, and renders its answer or its refusal. */
  #run(call: Call, route: Route): { status: number; json: string; raised: ProcessorEvent[] } {
    this.#raised = [];
    this.#call = call;
    try {
      const object = route.handle(call);
      return { status: 200, json: this.#render(object, list(call.params, 'expand')), raised: this.#raised };
    } catch (e) {
      if (!(e instanceof StripeFault)) throw e;
      return { status: e.status, json: this.#errorJson(e, call.requestId), raised: this.#raised };
    } finally {
      this.#raised = null;
      this.#call = null;
    }
  }

  #errorJson(fault: StripeFault, requestId: string): string {
    const logUrl = { request_log_url: `https://dashboard.stripe.com/test/logs/${requestId}` };
    return JSON.stringify({ error: { ...fault.body, ...(fault.body.type === 'api_error' ? {} : logUrl) } }, null, 2);
  }

  #authenticate(req: IncomingMessage): void {
    const header = req.headers.authorization ?? '';
    let key = '';
    if (header.startsWith('Bearer ')) key = header.slice(7).trim();
    // Stripe also takes the key as the user name of Basic auth.
    else if (header.startsWith('Basic ')) key = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':')[0]!;
    if (!key) {
      throw invalidRequest(
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
        undefined,
        undefined,
        401,
      );
    }
    if (key !== this.apiKey) {
      throw invalidRequest(
        `Invalid API Key provided: ${key.slice(0, 8)}****${key.slice(-4)}`,
        undefined,
        undefined,
        401,
      );
    }
    if (req.headers['stripe-account']) {
      throw invalidRequest('The local processor does not act on behalf of connected accounts (Stripe-Account).');
    }
  }

  #version(req: IncomingMessage): string {
    const asked = req.headers['stripe-version'];
    if (asked === undefined) return this.#apiVersion;
    if (typeof asked !== 'string' || !/^\d{4}-\d{2}-\d{2}(\.[a-z]+)?$/.test(asked)) {
      throw invalidRequest(`Invalid Stripe API version: ${String(asked)}`);
    }
    return asked;
  }

  #idempotencyKey(req: IncomingMessage): string | null {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return null;
    if (key.length > idempotencyKeyCharsMax) {
      throw invalidRequest(`Idempotency keys can be up to ${idempotencyKeyCharsMax} characters long.`);
    }
    return key;
  }

  #checkSameRequest(earlier: IdempotencyRecord, now: { method: string; path: string; params: string }, key: string) {
    if (earlier.method !== now.method || earlier.path !== now.path) {
      throw new StripeFault(400, {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${earlier.method} ${earlier.path}' vs '${now.method} ${now.path}'). Try using a key other than '${key}' if you meant to execute a different request.`,
      });
    }
    if (earlier.params !== now.params) {
      throw new StripeFault(400, {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
      });
    }
  }

  #match(method: string, pathname: string): { route: Route; path: Record<string, string> } {
    for (const route of this.#routes) {
      const m = route.method === method ? route.pattern.exec(pathname) : null;
      if (m) return { route, path: { ...m.groups } };
    }
    throw invalidRequest(
      `Unrecognized request URL (${method}: ${pathname}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
      undefined,
      undefined,
      404,
    );
  }

  #takeFailure(method: string, pathname: string): Failure | null {
    const found = this.#failures.find((f) => f.path === pathname && (f.method === null || f.method === method));
    if (!found) return null;
    found.remaining -= 1;
    if (found.remaining <= 0) this.#failures.splice(this.#failures.indexOf(found), 1);
    return found.failure;
  }

  /** Renders an object with the `expand` paths replaced by the objects their ids name (`setup_intent.payment_method`). */
  #render(object: StripeObject, expand: string[]): string {
    const out = structuredClone(object);
    for (const path of expand) this.#expand(out, path.split('.'), path);
    return JSON.stringify(out, null, 2);
  }

  #expand(target: StripeObject, segments: string[], path: string): void {
    const [head, ...rest] = segments;
    const value = target[head!];
    if (value === undefined) throw invalidRequest(`This property cannot be expanded (${path}).`, 'expand');
    if (typeof value === 'string') {
      const found = this.#objects.get(value);
      if (!found) throw invalidRequest(`This property cannot be expanded (${path}).`, 'expand');
      target[head!] = structuredClone(found);
    }
    if (rest.length > 0 && typeof target[head!] === 'object' && target[head!] !== null) {
      this.#expand(target[head!], rest, path);
    }
  }

  // --- Customers ------------------------------------------------------------------------------------------------------

  #createCustomer(call: Call): StripeObject {
    const p = call.params;
    known(p, ['email', 'name', 'description', 'phone', 'metadata', 'invoice_settings']);
    const customer = customerObject(newId('cus'), this.#seconds(), {
      email: text(p, 'email'),
      name: text(p, 'name'),
      description: text(p, 'description'),
      phone: text(p, 'phone'),
      metadata: metadataParam(p),
    });
    this.#store(customer);
    this.#applyInvoiceSettings(customer, p);
    return customer;
  }

  #updateCustomer(call: Call): StripeObject {
    const customer = this.#get(call.path['id']!, 'customer', 'customer', 'id', 404);
    const p = call.params;
    known(p, ['email', 'name', 'description', 'phone', 'metadata', 'invoice_settings']);
    for (const field of ['email', 'name', 'description', 'phone']) {
      if (p[field] !== undefined) customer[field] = text(p, field) ?? null;
    }
    customer['metadata'] = metadataParam(p, customer['metadata']);
    this.#applyInvoiceSettings(customer, p);
    return customer;
  }

  /** `invoice_settings[default_payment_method]` must name a card attached to this customer; empty clears it. */
  #applyInvoiceSettings(customer: StripeObject, p: Params): void {
    const settings = p['invoice_settings'];
    if (settings === undefined) return;
    if (typeof settings !== 'object' || settings === null) throw invalidRequest('Invalid hash', 'invoice_settings');
    const s = settings as Params;
    known(s, ['default_payment_method']);
    if (s['default_payment_method'] === undefined) return;
    const pmId = text(s, 'default_payment_method');
    const param = 'invoice_settings[default_payment_method]';
    if (pmId === undefined) {
      customer['invoice_settings'].default_payment_method = null;
      return;
    }
    const pm = this.#objects.get(pmId);
    if (pm?.['object'] !== 'payment_method') throw noSuch('PaymentMethod', pmId, param);
    if (pm['customer'] !== customer['id']) {
      throw invalidRequest(
        `The customer does not have a payment method with the ID ${pmId}.`,
        param,
        'resource_missing',
      );
    }
    customer['invoice_settings'].default_payment_method = pmId;
  }

  // --- Checkout (setup mode) ------------------------------------------------------------------------------------------

  #createCheckoutSession(call: Call): StripeObject {
    const p = call.params;
    known(p, [
      'mode',
      'customer',
      'customer_email',
      'success_url',
      'cancel_url',
      'currency',
      'metadata',
      'allowed_payment_method_types',
      'excluded_payment_method_types',
      'client_reference_id',
      'setup_intent_data',
    ]);
    const mode = text(p, 'mode', true);
    if (mode !== 'setup') throw invalidRequest(`The local processor supports mode=setup only, not ${mode}.`, 'mode');
    const customer = text(p, 'customer');
    if (customer !== undefined) this.#get(customer, 'customer', 'customer', 'customer');
    const allowed = cardOffered(p);
    // The pinned API version has no `payment_method_types` here; without the filter, Checkout needs a currency.
    if (allowed === null) text(p, 'currency', true);
    const setupData = (p['setup_intent_data'] ?? {}) as Params;
    known(setupData, ['metadata', 'description']);
    const created = this.#seconds();
    const setupIntent = setupIntentObject(newId('seti'), created, customer ?? null, metadataParam(setupData));
    this.#store(setupIntent);
    const id = newId('cs_test');
    const session = checkoutSessionObject(id, created, {
      cancel_url: text(p, 'cancel_url'),
      success_url: text(p, 'success_url', true),
      client_reference_id: text(p, 'client_reference_id'),
      currency: p['currency'] === undefined ? undefined : currencyParam(p),
      customer,
      customer_email: text(p, 'customer_email'),
      metadata: metadataParam(p),
      allowed_payment_method_types: allowed,
      setup_intent: setupIntent['id'],
      url: `${this.url}/c/pay/${id}`,
    });
    this.#store(session);
    return session;
  }

  completeCheckout(sessionId: string, card: TestCardToken): StripeObject {
    const session = this.#objects.get(sessionId);
    if (session?.['object'] !== 'checkout.session') throw new Error(`no Checkout Session ${sessionId}`);
    if (session['status'] !== 'open')
      throw new Error(`Checkout Session ${sessionId} is ${session['status']}, not open`);
    if (!isTestCard(card)) throw new Error(`unknown test card ${card}`);
    const pm = this.#newPaymentMethod(card, session['customer']);
    const setupIntent = this.#objects.get(session['setup_intent'])!;
    Object.assign(setupIntent, { status: 'succeeded', payment_method: pm['id'], latest_attempt: newId('setatt') });
    const customer = session['customer'] ? this.#objects.get(session['customer']) : undefined;
    Object.assign(session, {
      status: 'complete',
      url: null,
      customer_details: {
        address: null,
        email: customer?.['email'] ?? session['customer_email'],
        name: customer?.['name'] ?? null,
        phone: null,
        tax_exempt: 'none',
        tax_ids: [],
      },
    });
    this.#raise('setup_intent.succeeded', setupIntent);
    this.#raise('checkout.session.completed', session);
    return session;
  }

  // --- Payment methods ------------------------------------------------------------------------------------------------

  #newPaymentMethod(token: TestCardToken, customer: string | null): StripeObject {
    const card = testCards[token];
    const pm = paymentMethodObject(newId('pm'), this.#seconds(), card, customer);
    this.#cardOf.set(pm['id'], card);
    this.#store(pm);
    return pm;
  }

  /** Attaching a test token makes a fresh payment method from that card, as Stripe does. */
  #attachPaymentMethod(call: Call): StripeObject {
    known(call.params, ['customer']);
    const customerId = text(call.params, 'customer', true)!;
    this.#get(customerId, 'customer', 'customer', 'customer');
    const id = call.path['id']!;
    if (isTestCard(id)) return this.#newPaymentMethod(id, customerId);
    const pm = this.#get(id, 'payment_method', 'PaymentMethod', 'payment_method', 404);
    if (pm['customer'] && pm['customer'] !== customerId) {
      throw invalidRequest(
        'The payment method you provided has already been attached to a customer.',
        'payment_method',
      );
    }
    pm['customer'] = customerId;
    return pm;
  }

  #detachPaymentMethod(call: Call): StripeObject {
    known(call.params, []);
    const pm = this.#get(call.path['id']!, 'payment_method', 'PaymentMethod', 'payment_method', 404);
    if (!pm['customer']) throw invalidRequest('The payment method you provided is not attached to a customer.');
    pm['customer'] = null;
    return pm;
  }

  // --- Payment intents ------------------------------------------------------------------------------------------------

  #createPaymentIntent(call: Call): StripeObject {
    const p = call.params;
    known(p, [
      'amount',
      'currency',
      'customer',
      'payment_method',
      'allowed_payment_method_types',
      'excluded_payment_method_types',
      'off_session',
      'confirm',
      'metadata',
      'description',
      'transfer_group',
      'statement_descriptor_suffix',
    ]);
    const amount = integer(p, 'amount', true)!;
    const currency = currencyParam(p);
    if (amount < amountMinimum) {
      throw invalidRequest(
        `Amount must be at least ${amountMinimum} ${currency} (minor units).`,
        'amount',
        'amount_too_small',
      );
    }
    const customer = text(p, 'customer');
    if (customer !== undefined) this.#get(customer, 'customer', 'customer', 'customer');
    const allowed = cardOffered(p);
    const confirm = flag(p, 'confirm');
    // `off_session` also takes the older values one_off and recurring, both meaning true.
    const offSession = ['true', 'one_off', 'recurring'].includes(String(p['off_session']));
    if (offSession && !confirm)
      throw invalidRequest('`off_session` can only be used with `confirm=true`.', 'off_session');
    const pmId = text(p, 'payment_method');
    if (confirm && pmId === undefined) {
      throw invalidRequest(
        "You cannot confirm this PaymentIntent because it's missing a payment method. Specify a payment method attached to the customer.",
        'payment_method',
        'payment_intent_unexpected_state',
      );
    }
    const pm = pmId === undefined ? null : this.#paymentMethodFor(pmId, customer ?? null);
    const pi = paymentIntentObject(newId('pi'), this.#seconds(), {
      amount,
      currency,
      customer,
      payment_method: pm?.['id'],
      allowed_payment_method_types: allowed,
      metadata: metadataParam(p),
      description: text(p, 'description'),
      transfer_group: text(p, 'transfer_group'),
    });
    this.#store(pi);
    this.#createdWithKey.set(pi['id'], call.idempotencyKey);
    return confirm && pm ? this.#confirm(pi, pm, offSession) : pi;
  }

  #paymentMethodFor(id: string, customer: string | null): StripeObject {
    if (isTestCard(id)) return this.#newPaymentMethod(id, null);
    const pm = this.#get(id, 'payment_method', 'PaymentMethod', 'payment_method');
    if (pm['customer'] && customer === null) {
      throw invalidRequest(
        'The provided PaymentMethod is attached to a Customer; supply that Customer in the `customer` parameter.',
        'customer',
      );
    }
    if (pm['customer'] && pm['customer'] !== customer) {
      throw invalidRequest(`The provided PaymentMethod ${id} belongs to another Customer.`, 'payment_method');
    }
    return pm;
  }

  /** Charges the card: what happens depends on the test card the payment method came from. */
  #confirm(pi: StripeObject, pm: StripeObject, offSession: boolean): StripeObject {
    const outcome = this.#cardOf.get(pm['id'])!.outcome;
    if (outcome === 'authentication_required' && !offSession) {
      // On session the customer could authenticate: Stripe asks for it instead of failing.
      Object.assign(pi, {
        status: 'requires_action',
        next_action: { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } },
      });
      this.#raise('payment_intent.requires_action', pi);
      return pi;
    }
    const charge = chargeObject(newId('ch'), this.#seconds(), pi, pm, outcome);
    this.#store(charge);
    pi['latest_charge'] = charge['id'];
    if (outcome === 'succeed') {
      Object.assign(pi, { status: 'succeeded', amount_received: pi['amount'] });
      this.balanceCents += pi['amount'];
      this.#raise('payment_intent.succeeded', pi);
      return pi;
    }
    const decline = declines[outcome];
    const error = {
      type: 'card_error',
      ...decline,
      charge: charge['id'],
      doc_url: docUrl(decline.code),
      payment_method: structuredClone(pm),
    };
    // A failed attempt leaves the intent waiting for another payment method, with the error on it.
    Object.assign(pi, { status: 'requires_payment_method', payment_method: null, last_payment_error: error });
    this.#raise('payment_intent.payment_failed', pi);
    throw new StripeFault(402, { ...error, payment_intent: structuredClone(pi) });
  }

  // --- Refunds and disputes -----------------------------------------------------------------------------------------

  /** A refund of a succeeded charge (named, or its PaymentIntent's): the charge's `amount_refunded` grows. */
  #createRefund(call: Call): StripeObject {
    const p = call.params;
    known(p, ['charge', 'payment_intent', 'amount', 'reason', 'metadata', 'instructions_email', 'origin']);
    const chargeId = text(p, 'charge');
    const intentId = text(p, 'payment_intent');
    if ((chargeId === undefined) === (intentId === undefined)) {
      throw invalidRequest(
        'One of the following params should be provided for this request: payment_intent or charge.',
      );
    }
    let charge: StripeObject;
    if (chargeId !== undefined) charge = this.#get(chargeId, 'charge', 'charge', 'charge');
    else {
      const pi = this.#get(intentId!, 'payment_intent', 'payment_intent', 'payment_intent');
      if (!pi['latest_charge']) {
        throw invalidRequest(
          `This PaymentIntent (${intentId}) does not have a successful charge to refund.`,
          'payment_intent',
        );
      }
      charge = this.#objects.get(pi['latest_charge'])!;
    }
    const reason = text(p, 'reason');
    if (reason !== undefined && !['duplicate', 'fraudulent', 'requested_by_customer'].includes(reason)) {
      throw invalidRequest(`Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer`, 'reason');
    }
    if (!charge['paid'])
      throw invalidRequest(`Charge ${charge['id']} has not been paid.`, 'charge', 'charge_not_refundable');
    if (charge['disputed']) {
      throw invalidRequest(
        `Charge ${charge['id']} has been charged back; cannot issue a refund.`,
        undefined,
        'charge_disputed',
      );
    }
    const unrefunded = charge['amount_captured'] - charge['amount_refunded'];
    if (unrefunded === 0) {
      throw invalidRequest(`Charge ${charge['id']} has already been refunded.`, undefined, 'charge_already_refunded');
    }
    const amount = integer(p, 'amount') ?? unrefunded;
    if (amount < 1) throw invalidRequest('This value must be greater than or equal to 1.', 'amount');
    if (amount > unrefunded) {
      throw invalidRequest(
        `Refund amount ($${(amount / 100).toFixed(2)}) is greater than unrefunded amount on charge ($${(unrefunded / 100).toFixed(2)})`,
        'amount',
      );
    }
    const refund = refundObject(newId('re'), this.#seconds(), {
      amount,
      charge: charge['id'],
      currency: charge['currency'],
      payment_intent: charge['payment_intent'],
      reason,
      metadata: metadataParam(p),
    });
    this.#store(refund);
    this.#createdWithKey.set(refund['id'], call.idempotencyKey);
    charge['amount_refunded'] += amount;
    charge['refunded'] = charge['amount_refunded'] === charge['amount_captured'];
    this.balanceCents -= amount;
    this.#raise('refund.created', refund);
    this.#raise('charge.refunded', charge);
    return refund;
  }

  disputeCharge(chargeId: string, options: { amount?: number; reason?: string } = {}): StripeObject {
    const charge = this.#objects.get(chargeId);
    if (charge?.['object'] !== 'charge') throw new Error(`no charge ${chargeId}`);
    if (!charge['paid']) throw new Error(`charge ${chargeId} was not paid`);
    if (charge['disputed']) throw new Error(`charge ${chargeId} is disputed already`);
    const amount = options.amount ?? charge['amount_captured'] - charge['amount_refunded'];
    const dispute = disputeObject(newId('dp'), this.#seconds(), charge, amount, options.reason ?? 'fraudulent');
    this.#store(dispute);
    charge['disputed'] = true;
    this.balanceCents -= amount;
    this.#raise('charge.dispute.created', dispute);
    this.#raise('charge.dispute.funds_withdrawn', dispute);
    return dispute;
  }

  /**
   * The merchant's answer. In test mode Stripe decides on the evidence's text: `winning_evidence` wins the dispute,
   * `losing_evidence` loses it (each after `charge.dispute.updated`); other evidence leaves it under review.
   */
  #updateDispute(call: Call): StripeObject {
    const p = call.params;
    known(p, ['evidence', 'metadata', 'submit']);
    const dispute = this.#get(call.path['id']!, 'dispute', 'dispute', 'id', 404);
    if (!disputeOpen.includes(dispute['status'])) {
      throw invalidRequest(
        `This dispute is already closed (status ${dispute['status']}).`,
        undefined,
        'dispute_already_closed',
      );
    }
    const evidence = (p['evidence'] ?? {}) as Params;
    if (typeof evidence !== 'object' || evidence === null) throw invalidRequest('Invalid hash', 'evidence');
    known(evidence, evidenceFields);
    for (const field of evidenceFields)
      if (evidence[field] !== undefined) dispute['evidence'][field] = text(evidence, field);
    dispute['metadata'] = metadataParam(p, dispute['metadata']);
    if (p['submit'] === 'false') return dispute;
    const details = dispute['evidence_details'];
    Object.assign(details, { has_evidence: true, submission_count: details.submission_count + 1 });
    dispute['status'] = dispute['status'].startsWith('warning_') ? 'warning_under_review' : 'under_review';
    this.#raise('charge.dispute.updated', dispute);
    const said = dispute['evidence']['uncategorized_text'];
    if (said === 'winning_evidence' || said === 'losing_evidence') {
      this.#settleDispute(dispute, said === 'winning_evidence' ? 'won' : 'lost');
    }
    return dispute;
  }

  /** Accepting the dispute: the merchant gives up, and the cardholder keeps the money. */
  #closeDispute(call: Call): StripeObject {
    known(call.params, []);
    const dispute = this.#get(call.path['id']!, 'dispute', 'dispute', 'id', 404);
    if (!disputeOpen.includes(dispute['status'])) {
      throw invalidRequest(
        `This dispute is already closed (status ${dispute['status']}).`,
        undefined,
        'dispute_already_closed',
      );
    }
    this.#settleDispute(dispute, 'lost');
    return dispute;
  }

  #settleDispute(dispute: StripeObject, status: 'won' | 'lost'): void {
    dispute['status'] = status;
    dispute['is_charge_refundable'] = false;
    this.#raise('charge.dispute.closed', dispute);
    if (status === 'won') {
      this.balanceCents += dispute['amount'];
      this.#raise('charge.dispute.funds_reinstated', dispute);
    }
  }

  // --- Connect ----------------------------------------------------------------------------------------------------------

  #createAccount(call: Call): StripeObject {
    const p = call.params;
    known(p, ['type', 'country', 'email', 'metadata', 'capabilities', 'business_type', 'default_currency']);
    const type = text(p, 'type') ?? 'express';
    if (!['express', 'standard', 'custom'].includes(type)) throw invalidRequest(`Invalid type: ${type}`, 'type');
    const asked = (p['capabilities'] ?? {}) as Params;
    const capabilities: Record<string, string> = {};
    for (const [name, request] of Object.entries(asked)) {
      if ((request as Params)?.['requested'] === 'true') capabilities[name] = 'inactive';
    }
    const account = accountObject(newId('acct'), this.#seconds(), {
      type,
      country: text(p, 'country'),
      email: text(p, 'email'),
      metadata: metadataParam(p),
      capabilities,
      default_currency: p['default_currency'] === undefined ? undefined : text(p, 'default_currency')!.toLowerCase(),
    });
    this.#store(account);
    return account;
  }

  #createAccountLink(call: Call): StripeObject {
    const p = call.params;
    known(p, ['account', 'refresh_url', 'return_url', 'type', 'collect', 'collection_options']);
    const accountId = text(p, 'account', true)!;
    const type = text(p, 'type', true);
    if (type !== 'account_onboarding' && type !== 'account_update')
      throw invalidRequest(`Invalid type: ${type}`, 'type');
    const refreshUrl = text(p, 'refresh_url', true)!;
    const returnUrl = text(p, 'return_url', true)!;
    this.#get(accountId, 'account', 'account', 'account');
    const created = this.#seconds();
    const token = randomToken(32);
    const expiresAt = created + accountLinkLifetimeSeconds;
    this.#accountLinks.set(token, { account: accountId, refreshUrl, returnUrl, expiresAt, visited: false });
    return { object: 'account_link', created, expires_at: expiresAt, url: `${this.url}/setup/e/${accountId}/${token}` };
  }

  completeOnboarding(accountId: string): StripeObject {
    const account = this.#objects.get(accountId);
    if (account?.['object'] !== 'account') throw new Error(`no account ${accountId}`);
    const previous = {
      charges_enabled: account['charges_enabled'],
      payouts_enabled: account['payouts_enabled'],
      details_submitted: account['details_submitted'],
      capabilities: structuredClone(account['capabilities']),
      requirements: structuredClone(account['requirements']),
    };
    Object.assign(account, {
      business_type: 'individual',
      charges_enabled: true,
      payouts_enabled: true,
      details_submitted: true,
      capabilities: Object.fromEntries(Object.keys(account['capabilities']).map((name) => [name, 'active'])),
      requirements: requirements([], null),
      tos_acceptance: { date: this.#seconds() },
    });
    this.#raise('account.updated', account, { account: accountId, previous });
    return account;
  }

  #createTransfer(call: Call): StripeObject {
    const p = call.params;
    known(p, ['amount', 'currency', 'destination', 'transfer_group', 'metadata', 'description', 'source_transaction']);
    const amount = integer(p, 'amount', true)!;
    if (amount < 1) throw invalidRequest('This value must be greater than or equal to 1.', 'amount');
    const currency = currencyParam(p);
    const destination = text(p, 'destination', true)!;
    const account = this.#objects.get(destination);
    if (account?.['object'] !== 'account') throw noSuch('destination', destination, 'destination');
    if (account['capabilities']?.transfers !== 'active') {
      throw invalidRequest(
        'Your destination account needs to have at least one of the following capabilities enabled: transfers, crypto_transfers, legacy_payments',
        'destination',
        'insufficient_capabilities_for_transfer',
      );
    }
    if (amount > this.balanceCents) {
      throw invalidRequest(
        'You have insufficient available funds in your Stripe account. Try adding funds directly to your available balance by creating Charges using the 4000000000000077 test card.',
        undefined,
        'balance_insufficient',
      );
    }
    const transfer = transferObject(newId('tr'), this.#seconds(), {
      amount,
      currency,
      destination,
      transfer_group: text(p, 'transfer_group'),
      description: text(p, 'description'),
      metadata: metadataParam(p),
    });
    this.balanceCents -= amount;
    this.#store(transfer);
    this.#createdWithKey.set(transfer['id'], call.idempotencyKey);
    this.#raise('transfer.created', transfer);
    return transfer;
  }

  /** Stripe's list shape, newest first, with `limit`, cursors and the `destination`/`transfer_group` filters. */
  #listTransfers(call: Call): StripeObject {
    const p = call.params;
    known(p, ['limit', 'destination', 'transfer_group', 'starting_after', 'ending_before', 'created']);
    const limit = integer(p, 'limit') ?? 10;
    if (limit < 1 || limit > listLimitMax) {
      throw invalidRequest(`This value must be between 1 and ${listLimitMax}.`, 'limit');
    }
    const destination = text(p, 'destination');
    const group = text(p, 'transfer_group');
    let all = [...this.#objects.values()]
      .filter((o) => o['object'] === 'transfer')
      .filter(
        (o) =>
          (destination === undefined || o['destination'] === destination) &&
          (group === undefined || o['transfer_group'] === group),
      )
      .reverse();
    const after = text(p, 'starting_after');
    const before = text(p, 'ending_before');
    if (after !== undefined) all = all.slice(this.#cursorIndex(all, after, 'starting_after') + 1);
    let page: StripeObject[];
    if (before !== undefined) {
      const end = this.#cursorIndex(all, before, 'ending_before');
      page = all.slice(Math.max(0, end - limit), end);
      return { object: 'list', data: page, has_more: end - limit > 0, url: '/v1/transfers' };
    }
    page = all.slice(0, limit);
    return { object: 'list', data: page, has_more: all.length > limit, url: '/v1/transfers' };
  }

  #cursorIndex(items: StripeObject[], id: string, param: string): number {
    const index = items.findIndex((o) => o['id'] === id);
    if (index < 0) throw noSuch('transfer', id, param);
    return index;
  }

  #retrieveEvent(call: Call): StripeObject {
    const event = this.events.find((e) => e.id === call.path['id']);
    if (!event) throw noSuch('event', call.path['id']!, 'id', 404);
    return event;
  }

  // --- Stored objects ---------------------------------------------------------------------------------------------------

  #store(object: StripeObject): void {
    this.#objects.set(object['id'], object);
  }

  #get(id: string, object: string, label: string, param: string, status = 400): StripeObject {
    const found = this.#objects.get(id);
    if (found?.['object'] !== object) throw noSuch(label, id, param, status);
    return found;
  }

  #retrieve(call: Call, object: string, label: string): StripeObject {
    known(call.params, []);
    return this.#get(call.path['id']!, object, label, 'id', 404);
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  object(id: string): StripeObject | undefined {
    return this.#objects.get(id);
  }

  get paymentIntents(): PaymentIntentRecord[] {
    return [...this.#objects.values()]
      .filter((o) => o['object'] === 'payment_intent')
      .map((pi) => ({
        id: pi['id'],
        amount: pi['amount'],
        currency: pi['currency'],
        customer: pi['customer'],
        status: pi['status'],
        metadata: { ...pi['metadata'] },
        idempotencyKey: this.#createdWithKey.get(pi['id']) ?? null,
      }));
  }

  get transfers(): TransferRecord[] {
    return [...this.#objects.values()]
      .filter((o) => o['object'] === 'transfer')
      .map((tr) => ({
        id: tr['id'],
        amount: tr['amount'],
        currency: tr['currency'],
        destination: tr['destination'],
        transfer_group: tr['transfer_group'],
        metadata: { ...tr['metadata'] },
        idempotencyKey: this.#createdWithKey.get(tr['id']) ?? null,
      }));
  }

  setBalance(cents: number): void {
    this.balanceCents = cents;
  }

  failNext(route: string, failure: Failure = 500, times = 1): void {
    const [method, path] = route.includes(' ') ? route.split(' ', 2) : [null, route];
    this.#failures.push({ method: method ?? null, path: path!, failure, remaining: times });
  }

  // --- Hosted pages ------------------------------------------------------------------------------------------------------

  #servePage(req: IncomingMessage, res: ServerResponse, url: URL, body: string): void {
    const answer = this.#page(req.method ?? 'GET', url.pathname, body);
    if ('html' in answer) {
      res.writeHead(answer.status, pageHeaders).end(answer.html);
      return;
    }
    res.once('close', () => this.#dispatchAfter(answer.raised));
    res.writeHead(303, { location: answer.location, 'cache-control': 'no-store' }).end();
  }

  #page(method: string, path: string, body: string): PageAnswer {
    const checkout = /^\/c\/pay\/([^/]+)$/.exec(path);
    const onboarding = /^\/setup\/e\/([^/]+)\/([^/]+)$/.exec(path);
    if (checkout && method === 'GET') return this.#checkoutGet(checkout[1]!, path);
    if (checkout && method === 'POST') return this.#checkoutPost(checkout[1]!, path, new URLSearchParams(body));
    if (onboarding && method === 'GET') return this.#onboardingGet(onboarding[2]!, path);
    if (onboarding && method === 'POST') return this.#onboardingPost(onboarding[2]!, path, new URLSearchParams(body));
    return notice(404, 'Not found');
  }

  #checkoutGet(id: string, path: string): PageAnswer {
    const session = this.#objects.get(id);
    if (session?.['object'] !== 'checkout.session') return notice(404, 'No such Checkout Session');
    if (session['status'] !== 'open') return notice(410, 'This Checkout Session is no longer open.');
    return { status: 200, html: checkoutPage(session, this.#formToken(path)) };
  }

  #checkoutPost(id: string, path: string, form: URLSearchParams): PageAnswer {
    const session = this.#objects.get(id);
    if (session?.['object'] !== 'checkout.session' || form.get('form_token') !== this.#formTokens.get(path)) {
      return notice(400, 'This form has expired. Open the page again.');
    }
    if (session['status'] !== 'open') return notice(410, 'This Checkout Session is no longer open.');
    const card = form.get('card') ?? '';
    if (!isTestCard(card)) return notice(400, 'Choose one of the test cards.');
    const raised = this.#collecting(() => this.completeCheckout(id, card));
    // Stripe fills in the template `{CHECKOUT_SESSION_ID}` in success_url.
    return { location: String(session['success_url']).replaceAll('{CHECKOUT_SESSION_ID}', id), raised };
  }

  /** An account link works once: a second visit, or one after it expired, is sent to refresh_url for a new link. */
  #onboardingGet(token: string, path: string): PageAnswer {
    const link = this.#accountLinks.get(token);
    if (!link) return notice(404, 'No such account link');
    if (link.visited || this.#seconds() > link.expiresAt) return { location: link.refreshUrl, raised: [] };
    link.visited = true;
    return { status: 200, html: onboardingPage(link.account, token, this.#formToken(path)) };
  }

  #onboardingPost(token: string, path: string, form: URLSearchParams): PageAnswer {
    const link = this.#accountLinks.get(token);
    if (!link || form.get('form_token') !== this.#formTokens.get(path)) {
      return notice(400, 'This form has expired. Start again from the app.');
    }
    this.#formTokens.delete(path);
    const raised = this.#collecting(() => this.completeOnboarding(link.account));
    return { location: link.returnUrl, raised };
  }

  #formToken(path: string): string {
    const token = randomToken(32);
    this.#formTokens.set(path, token);
    return token;
  }

  // --- Events and delivery ------------------------------------------------------------------------------------------------

  /** Creates an event. Raised while a request is handled, it is sent after that request's answer is written;
   * otherwise on the next turn of the event loop. */
  #raise(
    type: string,
    object: StripeObject,
    options: { account?: string; previous?: StripeObject } = {},
  ): ProcessorEvent {
    const event: ProcessorEvent = {
      id: newId('evt'),
      object: 'event',
      ...(options.account ? { account: options.account } : {}),
      api_version: this.#apiVersion,
      created: this.#seconds(),
      data: { object: structuredClone(object), ...(options.previous ? { previous_attributes: options.previous } : {}) },
      livemode: false,
      pending_webhooks: 1,
      request: { id: this.#call?.requestId ?? null, idempotency_key: this.#call?.idempotencyKey ?? null },
      type,
    };
    this.events.push(event);
    // Counted as busy from now, so `webhooksIdle` cannot resolve between the answer and the first attempt.
    this.#busy += 1;
    if (this.#raised) this.#raised.push(event);
    else this.#dispatchAfter([event]);
    return event;
  }

  #collecting(work: () => void): ProcessorEvent[] {
    this.#raised = [];
    try {
      work();
      return this.#raised;
    } finally {
      this.#raised = null;
    }
  }

  #dispatchAfter(raised: ProcessorEvent[]): void {
    if (raised.length === 0) return;
    const batch = raised.splice(0);
    setImmediate(() => {
      for (const event of batch) {
        this.#dispatch(event);
        this.#busy -= 1;
      }
      this.#checkIdle();
    });
  }

  #dispatch(event: ProcessorEvent): void {
    if (this.#closed || !this.#enabled(event.type)) return;
    if (this.#held || !this.#targetOf(event).url) this.#pending.push(event);
    else void this.#enqueue(event, 0);
  }

  #enabled(type: string): boolean {
    return this.#enabledEvents.includes('*') || this.#enabledEvents.includes(type);
  }

  #targetOf(event: ProcessorEvent): Target {
    return event.account ? this.#connect : this.#main;
  }

  /** Queues one attempt; `retry` counts the retries already made, and a failure schedules the next if any is left. */
  #enqueue(event: ProcessorEvent, retry: number): Promise<number> {
    this.#busy += 1;
    const done = this.#queue
      .then(() => this.#attempt(event))
      .then((status) => {
        if ((status < 200 || status > 299) && retry < this.#retryDelaysMs.length) this.#scheduleRetry(event, retry);
        return status;
      })
      .finally(() => {
        this.#busy -= 1;
        this.#checkIdle();
      });
    this.#queue = done.catch(() => undefined);
    return done;
  }

  #scheduleRetry(event: ProcessorEvent, retry: number): void {
    if (this.#closed) return;
    this.#busy += 1;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed) void this.#enqueue(event, retry + 1);
      this.#busy -= 1;
      this.#checkIdle();
    }, this.#retryDelaysMs[retry]);
    this.#timers.add(timer);
  }

  /** One POST of the event, signed now, as Stripe signs each attempt anew. */
  async #attempt(event: ProcessorEvent): Promise<number> {
    if (this.#closed) return 0;
    const target = this.#targetOf(event);
    const payload = JSON.stringify(event, null, 2);
    const signature = signatureHeader(payload, target.secret, this.#seconds());
    const attempt = this.deliveries.filter((d) => d.eventId === event.id).length + 1;
    const result: PostResult = target.url
      ? await postWebhook(target.url, payload, signature, this.#timeoutMs, this.#ca, this.#inFlight)
      : { status: 0, error: 'no webhook URL is set' };
    this.deliveries.push({
      eventId: event.id,
      type: event.type,
      attempt,
      url: target.url?.href ?? null,
      status: result.status,
      ...(result.error ? { error: result.error } : {}),
      signature,
      atMs: this.#now(),
    });
    return result.status;
  }

  #checkIdle(): void {
    if (this.#busy > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  setWebhookUrl(url: string | null, connectUrl?: string | null): void {
    this.#main.url = url ? loopbackUrl(url) : null;
    if (connectUrl !== undefined) this.#connectFollowsMain = false;
    const connect = this.#connectFollowsMain ? url : connectUrl;
    this.#connect.url = connect ? loopbackUrl(connect) : null;
    if (!this.#held) this.#flushPending();
  }

  #flushPending(): void {
    const waiting = this.#pending.splice(0);
    for (const event of waiting) this.#dispatch(event);
  }

  holdWebhooks(): void {
    this.#held = true;
  }

  async releaseWebhooks(options: ReleaseOptions = {}): Promise<void> {
    this.#held = false;
    const ready = this.#pending.filter((e) => this.#targetOf(e).url);
    const unready = this.#pending.filter((e) => !this.#targetOf(e).url);
    this.#pending.splice(0, this.#pending.length, ...unready);
    const random = mulberry32(options.seed ?? randomBytes(4).readUInt32LE(0));
    const ordered = options.order === 'reverse' ? [...ready].reverse() : ready;
    let sends = Array.from({ length: 1 + (options.duplicate ?? 0) }, () => ordered).flat();
    if (options.order === 'shuffle') sends = shuffled(sends, random);
    await Promise.all(sends.map((event) => this.#enqueue(event, 0)));
  }

  resend(eventId: string): Promise<number> {
    const event = this.events.find((e) => e.id === eventId);
    if (!event) throw new Error(`no event ${eventId}`);
    return this.#enqueue(event, this.#retryDelaysMs.length);
  }

  sendEvent(type: string, object: StripeObject, options: { account?: string } = {}): ProcessorEvent {
    return this.#raise(type, object, options.account ? { account: options.account } : {});
  }

  webhooksIdle(): Promise<void> {
    if (this.#busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const req of this.#inFlight) req.destroy();
    this.#busy = 0;
    this.#checkIdle();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

/** Reads a request body as UTF-8, refusing more than `bodyBytesMax`. */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= bodyBytesMax) chunks.push(chunk);
    });
    req.on('end', () =>
      bytes > bodyBytesMax ? reject(new Error('body too large')) : resolve(Buffer.concat(chunks).toString('utf8')),
    );
    req.on('error', reject);
  });
}

/** Starts the processor on 127.0.0.1 and an ephemeral port. */
export async function startStripeProcessor(options: StripeProcessorOptions = {}): Promise<StripeProcessor> {
  let processor: Processor | null = null;
  const server = createServer((req, res) => {
    processor!.serve(req, res).catch((e: unknown) => {
      // A bug here, not a refusal: answer as Stripe answers its own failures and say what broke on stderr.
      console.error('stripe-processor:', e);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: 'An unknown error occurred.' } }));
      } else res.destroy();
    });
  });
  processor = new Processor(server, options);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  processor.port = (server.address() as AddressInfo).port;
  processor.url = `http://127.0.0.1:${processor.port}`;
  return processor;
}
