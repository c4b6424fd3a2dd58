// Authorization matrices generated from the operation table and the served OpenAPI documents (test/support/authz.ts):
// scope x route, sandbox line x route, and ownership x route. Every route the documents give a scope to gets its
// cells; the rule each cell expects comes from SPEC.md (scopes, the sandbox line) and DECISIONS.md ("Who may see
// what"), written once below by resource kind, never by route. A cell whose answer cannot be derived is listed in
// `underived` with its reason, and a route of a kind the rules do not know fails the suite until it is given one.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { errorTable, scopes } from '../../contracts/index.ts';
import {
  type Answer,
  type AuthzRoute,
  authzRoutes,
  type Cell,
  type Credential,
  exampleOf,
  expectAnswer,
  runCells,
  send,
  servedDocs,
  TokenMinter,
} from '../support/authz.ts';
import { registerWithScopes, reportDigestOf, verifiedListing } from '../support/catalog.ts';
import { issueApiKey } from '../support/context-api.ts';
import { signUp, type WebJar } from '../support/oauth.ts';
import { type StripeProcessor, startStripeProcessor } from '../support/stripe-processor.ts';
import { digestOf } from '../support/sync.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

type Side = 'sandbox' | 'live';
const sides: Side[] = ['sandbox', 'live'];
const other = (s: Side): Side => (s === 'sandbox' ? 'live' : 'sandbox');
const agentScopes = ['read:artifact', 'read:trust', 'purchase', 'publish', 'manage:mandate'];

/** A principal of the fixture: its id, and (for accounts) the signed-in browser. */
interface Principal {
  id: string;
  jar?: WebJar;
}

/** One resource the matrices aim at: its kind (the path segment its id follows), side, owner and id. */
interface Resource {
  kind: string;
  side: Side;
  owner: 'A' | 'S';
  id: string;
  /** Who may read it (GET): its owner only, or any authenticated caller on its side of the line (DECISIONS.md). */
  read: 'owner' | 'side';
  label: string;
}

/**
 * Who may see what, by kind (DECISIONS.md, "Who may see what"; SPEC.md, Authentication 3). Orders (their content,
 * bundles and receipts), subscriptions, mandates, approvals, events, private context files, skills, webhooks, API
 * keys and sync blobs belong to their principal; artifacts, reports, trust and offers are read by anyone on their
 * side of the line, and changed only by their owner. Each kind's fixture is built below.
 */
const kinds = new Set([
  'orders',
  'subscriptions',
  'mandates',
  'approvals',
  'events',
  'offers',
  'listings',
  'artifacts',
  'reports',
  'trust',
  'contexts',
  'skills',
  'webhooks',
  'api-keys',
  'blobs',
]);

/**
 * Cells whose expected answer the rules cannot give, each with its reason: by `METHOD path` (any face), or a class of
 * cells. The suite prints them with its counts.
 */
const underived: Record<string, string> = {
  'owner mutates':
    "the owner's own change of its resource (cancel, unlist, revoke, approve, delete, ...) is each feature suite's test; here it would consume the fixture the other cells aim at",
  'PUT /api/sync/blobs/{digest}':
    "a digest names content, not an owner: another principal's upload of the same digest is its own holding (docs/sync.md, Locators and owners), so there is no 404 to expect",
  'GET /api/sync/revisions':
    "its required locator has a pattern and no example; SYNC-OWNERS covers another owner's locator (404)",
};

let sys: TestSystem;
let processor: StripeProcessor;
let minter: TokenMinter;
let routes: AuthzRoute[];
/** Principals by side: S sells, A buys and owns (it also sells its own listing), B is anybody else. */
const who: Record<Side, Record<'S' | 'A' | 'B', Principal>> = {} as never;
const resources: Resource[] = [];
const tokens = new Map<string, string>();

/** A token of `principal` on `side` with every scope (cached: each cell of one holder uses the same token). */
async function tokenOf(principal: Principal, side: Side, scopeSet: readonly string[] = scopes): Promise<string> {
  const key = `${principal.id} ${side} ${[...scopeSet].sort().join(' ')}`;
  let t = tokens.get(key);
  if (!t) {
    t = await minter.mint({ principalId: principal.id, scopes: scopeSet, sandbox: side === 'sandbox' });
    tokens.set(key, t);
  }
  return t;
}

