// The judge's measured quality travels with what it judged: a report signs the figures of its judge version on the
// reference set, the report route and the search item's trust show them, and a mandate's min_judge_specificity
// refuses (judge_version_rejected, in the error table's order) an edition whose judge measured less, over REST and
// MCP alike, changing nothing.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { judgeQualityOf, referenceSet } from '../../actors/verification/judges/quality.ts';
import { registerSeller, registerWithScopes, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp, outcome } from '../support/mcp.ts';
import { type Agent, runCli, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
let listing: { artifactId: string; listingId: string };
/** 3.0.0's published specificity: what the current built-in judge's reports carry. */
const quality = judgeQualityOf('3.0.0')!;

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
  listing = await verifiedListing(sys, seller.token, 'judgequality', { price: 300, good: true });
});
after(async () => {
  await sys.stop();
});

const buyer = () => registerWithScopes(sys, ['read:artifact', 'read:trust', 'purchase', 'manage:mandate']);

test("[JUDGE-QUALITY-REPORT] a report signs its judge version and that version's measured quality on the reference set, and verifies offline", async () => {
  assert.ok(quality.specificity > 0 && quality.specificity < 1, 'the figures are measured, not placeholders');
  const artifact = (await sys.call('GET', `/v1/artifacts/${listing.artifactId}`, { token: seller.token })).body;
  const digest = artifact.currentEdition.reportDigest as string;
  const report = (await sys.call('GET', `/v1/reports/${digest}`, { token: seller.token })).body;
  assert.equal(report.pipelineVersion, 'assay-verify/1.1.0');
  assert.equal(report.judgePromptVersion, '3.0.0');
  assert.deepEqual(report.judgeQuality, {
    referenceSet: { ...referenceSet },
    sensitivity: quality.sensitivity,
    specificity: quality.specificity,
    balancedAccuracy: quality.balancedAccuracy,
  });
  // The figures are inside the signed body: the offline verifier accepts the report as served, and refuses it with
  // a better specificity written in.
  const dir = await mkdtemp(join(tmpdir(), 'assay-judge-quality-'));
  try {
    const file = join(dir, 'report.json');
    await writeFile(file, JSON.stringify(report));
    const keys = `${sys.baseUrl}/.well-known/report-keys`;
    const ok = await runCli(sys, ['verify-report', file, '--keys', keys]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    await writeFile(file, JSON.stringify({ ...report, judgeQuality: { ...report.judgeQuality, specificity: 1 } }));
    const forged = await runCli(sys, ['verify-report', file, '--keys', keys]);
    assert.equal(forged.code, 1, forged.stdout);
    assert.match(forged.stdout + forged.stderr, /FAILED/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("[JUDGE-QUALITY-SEARCH] a search item's trust names the judge of the current report and its measured quality, over REST and MCP", async () => {
  const expected = { version: '3.0.0', quality };
  const rest = await sys.call('GET', '/v1/search?topic=judgequality', { token: seller.token });
  assert.equal(rest.status, 200);
  const item = rest.body.items.find((i: { artifact: { id: string } }) => i.artifact.id === listing.artifactId);
  assert.ok(item, JSON.stringify(rest.body));
  assert.deepEqual(item.trust.judge, expected);
  const { client } = await connectMcp(sys.baseUrl, seller.token);
  try {
    const mcp = outcome(await client.callTool({ name: 'search_artifacts', arguments: { topic: 'judgequality' } }));
    const mcpItem = mcp.body.items.find((i: { artifact: { id: string } }) => i.artifact.id === listing.artifactId);
    assert.deepEqual(mcpItem.trust.judge, expected);
  } finally {
    await client.close();
  }
});

test("[JUDGE-QUALITY-MANDATE] min_judge_specificity over REST: above the judge's figure is judge_version_rejected and changes nothing; at it the purchase is held; the cap still comes first", async () => {
  const b = await buyer();
  const set = async (body: object, key: string) => {
    const r = await sys.call('POST', '/v1/mandates', {
      token: b.token,
      body: { per_item_cap_cents: 10_000, ...body },
      key,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const strict = await set({ min_judge_specificity: Math.min(1, quality.specificity + 0.0001) }, 'm1');
  assert.equal(strict.minJudgeSpecificity, Math.min(1, quality.specificity + 0.0001));
  const balance = async () => (await sys.call('GET', '/v1/balance', { token: b.token })).body.balance_cents;
  const before = await balance();
  const refused = await sys.call('POST', '/v1/orders', {
    token: b.token,
    body: { listing_id: listing.listingId, formats: ['md'] },
    key: 'o1',
  });
  assert.equal(refused.status, 403);
  assert.ok(isTypedError(refused.body, 'judge_version_rejected'), JSON.stringify(refused.body));
  assert.match(refused.body.message, /measured a specificity of/);
  assert.equal(await balance(), before);
  assert.equal((await sys.call('GET', '/v1/orders', { token: b.token })).body.items.length, 0);
  // A per-item cap below the price is mandate_exceeded: it comes before judge_version_rejected in the error table.
  await set({ per_item_cap_cents: 100, min_judge_specificity: 1 }, 'm2');
  const capped = await sys.call('POST', '/v1/orders', {
    token: b.token,
    body: { listing_id: listing.listingId, formats: ['md'] },
    key: 'o2',
  });
  assert.equal(capped.status, 403);
  assert.ok(isTypedError(capped.body, 'mandate_exceeded'), JSON.stringify(capped.body));
  // Changing only the minimum to the judge's own figure lets the purchase through.
  const changed = await sys.call('POST', `/v1/mandates/${(await set({ min_judge_specificity: 1 }, 'm3')).id}/change`, {
    token: b.token,
    body: { min_judge_specificity: quality.specificity },
    key: 'c1',
  });
  assert.equal(changed.status, 201, JSON.stringify(changed.body));
  assert.equal(changed.body.minJudgeSpecificity, quality.specificity);
  const held = await sys.call('POST', '/v1/orders', {
    token: b.token,
    body: { listing_id: listing.listingId, formats: ['md'] },
    key: 'o3',
  });
  assert.equal(held.status, 201, JSON.stringify(held.body));
});

test("[JUDGE-QUALITY-MANDATE] min_judge_specificity over MCP: the tool sets it and a purchase above the judge's figure is refused with the same typed error", async () => {
  const b = await buyer();
  const { client } = await connectMcp(sys.baseUrl, b.token);
  try {
    const m = outcome(
      await client.callTool({
        name: 'create_mandate',
        arguments: { per_item_cap_cents: 10_000, min_judge_specificity: 1, idempotency_key: 'm1' },
      }),
    );
    assert.equal(m.status, 201, JSON.stringify(m.body));
    assert.equal(m.body.minJudgeSpecificity, 1);
    const bad = await client.callTool({
      name: 'create_mandate',
      arguments: { per_item_cap_cents: 10_000, min_judge_specificity: 1.5, idempotency_key: 'm2' },
    });
    assert.equal(bad.isError, true, 'a minimum above 1 is not a specificity');
    const refused = outcome(
      await client.callTool({
        name: 'purchase_artifact',
        arguments: { listing_id: listing.listingId, formats: ['md'], idempotency_key: 'o1' },
      }),
    );
    assert.equal(refused.isError, true);
    assert.equal(refused.status, 403);
    assert.ok(isTypedError(refused.body, 'judge_version_rejected'), JSON.stringify(refused.body));
  } finally {
    await client.close();
  }
});
