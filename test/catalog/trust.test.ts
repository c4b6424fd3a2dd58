// Trust against hand-computed values: no samples, all passes, and old and new samples mixed, whose weights halve
// every 30 days (score = (1 + passing weight) / (2 + total weight)).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { weightAtEpoch } from '../../actors/index.ts';
import { addTrustSamples } from '../../storage/index.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';

const dayMs = 86_400_000;
let sys: TestSystem;
let a: Agent;

before(async () => {
  sys = await startSystem();
  a = await sys.register();
});
after(async () => {
  await sys.stop();
});

async function sample(subject: string, id: string, pass: boolean, ageDays: number) {
  const atMs = Date.now() - ageDays * dayMs;
  await addTrustSamples(sys.sql, [
    {
      subject,
      sourceKind: 'test',
      sourceId: id,
      pass,
      at: new Date(atMs).toISOString(),
      weightAtEpoch: weightAtEpoch(atMs),
    },
  ]);
}

const trust = async (subject: string) => (await sys.call('GET', `/v1/trust/${subject}`, { token: a.token })).body;
const close = (x: number, y: number) => Math.abs(x - y) < 1e-5;

test('[CAT-TRUST] no samples: score 0.5, sampleSize 0, passRate null', async () => {
  assert.deepEqual(await trust(`agent:${a.agentId}`), { score: 0.5, sampleSize: 0, passRate: null });
  assert.deepEqual(await trust(`principal:${a.principalId}`), { score: 0.5, sampleSize: 0, passRate: null });
});

test('[CAT-TRUST] three passes today: (1 + 3) / (2 + 3) = 0.8, pass rate 1', async () => {
  const b = await sys.register();
  for (const id of ['p1', 'p2', 'p3']) await sample(`agent:${b.agentId}`, id, true, 0);
  const t = await trust(`agent:${b.agentId}`);
  assert.ok(close(t.score, 0.8), String(t.score));
  assert.equal(t.sampleSize, 3);
  assert.equal(t.passRate, 1);
});

test('[CAT-TRUST] pass 60 days ago, fail 30 days ago, pass today: (1 + 0.25 + 1) / (2 + 0.25 + 0.5 + 1) = 0.6', async () => {
  const c = await sys.register();
  await sample(`agent:${c.agentId}`, 'old-pass', true, 60);
  await sample(`agent:${c.agentId}`, 'mid-fail', false, 30);
  await sample(`agent:${c.agentId}`, 'new-pass', true, 0);
  const t = await trust(`agent:${c.agentId}`);
  assert.ok(close(t.score, 2.25 / 3.75), String(t.score));
  assert.equal(t.sampleSize, 3);
  assert.ok(close(t.passRate, 2 / 3));
  // The same outcomes in the other order weigh differently: recency matters.
  const d = await sys.register();
  await sample(`agent:${d.agentId}`, 'old-fail', false, 60);
  await sample(`agent:${d.agentId}`, 'mid-pass', true, 30);
  await sample(`agent:${d.agentId}`, 'new-fail', false, 0);
  const u = await trust(`agent:${d.agentId}`);
  assert.ok(close(u.score, (1 + 0.5) / 3.75), String(u.score));
  // A sample recorded twice counts once.
  await sample(`agent:${d.agentId}`, 'new-fail', false, 0);
  assert.equal((await trust(`agent:${d.agentId}`)).sampleSize, 3);
});

test('[CAT-VALIDATION] trust of a malformed subject is 422, of an unknown one 404', async () => {
  for (const s of ['agent:nope', 'robot:00000000-0000-4000-8000-000000000000', 'agent']) {
    const r = await sys.call('GET', `/v1/trust/${s}`, { token: a.token });
    assert.equal(r.status, 422, s);
    assert.ok(isTypedError(r.body, 'validation_failed'));
  }
  const r = await sys.call('GET', '/v1/trust/agent:00000000-0000-4000-8000-000000000000', { token: a.token });
  assert.equal(r.status, 404);
  assert.ok(isTypedError(r.body, 'not_found'));
});
