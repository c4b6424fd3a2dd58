// Judge errata: listed for the artifacts whose current report an affected judge version made, opened and closed
// by the operator command, and (without artifact_id) limited to the caller's purchases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { corpusArtifact, currentJudgeVersion } from '../../actors/index.ts';
import { waitForCorpus } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

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
  const current = byVersion(currentJudgeVersion);
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

// Before the next test, which opens (and closes) an erratum on the current version: the corpus's two errata are the
// only ones.
test('[CAT-ERRATA] a buyer sees exactly the errata of what it bought, not those of artifacts it did not buy', async () => {
  const corpus = Array.from({ length: corpusSize }, (_, i) => corpusArtifact(sys.config.sandboxCorpusSeed, i));
  const [old, otherOld] = corpus.filter((a) => a.judgeVersion === '1.0.0');
  const mid = byVersion('1.1.0');
  const current = byVersion(currentJudgeVersion);
  assert.ok(old && otherOld && mid && current, 'the corpus has two artifacts judged by 1.0.0 and one of each other');
  // The corpus's errata, as its generator seeds them: 1.0.0 open, 1.1.0 closed; the current version has none.
  const oldErratum = { title: 'Judge 1.0.0 checks neither numbers nor negations', state: 'open', versions: ['1.0.0'] };
  const midErratum = { title: 'Judge 1.1.0 misses negations', state: 'closed', versions: ['1.1.0'] };

  const buyOne = async (agent: Agent, a: (typeof corpus)[number]) => {
    const l = a.listings[0]!;
    const r = await sys.call('POST', '/v1/orders', {
      token: agent.token,
      body: { listing_id: l.id, formats: l.formats },
      key: `errata-${a.id}`,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };
  const errataOf = async (agent: Agent, bought: number) => {
    await eventually('the orders to be projected', async () => {
      const mine = (await sys.call('GET', '/v1/orders', { token: agent.token })).body.items;
      return mine.length === bought ? true : undefined;
    });
    const r = await sys.call('GET', '/v1/errata', { token: agent.token });
    assert.equal(r.status, 200);
    assert.equal(r.body.next_cursor, null);
    return r.body.items.map((e: any) => ({
      title: e.title,
      state: e.state,
      versions: e.judgeVersions,
      artifactIds: e.artifactIds,
    }));
  };

  // Bought one of the 1.0.0 artifacts and one judged by the current version: the 1.0.0 erratum, naming only the one it bought.
  const a = await sys.register();
  await buyOne(a, old);
  await buyOne(a, current);
  assert.deepEqual(await errataOf(a, 2), [{ ...oldErratum, artifactIds: [old.id] }]);
  // Bought a 1.1.0 artifact only: the closed 1.1.0 erratum, and not the 1.0.0 one.
  const b = await sys.register();
  await buyOne(b, mid);
  assert.deepEqual(await errataOf(b, 1), [{ ...midErratum, artifactIds: [mid.id] }]);
  // The first buyer's purchases did not change: the second's are not its own.
  assert.deepEqual(await errataOf(a, 2), [{ ...oldErratum, artifactIds: [old.id] }]);
});

test('[CAT-ERRATA] the operator opens and closes errata with `assay errata`', async () => {
  const current = byVersion(currentJudgeVersion);
  const opened = await cli([
    'errata',
    'open',
    '--title',
    `Judge ${currentJudgeVersion} misreads units`,
    '--judge-versions',
    currentJudgeVersion,
  ]);
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
