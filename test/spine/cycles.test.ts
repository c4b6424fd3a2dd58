// No import cycles in the source tree (docs/architecture.md, Layers): a module and the modules it imports form a
// tree the reader can walk from the leaves up, and each file can be loaded, tested and replaced on its own. Type-only
// imports count too: a cycle through types still ties the two files' designs together.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;
const layers = ['contracts', 'gateway', 'actors', 'storage', 'cli'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * The relative specifiers a file's static import and export-from statements name, `import type` and side-effect
 * imports included. A statement starts a line and has no `;` before its `from`, so one spread over lines is found
 * whole and a `from '...'` inside a string or comment elsewhere is not.
 */
export function importedSpecifiers(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/^(?:import|export)\b[^;'"`]*?\bfrom\s*'([^']+)'|^import\s*'([^']+)'/gm)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith('.')) out.push(spec);
  }
  return out;
}

/** Each strongly connected component of more than one module (or a module importing itself): Tarjan's algorithm. */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components;
}

test('[SPINE-NO-CYCLES] the cycle check finds a cycle through a type import and an export-from, and no false one', () => {
  assert.deepEqual(importedSpecifiers("import type {\n  A,\n  B,\n} from './a.ts';\nexport { c } from '../c.ts';"), [
    './a.ts',
    '../c.ts',
  ]);
  assert.deepEqual(importedSpecifiers("import './side.ts';\nimport x from 'pkg';\nconst s = \"from './no.ts'\";"), [
    './side.ts',
  ]);
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd']],
    ['d', []],
    ['e', ['e']],
  ]);
  assert.deepEqual(cyclesOf(graph), [['a', 'b', 'c'], ['e']]);
  assert.deepEqual(
    cyclesOf(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ),
    [],
  );
});

/** Each module of the five folders and the modules of ours it imports, as paths from the repository root. */
function moduleGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const layer of layers) {
    for (const file of files(join(root, layer))) {
      const to = importedSpecifiers(readFileSync(file, 'utf8'))
        .map((spec) => resolve(file, '..', spec))
        .filter((target) => existsSync(target))
        .map((target) => relative(root, target));
      graph.set(relative(root, file), to);
    }
  }
  return graph;
}

test('[SPINE-NO-CYCLES] no import cycle among the modules of contracts, gateway, actors, storage and cli (type imports included)', () => {
  const graph = moduleGraph();
  assert.ok(graph.size > 150, `read ${graph.size} modules`);
  assert.deepEqual(
    cyclesOf(graph).map((c) => c.join(' <-> ')),
    [],
    'each line is a set of modules that import one another, directly or through each other',
  );
});

test('[SPINE-NO-CYCLES] the folders of actors/ import one another without a cycle (shared/ is below every actor and service)', () => {
  const folders = new Map<string, Set<string>>();
  for (const [from, targets] of moduleGraph()) {
    if (!from.startsWith('actors/')) continue;
    const edges = folders.get(dirname(from)) ?? new Set<string>();
    folders.set(dirname(from), edges);
    for (const to of targets) if (to.startsWith('actors/') && dirname(to) !== dirname(from)) edges.add(dirname(to));
  }
  const graph = new Map([...folders].map(([folder, to]) => [folder, [...to]]));
  assert.deepEqual(
    cyclesOf(graph).map((c) => c.join(' <-> ')),
    [],
    'each line is a set of folders that import one another',
  );
});
