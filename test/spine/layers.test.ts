// The layering rules of ARCHITECTURE.md, pinned: contracts imports nothing of ours, the gateway never imports
// actors or storage, actors never import the gateway, storage imports only contracts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;
const layers = ['contracts', 'gateway', 'actors', 'storage', 'cli'] as const;
const allowed: Record<string, string[]> = {
  contracts: [],
  gateway: ['contracts'],
  actors: ['contracts', 'storage'],
  storage: ['contracts'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

test('[SPINE-LAYERS] each layer imports only what ARCHITECTURE.md allows', () => {
  const violations: string[] = [];
  for (const [layer, may] of Object.entries(allowed)) {
    for (const file of files(join(root, layer))) {
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(/from '(\.[^']+)'/g)) {
        const target = relative(root, resolve(file, '..', m[1]!)).split('/')[0]!;
        if (target !== layer && (layers as readonly string[]).includes(target) && !may.includes(target)) {
          violations.push(`${relative(root, file)} imports ${m[1]}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});

test('[SPINE-LAYERS] other layers import a sibling only through its index.ts', () => {
  const violations: string[] = [];
  for (const layer of ['gateway', 'actors', 'storage', 'cli']) {
    for (const file of files(join(root, layer))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
        const target = relative(root, resolve(file, '..', m[1]!));
        const top = target.split('/')[0]!;
        if (top !== layer && (layers as readonly string[]).includes(top) && !target.endsWith('/index.ts')) {
          violations.push(`${relative(root, file)} imports ${m[1]}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});

/** Each static import or export-from of a file that loads code at run time (not `import type`), by its specifier. */
function valueImports(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/^(import|export)\b([^;'"`]*?)\bfrom\s*'([^']+)'/gm)) {
    const clause = m[2]!.trim();
    // `import type {...}`, or a list whose every name is `type X`, is erased when the file runs.
    const typeOnly =
      clause.startsWith('type ') ||
      (/^\{[^}]*\}$/.test(clause) &&
        clause
          .slice(1, -1)
          .split(',')
          .every((n) => /^\s*(type\s|$)/.test(n)));
    if (!typeOnly) out.push(m[3]!);
  }
  return out;
}

test('[SPINE-TELEMETRY-ON-START] prom-client and the OpenTelemetry SDK are loaded only where roles start them, contracts loads neither', () => {
  const sdk = (spec: string) => spec.startsWith('@opentelemetry/') && spec !== '@opentelemetry/api';
  const violations: string[] = [];
  for (const layer of layers) {
    for (const file of files(join(root, layer))) {
      const path = relative(root, file);
      const source = readFileSync(file, 'utf8');
      for (const spec of valueImports(source)) {
        // The SDK only through cli/tracing.ts's import() once an endpoint is named; prom-client only in the
        // registry, which cli/telemetry.ts imports() when roles start.
        if (sdk(spec)) violations.push(`${path} loads ${spec}`);
        if (spec === 'prom-client' && path !== 'cli/metrics.ts') violations.push(`${path} loads prom-client`);
        if (layer === 'contracts' && spec.startsWith('@opentelemetry/')) violations.push(`${path} loads ${spec}`);
        if (spec.endsWith('/metrics.ts') && resolve(file, '..', spec) === join(root, 'cli/metrics.ts'))
          violations.push(`${path} loads cli/metrics.ts (and prom-client) before any role starts`);
      }
      for (const m of source.matchAll(/\bimport\(\s*'(@opentelemetry\/[^']+)'/g))
        if (path !== 'cli/tracing.ts') violations.push(`${path} imports ${m[1]}`);
    }
  }
  assert.deepEqual(violations, []);
  assert.deepEqual(
    valueImports("import type { A } from 'x';\nimport { type B, type C } from 'y';\nimport { D } from 'z';"),
    ['z'],
  );
});