const fullToken = (p: Principal, side: Side) => tokenOf(p, side);

/** How `p` calls a route: its session where only a signed-in person may (API keys), else a token with every scope. */
async function credentialFor(route: AuthzRoute, p: Principal, side: Side): Promise<Credential> {
  return route.scopeAlternatives.length === 0 ? { jar: p.jar } : { token: await fullToken(p, side) };
}

before(async () => {
  processor = await startStripeProcessor();
  sys = await startSystem({
    STRIPE_SECRET_KEY: processor.apiKey,
    STRIPE_WEBHOOK_SECRET: processor.webhookSecret,
    STRIPE_API_BASE: processor.url,
    ASSAY_PAYOUT_INTERVAL_MS: '0',
    // The fixture's webhook points at a loopback address nothing listens on, and takes an event nothing emits.
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
  });
  processor.setWebhookUrl(`${sys.config.webUrl}/api/stripe/webhook`);
  minter = await TokenMinter.open(sys.config);
  routes = authzRoutes(await servedDocs(sys.baseUrl, sys.config.webUrl, sys.config.apiUrl));
  await Promise.all(sides.map(buildSide));
});
after(async () => {
  await minter?.close();
  await sys?.stop();
  await processor?.close();
});

async function livePrincipal(email: string): Promise<Principal> {
  const jar = await signUp(sys.baseUrl, email);
  const page = await (await jar.get('/account')).text();
  const id = /Principal id<\/dt><dd><code>([0-9a-f-]{36})<\/code>/.exec(page)?.[1];
  assert.ok(id, 'the account page shows the principal id');
  return { id, jar };
}

async function sandboxPrincipal(): Promise<Principal> {
  return { id: (await registerWithScopes(sys, agentScopes)).principalId };
}

/** The account page's "Save a card", completed at the processor's checkout with a card that pays. */
async function saveCard(jar: WebJar): Promise<void> {
  const res = await jar.post('/account/card', {});
  assert.equal(res.status, 303, await res.text());
  const sessionId = new URL(res.headers.get('location')!).pathname.split('/').find((s) => s.startsWith('cs_'));
  assert.ok(sessionId);
  processor.completeCheckout(sessionId, 'pm_card_visa');
  await eventually('the card saved', async () =>
    /ending in \d{4}/.test(await (await jar.get('/account')).text()) ? true : undefined,
  );
}

const v1 = (method: string, path: string, token: string, body?: unknown, key?: string) =>
  sys.call(method, path, { token, body, key });

