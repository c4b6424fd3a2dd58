// Configuration: one schema with defaults, read from the environment, validated at start and frozen. The README's
// configuration table is generated from `configKeys` (see test/docs.test.ts), so the descriptions here are the docs.
import assert from 'node:assert/strict';
import { namespacePattern } from './bus.ts';

interface Key<T> {
  env: string;
  description: string;
  default: T;
  parse: (raw: string) => T;
  /** How the README shows the default, when the value itself says nothing (an empty list). */
  shownDefault?: string;
}

const int = (min: number, max: number) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}`);
  return n;
};
const str = (raw: string) => raw;
const bool = (raw: string) => {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error('expected true or false');
};
/** ASSAY_TRUST_PROXY: how many trusted proxies append to X-Forwarded-For (true is one, false none). */
const proxyHops = (raw: string) => {
  if (raw === 'true') return 1;
  if (raw === 'false') return 0;
  return int(0, 10)(raw);
};
/** A comma-separated list of web origins (scheme://host[:port]), normalised; refused if an entry is not one. */
const origins = (raw: string) =>
  raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      let url: URL;
      try {
        url = new URL(entry);
      } catch {
        throw new Error(`${entry} is not an origin like https://app.example.com`);
      }
      const bare = url.pathname === '/' && !url.search && !url.hash && !url.username;
      if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare) {
        throw new Error(`${entry} is not an origin like https://app.example.com (scheme, host and port only)`);
      }
      return url.origin;
    })
    .join(',');
/** A number from 0 to 1. */
const fraction = (raw: string) => {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error('expected a number from 0 to 1');
  return n;
};
/** An EVM address (0x and 40 hex digits), as written (checksummed or not). */
const evmAddress = (raw: string) => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(raw)) throw new Error('expected an EVM address: 0x and 40 hex digits');
  return raw;
};
/** A CAIP-2 id of an EVM chain, eip155:<chain id>: the exact EVM scheme signs with that chain id. */
const caip2Evm = (raw: string) => {
  if (!/^eip155:[1-9][0-9]{0,15}$/.test(raw)) throw new Error('expected a CAIP-2 EVM network id like eip155:8453');
  return raw;
};
/** The facilitator's base URL: http(s), no query or fragment; the rail calls <url>/verify and <url>/settle. */
const x402FacilitatorUrl = (raw: string) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('expected an http(s) URL such as https://x402.org/facilitator');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash || url.username) {
    throw new Error('expected an http(s) URL with no query, fragment or credentials');
  }
  return url.href.replace(/\/+$/, '');
};
const key = <T>(
  env: string,
  def: T,
  parse: (raw: string) => T,
  description: string,
  shownDefault?: string,
): Key<T> => ({
  env,
  default: def,
  parse,
  description,
  ...(shownDefault === undefined ? {} : { shownDefault }),
});

