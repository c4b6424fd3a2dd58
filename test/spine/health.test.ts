// /healthz shows the operational alerts background jobs raise in the health bucket: degraded while one is live, ok
// once it is deleted or purged, and always HTTP 200 (a liveness probe must not restart a process over an alert).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type KV, Kvm } from '@nats-io/kv';
import { type HealthAlert, healthAlertKey } from '../../contracts/index.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let kv: KV;

before(async () => {
  sys = await startSystem();
  kv = await new Kvm(sys.nc).open(sys.names.buckets.health);
});
after(async () => {
  await sys.stop();
});

const health = () => sys.call('GET', '/healthz');

/** /healthz once its alerts are `expected` (they follow the bucket a moment later). */
async function healthWith(expected: HealthAlert[]) {
  return eventually(`/healthz to show ${expected.length} alerts`, async () => {
    const r = await health();
    assert.equal(r.status, 200, 'always 200');
    return JSON.stringify(r.body.alerts) === JSON.stringify(expected) ? r : undefined;
  });
}

const alert = (subject: string, count: number): HealthAlert => ({
  kind: 'projection_parked',
  subject,
  message: `${count} facts of ${subject} could not be projected and were set aside`,
  count,
  since: '2026-11-23T10:00:00.000Z',
  updatedAt: '2026-11-23T10:05:00.000Z',
});

test('[SPINE-HEALTH] an alert put in the health bucket makes /healthz degraded; deleting or purging it clears it', async () => {
  const quiet = await health();
  assert.deepEqual(quiet.body, { status: 'ok', nats: true, alerts: [] });

  const ledger = alert('principal_facts', 2);
  const listings = alert('listings', 1);
  await kv.put(healthAlertKey(ledger.kind, ledger.subject), JSON.stringify(ledger));
  const one = await healthWith([ledger]);
  assert.deepEqual(one.body, { status: 'degraded', nats: true, alerts: [ledger] });

  // A value that is not an alert is not shown (and does not hide the others); an update replaces the alert.
  await kv.put('alert.projection_parked.junk', '{"kind":');
  const updated = alert('principal_facts', 3);
  await kv.put(healthAlertKey(updated.kind, updated.subject), JSON.stringify(updated));
  await kv.put(healthAlertKey(listings.kind, listings.subject), JSON.stringify(listings));
  // Sorted by key: alert.projection_parked.listings before alert.projection_parked.principal_facts.
  assert.equal((await healthWith([listings, updated])).body.status, 'degraded');

  await kv.delete(healthAlertKey(updated.kind, updated.subject));
  await healthWith([listings]);
  await kv.purge(healthAlertKey(listings.kind, listings.subject));
  const cleared = await healthWith([]);
  assert.equal(cleared.body.status, 'ok');
});
