// `npm run test:mutants`: the chosen mutants of test/mutants/list.ts, each applied to a scratch copy of the tree and
// met by the tests that should catch it. A mutant survives when those tests pass with it in place: then a rule that
// costs money or trust can break without the suite noticing, and this run fails. The mutants are chosen by hand,
// not generated: each one is a defect someone could plausibly write (or once did).
//
//   npm run test:mutants                   every mutant, three at a time (81 in 5.6 min on two cores)
//   npm run test:mutants -- --jobs 1 revocation   the mutants whose name contains "revocation"
//   npm run test:mutants -- --verbose quota       also print how the tests failed against each caught mutant
//   npm run test:mutants -- --control quota       first run each mutant's tests on the unchanged tree: they must pass
//                                                 (a test that fails without the mutant catches nothing; use this
//                                                 whenever the list or a test name pattern changes)
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTests } from '../support/build.ts';
import { chooseTestServers } from '../support/servers.ts';
import { type Mutant, mutants } from './list.ts';

const root = new URL('../../', import.meta.url).pathname;
const args = process.argv.slice(2);
const jobsAt = args.indexOf('--jobs');
const jobs = jobsAt >= 0 ? Number(args[jobsAt + 1]) : 3;
const verbose = args.includes('--verbose');
const control = args.includes('--control');
const flags = new Set(['--verbose', '--control']);
const filters = args.filter((a, i) => !flags.has(a) && (jobsAt < 0 || (i !== jobsAt && i !== jobsAt + 1)));
const chosen = mutants.filter((m) => filters.length === 0 || filters.some((f) => m.name.includes(f)));
if (chosen.length === 0) {
  console.error(`no mutant matches ${filters.join(' ')}`);
  process.exit(2);
}

/** What was checked into the tree this run copies: everything but dependencies, history and earlier artifacts. */
const skipped = new Set(['node_modules', '.git', 'test-artifacts', '.tmp']);

interface Outcome {
  mutant: Mutant;
  caught: boolean;
  seconds: number;
  /** Why the run could not decide (the edit no longer applies): a failure of the list, not a survivor. */
  broken?: string;
  tail: string;
}

/**
 * A scratch copy of the tree with the mutant's edit applied (none for a control run); throws when the edit does not
 * match exactly once.
 */
function scratchTree(m: Mutant | null): string {
  const dir = mkdtempSync(join(tmpdir(), 'assay-mutant-'));
  cpSync(root, dir, {
    recursive: true,
    filter: (src) => !skipped.has(src.slice(root.length).split('/')[0] ?? ''),
  });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  if (!m) return dir;
  const path = join(dir, m.file);
  let text = readFileSync(path, 'utf8');
  for (const edit of [{ from: m.from, to: m.to, every: m.every }, ...(m.also ?? [])]) {
    const count = text.split(edit.from).length - 1;
    if (edit.every ? count === 0 : count !== 1) {
      rmSync(dir, { recursive: true, force: true });
      const want = edit.every ? 'at least once' : 'exactly once';
      throw new Error(`${m.file}: the text to mutate appears ${count} times (want ${want})`);
    }
    text = text.split(edit.from).join(edit.to);
  }
  writeFileSync(path, text);
  return dir;
}

/**
 * Bounds on a run: each test (node's --test-timeout, so a hang fails the test and its after hooks still clean up),
 * and the whole run (killed with its process group: a mutant that hangs even the clean-up is caught, not waited on).
 */
const testTimeoutMs = 180_000;
const runTimeoutMs = 600_000;

const failOnWarnings = 'test/support/fail-on-warnings.ts';