export const configKeys = {
  port: key('PORT', 8080, int(0, 65535), 'HTTP port of the gateway (0 picks a free one).'),
  apiPort: key(
    'ASSAY_API_PORT',
    8081,
    int(0, 65535),
    'Port of the context-file API ({api_url}/v1), on the same host as the gateway (0 picks a free one).',
  ),
  apiUrl: key(
    'ASSAY_API_URL',
    '',
    str,
    'Public URL of the context-file API listener, used in absolute links. Default http://HOST:ASSAY_API_PORT.',
  ),
  host: key('HOST', '127.0.0.1', str, 'Address the gateway listens on; 0.0.0.0 to serve other machines.'),
  natsUrl: key('NATS_URL', 'nats://127.0.0.1:4222', str, 'NATS server(s) with JetStream, comma-separated.'),
  databaseUrl: key(
    'DATABASE_URL',
    'postgres://postgres@127.0.0.1:5432/assay',
    str,
    'PostgreSQL URL; the database is created at start if it does not exist.',
  ),
  namespace: key(
    'ASSAY_NAMESPACE',
    'assay',
    str,
    'Prefix of every stream, bucket and subject, so deployments and test runs can share one NATS.',
  ),
  baseUrl: key(
    'ASSAY_BASE_URL',
    '',
    str,
    'Public URL of the gateway, used in absolute URLs such as docs_url. Default http://HOST:PORT.',
  ),
  webUrl: key(
    'ASSAY_WEB_URL',
    '',
    str,
    'Public URL of the web pages (sign-in, consent, device, account), served by the same gateway. Default: the base URL.',
  ),
  logLevel: key('LOG_LEVEL', 'info', str, 'pino log level: fatal, error, warn, info, debug, trace or silent.'),
  bodyBytesMax: key(
    'ASSAY_BODY_BYTES_MAX',
    1_048_576,
    int(1024, 64 * 1_048_576),
    'Largest request body; larger gets 413.',
  ),
  bodyReadTimeoutMs: key(
    'ASSAY_BODY_READ_TIMEOUT_MS',
    10_000,
    int(100, 600_000),
    'How long a request body may take to arrive once its headers have; a slower client gets 400 and is disconnected.',
  ),
  bodyDiscardBytesMax: key(
    'ASSAY_BODY_DISCARD_BYTES_MAX',
    16 * 1_048_576,
    int(0, 2 ** 31),
    'How much more of a body refused as too large the gateway reads and throws away (within ASSAY_BODY_READ_TIMEOUT_MS) before it answers and closes, so a client still sending reads the answer; a body declared larger is answered at once.',
  ),
  requestTimeoutMs: key(
    'ASSAY_REQUEST_TIMEOUT_MS',
    5000,
    int(100, 120_000),
    'How long the gateway waits for an actor or service before answering 503 unavailable.',
  ),
  passwordWorkTimeoutMs: key(
    'ASSAY_PASSWORD_WORK_TIMEOUT_MS',
    30_000,
    int(1000, 120_000),
    'How long sign-up and sign-in may take before the page answers that the service is busy: their password hash (scrypt, ASSAY_PASSWORD_SCRYPT_LOG_N) is slow on purpose, and slower on a busy machine, so it does not share ASSAY_REQUEST_TIMEOUT_MS.',
  ),
  inflightMax: key(
    'ASSAY_INFLIGHT_MAX',
    20_000,
    int(1, 1_000_000),
    'Requests one gateway process holds in flight; beyond it, 503 unavailable at once.',
  ),
  leaseTtlMs: key(
    'ASSAY_LEASE_TTL_MS',
    3000,
    int(500, 600_000),
    "A shard lease whose holder's heartbeat has not moved for this long is taken over by another host; a holder stops serving its shards once its own heartbeat has gone unwritten for this long less one renewal.",
  ),
  leaseRenewMs: key(
    'ASSAY_LEASE_RENEW_MS',
    750,
    int(100, 300_000),
    'How often a host writes its heartbeat (one key, whatever it holds) and rebalances its shards.',
  ),
  projectionStallMs: key(
    'ASSAY_PROJECTION_STALL_MS',
    10_000,
    int(500, 600_000),
    'A projection whose stream has been ahead of it this long with nothing applied is stalled: it is shown on /healthz, `assay status` and the metrics, and if its consumer delivered nothing meanwhile the projector drops and re-creates it.',
  ),
  mailboxDepthMax: key(
    'ASSAY_MAILBOX_DEPTH_MAX',
    1000,
    int(1, 1_000_000),
    'Messages queued for one actor; beyond it, 503 unavailable.',
  ),
  snapshotEvery: key(
    'ASSAY_SNAPSHOT_EVERY',
    64,
    int(1, 100_000),
    'An actor writes a snapshot after this many facts, or after more when its state is large (about one fact per 256 bytes of snapshot).',
  ),

  quoteTtlMs: key(
    'ASSAY_QUOTE_TTL_MS',
    60_000,
    int(100, 3_600_000),
    'How old a listing or artifact quote cached in an actor host may be. Listing changes, new editions, reports and errata reach the cache at once by notice; this bounds how stale trust scores are, and anything whose notice was lost.',
  ),

  actorsCachedMax: key(
    'ASSAY_ACTORS_CACHED_MAX',
    100_000,
    int(100, 10_000_000),
    'Actors one host keeps in memory; the least recently used idle ones are evicted.',
  ),
  idempotencyRetentionHours: key(
    'ASSAY_IDEMPOTENCY_RETENTION_HOURS',
    24,
    int(1, 24 * 365),
    'How long a used Idempotency-Key replays its stored result. A purchase key replays as long as its order exists.',
  ),
  idempotencyHotKeys: key(
    'ASSAY_IDEMPOTENCY_HOT_KEYS',
    1000,
    int(1, 1_000_000),
    "Idempotency records a principal actor keeps in memory (and in its snapshots); older keys are looked up in PostgreSQL's idempotency index through the ledger service.",
  ),

  sandboxGrantCents: key(
    'ASSAY_SANDBOX_GRANT_CENTS',
    100_000,
    int(0, 1_000_000_000),
    'Test credits a new sandbox agent receives, in cents.',
  ),
  sandboxRegistrationsPerMinute: key(
    'ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE',
    30,
    int(1, 1_000_000),
    'POST /sandbox/agents allowed per client address per minute (all gateways together).',
  ),
  sandboxCorpusSeed: key(
    'ASSAY_SANDBOX_CORPUS_SEED',
    'assay-sandbox-1',
    str,
    'Seed of the synthetic sandbox corpus; the same seed always gives the same artifacts, claims and listings.',
  ),
  sandboxCorpusArtifacts: key(
    'ASSAY_SANDBOX_CORPUS_ARTIFACTS',
    300,
    int(0, 10_000_000),
    'Artifacts in the sandbox corpus, loaded once per namespace by the workers; 0 loads none.',
  ),
  verifierConcurrency: key(
    'ASSAY_VERIFIER_CONCURRENCY',
    8,
    int(1, 1000),
    'Editions one worker process verifies at a time.',
  ),
  judge: key(
    'ASSAY_JUDGE',
    'builtin',
    (raw: string) => {
      if (raw !== 'builtin' && raw !== 'openai' && raw !== 'onnx') throw new Error('expected builtin, openai or onnx');
      return raw as string;
    },
    'Which judge verifies claims: builtin (deterministic rules, no network), openai (a model on any OpenAI-compatible endpoint) or onnx (a local cross-encoder from ASSAY_JUDGE_MODEL_DIR, run in process).',
  ),
  judgeModelDir: key(
    'ASSAY_JUDGE_MODEL_DIR',
    '',
    str,
    'For ASSAY_JUDGE=onnx: the directory holding the model (model.onnx or onnx/model.onnx), tokenizer.json and config.json (docs/verification.md, A local model judge).',
    '(none)',
  ),
  judgeBatchSize: key(
    'ASSAY_JUDGE_BATCH',
    8,
    int(1, 1024),
    'For ASSAY_JUDGE=onnx: (chunk, claim) pairs the local model judges per inference call.',
  ),
  judgeUrl: key(
    'ASSAY_JUDGE_URL',
    '',
    str,
    "Base URL of the OpenAI-compatible endpoint for ASSAY_JUDGE=openai, e.g. http://127.0.0.1:8081/v1 (llama.cpp on a port other than the gateway's) or http://127.0.0.1:11434/v1 (Ollama).",
    '(none)',
  ),
  judgeModel: key(
    'ASSAY_JUDGE_MODEL',
    '',
    str,
    "Model to ask for ASSAY_JUDGE=openai; for ASSAY_JUDGE=onnx, the model's name in reports (default: the folder's).",
    '(none)',
  ),
  judgeApiKey: key(
    'ASSAY_JUDGE_API_KEY',
    '',
    str,
    'API key for the judge endpoint; ASSAY_JUDGE_API_KEY_FILE names a file holding it instead.',
    '(none)',
  ),
  judgeApiKeyFile: key('ASSAY_JUDGE_API_KEY_FILE', '', str, 'A file whose content is the judge API key.', '(none)'),
  judgeConcurrency: key(
    'ASSAY_JUDGE_CONCURRENCY',
    8,
    int(1, 1000),
    'Requests to the judge endpoint one worker process has in flight at most.',
  ),
  judgeTimeoutMs: key(
    'ASSAY_JUDGE_TIMEOUT_MS',
    30_000,
    int(100, 600_000),
    'How long one request to the judge endpoint may take before it is retried.',
  ),
  judgeBreakerCoolDownMs: key(
    'ASSAY_JUDGE_BREAKER_COOLDOWN_MS',
    30_000,
    int(100, 3_600_000),
    'After repeated failures of the judge endpoint, how long the model judge stops calling it before one probe.',
  ),
  skillModelUrl: key(
    'ASSAY_SKILL_MODEL_URL',
    '',
    str,
    'Base URL of the OpenAI-compatible endpoint that runs skills whose executor is model (docs/contexts.md, Skills); unset, such skills answer 500 saying so.',
    '(none)',
  ),
  skillModel: key('ASSAY_SKILL_MODEL', '', str, 'Model to ask for skills whose executor is model.', '(none)'),
  skillModelApiKey: key(
    'ASSAY_SKILL_MODEL_API_KEY',
    '',
    str,
    'API key for the skills endpoint, sent as a bearer token.',
    '(none)',
  ),
  skillTimeoutMs: key(
    'ASSAY_SKILL_TIMEOUT_MS',
    30_000,
    int(100, 110_000),
    'How long one skill execution may take (the model included) before it answers 500 with the reason.',
  ),
  webhookTimeoutMs: key(
    'ASSAY_WEBHOOK_TIMEOUT_MS',
    5000,
    int(100, 60_000),
    'How long a webhook receiver has to answer 2xx (connect, headers and a capped body); longer is a failed attempt.',
  ),
  webhookRetryBaseMs: key(
    'ASSAY_WEBHOOK_RETRY_BASE_MS',
    30_000,
    int(10, 3_600_000),
    'The first retry of a failed webhook delivery waits about this long; each later one twice the one before (with jitter), 5 retries in all.',
  ),
  webhookDisableAfterEvents: key(
    'ASSAY_WEBHOOK_DISABLE_AFTER_EVENTS',
    3,
    int(1, 1000),
    'Consecutive events whose every attempt failed after which a webhook is disabled (webhook.disabled tells its owner).',
  ),
  webhookConcurrency: key(
    'ASSAY_WEBHOOK_CONCURRENCY',
    64,
    int(1, 10_000),
    'Webhook deliveries one worker process has in flight at most.',
  ),
  webhookPerEndpointMax: key(
    'ASSAY_WEBHOOK_PER_ENDPOINT_MAX',
    4,
    int(1, 1000),
    'Deliveries to one webhook in flight at most (all workers together, give or take a claim race), so a slow endpoint holds only its share.',
  ),
  webhookPollMs: key(
    'ASSAY_WEBHOOK_POLL_MS',
    200,
    int(5, 60_000),
    'How often each worker looks for due webhook deliveries when it found none.',
  ),
  webhookAllowLoopback: key(
    'ASSAY_WEBHOOK_ALLOW_LOOPBACK',
    false,
    bool,
    'TEST MODE ONLY: lets webhooks deliver to 127.0.0.0/8 and ::1 (every other private range stays refused). Never set it in production.',
  ),
  webhookCaFile: key(
    'ASSAY_WEBHOOK_CA_FILE',
    '',
    str,
    'A PEM file of extra certificate authorities webhook deliveries trust (for a test receiver), beside the system ones.',
    '(none)',
  ),
  metricsPort: key(
    'ASSAY_METRICS_PORT',
    9464,
    int(0, 65535),
    'Port of the admin listener serving GET /metrics (Prometheus text format) in every process; 0 turns it off. Processes on one machine each need their own.',
  ),
  metricsHost: key(
    'ASSAY_METRICS_HOST',
    '127.0.0.1',
    str,
    'Address the metrics listener binds to; keep it private (metrics show escrow totals), never the public gateway address.',
  ),
  stripeSecretKey: key(
    'STRIPE_SECRET_KEY',
    '',
    str,
    'Secret key of the payment processor (Stripe) for live top-ups, saved cards and seller payouts (docs/money.md); unset, those answer 403 payments_not_configured (not retryable): the deployment takes no card payments.',
    '(none)',
  ),
  stripeWebhookSecret: key(
    'STRIPE_WEBHOOK_SECRET',
    '',
    str,
    'Signing secret (whsec_...) of the processor webhook at POST /api/stripe/webhook; unset, that route refuses every event.',
    '(none)',
  ),
  stripeApiBase: key(
    'STRIPE_API_BASE',
    '',
    str,
    "Where the processor's API is, as http(s)://host:port, for a local processor that speaks Stripe's protocol (tests, laptops); unset: Stripe's own.",
    '(none)',
  ),
  x402FacilitatorUrl: key(
    'ASSAY_X402_FACILITATOR_URL',
    '',
    x402FacilitatorUrl,
    'The x402 facilitator (its /verify and /settle) the x402 rail calls, and the only URL it calls (docs/x402.md); unset, the /x402 routes answer 404 and nothing is advertised.',
    '(none)',
  ),
  x402Network: key(
    'ASSAY_X402_NETWORK',
    'eip155:8453',
    caip2Evm,
    'The network x402 payments are made on, as a CAIP-2 id of an EVM chain (eip155:8453 is Base, eip155:84532 Base Sepolia).',
  ),
  x402Asset: key(
    'ASSAY_X402_ASSET',
    '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    evmAddress,
    'The token contract x402 buyers pay with (an EIP-3009 token); the default is USDC on Base.',
  ),
  x402PayTo: key(
    'ASSAY_X402_PAY_TO',
    '',
    evmAddress,
    "The operator's address x402 payments are made to; required when ASSAY_X402_FACILITATOR_URL is set.",
    '(none)',
  ),
  x402AtomicPerCent: key(
    'ASSAY_X402_ATOMIC_PER_CENT',
    10_000,
    int(1, 2 ** 52),
    "The token's atomic units per credit cent: the x402 price is the listing's price in cents times this (10,000 for a 6-decimal dollar token such as USDC).",
  ),
  x402AssetName: key(
    'ASSAY_X402_ASSET_NAME',
    'USD Coin',
    str,
    "The token's EIP-712 domain name, sent as extra.name in the payment requirements so buyers can sign EIP-3009 authorizations (USDC's by default).",
  ),
  x402AssetVersion: key(
    'ASSAY_X402_ASSET_VERSION',
    '2',
    str,
    "The token's EIP-712 domain version, sent as extra.version (USDC's by default).",
  ),
  x402MaxTimeoutSeconds: key(
    'ASSAY_X402_MAX_TIMEOUT_SECONDS',
    300,
    int(10, 86_400),
    'maxTimeoutSeconds of the x402 payment requirements: how long a signed authorization is meant to stay valid.',
  ),
  x402MandateCapCents: key(
    'ASSAY_X402_MANDATE_CAP_CENTS',
    10_000,
    int(0, 2 ** 52),
    'The per-item cap of the mandate every x402 payer principal buys under (the operator sets one mandate for all x402 payers).',
  ),
  x402MandateMinTrust: key(
    'ASSAY_X402_MANDATE_MIN_TRUST',
    0,
    fraction,
    "min_trust of the x402 payers' mandate: an artifact trusted less is refused before anything is settled.",
  ),
  x402MandateMinFloor: key('ASSAY_X402_MANDATE_MIN_FLOOR', 0, fraction, "min_floor of the x402 payers' mandate."),
  payoutIntervalMs: key(
    'ASSAY_PAYOUT_INTERVAL_MS',
    86_400_000,
    int(0, 30 * 86_400_000),
    'How often workers run the seller payout run (transfers of released, unpaid accruals to enabled sellers); 0 turns the schedule off (`assay payouts run` still works).',
  ),
  subscriptionPollMs: key(
    'ASSAY_SUBSCRIPTION_POLL_MS',
    1000,
    int(10, 60_000),
    "How often each worker's subscription scheduler looks for due cycles (it keeps going without a pause while a pass finds a full batch).",
  ),
  subscriptionClaimSeconds: key(
    'ASSAY_SUBSCRIPTION_CLAIM_SECONDS',
    30,
    int(1, 3600),
    'How long a scheduler holds its claim on a due cycle; a cycle whose scheduler died is claimed again after this.',
  ),
  approvalTtlSeconds: key(
    'ASSAY_APPROVAL_TTL_SECONDS',
    86_400,
    int(60, 30 * 86_400),
    "How long a purchase above the mandate's approval threshold waits for the principal; then it expires, which declines it.",
  ),
  approvalSweepMs: key(
    'ASSAY_APPROVAL_SWEEP_MS',
    5000,
    int(10, 600_000),
    'How often each worker looks for approval requests past their time, to expire them.',
  ),
  reportWaitSeconds: key(
    'ASSAY_REPORT_WAIT_SECONDS',
    86_400,
    int(1, 31_536_000),
    "How long an order waits for its edition's report (the judge unreachable, the edition pending) before its escrow is refunded with the reason recorded; 24 hours by default.",
  ),
  deliveryCacheBytes: key(
    'ASSAY_DELIVERY_CACHE_BYTES',
    64 * 1_048_576,
    int(0, 16 * 1024 * 1_048_576),
    "Bytes of delivered content (editions' Markdown and rendered PDFs) each worker keeps in memory; PDFs are also cached in PostgreSQL.",
  ),
  downloadLinkTtlSeconds: key(
    'ASSAY_DOWNLOAD_LINK_TTL_SECONDS',
    900,
    int(10, 604_800),
    "How long a delivery's download_url (a signed link that needs no bearer token) stays valid after it is handed out; 15 minutes by default, at most 7 days.",
  ),
  tokenTtlSeconds: key('ASSAY_TOKEN_TTL_SECONDS', 86_400, int(60, 31_536_000), 'Lifetime of a sandbox agent token.'),
  trustProxy: key(
    'ASSAY_TRUST_PROXY',
    0,
    proxyHops,
    'Proxies in front of the gateway that append to X-Forwarded-For: false (none: the socket address), true (one), or their number. The client address is the entry the outermost trusted proxy appended (the Nth from the right); what a client sends itself is never used.',
  ),
  streamReplicas: key(
    'ASSAY_STREAM_REPLICAS',
    1,
    int(1, 5),
    'JetStream replicas of streams and buckets; 3 in production.',
  ),
  mcpAllowedOrigins: key(
    'ASSAY_MCP_ALLOWED_ORIGINS',
    '',
    origins,
    'Browser origins allowed to call /mcp besides the origin of ASSAY_BASE_URL, comma-separated; requests without an Origin header (non-browser clients) are always allowed.',
    '(none)',
  ),
  oauthAccessTokenSeconds: key(
    'ASSAY_OAUTH_ACCESS_TOKEN_SECONDS',
    600,
    int(30, 86_400),
    'Lifetime of an OAuth access token (asyo_). A revoked one is refused by every gateway within about a second; this bounds how long its revocation must be remembered.',
  ),
  oauthKeysTtlMs: key(
    'ASSAY_OAUTH_KEYS_TTL_MS',
    5000,
    int(10, 3_600_000),
    'How long the oauth service signs with the token keys it read before reading them again: a key made active by `assay rotate-key` signs new access tokens within this and one read.',
  ),
  oauthRefreshTokenSeconds: key(
    'ASSAY_OAUTH_REFRESH_TOKEN_SECONDS',
    30 * 86_400,
    int(60, 366 * 86_400),
    'Lifetime of an OAuth refresh token (asyr_); each use rotates it.',
  ),
  oauthInitialAccessTokenSeconds: key(
    'ASSAY_OAUTH_INITIAL_ACCESS_TOKEN_SECONDS',
    86_400,
    int(60, 366 * 86_400),
    'Lifetime of an initial access token (asyi_), issued on the account page for dynamic client registration.',
  ),
  webSessionSeconds: key(
    'ASSAY_WEB_SESSION_SECONDS',
    12 * 3600,
    int(60, 90 * 86_400),
    'Lifetime of a web sign-in session (the assay_session cookie).',
  ),
  signInAttemptsPerMinute: key(
    'ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE',
    10,
    int(1, 1_000_000),
    'Sign-in, sign-up and device-code attempts per minute from one client address, and sign-in attempts per account; more get a wait.',
  ),
  signUpsPerMinute: key(
    'ASSAY_SIGNUPS_PER_MINUTE',
    300,
    int(1, 1_000_000),
    'Sign-up attempts per minute from all addresses together: the bound on how fast anyone can learn which emails have accounts (docs/threat-model.md). More get a wait.',
  ),
  deviceCodesPerClientPerMinute: key(
    'ASSAY_DEVICE_CODES_PER_CLIENT_PER_MINUTE',
    600,
    int(1, 1_000_000),
    'Device codes one OAuth client may start per minute (each address is also held to ASSAY_SIGNIN_ATTEMPTS_PER_MINUTE); more get 429 slow_down.',
  ),
  passwordScryptLogN: key(
    'ASSAY_PASSWORD_SCRYPT_LOG_N',
    17,
    int(10, 20),
    "scrypt cost of password hashes as log2 N (r 8, p 1): 17 is 128 MiB and OWASP's minimum. Existing hashes keep their own cost.",
  ),
  mcpSessionIdleSeconds: key(
    'ASSAY_MCP_SESSION_IDLE_SECONDS',
    3600,
    int(5, 7 * 86_400),
    'An MCP session that receives no request for this long ends; its next request gets 404 and the client starts a new session.',
  ),
  mcpSessionsPerPrincipalMax: key(
    'ASSAY_MCP_SESSIONS_PER_PRINCIPAL_MAX',
    100,
    int(1, 100_000),
    'Open MCP sessions one principal may hold (all gateways together); initialize beyond it gets 429 rate_limited.',
  ),
  defaultPlan: key(
    'ASSAY_DEFAULT_PLAN',
    'free' as 'free' | 'pro' | 'enterprise',
    (raw) => {
      if (raw !== 'free' && raw !== 'pro' && raw !== 'enterprise') throw new Error('must be free, pro or enterprise');
      return raw;
    },
    'The plan of a live principal no operator has set one for (`assay plan set`): its rate limits and daily quotas (docs/fleet.md).',
  ),
  sandboxPlan: key(
    'ASSAY_SANDBOX_PLAN',
    'sandbox' as 'free' | 'pro' | 'enterprise' | 'sandbox',
    (raw) => {
      if (raw !== 'free' && raw !== 'pro' && raw !== 'enterprise' && raw !== 'sandbox') {
        throw new Error('must be sandbox, free, pro or enterprise');
      }
      return raw;
    },
    "The plan of a sandbox principal no operator has set one for: `sandbox` (at least 25 requests a second per agent for reads and writes, docs/fleet.md), or free, pro or enterprise to try the sandbox under a live plan's limits.",
  ),
  rateLeaseMs: key(
    'ASSAY_RATE_LEASE_MS',
    10_000,
    int(100, 60_000),
    'How long a gateway may spend rate-limit tokens it took from a principal actor before it asks again; unspent ones go back with its next request.',
  ),
  contextRateLimit: key(
    'ASSAY_CONTEXT_RATE_LIMIT',
    'on' as 'on' | 'off',
    (raw) => {
      if (raw !== 'on' && raw !== 'off') throw new Error('must be on or off');
      return raw;
    },
    "`off` stops enforcing the plans' hourly rate on the context-file API (no 429, no X-RateLimit headers), for measuring the limiter's cost (`npm run bench:contexts`); the gateway warns at start.",
  ),
  mcpSseStreamsMax: key(
    'ASSAY_MCP_SSE_STREAMS_MAX',
    1000,
    int(1, 1_000_000),
    'GET /mcp event streams one gateway process holds open; beyond it, 503 unavailable.',
  ),
  syncDir: key(
    'ASSAY_SYNC_DIR',
    '',
    str,
    'Directory of device sync blobs (docs/sync.md); every gateway of a deployment must see the same one. Default: a directory per namespace under the system temporary directory, with a warning at start.',
  ),
  syncBlobBytesMax: key(
    'ASSAY_SYNC_BLOB_BYTES_MAX',
    4 * 1024 ** 3,
    int(1, 2 ** 50),
    'Largest blob (one file) device sync accepts; larger gets 413 blob_too_large.',
  ),
  syncQuotaBytes: key(
    'ASSAY_SYNC_QUOTA_BYTES',
    10 * 1024 ** 3,
    int(0, 2 ** 50),
    'Bytes of distinct blobs one principal may hold in device sync; past it an upload gets 507 quota_exceeded.',
  ),
  syncReservationTtlSeconds: key(
    'ASSAY_SYNC_RESERVATION_TTL_SECONDS',
    1800,
    int(10, 86_400),
    "How long quota reserved for a device sync upload outlives the upload's last byte: an upload keeps its reservation alive while its body arrives, and the sweep releases one whose gateway died. At least twice ASSAY_BODY_READ_TIMEOUT_MS.",
  ),
  syncSweepMs: key(
    'ASSAY_SYNC_SWEEP_MS',
    3_600_000,
    int(100, 86_400_000),
    'How often the device sync sweep (one gateway at a time) releases expired upload reservations and deletes blob files no owner holds and no upload is storing (docs/operations.md, Device sync sweep).',
  ),
  syncOrphanGraceSeconds: key(
    'ASSAY_SYNC_ORPHAN_GRACE_SECONDS',
    3600,
    int(1, 30 * 86_400),
    "How old an unowned blob file or an upload's temporary file must be before the sweep deletes it. At least twice ASSAY_BODY_READ_TIMEOUT_MS.",
  ),
  syncBodyBytesMax: key(
    'ASSAY_SYNC_BODY_BYTES_MAX',
    64 * 1024 ** 2,
    int(1024, 2 ** 31),
    'Largest manifest or snapshot body of device sync (a folder of 200,000 files fits); larger gets 413 body_too_large.',
  ),
  shutdownGraceMs: key(
    'ASSAY_SHUTDOWN_GRACE_MS',
    10_000,
    int(0, 600_000),
    'On SIGTERM, how long in-flight requests may take before the process exits.',
  ),
} as const;

