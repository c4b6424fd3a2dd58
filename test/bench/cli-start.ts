// `npm run bench:cli-start`: how long the `assay` command takes to do nothing much, beside Node and tsx starting
// with nothing to run (`node --import tsx -e 0`, the floor every command pays): `assay --help`, `assay sync --help`,
// and `assay sync` of a folder that has not changed since its last sync (the hash cache reads no file, one manifest
// question, one commit answering "unchanged"), against `assay serve` on this machine. Each case runs --rounds times
// (3), the cases interleaved within a round so that load from other processes falls on all of them alike, and the
// medians are printed. --baseline <git revision> runs the CLI of that revision too (a temporary worktree sharing
// node_modules), in the same rounds against the same server: a change's effect in one sitting.
//   npm run bench:cli-start -- [--rounds 3] [--files 200] [--baseline main]
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemEnv } from '../support/env.ts';
import { deviceLogin, signUp } from '../support/oauth.ts';
import { startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    files: { type: 'string', default: '200' },
    baseline: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const fileCount = Number(values.files);
const here = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'assay-bench-cli-'));
const cliEnv = {
  ...process.env,
  ASSAY_CONFIG_DIR: join(work, 'config'),
  ASSAY_CACHE_DIR: join(work, 'cache'),
  ASSAY_DEVICE: 'bench',
  LOG_LEVEL: 'error',
};
/** The Node options of the `assay` command's shebang line, as a user's shell runs it. */
const assayNodeArgs = ['--max-semi-space-size=32', '--import', 'tsx'];

/**
 * Wall seconds of one command, which must exit with `expectCode` (any code when null: an older revision's
 * `assay sync --help` is a usage error, exit 2, and still measured).
 */
function timed(cwd: string, args: string[], expectCode: number | null = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd, env: cliEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (expectCode === null || code === expectCode) resolve(seconds);
      else reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}

function checkout(revision: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'assay-baseline-')), 'tree');
  execFileSync('git', ['worktree', 'add', '--detach', dir, revision], { cwd: here, stdio: 'ignore' });
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const env = await systemEnv({ ASSAY_SYNC_DIR: join(work, 'blobs') });
  const server = await startRoleProcess('serve', env, 'gateway listening');
  const base = env.ASSAY_BASE_URL!;
  const baseline = values.baseline ? checkout(values.baseline) : null;
  try {
    // Log in as a person would: the device grant, approved over the verification page's form.
    const jar = await signUp(base, 'bench-cli@example.com');
    await deviceLogin(jar, { assay: [...assayNodeArgs, 'cli/assay.ts'], server: base, cwd: here, env: cliEnv });

    const folder = join(work, 'notes');
    mkdirSync(folder, { recursive: true });
    for (let i = 0; i < fileCount; i++) writeFileSync(join(folder, `note-${i}.md`), `# Note ${i}\n\nSome words.\n`);
    const syncArgs = ['cli/assay.ts', 'sync', folder, '--server', base, '--quiet'];
    await timed(here, [...assayNodeArgs, ...syncArgs]);

    const trees: [string, string][] = [
      ['this tree', here],
      ...(baseline ? [['baseline', baseline] as [string, string]] : []),
    ];
    const cases: [string, string, string[], number | null][] = [
      ['node --import tsx -e 0', here, ['--import', 'tsx', '-e', '0'], 0],
    ];
    for (const [name, root] of trees) {
      cases.push([`${name}: assay --help`, root, [...assayNodeArgs, 'cli/assay.ts', '--help'], null]);
      cases.push([`${name}: assay sync --help`, root, [...assayNodeArgs, 'cli/assay.ts', 'sync', '--help'], null]);
      cases.push([`${name}: assay sync (unchanged, ${fileCount} files)`, root, [...assayNodeArgs, ...syncArgs], 0]);
    }
    const seconds = new Map<string, number[]>(cases.map(([name]) => [name, []]));
    for (let r = 0; r < rounds; r++) {
      for (const [name, cwd, args, code] of cases) seconds.get(name)!.push(await timed(cwd, args, code));
    }
    const floor = median(seconds.get(cases[0]![0])!);
    console.log(
      `assay start-up: median of ${rounds} rounds, cases interleaved; load average ${execFileSync('cat', ['/proc/loadavg']).toString().split(' ').slice(0, 3).join(' ')}`,
    );
    console.table(
      cases.map(([name]) => {
        const xs = seconds.get(name)!;
        return {
          case: name,
          'median s': median(xs).toFixed(2),
          'x bare tsx': (median(xs) / floor).toFixed(2),
          runs: xs.map((x) => x.toFixed(2)).join(' '),
        };
      }),
    );
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await dropEnv(env).catch(() => {});
    if (baseline) execFileSync('git', ['worktree', 'remove', '--force', baseline], { cwd: here });
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
