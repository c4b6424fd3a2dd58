// Webhooks end to end over real HTTP and HTTPS: registration with the URL rule on the context-file API, signed
// delivery of each subscribed event to a loopback HTTPS receiver (verified here with node:crypto alone), retries
// with growing delays, the disable rule and the owner's event, re-enabling, and redelivery with the same event id.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { eventsOf } from '../../actors/index.ts';
import { retryDelayMs } from '../../actors/webhooks/delivery.ts';
import { openPool, rebuildProjection } from '../../storage/index.ts';
import { type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, approvedTokens, discover, type oauth, type WebJar } from '../support/oauth.ts';
import { eventually, projectionsCaughtUp, startSystem, type TestSystem } from '../support/system.ts';
import {
  type Received,
  selfSignedCertificate,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

const retryBaseMs = 100;
// Wide enough that a loopback receiver answering 2xx never times out on a loaded machine (a spurious timeout is a
// retry, a second delivery and an extra attempt row); the slow receiver below waits past it.
const timeoutMs = 3_000;
let sys: TestSystem;
let receiver: WebhookReceiver;
let as: oauth.AuthorizationServer;

const api = (path: string, method: string, o?: ContextRequest) =>
  contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, method, o);

/** A fresh account: its API key, and a live agent token that reads its events. */
async function account(email: string): Promise<{ key: string; agent: string; jar: WebJar }> {
  const { jar, client } = await accountWithClient(as, sys.baseUrl, email);
  const key = await issueApiKey(sys.config.webUrl, jar);
  const agent = (await approvedTokens(as, jar, client, { scope: 'read:artifact' })).access_token;
  return { key, agent, jar };
}