type Keys = typeof configKeys;
export type Config = { readonly [K in keyof Keys]: Keys[K]['default'] };

/** Read and check the configuration. Throws one error naming every bad variable. */
/** ASSAY_IDEMPOTENCY_RETENTION_HOURS in milliseconds, as the actors and the projector use it. */
export const idempotencyRetentionMs = (c: Config): number => c.idempotencyRetentionHours * 3_600_000;

export function loadConfig(env: Record<string, string | undefined>): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, k] of Object.entries(configKeys) as [string, Key<unknown>][]) {
    const raw = env[k.env];
    if (raw === undefined || raw === '') {
      out[name] = k.default;
      continue;
    }
    try {
      out[name] = k.parse(raw);
    } catch (err) {
      problems.push(`${k.env}=${JSON.stringify(raw)}: ${(err as Error).message}`);
    }
  }
  const config = out as Config;
  if (!namespacePattern.test(config.namespace)) {
    problems.push(`ASSAY_NAMESPACE=${JSON.stringify(config.namespace)}: expected ${namespacePattern}`);
  }
  if (config.leaseRenewMs * 2 > config.leaseTtlMs) {
    problems.push('ASSAY_LEASE_RENEW_MS must be at most half of ASSAY_LEASE_TTL_MS, or leases lapse between renewals');
  }
  // An upload touches its reservation and writes its temporary file at least once per body read timeout; either
  // one judged dead sooner would be swept from under a live upload.
  if (config.syncReservationTtlSeconds * 1000 < 2 * config.bodyReadTimeoutMs) {
    problems.push('ASSAY_SYNC_RESERVATION_TTL_SECONDS must be at least twice ASSAY_BODY_READ_TIMEOUT_MS');
  }
  if (config.syncOrphanGraceSeconds * 1000 < 2 * config.bodyReadTimeoutMs) {
    problems.push('ASSAY_SYNC_ORPHAN_GRACE_SECONDS must be at least twice ASSAY_BODY_READ_TIMEOUT_MS');
  }
  if (config.x402FacilitatorUrl !== '' && config.x402PayTo === '') {
    problems.push('ASSAY_X402_PAY_TO must name the address x402 payments go to when ASSAY_X402_FACILITATOR_URL is set');
  }
  if (problems.length > 0) throw new Error(`bad configuration:\n  ${problems.join('\n  ')}`);
  if (config.baseUrl === '')
    out.baseUrl = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  out.baseUrl = String(out.baseUrl).replace(/\/+$/, '');
  assert(typeof out.baseUrl === 'string');
  out.webUrl = String(config.webUrl === '' ? out.baseUrl : config.webUrl).replace(/\/+$/, '');
  if (config.apiUrl === '')
    out.apiUrl = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.apiPort}`;
  out.apiUrl = String(out.apiUrl).replace(/\/+$/, '');
  return Object.freeze(out) as Config;
}

/** The README's configuration table, generated from `configKeys` (`npm run docs` rewrites it; a test compares). */
export function configMarkdownTable(): string {
  const rows = (Object.values(configKeys) as Key<unknown>[]).map((k) => {
    const def = k.shownDefault ?? (k.default === '' ? '(derived)' : `\`${String(k.default)}\``);
    return `| \`${k.env}\` | ${def} | ${k.description} |`;
  });
  return ['| variable | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}
