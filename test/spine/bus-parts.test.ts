// Replies larger than one NATS message (delivered content) cross the bus in parts: a service answers a request
// that asks for parts with pieces under the server's max_payload and an empty message, and the gateway joins them.
// Refusals and missing responders end such a request at once, not at the deadline.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { NatsConnection } from '@nats-io/nats-core';
import pino from 'pino';
import { serveService } from '../../actors/index.ts';
import { type BusRequest, errorReply, names as namesOf, okReply } from '../../contracts/index.ts';
import { GatewayBus } from '../../gateway/bus.ts';
import { connectNats } from '../../storage/index.ts';
import { natsUrl, uniqueNamespace } from '../support/env.ts';

const log = pino({ level: 'silent' });
const names = namesOf(uniqueNamespace('parts'));
let nc: NatsConnection;
let bus: GatewayBus;
const large = randomBytes(3 * 1_048_576);

before(async () => {
  nc = await connectNats(natsUrl, 'bus-parts-test');
  bus = new GatewayBus(nc, 2000, log);
  // Every service op is dispatched by name; this test serves the delivery service's ops with stand-in handlers.
  serveService(
    nc,
    names,
    'delivery',
    {
      getOrderContent: async () => okReply(200, { content_base64: large.toString('base64') }),
      downloadOrderContent: async () => ({ ok: true as const, status: 200, body: large, mediaType: 'application/pdf' }),
      getOrderReceipts: async () => errorReply('not_found', 'no order with this id'),
    },
    log,
  );
  await nc.flush();
});
after(async () => {
  await nc.drain();
});

const request = (op: string): BusRequest => ({
  op,
  requestId: op,
  caller: { principalId: 'p', agentId: 'a', scopes: ['purchase'], sandbox: true },
  params: {},
  query: {},
  body: null,
});

test('[SPINE-BUS-PARTS] a reply three times max_payload arrives whole, as JSON and as raw bytes', async () => {
  assert.ok(large.length > (nc.info?.max_payload ?? 0) * 2, 'the reply does not fit one message');
  const subject = names.serviceSubject('delivery');
  const json = await bus.requestWire(subject, request('getOrderContent'), true);
  assert.ok(json.reply.ok);
  assert.equal((json.reply.body as any).content_base64, large.toString('base64'));
  const raw = await bus.requestWire(subject, request('downloadOrderContent'), true);
  assert.ok(raw.reply.ok && raw.reply.mediaType === 'application/pdf');
  assert.deepEqual(Buffer.from(raw.reply.body as Uint8Array), large);
  // Asked for in one message, the same reply cannot be sent: the service says so at once.
  const whole = await bus.requestWire(subject, request('downloadOrderContent'), false);
  assert.ok(!whole.reply.ok);
  assert.equal(whole.reply.error.message, 'the reply could not be sent; retry shortly');
});

test('[SPINE-BUS-PARTS] a refusal and a subject nobody serves end a parts request at once', async () => {
  const refused = await bus.requestWire(names.serviceSubject('delivery'), request('getOrderReceipts'), true);
  assert.ok(!refused.reply.ok && refused.reply.error.code === 'not_found');
  const nobody = await bus.requestWire(`${names.namespace}.svc.nobody`, request('getOrderReceipts'), true);
  assert.ok(!nobody.reply.ok && nobody.reply.error.code === 'unavailable');
  assert.match(nobody.reply.error.message, /no process serves this request/);
  // Neither waited for the deadline: its text would say so.
  for (const r of [refused, nobody]) assert.doesNotMatch(JSON.stringify(r.reply), /no answer within/);
});
