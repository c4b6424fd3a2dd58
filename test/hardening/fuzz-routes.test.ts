// Generated bad input on every documented route: the routes come from the OpenAPI documents the gateway serves (the
// agent API with its OAuth endpoints, the context-file API on both base forms, device sync), and fast-check makes
// bad requests for each (test/support/fuzz.ts). Every answer must be one the route documents, in its face's error
// shape, never a 5xx (not even 503 unavailable: the system is up, so bad input must be refused, not find it
// unavailable), never a hang, and nothing may be logged as a failure; afterwards every balance, order, event and
// stored row is what it was.
//
// Seeded: ASSAY_FUZZ_SEED (default below) and ASSAY_FUZZ_RUNS (requests a route) reproduce a run; a failure prints
// the seed, the request and the answer.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import fc from 'fast-check';
import pino from 'pino';
import { registerSeller, registerWithScopes, verifiedListing } from '../support/catalog.ts';
import { issueApiKey } from '../support/context-api.ts';
import {
  answerProblem,
  badRequests,
  type Credentials,
  describe as describeCase,
  type FuzzCase,
  type FuzzRoute,
  routesOf,
  sendCase,
} from '../support/fuzz.ts';
import { signUp } from '../support/oauth.ts';
import { syncAccount } from '../support/sync.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

const seed = Number(process.env.ASSAY_FUZZ_SEED ?? 18_2026);
const runsPerRoute = Number(process.env.ASSAY_FUZZ_RUNS ?? 30);
/** Far above ASSAY_REQUEST_TIMEOUT_MS (5 s): a request still unanswered then hangs. */
const deadlineMs = 15_000;
const agentScopes = ['read:artifact', 'read:trust', 'purchase', 'publish', 'manage:mandate'];

let sys: TestSystem;
let buyer: Agent;
let seller: Agent;
let contextKey: string;
let creds: Credentials;
let routes: FuzzRoute[];
let errorNames: { context: Set<string>; sync: Set<string> };
let before_: Snapshot;
const logged: { level: number; msg: string; err?: unknown }[] = [];
const syncDir = mkdtempSync(join(tmpdir(), 'assay-fuzz-sync-'));

/**
 * Bad requests found by earlier runs, kept as fixed examples of their route (run before the generated ones).
 * Keyed by route key; each is a complete case.
 */
