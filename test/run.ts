// Runs every test file with node's test runner (Node 20's runner does not discover .ts files itself).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { chooseTestServers } from './support/servers.ts';

const root = new URL('..', import.meta.url).pathname;
const filter = process.argv.slice(2);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'bench' || name === 'node_modules' ? [] : walk(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const files = walk(join(root, 'test'))
  .map((f) => relative(root, f))
  .filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)))
  .sort();
// The configured NATS and PostgreSQL when they answer, else containers (test/support/servers.ts).
const servers = await chooseTestServers({ log: (line) => console.error(line) }).catch((err: Error) => {
  console.error(`npm test: ${err.message}`);
  process.exit(1);
});
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    './test/support/fail-on-warnings.ts',
    '--test',
    '--test-concurrency=2',
    '--test-reporter=spec',
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, ...servers.env } },
);
await servers.stop();
process.exit(result.status ?? 1);
