// The context-file API over real HTTP on both base forms ({web_url}/api/v1 and {api_url}/v1), with each way to
// authenticate (API key, OAuth access token, session cookie with CSRF), the two list envelopes, one event per
// change, the owner rule, the plan's hourly rate with its headers, and bad input that changes nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ContextReply, type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, approvedTokens, discover, type oauth, signUp, type WebJar } from '../support/oauth.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let owner: { jar: WebJar; client: oauth.Client; principalId: string; apiKey: string };
let webBase: string;
let apiBase: string;

const send = (url: string, method: string, o?: ContextRequest) => contextCall(sys.baseUrl, url, method, o);

const web = (path: string) => `${webBase}${path}`;
const api = (path: string) => `${apiBase}${path}`;

const issueKey = (jar: WebJar, name?: string) => issueApiKey(sys.config.webUrl, jar, name);

async function principalOf(jar: WebJar): Promise<string> {
  const page = await (await jar.get('/account')).text();
  return /<code>([0-9a-f-]{36})<\/code>/.exec(page)![1]!;
}

before(async () => {
  sys = await startSystem();
  as = await discover(sys.baseUrl);
  webBase = `${sys.config.webUrl}/api/v1`;
  apiBase = `${sys.config.apiUrl}/v1`;
  const { jar, client } = await accountWithClient(as, sys.baseUrl, 'writer@example.com');
  owner = { jar, client, principalId: await principalOf(jar), apiKey: await issueKey(jar) };
});
after(async () => {
  await sys?.stop();
});

