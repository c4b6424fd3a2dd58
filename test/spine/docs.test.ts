// Generated documentation matches what is committed, and every requirement is verified by some test.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openapiUrl, readmeUrl, renderOpenapi, renderReadme } from '../../cli/gen-docs.ts';
import { requirements } from '../requirements.ts';

test("[SPINE-CONFIG-DOCS] the README's configuration table and docs/openapi.json are current (npm run docs)", () => {
  const readme = readFileSync(readmeUrl, 'utf8');
  assert.equal(readme, renderReadme(readme));
  assert.equal(readFileSync(openapiUrl, 'utf8'), renderOpenapi());
});

test('every requirement in test/requirements.ts is cited by a test', () => {
  const testDir = new URL('../', import.meta.url).pathname;
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((n) => {
      const p = join(d, n);
      return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
    });
  const cited = new Set<string>();
  for (const f of walk(testDir))
    for (const m of readFileSync(f, 'utf8').matchAll(/['"`]\[([A-Z]+(?:-[A-Z0-9]+)+)\]/g)) cited.add(m[1]!);
  const uncited = Object.keys(requirements).filter((id) => !cited.has(id));
  assert.deepEqual(uncited, [], 'requirements no test cites');
  const unknown = [...cited].filter((id) => !(id in requirements));
  assert.deepEqual(unknown, [], 'tests cite ids that are not in test/requirements.ts');
});
