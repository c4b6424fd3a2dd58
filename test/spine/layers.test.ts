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