const fixedCases: Record<string, FuzzCase[]> = {
  // A malformed percent-escape in the digest made decodeURIComponent throw inside the uWS handler, and uWS aborted
  // the whole process ("Returning from a request handler without responding").
  'sync PUT /api/sync/blobs/{digest}': [
    {
      auth: 'valid',
      path: { digest: '%zz' },
      query: '',
      headers: { 'x-blob-size': null },
      contentType: 'application/octet-stream',
      body: { kind: 'bytes', hex: '00' },
    },
  ],
  'sync GET /api/sync/blobs/{digest}': [
    { auth: 'valid', path: { digest: 'sha256%' }, query: '', headers: {}, contentType: null, body: null },
  ],
  // A body that is not UTF-8 got the agent API's typed error, not the RFC 6749 body the endpoint documents.
  'oauth POST /oauth/token': [
    {
      auth: 'none',
      path: {},
      query: '',
      headers: {},
      contentType: 'application/x-www-form-urlencoded',
      body: { kind: 'bytes', hex: 'c0af' },
    },
  ],
  // The MCP transport's 406 (no Accept naming both types) was missing from the document.
  'agent POST /mcp': [
    {
      auth: 'valid',
      path: {},
      query: '',
      headers: { 'mcp-session-id': null, 'mcp-protocol-version': null },
      contentType: 'application/json',
      body: { kind: 'json', value: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
    },
  ],
};
/** ASSAY_FUZZ_TRACE=1 prints each request before it is sent: the last one names what crashed a process. */
const trace = process.env.ASSAY_FUZZ_TRACE === '1';

before(async () => {
  try {
    await setUp();
  } catch (err) {
    // What the service logged says why a step of the set-up failed.
    throw new Error(`${String(err)}\nlogged: ${JSON.stringify(logged).slice(0, 3000)}`);
  }
});

async function setUp(): Promise<void> {
  // Errors the service logs (a handler that threw, a request that failed) fail the suite: a 503 that hides a crash
  // is not the documented `unavailable`.
  const log = pino({ level: 'error' }, { write: (line: string) => logged.push(JSON.parse(line)) });
  sys = await startSystem({ ASSAY_SYNC_DIR: syncDir }, undefined, log);
  seller = await registerSeller(sys);
  buyer = await registerWithScopes(sys, agentScopes);
  // State worth keeping: a settled purchase (an order, escrow released, events), a top-up, a context file.
  const listing = await verifiedListing(sys, seller.token, 'fuzz', { price: 250, good: true });
  const topup = await sys.call('POST', '/v1/topups', { token: buyer.token, body: { credits: 3 }, key: 'fuzz-topup' });
  assert.equal(topup.status, 201);
  const order = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listing.listingId, formats: ['md'], max_price_cents: 250 },
    key: 'fuzz-order',
  });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  const jar = await signUpRetrying('fuzz');
  contextKey = await issueApiKey(sys.config.webUrl, jar);
  const made = await fetch(`${sys.config.apiUrl}/v1/contexts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${contextKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'kept', content: 'a context file the fuzzing must not change' }),
  });
  assert.equal(made.status, 201);
  const syncToken = (await syncAccount(sys, 'fuzz-sync@example.com')).token;
  const now = Date.now();
  creds = {
    valid: { agent: buyer.token, context: contextKey, sync: syncToken, oauth: null },
    expired: await mintToken(sys.config, {
      principalId: buyer.principalId,
      agentId: buyer.agentId,
      scopes: agentScopes,
      issuedAtMs: now - 7200_000,
      ttlSeconds: 60,
    }),
    noScope: await mintToken(sys.config, { principalId: buyer.principalId, agentId: buyer.agentId, scopes: [] }),
    stranger: await mintToken(sys.config, { scopes: agentScopes }),
    otherFace: { agent: contextKey, context: buyer.token, sync: buyer.token, oauth: buyer.token },
  };
  const agentDoc = await (await fetch(`${sys.baseUrl}/openapi.json`)).json();
  const webDoc = await (await fetch(`${sys.config.webUrl}/api/v1/openapi.json`)).json();
  const apiDoc = await (await fetch(`${sys.config.apiUrl}/v1/openapi.json`)).json();
  routes = [
    ...routesOf(agentDoc, (path) => (path.startsWith('/oauth/') ? 'oauth' : 'agent')),
    ...routesOf(webDoc, (path) => (path.startsWith('/api/sync/') ? 'sync' : 'context')),
    ...routesOf(apiDoc, () => 'context').map((r) => ({ ...r, key: `${r.key} (api_url)` })),
  ];
  errorNames = {
    context: new Set(webDoc.components.schemas.Error.properties.error.enum),
    sync: new Set(webDoc.components.schemas.SyncError.properties.error.enum),
  };
  before_ = await settledSnapshot();
  // Only what the fuzzing makes the service log counts.
  logged.length = 0;
}

after(async () => {
  await sys?.stop();
  rmSync(syncDir, { recursive: true, force: true });
});

test('[HARDEN-FUZZ] every documented route answers generated bad input with a documented error, never a 5xx or a hang', async (t) => {
  t.diagnostic(`seed ${seed} (ASSAY_FUZZ_SEED), ${runsPerRoute} generated requests a route (ASSAY_FUZZ_RUNS)`);
  let requests = 0;
  const failures: string[] = [];
  const started = performance.now();
  const routeMs: [string, number][] = [];
  for (const [i, route] of routes.entries()) {
    const routeStarted = performance.now();
    const property = fc.asyncProperty(badRequests(route), async (c) => {
      requests++;
      if (trace) console.error(describeCase(route, c, creds));
      const answer = await sendCase(route, c, creds, deadlineMs);
      const problem = answerProblem(route, answer, errorNames);
      if (problem !== null) throw new Error(`${describeCase(route, c, creds)}\n  -> ${problem}`);
    });
    // Each route its own seed, derived from the run's, so one route's failure reproduces alone.
    const details = await fc.check(property, {
      seed: seed + i,
      numRuns: runsPerRoute,
      examples: (fixedCases[route.key] ?? []).map((c) => [c] as [FuzzCase]),
      endOnFailure: true,
    });
    routeMs.push([route.key, performance.now() - routeStarted]);
    if (details.failed) {
      const err = details.errorInstance;
      const error = err instanceof Error ? err.message : String(err);
      failures.push(
        `${route.key} (ASSAY_FUZZ_SEED=${seed}: route seed ${seed + i}, path ${details.counterexamplePath}):\n  ${error.split('\n').join('\n  ')}`,
      );
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  t.diagnostic(`fuzzed ${routes.length} routes with ${requests} requests in ${seconds} s`);
  const slowest = routeMs.sort((a, b) => b[1] - a[1]).slice(0, 5);
  t.diagnostic(`slowest routes: ${slowest.map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join('; ')}`);
  assert.deepEqual(failures, [], `${failures.length} routes answered bad input wrongly:\n${failures.join('\n\n')}`);
});

test('[HARDEN-FUZZ] afterwards every balance, order, event and stored row is unchanged, and no failure was logged', async () => {
  const after_ = await settledSnapshot();
  assert.deepEqual(after_, before_);
  const failures = logged.filter((l) => l.level >= 50);
  assert.deepEqual(
    failures.map((l) => `${l.msg} ${JSON.stringify(l.err ?? '').slice(0, 500)}`),
    [],
    'the service logged failures while answering bad input',
  );
});

/**
 * An account signed up; a sign-up that timed out is tried again under another address. The first sign-in of a
 * fresh system can take longer than ASSAY_REQUEST_TIMEOUT_MS on a loaded machine (password hashing, cold pools).
 */
async function signUpRetrying(name: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await signUp(sys.baseUrl, `${name}-${attempt}@example.com`);
    } catch (err) {
      if (attempt === 3) throw err;
    }
  }
}

/** What bad input must not change: the agents' money and history as the API shows it, and every stored row. */
interface Snapshot {
  api: Record<string, unknown>;
  tables: Record<string, { n: number; digest: string }>;
  streams: Record<string, number>;
}

const tables = [
  'principals',
  'agents',
  'accounts',
  'ledger_entries',
  'escrow_totals',
  'topups',
  'orders',
  'events',
  'payouts',
  'approvals',
  'subscriptions',
  'artifacts',
  'editions',
  'listings',
  'idempotency_keys',
  'context_files',
  'webhooks',
  'api_keys',
  'oauth_clients',
  'oauth_grants',
  'sync_blobs',
  'sync_blob_owners',
  'sync_revisions',
  'sync_usage',
];

async function snapshot(): Promise<Snapshot> {
  const api: Record<string, unknown> = {};
  for (const [who, agent] of [
    ['buyer', buyer],
    ['seller', seller],
  ] as const) {
    for (const path of [
      '/v1/balance',
      '/v1/ledger?limit=200',
      '/v1/orders',
      '/v1/events',
      '/v1/payouts',
      '/v1/mandates',
    ]) {
      const r = await sys.call('GET', path, { token: agent.token });
      api[`${who} ${path}`] = { status: r.status, body: r.body };
    }
  }
  const contexts = await fetch(`${sys.config.apiUrl}/v1/contexts`, {
    headers: { authorization: `Bearer ${contextKey}` },
  });
  api['account /contexts'] = await contexts.json();
  const out: Snapshot = { api, tables: {}, streams: {} };
  const existing = await sys.sql<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`;
  const present = tables.filter((t) => existing.some((e) => e.name === t));
  assert.ok(['ledger_entries', 'orders', 'events', 'principals'].every((t) => present.includes(t)));
  for (const table of present) {
    const [row] = await sys.sql.unsafe<{ n: number; digest: string }[]>(
      // Every column but when an API key was last used (using it is what the fuzzing does) and an artifact's search
      // rank (its trust part decays with time and a timer refreshes it; trust's own inputs are in other tables).
      `SELECT count(*)::int AS n, md5(coalesce(string_agg((to_jsonb(t) - 'last_used_at' - 'search_rank')::text, E'\\n' ORDER BY (to_jsonb(t) - 'last_used_at' - 'search_rank')::text), '')) AS digest FROM ${table} t`,
    );
    out.tables[table] = row!;
  }
  const jsm = await jetstream(sys.nc).jetstreamManager();
  for (const s of Object.values(sys.names.streams))
    out.streams[s.name] = (await jsm.streams.info(s.name)).state.last_seq;
  return out;
}

/** A snapshot once two taken a moment apart agree (projections and settlement have caught up). */
async function settledSnapshot(): Promise<Snapshot> {
  let last = await snapshot();
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const next = await snapshot();
    try {
      assert.deepEqual(next, last);
      return next;
    } catch {
      last = next;
    }
  }
  throw new Error('the system did not settle');
}