async function register(key: string, path: string, events: string[]) {
  const r = await api('/webhooks', 'POST', { bearer: key, body: { name: path, url: receiver.url(path), events } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data as { id: string; secret: string };
}

/** The name of the context file a delivered event is about. */
const fileNameOf = (r: Received): string | undefined => JSON.parse(r.body).data.context?.name;

const newFile = (key: string, name: string) => api('/contexts', 'POST', { bearer: key, body: { name, content: 'c' } });

/**
 * Wait until delivery has nothing left to send to this webhook: the events store holds every fact made so far (a
 * delivery row is written with its event, in the same transaction), and none of the webhook's deliveries is pending.
 * What the receiver has then is all it will get, so a test can say an event was not sent without waiting a while.
 */
async function deliveriesSettled(webhookId: string): Promise<void> {
  await projectionsCaughtUp(sys);
  await eventually('no delivery pending for the webhook', async () => {
    const [row] = await sys.sql<{ pending: number }[]>`
      SELECT count(*)::int AS pending FROM webhook_deliveries WHERE webhook_id = ${webhookId} AND state = 'pending'`;
    return row?.pending === 0 ? true : undefined;
  });
}

/** What a receiver does with node:crypto alone: the hex HMAC of the raw body, compared in constant time. */
function verifies(secret: string, r: Pick<Received, 'body' | 'headers'>): boolean {
  const expected = Buffer.from(createHmac('sha256', secret).update(r.body).digest('hex'));
  const got = Buffer.from(r.headers['x-webhook-signature'] ?? '');
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** How old a delivery a receiver accepts, by docs/webhooks.md (Replays). */
const replayWindowMs = 5 * 60_000;

/**
 * A receiver that checks only the spec's header, as docs/webhooks.md says to: X-Webhook-Signature over the raw body,
 * then the signed body's `sent_at` against its own clock (`nowMs`, so the test moves time instead of waiting).
 */
function accepts(secret: string, r: Pick<Received, 'body' | 'headers'>, nowMs: number): boolean {
  if (!verifies(secret, r)) return false;
  const sentAtMs = Date.parse(JSON.parse(r.body).sent_at);
  return Number.isFinite(sentAtMs) && Math.abs(nowMs - sentAtMs) <= replayWindowMs;
}

before(async () => {
  const cert = selfSignedCertificate();
  receiver = await startWebhookReceiver(cert);
  sys = await startSystem({
    ASSAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
    ASSAY_WEBHOOK_CA_FILE: cert.certFile,
    ASSAY_WEBHOOK_RETRY_BASE_MS: String(retryBaseMs),
    ASSAY_WEBHOOK_TIMEOUT_MS: String(timeoutMs),
    ASSAY_WEBHOOK_POLL_MS: '20',
    ASSAY_WEBHOOK_DISABLE_AFTER_EVENTS: '2',
  });
  as = await discover(sys.baseUrl);
});
after(async () => {
  await sys?.stop();
  await receiver?.close();
});

test('[WEBHOOK-REGISTER] registration takes an https URL with public addresses and known event names; the secret is shown once and rotates with an overlap', async () => {
  const { key } = await account('register@example.com');
  for (const [body, words] of [
    [{ name: 'n', url: 'http://localhost/x', events: ['context.created'] }, /https/],
    [{ name: 'n', url: 'https://10.1.2.3/x', events: ['context.created'] }, /not public/],
    [{ name: 'n', url: 'https://169.254.169.254/latest', events: ['context.created'] }, /not public/],
    [{ name: 'n', url: 'https://[::ffff:10.0.0.1]/x', events: ['context.created'] }, /not public/],
    [{ name: 'n', url: receiver.url('/bad'), events: ['order.bogus'] }, /events/],
    [{ name: 'n', url: receiver.url('/bad'), events: [] }, /events/],
    [{ name: 'n', url: receiver.url('/bad'), events: ['context.created'], extra: 1 }, /extra/],
  ] as const) {
    const r = await api('/webhooks', 'POST', { bearer: key, body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error, 'bad_request');
    assert.match(r.body.message, words);
  }
  assert.equal((await api('/webhooks', 'GET', { bearer: key })).body.pagination.total, 0, 'nothing registered');

  const made = await register(key, '/register', ['context.created', 'order.state_changed']);
  assert.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const shown = await api(`/webhooks/${made.id}`, 'GET', { bearer: key });
  assert.equal(shown.body.data.secret, undefined, 'the secret is shown at creation only');
  assert.equal(shown.body.data.is_active, true);
  assert.deepEqual(shown.body.data.events, ['context.created', 'order.state_changed']);
  const listed = await contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1/webhooks`, 'GET', { bearer: key });
  assert.equal(listed.body.meta.total, 1);

  const rotated = await api(`/webhooks/${made.id}/rotate-secret`, 'POST', { bearer: key });
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.data.secret, made.secret);
  const overlapH = (Date.parse(rotated.body.data.previous_secret_expires_at) - Date.now()) / 3_600_000;
  assert.ok(overlapH > 23.9 && overlapH <= 24, `the old secret signs for 24 hours (${overlapH})`);

  const { key: otherKey } = await account('register-other@example.com');
  for (const [method, path] of [
    ['GET', ''],
    ['PATCH', ''],
    ['DELETE', ''],
    ['POST', '/rotate-secret'],
    ['GET', '/attempts'],
  ] as const) {
    const body = method === 'PATCH' ? { name: 'x' } : undefined;
    const r = await api(`/webhooks/${made.id}${path}`, method, { bearer: otherKey, body });
    assert.equal(r.status, 404, `${method} ${path}`);
  }
  assert.equal((await api(`/webhooks/${made.id}`, 'DELETE', { bearer: key })).status, 200);
  assert.equal((await api(`/webhooks/${made.id}`, 'GET', { bearer: key })).status, 404);
});

test('[WEBHOOK-DELIVERY] each subscribed event arrives once, signed two ways; a tampered body fails the check; other types and earlier events are not sent', async () => {
  const { key } = await account('delivery@example.com');
  await newFile(key, 'before the webhook');
  const hook = await register(key, '/delivery', ['context.created', 'context.deleted']);
  const file = (await newFile(key, 'Style guide')).body.data;
  await api(`/contexts/${file.id}`, 'PATCH', { bearer: key, body: { description: 'not subscribed' } });
  await api(`/contexts/${file.id}`, 'DELETE', { bearer: key });
  // The positive control: a later subscribed event, which must arrive. Once it has and nothing is pending, every
  // earlier event has had its chance to be sent.
  await newFile(key, 'control');
  await eventually('the control delivery', async () =>
    receiver.at('/delivery').some((r) => fileNameOf(r) === 'control') ? true : undefined,
  );
  await deliveriesSettled(hook.id);
  const all = receiver.at('/delivery');
  assert.equal(all.length, 3, 'each event once, and only the subscribed ones made after the webhook');
  const got = all.filter((r) => fileNameOf(r) !== 'control');
  // Deliveries to one endpoint run side by side, so they may arrive in any order: receivers order by created_at.
  const [created, deleted] = got
    .map((r) => JSON.parse(r.body))
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  assert.equal(created.type, 'context.created');
  assert.equal(deleted.type, 'context.deleted');
  assert.deepEqual(Object.keys(created).sort(), ['created_at', 'data', 'id', 'sent_at', 'type']);
  assert.deepEqual(created.data, {
    context: { id: file.id, name: 'Style guide', slug: file.slug, updated_at: file.updated_at },
  });
  assert.match(created.id, /^evt_/);
  for (const r of got) {
    assert.ok(verifies(hook.secret, r), 'X-Webhook-Signature verifies with the secret');
    assert.equal(r.headers['x-webhook-id'], JSON.parse(r.body).id);
    assert.equal(r.headers['webhook-id'], JSON.parse(r.body).id);
    assert.ok(Math.abs(Number(r.headers['x-webhook-timestamp']) - Date.now() / 1000) < 60);
    // The Standard Webhooks signature: base64 HMAC of "id.timestamp.body" keyed with the secret's bytes.
    const signed = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`;
    const keyBytes = Buffer.from(hook.secret.slice('whsec_'.length), 'base64');
    const v1 = `v1,${createHmac('sha256', keyBytes).update(signed).digest('base64')}`;
    assert.ok(r.headers['webhook-signature']!.split(' ').includes(v1));
  }
  const withName = got.find((r) => r.body.includes('Style guide'))!;
  const tampered = { ...withName, body: withName.body.replace('Style guide', 'Style guidE') };
  assert.equal(verifies(hook.secret, tampered), false, 'a tampered body fails');
  assert.equal(verifies('whsec_wrong', got[0]!), false, 'another secret fails');

  const attempts = await api(`/webhooks/${hook.id}/attempts`, 'GET', { bearer: key });
  assert.equal(attempts.status, 200);
  assert.deepEqual(
    attempts.body.data.map((a: { outcome: string; status: number }) => [a.outcome, a.status]),
    [
      ['delivered', 204],
      ['delivered', 204],
      ['delivered', 204],
    ],
  );
});

test('[WEBHOOK-DELIVERY] rebuilding the events store by replay sends no event again, and none made before the webhook', async () => {
  const { key } = await account('rebuild@example.com');
  // Several events before the webhook, so that a replay (whose first batch is its first fact alone) reads some of
  // them in the webhook's own batch.
  for (const name of ['first before', 'second before', 'made before the webhook']) await newFile(key, name);
  const hook = await register(key, '/rebuild', ['context.created']);
  await newFile(key, 'made after');
  await eventually('the delivery', async () => receiver.at('/rebuild')[0]);
  await deliveriesSettled(hook.id);
  // A replay writes the webhook and the events around it in one batch: only the webhook's own sequence tells which
  // events came after it.
  const sql = openPool(sys.config.databaseUrl, 2);
  try {
    await rebuildProjection(sys.nc, sql, eventsOf(sys.names), { log: pino({ level: 'silent' }) });
  } finally {
    await sql.end();
  }
  await newFile(key, 'control');
  await eventually('the control delivery', async () =>
    receiver.at('/rebuild').some((r) => fileNameOf(r) === 'control') ? true : undefined,
  );
  await deliveriesSettled(hook.id);
  assert.deepEqual(receiver.at('/rebuild').map(fileNameOf), ['made after', 'control']);
});

test('[SEC-WEBHOOK-REPLAY] a receiver checking only X-Webhook-Signature and the signed sent_at takes a delivery when it arrives and refuses the same capture replayed after 5 minutes; moving sent_at breaks the signature', async () => {
  const { key } = await account('replay@example.com');
  const hook = await register(key, '/replay', ['context.created']);
  await newFile(key, 'captured');
  const captured = await eventually('a delivery', async () => receiver.at('/replay')[0]);
  const body = JSON.parse(captured.body);
  // The body's sent_at is the attempt's time, the very second webhook-timestamp carries.
  assert.equal(body.sent_at, new Date(Number(captured.headers['webhook-timestamp']) * 1000).toISOString());
  assert.equal(captured.headers['x-webhook-timestamp'], captured.headers['webhook-timestamp']);

  assert.ok(accepts(hook.secret, captured, captured.atMs), 'the delivery is accepted when it arrives');
  assert.ok(accepts(hook.secret, captured, captured.atMs + replayWindowMs - 5_000), 'and within the window');
  assert.equal(accepts(hook.secret, captured, captured.atMs + replayWindowMs + 5_000), false, 'a replay is refused');
  // A replayer cannot make the capture look fresh: sent_at is under the signature.
  const later = new Date(Date.parse(body.sent_at) + replayWindowMs + 5_000);
  const refreshed = { ...captured, body: captured.body.replace(body.sent_at, later.toISOString()) };
  assert.notEqual(refreshed.body, captured.body);
  assert.equal(accepts(hook.secret, refreshed, later.getTime()), false, 'a moved sent_at fails the signature');

  // The Standard Webhooks headers are as before and still verify: v1 over "id.timestamp.body".
  assert.equal(captured.headers['webhook-id'], body.id);
  const signed = `${body.id}.${captured.headers['webhook-timestamp']}.${captured.body}`;
  const keyBytes = Buffer.from(hook.secret.slice('whsec_'.length), 'base64');
  const v1 = `v1,${createHmac('sha256', keyBytes).update(signed).digest('base64')}`;
  assert.deepEqual(captured.headers['webhook-signature']!.split(' '), [v1]);
});

test('[WEBHOOK-RETRY] a receiver that fails three times gets the event on the fourth attempt, each after at least its planned wait (which grows); a slow one fails by timeout', async () => {
  const { key } = await account('retry@example.com');
  receiver.script('/flaky', { statuses: [500, 503, 429, 200] });
  const hook = await register(key, '/flaky', ['context.created']);
  await newFile(key, 'retry me');
  const got = await eventually('the fourth attempt', async () =>
    receiver.at('/flaky').length >= 4 ? receiver.at('/flaky') : undefined,
  );
  await deliveriesSettled(hook.id);
  assert.equal(receiver.at('/flaky').length, 4, 'nothing after the 2xx');
  assert.equal(new Set(got.map((r) => JSON.parse(r.body).id)).size, 1, 'one event id throughout');
  // Each wait is at least its retry's planned minimum (base, 2 base, 4 base, less 20% jitter): a loaded machine only
  // adds to a wait, so these hold however busy it is. That the planned waits never shrink, whatever the jitter draws,
  // is checked in test/unit/webhook-sender.test.ts (WEBHOOK-RETRY).
  const gaps = got.slice(1).map((r, i) => r.atMs - got[i]!.atMs);
  gaps.forEach((gap, i) => {
    const plannedMinMs = retryDelayMs(retryBaseMs, i + 1, () => 0);
    assert.ok(gap >= plannedMinMs - 20, `wait ${i + 1} is at least ${plannedMinMs} ms: ${gaps}`);
  });
  const attempts = (await api(`/webhooks/${hook.id}/attempts`, 'GET', { bearer: key })).body.data;
  assert.deepEqual(
    attempts.map((a: { attempt: number; outcome: string }) => [a.attempt, a.outcome]),
    [
      [4, 'delivered'],
      [3, 'retrying'],
      [2, 'retrying'],
      [1, 'retrying'],
    ],
  );
  assert.equal(attempts[3].status, 500);

  receiver.script('/slow', { delayMs: timeoutMs + 1_500, statuses: [200] });
  const slow = await register(key, '/slow', ['context.created']);
  await newFile(key, 'too slow');
  const first = await eventually('a timed-out attempt', async () => {
    const a = (await api(`/webhooks/${slow.id}/attempts`, 'GET', { bearer: key })).body.data;
    return a.length > 0 ? a.at(-1) : undefined;
  });
  assert.equal(first.outcome, 'retrying');
  assert.equal(first.status, null);
  assert.match(first.error, /timeout/);
  await api(`/webhooks/${slow.id}`, 'DELETE', { bearer: key });
});

test('[WEBHOOK-DISABLE] a receiver that always fails gets 1 + 5 attempts per event; after two such events the webhook is disabled, the owner told, and it can be re-enabled', async () => {
  const { key, agent } = await account('disable@example.com');
  receiver.script('/down', { statuses: [500] });
  const hook = await register(key, '/down', ['context.created']);
  await newFile(key, 'one');
  await newFile(key, 'two');
  await eventually(
    'the webhook disabled',
    async () => ((await api(`/webhooks/${hook.id}`, 'GET', { bearer: key })).body.data.is_active ? undefined : true),
    30_000,
  );
  const perEvent = new Map<string, number>();
  for (const r of receiver.at('/down'))
    perEvent.set(JSON.parse(r.body).id, (perEvent.get(JSON.parse(r.body).id) ?? 0) + 1);
  assert.deepEqual([...perEvent.values()], [6, 6], 'the first attempt and 5 retries, per event');
  const view = (await api(`/webhooks/${hook.id}`, 'GET', { bearer: key })).body.data;
  assert.match(view.disabled_reason, /failed every attempt/);

  // The owner is told: a webhook.disabled event on its events.
  const told = await eventually('the webhook.disabled event', async () => {
    const r = await sys.call('GET', '/v1/events?type=webhook.disabled', { token: agent });
    return r.body.items?.length ? r.body.items[0] : undefined;
  });
  assert.equal(told.data.webhook.id, hook.id);

  // Disabled, it takes nothing; re-enabled, it takes the next events.
  await newFile(key, 'while disabled');
  receiver.script('/down', { statuses: [200] });
  const enabled = await api(`/webhooks/${hook.id}`, 'PATCH', { bearer: key, body: { is_active: true } });
  assert.equal(enabled.body.data.is_active, true);
  assert.equal(enabled.body.data.disabled_reason, null);
  const before = receiver.at('/down').length;
  await newFile(key, 'after re-enabling');
  const next = await eventually('a delivery after re-enabling', async () =>
    receiver.at('/down').length > before ? receiver.at('/down').at(-1) : undefined,
  );
  assert.equal(JSON.parse(next.body).data.context.name, 'after re-enabling');
  // The event after re-enabling is the positive control: it arrived, so nothing pending means nothing more comes.
  await deliveriesSettled(hook.id);
  assert.deepEqual(
    receiver.at('/down').slice(before).map(fileNameOf),
    ['after re-enabling'],
    'the event made while disabled is not sent',
  );
});

test('[WEBHOOK-REDELIVER] POST /v1/events/{id}/redeliver sends one event again with the same id; a replayed key re-arms nothing more; another principal’s event is 404', async () => {
  const { key, agent } = await account('redeliver@example.com');
  const hook = await register(key, '/again', ['context.created']);
  await newFile(key, 'again');
  const first = await eventually('the first delivery', async () => receiver.at('/again')[0]);
  const eventId = JSON.parse(first.body).id;

  const r = await sys.call('POST', `/v1/events/${eventId}/redeliver`, { token: agent, key: 'redeliver-1' });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.deepEqual(r.body, { id: eventId, rearmed: true });
  const second = await eventually('the redelivery', async () => receiver.at('/again')[1]);
  assert.equal(JSON.parse(second.body).id, eventId, 'receivers deduplicate by the same id');
  const replay = await sys.call('POST', `/v1/events/${eventId}/redeliver`, { token: agent, key: 'redeliver-1' });
  assert.equal(replay.status, 201);
  assert.deepEqual(replay.body, r.body, 'a replay answers as the call did');
  // The positive control: a later event arrives; once nothing is pending, the replay re-armed nothing.
  await newFile(key, 'control');
  await eventually('the control delivery', async () =>
    receiver.at('/again').some((d) => fileNameOf(d) === 'control') ? true : undefined,
  );
  await deliveriesSettled(hook.id);
  assert.deepEqual(
    receiver.at('/again').map((d) => [JSON.parse(d.body).id === eventId, fileNameOf(d)]),
    [
      [true, 'again'],
      [true, 'again'],
      [false, 'control'],
    ],
    'a replay answers again and sends nothing more',
  );

  const { agent: other } = await account('redeliver-other@example.com');
  const theirs = await sys.call('POST', `/v1/events/${eventId}/redeliver`, { token: other, key: 'x' });
  assert.equal(theirs.status, 404);
  assert.equal(theirs.body.code, 'not_found');
  const unknown = await sys.call('POST', '/v1/events/evt_nope/redeliver', { token: agent, key: 'y' });
  assert.equal(unknown.status, 404);
});