test('[CONTEXT-CRUD] create, read, list, update and delete on both base forms, with unique slugs and ISO times', async () => {
  const created = await send(api('/contexts'), 'POST', {
    bearer: owner.apiKey,
    body: { name: 'Style Guide', content: '# Style\nWrite plainly.', description: 'house style' },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const file = created.body.data;
  assert.equal(file.slug, 'style-guide');
  assert.equal(file.content, '# Style\nWrite plainly.');
  assert.equal(file.is_public, false);
  assert.ok(!Number.isNaN(Date.parse(file.created_at)) && file.created_at === new Date(file.created_at).toISOString());

  // The same name again gets its own slug; the session (browser) form reads what the API key wrote at once.
  const twin = await send(web('/contexts'), 'POST', { jar: owner.jar, body: { name: 'Style guide!', content: 'v1' } });
  assert.equal(twin.status, 201, JSON.stringify(twin.body));
  assert.equal(twin.body.data.slug, 'style-guide-2');
  const read = await send(web(`/contexts/${file.id}`), 'GET', { jar: owner.jar });
  assert.equal(read.status, 200);
  assert.deepEqual(read.body.data, file);

  const updated = await send(web(`/contexts/${file.id}`), 'PATCH', {
    jar: owner.jar,
    body: { content: '# Style\nWrite plainly. Cut.', name: 'House Style' },
  });
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  assert.equal(updated.body.data.slug, 'house-style');
  assert.equal(updated.body.data.created_at, file.created_at);
  assert.ok(updated.body.data.updated_at >= file.updated_at);
  const again = await send(api(`/contexts/${file.id}`), 'GET', { bearer: owner.apiKey });
  assert.equal(again.body.data.content, '# Style\nWrite plainly. Cut.');

  const deleted = await send(api(`/contexts/${twin.body.data.id}`), 'DELETE', { bearer: owner.apiKey });
  assert.equal(deleted.status, 200);
  const gone = await send(api(`/contexts/${twin.body.data.id}`), 'GET', { bearer: owner.apiKey });
  assert.equal(gone.status, 404);
  assert.deepEqual(Object.keys(gone.body).sort(), ['error', 'message']);
  // The slug of a deleted file is free again.
  const reuse = await send(api('/contexts'), 'POST', {
    bearer: owner.apiKey,
    body: { name: 'Style Guide', content: 'x' },
  });
  assert.equal(reuse.body.data.slug, 'style-guide');
});

test('[CONTEXT-LISTS] {web_url}/api/v1 pages {data, meta} by page (20 a page); {api_url}/v1 pages {contexts, pagination} by offset (50 a page)', async () => {
  const jar = await signUp(sys.baseUrl, 'lister@example.com');
  const key = await issueKey(jar);
  for (let i = 0; i < 55; i++) {
    const r = await send(api('/contexts'), 'POST', {
      bearer: key,
      body: { name: `Note ${i}`, content: `note ${i} `.repeat(50) },
    });
    assert.equal(r.status, 201);
  }
  const first = await send(web('/contexts'), 'GET', { bearer: key });
  assert.deepEqual(first.body.meta, { total: 55, page: 1, limit: 20 });
  assert.equal(first.body.data.length, 20);
  assert.equal(first.body.data[0].name, 'Note 54', 'newest first');
  const summary = first.body.data[0].content;
  assert.deepEqual(Object.keys(summary).sort(), ['bytes', 'format', 'preview', 'sha256']);
  assert.equal(summary.preview.length, 200);
  const third = await send(web('/contexts?page=3'), 'GET', { bearer: key });
  assert.deepEqual(third.body.meta, { total: 55, page: 3, limit: 20 });
  assert.deepEqual(
    third.body.data.map((c: any) => c.name),
    Array.from({ length: 15 }, (_, i) => `Note ${14 - i}`),
  );

  const apiFirst = await send(api('/contexts'), 'GET', { bearer: key });
  assert.deepEqual(apiFirst.body.pagination, { total: 55, limit: 50, offset: 0, hasMore: true });
  const apiLast = await send(api('/contexts?offset=50&limit=10'), 'GET', { bearer: key });
  assert.deepEqual(apiLast.body.pagination, { total: 55, limit: 10, offset: 50, hasMore: false });
  assert.equal(apiLast.body.contexts.length, 5);
  for (const bad of ['/contexts?limit=0', '/contexts?limit=101', '/contexts?page=2', '/contexts?offset=-1']) {
    const r = await send(api(bad), 'GET', { bearer: key });
    assert.equal(r.status, 400, bad);
  }
});

test('[CONTEXT-EVENTS] each change is exactly one event of its type with the spec payload, polled by the owner only', async () => {
  const token = (await approvedTokens(as, owner.jar, owner.client, { scope: 'read:artifact' })).access_token;
  const made = await send(api('/contexts'), 'POST', { bearer: owner.apiKey, body: { name: 'Evented', content: 'a' } });
  const id = made.body.data.id;
  await send(api(`/contexts/${id}`), 'PATCH', { bearer: owner.apiKey, body: { content: 'b' } });
  await send(api(`/contexts/${id}`), 'PATCH', { bearer: owner.apiKey, body: { is_public: true } });
  await send(api(`/contexts/${id}`), 'PATCH', { bearer: owner.apiKey, body: { is_public: false } });
  const last = await send(api(`/contexts/${id}`), 'DELETE', { bearer: owner.apiKey });
  const events = await eventually('the five context events', async () => {
    const r = await sys.call('GET', '/v1/events?limit=100', { token });
    const mine = (r.body.items as any[]).filter((e) => e.data.context?.id === id);
    return mine.length >= 5 ? mine : undefined;
  });
  assert.deepEqual(
    events.map((e) => e.type),
    ['context.created', 'context.updated', 'context.published', 'context.unpublished', 'context.deleted'],
  );
  assert.deepEqual(events.at(-1).data, {
    context: { id, name: 'Evented', slug: 'evented', updated_at: last.body.data.updated_at },
  });
  for (const e of events) assert.deepEqual(Object.keys(e).sort(), ['created_at', 'data', 'id', 'type']);
  // Another principal polls nothing of this.
  const other = await sys.register();
  const theirs = await sys.call('GET', '/v1/events?limit=100', { token: other.token });
  assert.equal((theirs.body.items as any[]).filter((e) => e.type.startsWith('context.')).length, 0);
});

test('[CONTEXT-AUTH] scopes, revoked keys, CSRF and the owner rule: public files are readable by any account, private ones are 404 to others', async () => {
  const mine = await send(api('/contexts'), 'POST', { bearer: owner.apiKey, body: { name: 'Private', content: 'p' } });
  const pub = await send(api('/contexts'), 'POST', {
    bearer: owner.apiKey,
    body: { name: 'Public', content: 'shared' },
  });
  await send(api(`/contexts/${pub.body.data.id}`), 'PATCH', { bearer: owner.apiKey, body: { is_public: true } });

  const { jar: otherJar, client: otherClient } = await accountWithClient(as, sys.baseUrl, 'reader@example.com');
  const otherKey = await issueKey(otherJar);
  for (const [method, body] of [['GET'], ['PATCH', { name: 'mine now' }], ['DELETE']] as const) {
    const r = await send(api(`/contexts/${mine.body.data.id}`), method, { bearer: otherKey, body });
    assert.equal(r.status, 404, `${method} of another's private file`);
  }
  const shared = await send(api(`/contexts/${pub.body.data.id}`), 'GET', { bearer: otherKey });
  assert.equal(shared.status, 200);
  assert.equal(shared.body.data.content, 'shared');
  assert.equal(shared.body.data.owned, false);
  const notTheirs = await send(api(`/contexts/${pub.body.data.id}`), 'PATCH', {
    bearer: otherKey,
    body: { name: 'x' },
  });
  assert.equal(notTheirs.status, 404, 'a public file is read-only to others');

  // OAuth access tokens: read:context reads, write:context writes, neither is 403.
  const readOnly = (await approvedTokens(as, otherJar, otherClient, { scope: 'read:context' })).access_token;
  assert.equal((await send(api('/contexts'), 'GET', { bearer: readOnly })).status, 200);
  const refused = await send(api('/contexts'), 'POST', { bearer: readOnly, body: { name: 'n', content: 'c' } });
  assert.equal(refused.status, 403);
  assert.match(refused.body.message, /write:context/);
  const writer = (await approvedTokens(as, otherJar, otherClient, { scope: 'write:context' })).access_token;
  assert.equal(
    (await send(api('/contexts'), 'POST', { bearer: writer, body: { name: 'n', content: 'c' } })).status,
    201,
  );
  const agentOnly = (await approvedTokens(as, otherJar, otherClient, { scope: 'read:artifact' })).access_token;
  assert.equal((await send(api('/contexts'), 'GET', { bearer: agentOnly })).status, 403);

  // A revoked key stops at once; nonsense is 401; a sandbox token is no account.
  const doomed = await issueKey(otherJar, 'doomed');
  const keys = await send(web('/api-keys'), 'GET', { jar: otherJar });
  const doomedId = keys.body.data.find((k: any) => k.name === 'doomed').id;
  assert.equal((await send(web(`/api-keys/${doomedId}`), 'DELETE', { jar: otherJar })).status, 200);
  const revoked = await send(api('/contexts'), 'GET', { bearer: doomed });
  assert.equal(revoked.status, 401);
  assert.deepEqual(Object.keys(revoked.body).sort(), ['error', 'message']);
  assert.equal((await send(api('/contexts'), 'GET', { bearer: 'asyk_nonsense' })).status, 401);
  assert.equal((await send(api('/contexts'), 'GET')).status, 401);
  assert.equal((await send(api('/contexts'), 'GET', { bearer: (await sys.register()).token })).status, 401);
  // API keys are people's to manage: a key cannot mint another.
  assert.equal((await send(api('/api-keys'), 'POST', { bearer: otherKey, body: { name: 'x' } })).status, 403);

  // The session writes only with the CSRF header.
  const noCsrf = await send(web('/contexts'), 'POST', { jar: otherJar, csrf: null, body: { name: 'n', content: 'c' } });
  assert.equal(noCsrf.status, 403);
  const wrongCsrf = await send(web('/contexts'), 'POST', {
    jar: otherJar,
    csrf: 'x'.repeat(43),
    body: { name: 'n', content: 'c' },
  });
  assert.equal(wrongCsrf.status, 403);
});

test('[CONTEXT-BAD-INPUT] bad bodies, types, sizes, fields and text are 400 {error, message} and change nothing', async () => {
  const jar = await signUp(sys.baseUrl, 'fuzzy@example.com');
  const key = await issueKey(jar);
  const made = await send(api('/contexts'), 'POST', { bearer: key, body: { name: 'Kept', content: 'kept' } });
  const id = made.body.data.id;
  const bad: [string, string, { body?: unknown; raw?: string; contentType?: string }][] = [
    ['POST', '/contexts', { body: { name: 'x' } }],
    ['POST', '/contexts', { body: { name: '', content: 'x' } }],
    ['POST', '/contexts', { body: { name: 'x'.repeat(201), content: 'x' } }],
    ['POST', '/contexts', { body: { name: 7, content: 'x' } }],
    ['POST', '/contexts', { body: { name: 'x', content: 'x', is_public: true } }],
    ['POST', '/contexts', { body: { name: 'x', content: 'x'.repeat(256 * 1024 + 1) } }],
    ['POST', '/contexts', { body: { name: 'x', content: 'nul\u0000byte' } }],
    ['POST', '/contexts', { raw: '{"name": "x", "content": "\\ud800"}' }],
    ['POST', '/contexts', { raw: '{not json' }],
    ['POST', '/contexts', { raw: '[]' }],
    ['POST', '/contexts', { body: { name: 'x', content: 'x' }, contentType: 'text/plain' }],
    ['PATCH', `/contexts/${id}`, { body: {} }],
    ['PATCH', `/contexts/${id}`, { body: { is_public: 'yes' } }],
    ['PATCH', `/contexts/${id}`, { body: { owner: 'me' } }],
    ['PATCH', `/contexts/${id}`, { body: { name: 'ok', extra: 1 } }],
  ];
  for (const [method, path, o] of bad) {
    const r = await send(api(path), method, { bearer: key, ...o });
    assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(o).slice(0, 80)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error, 'bad_request');
    assert.equal(typeof r.body.message, 'string');
  }
  // A body past ASSAY_BODY_BYTES_MAX is this API's 400 on both base forms (never the agent API's 413).
  const huge = JSON.stringify({ name: 'x', content: 'x'.repeat(sys.config.bodyBytesMax) });
  for (const url of [api('/contexts'), web('/contexts')]) {
    const r = await send(url, 'POST', { bearer: key, raw: huge });
    assert.equal(r.status, 400, url);
    assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
  }
  const list = await send(api('/contexts'), 'GET', { bearer: key });
  assert.equal(list.body.pagination.total, 1);
  const kept = await send(api(`/contexts/${id}`), 'GET', { bearer: key });
  assert.deepEqual(kept.body.data, made.body.data);
  assert.equal((await send(api('/contexts/not-a-uuid'), 'GET', { bearer: key })).status, 404);
});

test('[CONTEXT-RATE] every answer carries X-RateLimit-*; the 101st request in an hour on Free is 429 with Retry-After; Pro raises it at once', async () => {
  const jar = await signUp(sys.baseUrl, 'limited@example.com');
  const principalId = await principalOf(jar);
  // On Free before its first request: a gateway spends a batch it took under the plan it last heard for up to a
  // lease (ASSAY_RATE_LEASE_MS), so a plan lowered after a request applies when that lease ends, not at once.
  const set = await runCli(sys, ['plan', 'set', principalId, 'free']);
  assert.equal(set.code, 0, set.stderr);
  const key = await issueKey(jar);
  // Free's hourly allowance, from docs/fleet.md's table (not read from contracts/plans.ts).
  const hourly = 100;
  // Issuing the key above was this principal's first request of the hour: 99 remain.
  let last: ContextReply | null = null;
  for (let i = 2; i <= hourly; i++) {
    // Alternate the base forms and the kinds of answer: every one counts and says so.
    const r =
      i % 3 === 0
        ? await send(web('/contexts/not-a-uuid'), 'GET', { bearer: key })
        : await send(api('/contexts'), 'GET', { bearer: key });
    assert.ok(r.status === 200 || r.status === 404, `request ${i}: ${r.status}`);
    assert.equal(r.headers.get('x-ratelimit-limit'), String(hourly));
    assert.equal(r.headers.get('x-ratelimit-remaining'), String(hourly - i), `remaining after ${i}`);
    assert.ok(Number(r.headers.get('x-ratelimit-reset')) > 0);
    last = r;
  }
  assert.ok(last);
  const over = await send(api('/contexts'), 'GET', { bearer: key });
  assert.equal(over.status, 429);
  assert.deepEqual(Object.keys(over.body).sort(), ['error', 'message']);
  assert.ok(Number(over.headers.get('retry-after')) >= 1);
  assert.equal(over.headers.get('x-ratelimit-remaining'), '0');

  const upgrade = await runCli(sys, ['plan', 'set', principalId, 'pro']);
  assert.equal(upgrade.code, 0, upgrade.stderr);
  // A gateway that refused keeps refusing on its own for at most a second, then asks again under the new plan.
  const after = await eventually(
    'the Pro allowance',
    async () => {
      const r = await send(api('/contexts'), 'GET', { bearer: key });
      return r.status === 200 ? r : undefined;
    },
    3000,
  );
  assert.equal(after.headers.get('x-ratelimit-limit'), '1000');
});
