// The caller's events as the MCP resource assay://events, with the SDK's own client: listed, read as GET /v1/events
// shows them (the newest, or after a cursor), subscribed to, and `notifications/resources/updated` sent on the
// session's event stream when the events projection commits new events for its principal, by whichever gateway
// process holds the stream.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { ErrorCode, McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { ResourceUpdates, updateEveryMsMin } from '../../gateway/mcp/updates.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, type McpConnection } from '../support/mcp.ts';
import { type ExtraGateway, startExtraGateway } from '../support/processes.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

const uri = 'assay://events';
/** How long a notification may take: a top-up, the events projector's next batch, a notice, the stream. */
const notifiedWithinMs = 5000;
/** How long a test waits to be sure no notification comes, after the events are visible to a poll. */
const quietMs = 600;

let sys: TestSystem;
let second: ExtraGateway;

before(async () => {
  sys = await startSystem();
  second = await startExtraGateway(sys.env);
});
after(async () => {
  second.p.child.kill('SIGKILL');
  await sys.stop();
});

interface Listener extends McpConnection {
  /** The URIs of the resource-updated notifications received, in order. */
  updates: string[];
}

/**
 * An SDK client whose GET event stream is open (resolved once the gateway answered it, so the stream is registered
 * there), collecting resource-updated notifications. With `sessionId` it resumes that session, as a client that a
 * load balancer sends to another gateway, and opens the stream itself.
 */
async function listener(baseUrl: string, token: string, o: { sessionId?: string; version?: string } = {}) {
  let opened!: () => void;
  const streamOpen = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const tracking: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (init?.method === 'GET' && res.status === 200) opened();
    return res;
  };
  const c = await connectMcp(baseUrl, token, {
    fetch: tracking,
    ...(o.sessionId ? { sessionId: o.sessionId, protocolVersion: o.version } : {}),
  });
  const updates: string[] = [];
  c.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
  });
  // Without a new initialize the client opens no stream on its own; an empty resumption token opens a fresh one.
  if (o.sessionId) await c.transport.resumeStream('');
  await streamOpen;
  return { ...c, updates } satisfies Listener;
}

/** Each top-up of this file is of another amount, which names its `topup.credited` event (`data.amount_cents`). */
let credits = 0;
/** A top-up over REST; returns its amount in cents. Fresh agents per test: a Free plan allows a burst of 5. */
const topUp = async (who: Agent) => {
  credits += 1;
  const r = await sys.call('POST', '/v1/topups', { token: who.token, body: { credits }, key: `er-${randomUUID()}` });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return credits * 100;
};