async function runTests(
  dir: string,
  m: Pick<Mutant, 'tests' | 'testNames'>,
  env: Record<string, string>,
): Promise<{ code: number; tail: string }> {
  // Built as npm test builds it (test/support/build.ts): a run then spends its CPU on the tests, not on tsx.
  const built = await buildTests(dir, [...m.tests, failOnWarnings], join(dir, '.tmp', 'build'));
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--enable-source-maps',
        '--import',
        built.outputOf(failOnWarnings),
        '--test',
        '--test-concurrency=1',
        `--test-timeout=${testTimeoutMs}`,
        '--test-reporter=dot',
        ...(m.testNames ? ['--test-name-pattern', m.testNames] : []),
        ...m.tests.map(built.outputOf),
      ],
      {
        cwd: dir,
        env: { ...process.env, ...env, ASSAY_TEST_CLI: built.cli },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    const killer = setTimeout(() => {
      out += `\nkilled after ${runTimeoutMs / 1000} s`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, runTimeoutMs);
    let out = '';
    const keep = (d: Buffer) => {
      out = (out + d.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code: code ?? 1, tail: out });
    });
  });
}

async function judge(m: Mutant, env: Record<string, string>): Promise<Outcome> {
  const started = Date.now();
  let dir: string;
  try {
    dir = scratchTree(m);
  } catch (err) {
    return { mutant: m, caught: false, seconds: 0, broken: (err as Error).message, tail: '' };
  }
  try {
    const { code, tail } = await runTests(dir, m, env);
    return { mutant: m, caught: code !== 0, seconds: (Date.now() - started) / 1000, tail };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The tests a mutant runs, as one key: mutants that share it share a control run. */
const selection = (m: Mutant) => `${m.tests.join(' ')} ${m.testNames ?? ''}`;

/** Why a selection's tests fail on the unchanged tree, for every selection that does (empty when all pass). */
async function controlRuns(env: Record<string, string>): Promise<Map<string, string>> {
  const failing = new Map<string, string>();
  const queue = [...new Map(chosen.map((m) => [selection(m), m])).values()];
  await Promise.all(
    Array.from({ length: Math.max(1, jobs) }, async () => {
      for (let m = queue.shift(); m; m = queue.shift()) {
        const dir = scratchTree(null);
        try {
          const { code, tail } = await runTests(dir, m, env);
          console.error(`${code === 0 ? 'passes' : 'FAILS'}   control: ${selection(m)}`);
          if (code !== 0) {
            console.error(tail);
            failing.set(selection(m), 'its tests fail without the mutant');
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }),
  );
  return failing;
}

const servers = await chooseTestServers({ log: (line) => console.error(line) });
const failingControls = control ? await controlRuns(servers.env) : new Map<string, string>();
const outcomes: Outcome[] = chosen
  .filter((m) => failingControls.has(selection(m)))
  .map((m) => ({ mutant: m, caught: false, seconds: 0, broken: failingControls.get(selection(m)), tail: '' }));
const queue = chosen.filter((m) => !failingControls.has(selection(m)));
await Promise.all(
  Array.from({ length: Math.max(1, jobs) }, async () => {
    for (let m = queue.shift(); m; m = queue.shift()) {
      const o = await judge(m, servers.env);
      outcomes.push(o);
      const verdict = o.broken ? 'BROKEN' : o.caught ? 'caught' : 'SURVIVED';
      console.error(`${verdict.padEnd(8)} ${m.name} (${o.seconds.toFixed(0)} s)`);
      if ((!o.caught || verbose) && !o.broken) console.error(o.tail);
    }
  }),
);
await servers.stop();

outcomes.sort((a, b) => chosen.indexOf(a.mutant) - chosen.indexOf(b.mutant));
const rows = outcomes.map((o) => [
  o.mutant.name,
  o.mutant.tests.map((t) => t.replace(/^test\//, '')).join(', '),
  o.broken ? `broken: ${o.broken}` : o.caught ? 'caught' : 'SURVIVED',
  o.seconds.toFixed(0),
]);
console.log('| mutant | files run | outcome | seconds |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
const failed = outcomes.filter((o) => !o.caught);
console.log(`\n${outcomes.length - failed.length} of ${outcomes.length} mutants caught`);
process.exit(failed.length === 0 ? 0 : 1);
