// README's "What is built" table against what the service serves: each row names its routes, and the table must
// agree with the operation table (contracts/operations.ts) and the device sync routes (gateway/sync/routes.ts) both
// ways. A route served is named by a row marked built; a route named in a built row is served; a row that says
// "not yet" names only routes that are not served.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { operations } from '../../contracts/index.ts';
import { syncRoutes } from '../../gateway/sync/routes.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The table's rows: area, state and the routes it names (`METHOD /path` in back-quotes in the last column). */
function builtTable(text: string): { area: string; state: string; routes: string[] }[] {
  const start = text.indexOf('\n## What is built\n');
  assert.ok(start >= 0, 'README has a "What is built" section');
  const end = text.indexOf('\n## ', start + 1);
  const lines = text.slice(start, end).split('\n');
  const header = lines.findIndex((l) => /^\| area \| state \| routes \|$/.test(l));
  assert.ok(header >= 0, 'the table has the columns area, state, routes');
  return lines
    .slice(header + 2)
    .filter((l) => l.startsWith('|'))
    .map((l) => {
      const cells = l.slice(1, -1).split(/(?<!\\)\|/);
      assert.equal(cells.length, 3, `a row of three cells: ${l.slice(0, 80)}`);
      const [area, state, routes] = cells.map((c) => c.trim()) as [string, string, string];
      return { area, state, routes: [...routes.matchAll(/`([A-Z]+ \/[^`]*)`/g)].map((m) => m[1]!) };
    });
}

/** What the service serves: every available operation of the table, and the device sync routes. */
const served = new Set([
  ...operations.filter((op) => op.available).map((op) => `${op.method} ${op.path}`),
  ...syncRoutes.map((r) => `${r.method} /api/sync/${r.path}`),
]);

test('[DOCS-README-BUILT] README\'s "What is built" names every route served as built, and nothing absent that is served', () => {
  const rows = builtTable(readme);
  assert.ok(rows.length >= 10, `the table has its rows (${rows.length})`);
  const named = new Set<string>();
  for (const row of rows) {
    const where = row.area.slice(0, 60);
    const built = row.state === 'built';
    assert.ok(built || row.state.startsWith('not yet'), `state is "built" or "not yet …": ${row.state} (${where})`);
    for (const route of row.routes) {
      if (built) {
        assert.ok(served.has(route), `README names ${route} as built, and nothing serves it (${where})`);
        named.add(route);
      } else {
        assert.ok(!served.has(route), `README says ${route} is not built yet, and it is served (${where})`);
      }
    }
  }
  const unnamed = [...served].filter((r) => !named.has(r)).sort();
  assert.deepEqual(unnamed, [], 'every route served is named by a built row of the table');
});

test("[DOCS-README-LISTS] README's development block lists every benchmark script, and its documentation list every page of docs/", () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const benches = Object.keys(pkg.scripts).filter((s) => s === 'bench' || s.startsWith('bench:'));
  const listed = new Set([...readme.matchAll(/^npm run (bench(?::[a-z0-9-]+)?)\b/gm)].map((m) => m[1]!));
  assert.deepEqual(
    benches.filter((b) => !listed.has(b)),
    [],
    'every bench script of package.json has its line in the README',
  );
  const pages = readdirSync(new URL('../../docs/', import.meta.url)).filter((f) => f.endsWith('.md'));
  const linked = new Set([...readme.matchAll(/\]\(docs\/([A-Za-z0-9-]+\.md)[#)]/g)].map((m) => m[1]!));
  assert.deepEqual(
    pages.filter((p) => !linked.has(p)),
    [],
    'every page of docs/ is linked from the README',
  );
});
