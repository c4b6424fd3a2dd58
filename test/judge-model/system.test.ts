// The model judge in a running system (ASSAY_JUDGE=openai, a loopback OpenAI-compatible endpoint): a report names
// the model the endpoint answered as, the prompt version and its hash, and verifies offline; mandates filter it by
// judge version and by errata that name its model; and when the endpoint is down the edition waits, its order held,
// until the endpoint is back and the report settles it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { modelPromptHash } from '../../actors/verification/judges/model-prompt.ts';
import { artifactContent, registerSeller, reportDigestOf } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { answeredModelDefault, type OpenAIServer, startOpenAIServer } from '../support/openai-server.ts';
import { type Agent, eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

let server: OpenAIServer;
let sys: TestSystem;
let seller: Agent;
before(async () => {
  server = await startOpenAIServer();
  sys = await startSystem({
    ASSAY_JUDGE: 'openai',
    ASSAY_JUDGE_URL: server.url,
    ASSAY_JUDGE_MODEL: 'judge-alias',
    ASSAY_JUDGE_TIMEOUT_MS: '2000',
    ASSAY_JUDGE_BREAKER_COOLDOWN_MS: '300',
  });
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
  await server.close();
});

const passage = ['A stream keeps duplicate message ids for two minutes by default.'];
/** An artifact whose claims the endpoint's marker policy supports (no marker) or refuses (`verdict:...`). */
const publish = async (key: string, claims: [string, string][]) => {
  const r = await sys.call('POST', '/v1/artifacts', {
    token: seller.token,
    body: { title: `Model ${key}`, content: artifactContent(key, claims, passage) },
    key: `a-${key}`,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id as string;
};
const list = async (artifactId: string, key: string) => {
  const r = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: { artifact_id: artifactId, price_cents: 100, floor: 0.7, formats: ['md'] },
    key: `l-${key}`,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id as string;
};
const buyer = async (mandate: object) => {
  const r = await sys.call('POST', '/sandbox/agents', {
    body: { scopes: ['read:artifact', 'read:trust', 'purchase', 'manage:mandate'] },
  });
  const token = r.body.token as string;
  const m = await sys.call('POST', '/v1/mandates', {
    token,
    body: { per_item_cap_cents: 10_000, ...mandate },
    key: 'm',
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  return token;
};
const buy = (token: string, listingId: string, key: string) =>
  sys.call('POST', '/v1/orders', { token, body: { listing_id: listingId, formats: ['md'] }, key });

test('[JUDGE-MODEL-REPORT] a model-judged report names the answered model, prompt 2.2.0 and its hash, and verifies offline', async () => {
  const artifactId = await publish('named', [
    ['c1', 'A stream keeps duplicate ids for 2 minutes.'],
    ['c2', 'A stream keeps duplicate ids for 2 hours. verdict:contradicted'],
  ]);
  const digest = await reportDigestOf(sys, seller.token, artifactId);
  const report = (await sys.call('GET', `/v1/reports/${digest}`, { token: seller.token })).body;
  assert.equal(report.judgeModel, answeredModelDefault, 'the id the endpoint answered with, not the alias');
  assert.equal(report.judgePromptVersion, '2.2.0');
  assert.equal(report.judgePromptHash, modelPromptHash);
  assert.deepEqual(report.judge, { driver: 'openai', entailmentFrom: 'logprobs' });
  assert.deepEqual(
    report.claims.map((c: { state: string }) => c.state),
    ['verified', 'contradicted'],
  );
  const [usage] = await sys.sql`SELECT judge_usage FROM reports WHERE digest = ${digest}`;
  assert.ok(usage!.judge_usage.calls >= 2 && usage!.judge_usage.promptTokens > 0, JSON.stringify(usage));
  const dir = await mkdtemp(join(tmpdir(), 'assay-model-report-'));
  try {
    const file = join(dir, 'report.json');
    await writeFile(file, JSON.stringify(report));
    const ok = await runCli(sys, ['verify-report', file, '--keys', `${sys.baseUrl}/.well-known/report-keys`]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /^OK/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('[JUDGE-MODEL-VERSIONS] mandates filter a model-judged artifact by judge version, and by errata that name its model', async () => {
  const artifactId = await publish('versions', [['c1', 'A stream keeps duplicate ids for 2 minutes.']]);
  await reportDigestOf(sys, seller.token, artifactId);
  const listingId = await list(artifactId, 'versions');
  const wantsNewer = await buyer({ min_judge_version: '2.3.0' });
  const refused = await buy(wantsNewer, listingId, 'v1');
  assert.equal(refused.status, 403);
  assert.ok(isTypedError(refused.body, 'judge_version_rejected'));
  assert.equal((await buy(await buyer({ min_judge_version: '2.2.0' }), listingId, 'v2')).status, 201);
  // The built-in judge's 2.0.0 is below the model prompt in the one sequence: a mandate asking for it accepts both.
  assert.equal((await buy(await buyer({ min_judge_version: '2.0.0' }), listingId, 'v3')).status, 201);

  const strict = await buyer({ reject_open_judge_errata: true });
  const other = await runCli(sys, [
    'errata',
    'open',
    '--title',
    'o',
    '--judge-versions',
    '2.2.0',
    '--judge-model',
    'x',
  ]);
  assert.equal(other.code, 0, other.stderr);
  assert.equal((await buy(strict, listingId, 'e1')).status, 201, 'an erratum about another model does not apply');
  const mine = await runCli(sys, [
    'errata',
    'open',
    '--title',
    'model',
    '--judge-versions',
    '2.2.0',
    '--judge-model',
    answeredModelDefault,
  ]);
  assert.equal(mine.code, 0, mine.stderr);
  const rejected = await buy(strict, listingId, 'e2');
  assert.equal(rejected.status, 403);
  assert.ok(isTypedError(rejected.body, 'judge_version_rejected'));
  const errata = (await sys.call('GET', `/v1/errata?artifact_id=${artifactId}`, { token: strict })).body.items;
  assert.deepEqual(
    errata.map((e: { judgeModel: string }) => e.judgeModel),
    [answeredModelDefault],
  );
  for (const e of [other, mine]) await runCli(sys, ['errata', 'close', e.stdout.trim()]);
});

test('[JUDGE-MODEL-PENDING] with the endpoint down the edition waits and its order stays held; once it is back the report settles it', async () => {
  const artifactId = await publish('pending', [['c1', 'A stream keeps duplicate ids for 2 minutes.']]);
  await reportDigestOf(sys, seller.token, artifactId);
  const listingId = await list(artifactId, 'pending');
  server.always = { kind: 'status', status: 503 };
  const answeredBefore = server.requests;
  const edition = await sys.call('POST', `/v1/artifacts/${artifactId}/editions`, {
    token: seller.token,
    body: { content: artifactContent('pending', [['c1', 'Ids are kept for 2 minutes.']], passage) },
    key: 'e-pending',
  });
  assert.equal(edition.status, 201);
  const token = await buyer({});
  const bought = await buy(token, listingId, 'p1');
  assert.equal(bought.status, 201);
  // The endpoint is asked and fails: the edition stays pending, the order held.
  await eventually('the judge to have tried', async () => (server.requests > answeredBefore ? true : undefined));
  const artifact = (await sys.call('GET', `/v1/artifacts/${artifactId}`, { token })).body;
  assert.equal(artifact.currentEdition.id, edition.body.currentEdition.id);
  assert.equal(artifact.currentEdition.reportDigest, null);
  const held = await eventually('the order to be projected', async () => {
    const o = (await sys.call('GET', '/v1/orders', { token })).body.items[0];
    return o ?? undefined;
  });
  assert.equal(held.state, 'held');
  server.always = null;
  const settled = await eventually(
    'the report to arrive and settle the order',
    async () => {
      const o = (await sys.call('GET', '/v1/orders', { token })).body.items[0];
      return o?.state === 'released' ? o : undefined;
    },
    30_000,
  );
  assert.equal(settled.refundReason, null);
  const digest = await reportDigestOf(sys, seller.token, artifactId);
  const report = (await sys.call('GET', `/v1/reports/${digest}`, { token })).body;
  assert.equal(report.subject.editionId, edition.body.currentEdition.id);
  assert.equal(report.judgeModel, answeredModelDefault, 'judged by the model when it was back, not by another judge');
});

test('[JUDGE-ERROR-WAITS] a claim the model gives no verdict for (judge_error) makes the edition wait, its order held, instead of a report that fails it', async () => {
  const artifactId = await publish('no-verdict', [['c1', 'A stream keeps duplicate ids for 2 minutes.']]);
  await reportDigestOf(sys, seller.token, artifactId);
  const listingId = await list(artifactId, 'no-verdict');
  // Every answer is prose, not the JSON verdict asked for: each claim ends judge_error.
  server.always = { kind: 'content', content: 'Supported.' };
  const answeredBefore = server.requests;
  const edition = await sys.call('POST', `/v1/artifacts/${artifactId}/editions`, {
    token: seller.token,
    body: { content: artifactContent('no-verdict', [['c1', 'Duplicate ids are kept two minutes.']], passage) },
    key: 'e-no-verdict',
  });
  assert.equal(edition.status, 201);
  const token = await buyer({});
  assert.equal((await buy(token, listingId, 'nv1')).status, 201);
  // Asked twice (the answer, then the one retry), with a claim no verdict is cached for: no report, the order held.
  await eventually('the judge to have been asked', async () =>
    server.requests >= answeredBefore + 2 ? true : undefined,
  );
  const editionId = edition.body.currentEdition.id as string;
  const [row] = await sys.sql<{ reports: number }[]>`
    SELECT count(*)::int AS reports FROM reports WHERE edition_id = ${editionId}`;
  assert.equal(row!.reports, 0, 'no report counts the unanswered claim as 0');
  const held = await eventually('the order to be projected', async () => {
    const o = (await sys.call('GET', '/v1/orders', { token })).body.items[0];
    return o ?? undefined;
  });
  assert.equal(held.state, 'held');
  // The model answers again: the same edition is judged, reported and the order released.
  server.always = null;
  const settled = await eventually(
    'the report to arrive and settle the order',
    async () => {
      const o = (await sys.call('GET', '/v1/orders', { token })).body.items[0];
      return o?.state === 'released' ? o : undefined;
    },
    30_000,
  );
  assert.equal(settled.refundReason, null);
  const digest = await reportDigestOf(sys, seller.token, artifactId);
  const report = (await sys.call('GET', `/v1/reports/${digest}`, { token })).body;
  assert.equal(report.subject.editionId, editionId);
  assert.deepEqual(
    report.claims.map((c: { state: string }) => c.state),
    ['verified'],
  );
});