/** Every kind of resource on one side, owned by A (or S, the seller A buys from); B owns nothing. */
async function buildSide(side: Side): Promise<void> {
  const live = side === 'live';
  const [S, A, B] = live
    ? [{ id: randomUUID() }, await livePrincipal('a@example.com'), await livePrincipal('b@example.com')]
    : await Promise.all([sandboxPrincipal(), sandboxPrincipal(), sandboxPrincipal()]);
  who[side] = { S, A, B };
  const s = await fullToken(S, side);
  const a = await fullToken(A, side);
  const add = (kind: string, owner: 'A' | 'S', id: string, read: 'owner' | 'side', label = kind) =>
    resources.push({ kind, side, owner, id, read, label: `${side} ${label}` });

  const [sold, own] = await Promise.all([
    verifiedListing(sys, s, `${side}-sold`, { price: 100, good: true }),
    verifiedListing(sys, a, `${side}-own`, { price: 100, good: true }),
  ]);
  const digest = await reportDigestOf(sys, s, sold.artifactId);
  const listingOf = async (price: number, billing: unknown, key: string) => {
    const body = { artifact_id: sold.artifactId, price_cents: price, floor: 0.7, formats: ['md'], billing };
    const r = await v1('POST', '/v1/listings', s, body, key);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const living = await listingOf(100, { interval_seconds: 86_400 }, 'living');
  const dear = await listingOf(5_000, null, 'dear');

  const mandate = await v1(
    'POST',
    '/v1/mandates',
    a,
    { per_item_cap_cents: 100_000, approval_above_cents: 1_000 },
    'm',
  );
  assert.equal(mandate.status, 201, JSON.stringify(mandate.body));
  if (live) {
    await saveCard(A.jar!);
    const topUp = await v1('POST', '/v1/topups', a, { credits: 100 }, 'topup');
    assert.equal(topUp.status, 201, JSON.stringify(topUp.body));
    await eventually('live credits', async () =>
      (await v1('GET', '/v1/balance', a)).body.balance_cents === 10_000 ? true : undefined,
    );
  }
  const order = await v1('POST', '/v1/orders', a, { listing_id: sold.listingId, formats: ['md'] }, 'order');
  assert.equal(order.status, 201, JSON.stringify(order.body));
  const orderId = order.body.order_id as string;
  await eventually(`${side} order released`, async () => {
    const items = (await v1('GET', '/v1/orders', a)).body.items as { id: string; state: string }[];
    return items.find((o) => o.id === orderId)?.state === 'released' ? true : undefined;
  });
  const content = await v1('GET', `/v1/orders/${orderId}/content?format=md`, a);
  assert.equal(content.status, 200, JSON.stringify(content.body));
  const sub = await v1('POST', '/v1/subscriptions', a, { listing_id: living }, 'sub');
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  const waiting = await v1('POST', '/v1/orders', a, { listing_id: dear, formats: ['md'] }, 'dear');
  assert.equal(waiting.status, 403, JSON.stringify(waiting.body));
  assert.equal(waiting.body.code, 'pending_approval');
  const eventId = await eventually(`${side} events`, async () => {
    const items = (await v1('GET', '/v1/events', a)).body.items as { id: string }[];
    return items[0]?.id;
  });

  add('orders', 'A', orderId, 'owner', 'order');
  add('subscriptions', 'A', sub.body.id, 'owner', 'subscription');
  add('mandates', 'A', mandate.body.id, 'owner', 'mandate');
  add('approvals', 'A', waiting.body.approval_id, 'owner', 'approval');
  add('events', 'A', eventId, 'owner', 'event');
  add('offers', 'S', sold.listingId, 'side', 'offer');
  add('listings', 'A', own.listingId, 'side', 'listing');
  add('artifacts', 'A', own.artifactId, 'side', 'artifact');
  add('reports', 'S', digest, 'side', 'report');
  add('trust', 'S', `artifact:${sold.artifactId}`, 'side', 'trust');
  if (!live) return;

  // Context files, skills, webhooks, API keys and sync blobs exist for accounts only (sandbox tokens are no account).
  const ctx = async (path: string, method: string, body?: unknown) => {
    const r = await fetch(`${sys.config.apiUrl}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${a}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.json()) as any;
    assert.ok(r.status === 200 || r.status === 201, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const privateFile = await ctx('/contexts', 'POST', { name: 'Private notes', content: 'only mine' });
  const publicFile = await ctx('/contexts', 'POST', { name: 'Public notes', content: 'for everyone' });
  await ctx(`/contexts/${publicFile.id}`, 'PATCH', { is_public: true });
  const skill = await ctx('/skills', 'POST', { name: 'Summarise', template: 'Summarise {{ topic }}.' });
  const webhook = await ctx('/webhooks', 'POST', {
    name: 'hook',
    url: 'https://127.0.0.1:9/hook',
    events: ['context.deleted'],
  });
  await issueApiKey(sys.config.webUrl, A.jar!, 'fixture');
  const keys = await fetch(`${sys.config.webUrl}/api/v1/api-keys`, {
    headers: { cookie: A.jar!.header() },
  }).then((r) => r.json() as Promise<any>);
  const bytes = Buffer.from('a blob only A holds');
  const blob = digestOf(bytes);
  const put = await fetch(`${sys.config.webUrl}/api/sync/blobs/${blob}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${a}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  assert.equal(put.status, 201, await put.text());

  add('contexts', 'A', privateFile.id, 'owner', 'private context file');
  add('contexts', 'A', publicFile.id, 'side', 'public context file');
  add('skills', 'A', skill.id, 'owner', 'skill');
  add('webhooks', 'A', webhook.id, 'owner', 'webhook');
  add('api-keys', 'A', keys.data[0].id, 'owner', 'API key');
  add('blobs', 'A', blob, 'owner', 'sync blob');
}

/** The kind of resource a route's first path parameter names: the path segment just before it. */
function kindOf(route: AuthzRoute): string | null {
  const m = /\/([a-z-]+)\/\{[a-z_]+\}/.exec(route.path);
  return m ? m[1]! : null;
}

const routeName = (r: AuthzRoute) => `${r.method} ${r.face === 'agent' ? '' : `[${r.face}] `}${r.path}`;

/** Values for a route's query parameters: its schema's example for each required one, or null when none can be made. */
function requiredQuery(route: AuthzRoute): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const p of route.query.filter((q) => q.required)) {
    const v = exampleOf(p.schema);
    if (v === undefined) return null;
    out[p.name] = String(v);
  }
  return out;
}

/** A body the route's schema accepts (the agent row's own schema when there is one), or undefined. */
function exampleBody(route: AuthzRoute): unknown {
  if (route.op) return route.op.body === null ? undefined : exampleOf(route.op.body);
  if (route.body === null) return undefined;
  if (route.body === 'bytes') return new Uint8Array([1]);
  return exampleOf(route.body);
}

const needsKey = (r: AuthzRoute) => r.requiredHeaders.includes('idempotency-key');

/** The documented refusal of a missing scope: 403 and its code (the agent API's also names its remediation). */
function missingScopeProblem(route: AuthzRoute, a: Answer): string | null {
  const problem = expectAnswer(a, 403, 'forbidden');
  if (problem) return problem;
  if (route.errors === 'typed' && a.body.remediation !== errorTable.forbidden.remediation) {
    return `remediation ${a.body.remediation}`;
  }
  return null;
}

describe('authorization matrices', () => {
  test('[HARDEN-AUTHZ-SCOPE] scope x route: a token without the scope gets 403 forbidden, with it never does', async () => {
    // The scope sets: none, each scope alone, all but what the route needs, and all.
    const probe: Principal = { id: randomUUID() };
    const cells: Cell[] = [];
    let tokenRoutes = 0;
    for (const route of routes) {
      // API keys are managed by a signed-in person only: no access token is enough, whatever its scopes.
      const grants = (set: readonly string[]) =>
        route.scopeAlternatives.some((alt) => alt.every((s) => set.includes(s)));
      const needed = new Set(route.scopeAlternatives.flat());
      const sets: (readonly string[])[] = [[], ...scopes.map((s) => [s]), scopes.filter((s) => !needed.has(s)), scopes];
      const unique = [...new Map(sets.map((s) => [[...s].sort().join(' '), s])).values()];
      tokenRoutes++;
      if (route.errors === 'typed') {
        assert.ok(route.documented403Codes.includes('forbidden'), `${routeName(route)} documents 403 forbidden`);
      }
      for (const set of unique) {
        cells.push({
          name: `${routeName(route)} with {${set.join(' ')}}`,
          async run() {
            // The route's own resource kind never matters here: the ids are fresh, the bodies are refused by
            // validation, so a cell that gets past the scope check changes nothing.
            const params = Object.fromEntries(
              route.pathParams.map((p) => [p.name, String(exampleOf(p.schema) ?? probeValue(route, p.name))]),
            );
            const a = await send(
              route,
              { token: await tokenOf(probe, 'live', set) },
              {
                params,
                query: requiredQuery(route) ?? {},
                body: route.body === null ? undefined : route.body === 'bytes' ? new Uint8Array() : { authz_probe: 1 },
              },
            );
            if (!grants(set)) return missingScopeProblem(route, a);
            if (a.status === 401 || a.code === 'forbidden') return `the scope is there, got ${a.status} ${a.text}`;
            if (!route.documentedStatuses.includes(a.status)) return `undocumented status ${a.status} ${a.text}`;
            // Past the scope check, validation runs before anything else on a mutating agent call (SPEC, What the
            // service does 6): the probe body is refused, so nothing changed.
            if (route.op?.mutating) return expectAnswer(a, 422, 'validation_failed');
            return null;
          },
        });
      }
    }
    const failures = await runCells(cells);
    console.log(`scope x route: ${cells.length} cells over ${tokenRoutes} routes`);
    assertNoFailures(failures);
  });

  test('[HARDEN-AUTHZ-SANDBOX-LINE] sandbox line x route: tokens of each side against resources of each side; nothing crosses', async () => {
    const cells: Cell[] = [];
    const listed: string[] = [];
    for (const route of routes) {
      const kind = kindOf(route);
      if (kind === null) continue;
      for (const r of resources.filter((x) => x.kind === kind)) {
        // Every principal of the other side, with its token (a principal has one side: see the next test).
        for (const role of ['S', 'A', 'B'] as const) cells.push(crossCell(route, r, who[other(r.side)][role]));
      }
    }
    // Lists and searches: no answer to a token of one side names a resource of the other.
    for (const route of routes.filter((r) => r.method === 'GET' && r.pathParams.length === 0)) {
      const query = requiredQuery(route);
      if (query === null) {
        listed.push(routeName(route));
        continue;
      }
      for (const side of sides) {
        for (const role of ['S', 'A', 'B'] as const) {
          const holder = who[side][role];
          const foreign = resources.filter((x) => x.side !== side);
          if (route.scopeAlternatives.length === 0 && !holder.jar) continue;
          cells.push({
            name: `${routeName(route)} by ${side} ${role}`,
            async run() {
              const a = await send(route, await credentialFor(route, holder, side), { query });
              if (route.errors === 'context' && side === 'sandbox') return expectAnswer(a, 401, 'unauthorized');
              const leaked = foreign.filter((x) => a.text.includes(x.id)).map((x) => x.label);
              if (leaked.length > 0) return `names ${leaked.join(', ')}`;
              return expectAnswer(a, route.successStatus);
            },
          });
        }
      }
    }
    // A principal has one side (its row in principals): the operator's mint-token, the one way to sign a token for
    // any principal, refuses the other side's, so no token can carry a principal's ids across the line.
    for (const side of sides) {
      cells.push({
        name: `assay mint-token for the ${side} A with a ${other(side)} token`,
        async run() {
          const args = ['mint-token', '--principal', who[side].A.id, '--agent', randomUUID()];
          const r = await runCli(sys, side === 'sandbox' ? [...args, '--live'] : args);
          if (r.code !== 1 || !r.stderr.includes(`on the ${side} side of the sandbox line`)) {
            return `exit ${r.code}: ${r.stdout}${r.stderr}`;
          }
          const same = await runCli(sys, side === 'sandbox' ? args : [...args, '--live']);
          return same.code === 0 && same.stdout.trim().length > 0
            ? null
            : `its own side: exit ${same.code} ${same.stderr}`;
        },
      });
    }
    const before = await ownersView();
    const failures = await runCells(cells);
    console.log(`sandbox line x route: ${cells.length} cells; not derivable: ${listed.join(', ') || 'none'}`);
    assertNoFailures(failures);
    assert.deepEqual(await ownersView(), before, 'no cell changed what the owners hold');
  });

  test('[HARDEN-AUTHZ-OWNERSHIP] ownership x route: another principal gets 404 on every route that takes an id, readers excepted', async () => {
    const cells: Cell[] = [];
    const unknownKinds = new Set<string>();
    let idRoutes = 0;
    for (const route of routes) {
      const kind = kindOf(route);
      if (kind === null) continue;
      idRoutes++;
      if (!kinds.has(kind)) {
        unknownKinds.add(`${routeName(route)} (${kind})`);
        continue;
      }
      for (const r of resources.filter((x) => x.kind === kind)) {
        cells.push(...ownershipCells(route, r));
      }
    }
    assert.deepEqual([...unknownKinds], [], 'every route that takes an id names a kind the rules know');
    const before = await ownersView();
    const failures = await runCells(cells);
    console.log(
      `ownership x route: ${cells.length} cells (and the sellers' cancels) over ${idRoutes} routes that take an id`,
    );
    console.log(`not derived (by design): ${Object.keys(underived).join('; ')}`);
    assertNoFailures(failures);
    assert.deepEqual(await ownersView(), before, 'no cell changed what the owners hold');

    // Last, as they end the fixture's subscriptions: a seller may cancel subscriptions to its own listings (spec,
    // Subscription states; DECISIONS.md), the one change a principal other than the owner may make.
    const sellerCells = routes
      .filter((route) => kindOf(route) === 'subscriptions' && route.path.endsWith('/cancel'))
      .flatMap((route) =>
        resources
          .filter((r) => r.kind === 'subscriptions')
          .map(
            (r): Cell => ({
              name: `${routeName(route)} on the ${r.label} by its seller`,
              async run() {
                const req = requestFor(route, r);
                if ('underived' in req) return req.underived;
                const a = await send(route, { token: await fullToken(who[r.side].S, r.side) }, req.ok);
                return expectAnswer(a, route.successStatus) ?? (a.body.state === 'canceled' ? null : a.text);
              },
            }),
          ),
      );
    assert.ok(sellerCells.length > 0, 'subscriptions can be canceled');
    assertNoFailures(await runCells(sellerCells));
  });
});

function assertNoFailures(failures: string[]): void {
  for (const f of failures) console.log(`  FAILED ${f}`);
  assert.equal(failures.length, 0, `${failures.length} cells failed (listed above)`);
}

/** A value for a path parameter no example can be made for (a pattern): a resource of its kind on the live side. */
function probeValue(route: AuthzRoute, name: string): string {
  const kind = kindOf(route);
  const r = resources.find((x) => x.kind === kind && x.side === 'live');
  if (!r) throw new Error(`${routeName(route)}: no value for ${name}`);
  return r.id;
}

/** The request a cell sends at `r` through `route`, or the reason none can be made. */
function requestFor(route: AuthzRoute, r: Resource): { ok: Parameters<typeof send>[2] } | { underived: string } {
  const reason = underived[`${route.method} ${route.path}`];
  if (reason) return { underived: reason };
  const query = requiredQuery(route);
  if (query === null) return { underived: `no example for a required query parameter of ${routeName(route)}` };
  const body = route.body === null ? undefined : exampleBody(route);
  if (route.body !== null && body === undefined) return { underived: `no example body for ${routeName(route)}` };
  const params = { [route.pathParams[0]!.name]: r.id };
  return { ok: { params, query, body, idempotencyKey: needsKey(route) ? randomUUID() : undefined } };
}

/** A token of the other side of the line: the agent API answers 404 not_found; the account faces 401 (no account). */
function crossCell(route: AuthzRoute, r: Resource, holder: Principal): Cell {
  const tokenSide = other(r.side);
  return {
    name: `${routeName(route)} on the ${r.label} by a ${tokenSide} principal`,
    async run() {
      const req = requestFor(route, r);
      if ('underived' in req) return null;
      const a = await send(route, { token: await fullToken(holder, tokenSide) }, req.ok);
      if (route.errors === 'context') return expectAnswer(a, 401, 'unauthorized');
      return expectAnswer(a, 404, 'not_found');
    },
  };
}

/**
 * On the resource's own side: its owner reads it (so the id is real); another principal reads what anyone on the
 * side may read and gets 404 for everything else. A session-only route is tried with the other person's session.
 */
function ownershipCells(route: AuthzRoute, r: Resource): Cell[] {
  const side = r.side;
  const owner = who[side][r.owner];
  const stranger = who[side].B;
  const cells: Cell[] = [];
  const credential = (p: Principal) => credentialFor(route, p, side);
  if (!route.mutating) {
    cells.push({
      name: `${routeName(route)} on the ${r.label} by its owner`,
      async run() {
        const req = requestFor(route, r);
        if ('underived' in req) return null;
        return expectAnswer(await send(route, await credential(owner), req.ok), route.successStatus);
      },
    });
  }
  cells.push({
    name: `${routeName(route)} on the ${r.label} by another principal`,
    async run() {
      const req = requestFor(route, r);
      if ('underived' in req) return null;
      const a = await send(route, await credential(stranger), req.ok);
      if (!route.mutating && r.read === 'side') return expectAnswer(a, route.successStatus);
      return expectAnswer(a, 404, 'not_found');
    },
  });
  return cells;
}

/**
 * What the owners hold, read through every list route of their side (their own tokens): the matrices' refusals
 * must leave all of it as it was.
 */
async function ownersView(): Promise<Record<string, unknown>> {
  const view: Record<string, unknown> = {};
  for (const side of sides) {
    for (const role of ['S', 'A'] as const) {
      const p = who[side][role];
      for (const route of routes.filter((r) => r.method === 'GET' && r.pathParams.length === 0)) {
        const query = requiredQuery(route);
        if (query === null || (route.errors === 'context' && side === 'sandbox')) continue;
        if (route.scopeAlternatives.length === 0 && !p.jar) continue;
        const a = await send(route, await credentialFor(route, p, side), { query });
        view[`${side} ${role} ${routeName(route)}`] = [a.status, stable(a.body)];
      }
    }
  }
  return view;
}

/** A list's answer without what moves on its own: times of last use, and trust scores, which decay with time. */
function stable(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body), (k, v) => (k === 'last_used_at' || k === 'score' ? undefined : v));
}
