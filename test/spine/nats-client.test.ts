// The nats.js client as this service uses it: its version pinned (the speed patches in storage/nats.ts were written
// against it and reach into its internals), both patches in place on a real connection, and NATS failures told
// apart by the library's error classes and JetStream's codes, on errors a real server produced.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { natsFailure, names as namesOf } from '../../contracts/index.ts';
import { connectNats, dropNamespace, ensureStreams, natsPatchedVersion, natsPatches } from '../../storage/index.ts';
import { natsUrl, uniqueNamespace } from '../support/env.ts';

const names = namesOf(uniqueNamespace('nc'));
let nc: NatsConnection;
before(async () => {
  nc = await connectNats(natsUrl, 'assay-test-nats-client');
  await ensureStreams(nc, names, 1);
});
after(async () => {
  await dropNamespace(nc, names);
  await nc.drain();
});

test('[SPINE-NATS-PATCHES] the pinned nats.js version is installed and both speed patches are in place', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.dependencies['@nats-io/nats-core'], natsPatchedVersion, 'package.json pins the patched version');
  assert.deepEqual(natsPatches, { requestCancel: 'patched', flushOncePerTurn: 'patched' });
  const protocol = (nc as unknown as { protocol: { sendCommand: { toString(): string } } }).protocol;
  assert.match(protocol.sendCommand.toString(), /setImmediate/, 'this connection flushes once per event-loop turn');
});

test('[SPINE-NATS-PATCHES] NATS failures are classified by error class and JetStream code', async () => {
  const caught = async (p: Promise<unknown>) =>
    p.then(
      () => assert.fail('expected a failure'),
      (err) => natsFailure(err),
    );
  assert.equal(await caught(nc.request(`${names.namespace}.nobody`, 'x', { timeout: 500 })), 'no_responders');
  const silent = nc.subscribe(`${names.namespace}.silent`);
  assert.equal(await caught(nc.request(`${names.namespace}.silent`, 'x', { timeout: 200 })), 'timeout');
  silent.unsubscribe();
  const js = jetstream(nc);
  await js.publish(names.ledgerSubject('p1'), 'first');
  assert.equal(
    await caught(js.publish(names.ledgerSubject('p1'), 'second', { expect: { lastSubjectSequence: 0 } })),
    'wrong_last_sequence',
  );
  const jsm = await jetstreamManager(nc);
  assert.equal(await caught(jsm.streams.info(`${names.namespace.toUpperCase()}_NOPE`)), 'not_found');
  assert.equal(
    await caught(jsm.streams.add({ name: names.streams.ledger.name, subjects: [`${names.namespace}.other.>`] })),
    'exists',
  );
  assert.equal(natsFailure(new Error('anything else')), 'other');
});
