// Generated documentation matches what is committed, and every requirement is verified by some test.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  contextOpenapiUrls,
  openapiUrl,
  readmeUrl,
  renderContextOpenapi,
  renderOpenapi,
  renderReadme,
} from '../../cli/gen-docs.ts';
import { requirements } from '../requirements.ts';

test("[SPINE-CONFIG-DOCS] the README's configuration table and docs/openapi.json are current (npm run docs)", () => {
  const readme = readFileSync(readmeUrl, 'utf8');
  assert.equal(readme, renderReadme(readme));
  assert.equal(readFileSync(openapiUrl, 'utf8'), renderOpenapi());
  for (const base of ['web', 'api'] as const) {
    assert.equal(
      readFileSync(contextOpenapiUrls[base], 'utf8'),
      renderContextOpenapi(base),
      `the ${base} context-file document`,
    );
  }
});

/**
 * The requirement ids a test file cites in the names of its tests: the leading `[ID]`s of the first argument of each
 * test(...), it(...) and describe(...) call (a describe's id covers the tests inside it). An id anywhere else (an
 * assertion message, a comment, a skipped test) verifies nothing.
 */
function citedInTestNames(source: string): string[] {
  const ids: string[] = [];
  for (const call of source.matchAll(/\b(?:test|it|describe)\(\s*['"`]((?:\[[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+\]\s*)+)/g)) {
    for (const id of call[1]!.matchAll(/\[([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)\]/g)) ids.push(id[1]!);
  }
  return ids;
}

test('every requirement in test/requirements.ts is cited by a test', () => {
  const testDir = new URL('../', import.meta.url).pathname;
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((n) => {
      const p = join(d, n);
      return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
    });
  const cited = new Set<string>();
  for (const f of walk(testDir)) for (const id of citedInTestNames(readFileSync(f, 'utf8'))) cited.add(id);
  const uncited = Object.keys(requirements).filter((id) => !cited.has(id));
  assert.deepEqual(uncited, [], 'requirements no test names');
  const unknown = [...cited].filter((id) => !(id in requirements));
  assert.deepEqual(unknown, [], 'tests cite ids that are not in test/requirements.ts');
});

test('a requirement id counts only in a test name: not in a message, a comment or a skipped test', () => {
  // The calls are put together here so that this file's own text cites none of the made-up ids.
  const [t, d, i] = ['test', 'describe', 'it'];
  const source = [
    `${t}('[A-ONE] first', () => {`,
    "  assert.ok(true, '[B-TWO] only in a message');",
    '});',
    '// [C-THREE] only in a comment',
    `${t}.skip('[D-FOUR] skipped', () => {});`,
    `${d}(`,
    "  '[E-FIVE] [F-SIX] a suite',",
    '  () => {',
    `    ${i}(\`[G-SEVEN] a case\`, () => {});`,
    '  },',
    ');',
  ].join('\n');
  assert.deepEqual(citedInTestNames(source), ['A-ONE', 'E-FIVE', 'F-SIX', 'G-SEVEN']);
});

/** The sections of the interface spec a requirement may cite (its headings and the numbered lists it refers to). */
const specSections = [
  'What the service does',
  'Resources and their fields',
  'States and transitions',
  'Endpoints',
  'Agent routes on {base_url}',
  'GET /v1/search',
  'GET /v1/reports/{digest}',
  'GET /v1/trust/{subject}',
  'GET /v1/errata',
  'POST /v1/orders',
  'GET /v1/orders',
  'GET /v1/orders/{order_id}/compliance-bundle',
  'POST /v1/subscriptions',
  'POST /v1/topups',
  'GET /v1/balance',
  'GET /v1/ledger and GET /v1/payouts',
  'Other routes on {base_url}',
  'Routes on {web_url}',
  'Context-file API',
  'Authentication',
  'Events',
  'Errors',
  'Limits',
  'Versioning',
];

test('every requirement names where it comes from: a spec section, or a heading of a doc in this repository', () => {
  const docsDir = new URL('../../', import.meta.url);
  for (const [id, r] of Object.entries(requirements)) {
    const spec = /^spec: (.+?)(?: \(.+\))?$/.exec(r.source);
    if (spec) {
      assert.ok(specSections.includes(spec[1]!), `${id}: no spec section ${spec[1]}`);
      continue;
    }
    const doc = /^(docs\/[a-z0-9-]+\.md): (.+)$/.exec(r.source);
    assert.ok(doc, `${id}: source ${r.source} is neither spec: nor docs/`);
    const headings = readFileSync(new URL(doc[1]!, docsDir), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .map((l) => l.replace(/^#+\s*/, ''));
    assert.ok(headings.includes(doc[2]!), `${id}: ${doc[1]} has no heading "${doc[2]}"`);
  }
});
