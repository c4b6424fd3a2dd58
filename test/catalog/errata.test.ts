// Judge errata: listed for the artifacts whose current report an affected judge version made, opened and closed
// by the operator command, and (without artifact_id) limited to the caller's purchases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { corpusArtifact } from '../../actors/index.ts';
import { waitForCorpus } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, runCli, startSystem, type TestSystem } from '../support/system.ts';

const corpusSize = 60;
let sys: TestSystem;
let buyer: Agent;

before(async () => {
  sys = await startSystem({ ASSAY_SANDBOX_CORPUS_ARTIFACTS: String(corpusSize) });
  await waitForCorpus(sys, corpusSize);
  buyer = await sys.register();
});
after(async () => {
  await sys.stop();
});

const byVersion = (v: string) =>
  Array.from({ length: corpusSize }, (_, i) => corpusArtifact(sys.config.sandboxCorpusSeed, i)).find(
    (a) => a.judgeVersion === v,
  )!;

const cli = (args: string[]) => runCli(sys, args);

test('[CAT-ERRATA] errata are listed for artifacts judged by an affected version, and only those', async () => {
  const old = byVersion('1.0.0');
  const mid = byVersion('1.1.0');
  const current = byVersion('1.2.0');
  const r1 = await sys.call('GET', `/v1/errata?artifact_id=${old.id}`, { token: buyer.token });
  assert.equal(r1.status, 200);
  assert.equal(r1.body.items.length, 1);
  assert.equal(r1.body.items[0].state, 'open');
  assert.deepEqual(r1.body.items[0].judgeVersions, ['1.0.0']);
  assert.deepEqual(r1.body.items[0].artifactIds, [old.id]);
  assert.ok(r1.body.items[0].affectedArtifactsTotal >= 1);
  const r2 = await sys.call('GET', `/v1/errata?artifact_id=${mid.id}`, { token: buyer.token });
  assert.equal(r2.body.items[0].state, 'closed');
  assert.ok(r2.body.items[0].closedAt);
  const r3 = await sys.call('GET', `/v1/errata?artifact_id=${current.id}`, { token: buyer.token });
  assert.deepEqual(r3.body, { items: [], next_cursor: null });
  const mine = await sys.call('GET', '/v1/errata', { token: buyer.token });
  assert.deepEqual(mine.body, { items: [], next_cursor: null }, 'a buyer with no purchases is affected by none');
});

test('[CAT-ERRATA] the operator opens and closes errata with `assay errata`', async () => {
  const current = byVersion('1.2.0');
  const opened = await cli(['errata', 'open', '--title', 'Judge 1.2.0 misreads units', '--judge-versions', '1.2.0']);
  assert.equal(opened.code, 0, opened.stderr);
  const id = opened.stdout.trim();
  const listed = await sys.call('GET', `/v1/errata?artifact_id=${current.id}`, { token: buyer.token });
  assert.deepEqual(
    listed.body.items.map((e: any) => [e.id, e.state]),
    [[id, 'open']],
  );
  const closed = await cli(['errata', 'close', id]);
  assert.equal(closed.code, 0, closed.stderr);
  const after = await sys.call('GET', `/v1/errata?artifact_id=${current.id}`, { token: buyer.token });
  assert.equal(after.body.items[0].state, 'closed');
  assert.equal((await cli(['errata', 'close', id])).code, 1, 'closing twice says so');
  assert.equal((await cli(['errata', 'open', '--title', 'x', '--judge-versions', '9.9.9'])).code, 1, 'unknown version');
});

test('[CAT-VALIDATION] errata input is validated and the sandbox line holds', async () => {
  const bad = await sys.call('GET', '/v1/errata?artifact_id=nope', { token: buyer.token });
  assert.equal(bad.status, 422);
  assert.ok(isTypedError(bad.body, 'validation_failed'));
  const unknown = await sys.call('GET', '/v1/errata?artifact_id=00000000-0000-4000-8000-000000000000', {
    token: buyer.token,
  });
  assert.equal(unknown.status, 404);
});