const events = async (who: Agent, query = '') => {
  const r = await sys.call('GET', `/v1/events${query}`, { token: who.token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as { items: any[]; next_cursor: string | null };
};

/** Wait until a poll of GET /v1/events shows the top-up: the projector has committed it and sent its notice. */
const projected = (who: Agent, amountCents: number) =>
  eventually(`the event of the top-up of ${amountCents} cents`, async () =>
    (await events(who, '?limit=200')).items.some((e) => e.data.amount_cents === amountCents) ? true : undefined,
  );

const read = async (c: McpConnection, at = uri) => {
  const r = await c.client.readResource({ uri: at });
  assert.equal(r.contents.length, 1);
  const content = r.contents[0] as { uri: string; mimeType?: string; text: string };
  assert.equal(content.uri, at);
  assert.equal(content.mimeType, 'application/json');
  return JSON.parse(content.text) as { items: any[]; next_cursor: string };
};

const refused = (code: number, typed?: string) => (err: unknown) =>
  err instanceof McpError && err.code === code && (typed === undefined || isTypedError(err.data, typed));

const end = async (c: McpConnection) => {
  await c.transport.terminateSession().catch(() => {});
  await c.client.close();
};

test('[MCP-EVENTS-RESOURCE] initialize declares subscribable resources; resources/list and templates show assay://events', async () => {
  const agent = await sys.register();
  const c = await connectMcp(sys.baseUrl, agent.token);
  assert.deepEqual(c.client.getServerCapabilities()?.resources, { subscribe: true, listChanged: false });
  const { resources } = await c.client.listResources();
  assert.deepEqual(
    resources.map((r) => [r.uri, r.name, r.mimeType]),
    [[uri, 'events', 'application/json']],
  );
  assert.ok(resources[0]!.description?.includes('GET /v1/events'));
  const { resourceTemplates } = await c.client.listResourceTemplates();
  assert.deepEqual(
    resourceTemplates.map((t) => t.uriTemplate),
    [`${uri}{?cursor,type,limit}`],
  );
  await end(c);
});

test("[MCP-EVENTS-RESOURCE] a read is the caller's newest events as GET /v1/events shows them, never another principal's", async () => {
  const agent = await sys.register();
  const other = await sys.register();
  const mine = [await topUp(agent), await topUp(agent)];
  const theirs = await topUp(other);
  await projected(agent, mine[1]!);
  await projected(other, theirs);
  const c = await connectMcp(sys.baseUrl, agent.token);

  // Fewer than 50 events: the newest page is the whole list, oldest first, as GET /v1/events pages it.
  const page = await read(c);
  const rest = await events(agent);
  assert.deepEqual(page.items, rest.items);
  const topups = page.items.filter((e) => e.type === 'topup.credited').map((e) => e.data.amount_cents);
  assert.deepEqual(topups.slice(-2), mine);
  assert.ok(!topups.includes(theirs), "another principal's top-up is not in the read");
  // The cursor resumes after the newest: nothing yet, over REST and over MCP.
  assert.deepEqual((await events(agent, `?cursor=${page.next_cursor}`)).items, []);
  assert.deepEqual((await read(c, `${uri}?cursor=${page.next_cursor}`)).items, []);

  // The newest one alone, then only what came after the cursor.
  const newest = await read(c, `${uri}?limit=1`);
  assert.deepEqual(newest.items, page.items.slice(-1));
  const next = await topUp(agent);
  // A page after a cursor does not wait for the projection (as on REST); a notification comes after it anyway.
  await projected(agent, next);
  const after = await read(c, `${uri}?cursor=${page.next_cursor}`);
  assert.deepEqual(
    after.items.map((e) => [e.type, e.data.amount_cents]),
    [['topup.credited', next]],
  );
  assert.deepEqual(await read(c, `${uri}?type=topup.credited&limit=1`), {
    items: after.items,
    next_cursor: after.next_cursor,
  });

  // The other principal's read has its own event only.
  const theirClient = await connectMcp(sys.baseUrl, other.token);
  const theirPage = await read(theirClient);
  assert.deepEqual(
    theirPage.items.filter((e) => e.type === 'topup.credited').map((e) => e.data.amount_cents),
    [theirs],
  );
  await end(theirClient);

  // Unknown resources, and a query GET /v1/events refuses, are refused as protocol errors with the typed object.
  await assert.rejects(() => c.client.readResource({ uri: 'assay://orders' }), refused(ErrorCode.InvalidParams));
  await assert.rejects(() => c.client.readResource({ uri: `${uri}/x` }), refused(ErrorCode.InvalidParams));
  await assert.rejects(
    () => c.client.readResource({ uri: `${uri}?limit=0` }),
    refused(ErrorCode.InvalidParams, 'validation_failed'),
  );
  await assert.rejects(
    () => c.client.readResource({ uri: `${uri}?cursor=bm90LWFuLWV2ZW50LWN1cnNvcg` }),
    refused(ErrorCode.InvalidParams, 'validation_failed'),
  );
  await assert.rejects(
    () => c.client.readResource({ uri: `${uri}?colour=red` }),
    refused(ErrorCode.InvalidParams, 'validation_failed'),
  );
  await assert.rejects(() => c.client.subscribeResource({ uri: 'assay://orders' }), refused(ErrorCode.InvalidParams));
  await end(c);
});

test('[MCP-EVENTS-RESOURCE] reading and subscribing need the scope GET /v1/events needs', async () => {
  const agent = await sys.register();
  const token = await mintToken(sys.config, { principalId: agent.principalId, scopes: ['purchase'] });
  const c = await connectMcp(sys.baseUrl, token);
  assert.equal((await c.client.listResources()).resources.length, 1, 'listed whatever the scopes, like tools');
  assert.equal((await sys.call('GET', '/v1/events', { token })).status, 403);
  await assert.rejects(() => c.client.readResource({ uri }), refused(ErrorCode.InternalError, 'forbidden'));
  await assert.rejects(() => c.client.subscribeResource({ uri }), refused(ErrorCode.InternalError, 'forbidden'));
  await end(c);
});

test("[MCP-EVENTS-RESOURCE] subscribed: the principal's new events notify the stream, another's do not; unsubscribed: silence", async () => {
  const agent = await sys.register();
  const other = await sys.register();
  const c = await listener(sys.baseUrl, agent.token);
  await c.client.subscribeResource({ uri });

  // Another principal's events do not reach this session.
  await projected(other, await topUp(other));
  await sleep(quietMs);
  assert.deepEqual(c.updates, []);

  // The principal's top-up: notified, and a read then shows the new event.
  const started = Date.now();
  const amount = await topUp(agent);
  await eventually(
    'notifications/resources/updated',
    async () => (c.updates.length > 0 ? true : undefined),
    notifiedWithinMs,
  );
  assert.ok(Date.now() - started < notifiedWithinMs);
  assert.ok(c.updates.every((u) => u === uri));
  const newest = (await read(c)).items.at(-1);
  assert.equal(newest.type, 'topup.credited');
  assert.equal(newest.data.amount_cents, amount);

  // Unsubscribed: new events send nothing more.
  await projected(agent, amount);
  await sleep(quietMs);
  const heard = c.updates.length;
  await c.client.unsubscribeResource({ uri });
  await projected(agent, await topUp(agent));
  await sleep(quietMs);
  assert.equal(c.updates.length, heard);
  // Unsubscribing again is fine; the resource is still readable.
  await c.client.unsubscribeResource({ uri });
  assert.ok((await read(c)).items.length > 0);
  await end(c);
});

test('[MCP-EVENTS-RESOURCE] subscribed through one gateway, the stream held by another gateway process is notified', async () => {
  const agent = await sys.register();
  // Subscribe first (gateway 1, this process), then open the stream on gateway 2: it reads the subscription.
  const first = await connectMcp(sys.baseUrl, agent.token);
  const sessionId = first.transport.sessionId!;
  const version = first.transport.protocolVersion!;
  await first.client.subscribeResource({ uri });
  await first.client.close();
  const onSecond = await listener(second.url, agent.token, { sessionId, version });
  const amount = await topUp(agent);
  await eventually(
    'a notification through gateway 2',
    async () => (onSecond.updates.length > 0 ? true : undefined),
    notifiedWithinMs,
  );
  assert.equal((await read(onSecond)).items.at(-1).data.amount_cents, amount);
  await end(onSecond);

  // The other order: the stream is open on gateway 2 when gateway 1 records the subscription, which gateway 2
  // learns from the change notice.
  const held = await listener(second.url, agent.token);
  const through = await connectMcp(sys.baseUrl, agent.token, {
    sessionId: held.transport.sessionId!,
    protocolVersion: held.transport.protocolVersion!,
  });
  await through.client.subscribeResource({ uri });
  await projected(agent, await topUp(agent));
  await eventually(
    'a notification of a subscription made elsewhere',
    async () => (held.updates.length > 0 ? true : undefined),
    notifiedWithinMs,
  );
  // Unsubscribed through gateway 1: gateway 2 stops.
  await sleep(quietMs);
  const heard = held.updates.length;
  await through.client.unsubscribeResource({ uri });
  await projected(agent, await topUp(agent));
  await sleep(quietMs);
  assert.equal(held.updates.length, heard);
  await through.client.close();
  await end(held);
});

test('[MCP-EVENTS-RESOURCE] a burst of notices is coalesced: one notification at once, one more at the end of the interval', async () => {
  const updates = new ResourceUpdates({ nc: sys.nc, names: sys.names, log: pino({ level: 'silent' }), uri });
  const principalId = randomUUID();
  const sent: number[] = [];
  const target = { principalId, sessionId: randomUUID(), notify: () => sent.push(performance.now()) };
  updates.add(target, { revision: 1, subscriptions: [uri] });
  await sys.nc.flush();
  for (let i = 0; i < 20; i++) sys.nc.publish(sys.names.notices.events, `${randomUUID()}\n${principalId}`);
  // Notices for other principals, and an older revision of the session's state, change nothing.
  sys.nc.publish(sys.names.notices.events, randomUUID());
  updates.apply(principalId, target.sessionId, { revision: 0, subscriptions: [] });
  await sleep(updateEveryMsMin * 4);
  assert.equal(sent.length, 2, `notified ${sent.length} times`);
  assert.ok(sent[1]! - sent[0]! >= updateEveryMsMin - 5);
  // A newer state without the subscription stops notices; the stream's end drops the NATS subscription.
  updates.apply(principalId, target.sessionId, { revision: 2, subscriptions: [] });
  await sys.nc.flush();
  sys.nc.publish(sys.names.notices.events, principalId);
  await sleep(updateEveryMsMin * 2);
  assert.equal(sent.length, 2);
  updates.remove(target);
  updates.close();
});
