// Runs every test file with node's test runner (Node 20's runner does not discover .ts files itself), each file in a
// node process of its own that runs its tests and reports them itself (not under `node --test`, whose parent
// process per file costs a tenth of a CPU second and reports nothing this runner does not), from one pool of slots:
// - `ASSAY_TEST_CONCURRENCY` files at once (default: one more than the cores, at least 3): most files spend a good
//   part of their time waiting on sockets, the stores and the processes they start;
// - of them, at most one file marked `// test-lane: serial` at its top (clusters of servers, killed processes, loads
//   that time their own phases), so two of those never fight over the cores; once they are done, their slot serves
//   the others.
// The longest files start first (their time in the last run, else test/support/file-weights.json), so the run does
// not end waiting on one long file started last. Each file's report is printed whole when it ends; the end says
// what all of them ran, and repeats what each failed file said about its failures (a log cut to its tail, as CI's
// is, still shows why).
// The test files and the `assay` command run as JavaScript built for this run (test/support/build.ts), not through
// tsx; `npm test -- --source` runs the sources through tsx instead.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { buildTests } from './support/build.ts';
import { chooseTestServers } from './support/servers.ts';
import { yardstick } from './support/yardstick.ts';

const root = new URL('..', import.meta.url).pathname;
const tmp = join(root, '.tmp');
/** Each file's wall time in the last run. */
const durationsPath = join(tmp, 'test-durations.jsonl');
/** The committed weights a clean clone starts from (refresh with `npm test -- --write-weights`). */
const weightsPath = join(root, 'test', 'support', 'file-weights.json');
/** A file with no recorded time is assumed long, so a new file is not the one the run ends waiting for. */
const unknownWeightMs = 30_000;
/** Loaded into every test process before its file. */
const failOnWarnings = 'test/support/fail-on-warnings.ts';

const args = process.argv.slice(2);
const writeWeights = args.includes('--write-weights');
const fromSource = args.includes('--source');
const filter = args.filter((a) => !a.startsWith('--'));
const concurrency = Number(process.env.ASSAY_TEST_CONCURRENCY ?? Math.max(3, availableParallelism() + 1));

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'bench' || name === 'node_modules' ? [] : walk(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

function readDurations(path: string): Map<string, number> {
  try {
    const lines = readFileSync(path, 'utf8').trim().split('\n').filter(Boolean);
    return new Map(
      lines.map((l) => {
        const r = JSON.parse(l) as { file: string; ms: number };
        return [r.file, r.ms];
      }),
    );
  } catch {
    return new Map();
  }
}

function lastWeights(): Map<string, number> {
  const weights = new Map<string, number>();
  try {
    for (const [file, ms] of Object.entries(JSON.parse(readFileSync(weightsPath, 'utf8')) as Record<string, number>))
      weights.set(file, ms);
  } catch {}
  for (const [f, ms] of readDurations(durationsPath)) weights.set(f, ms);
  return weights;
}

const isSerial = (file: string) =>
  /^\/\/ test-lane: serial\b/m.test(readFileSync(join(root, file), 'utf8').slice(0, 2000));

const weights = lastWeights();
const files = walk(join(root, 'test'))
  .map((f) => relative(root, f))
  .filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)))
  .sort((a, b) => (weights.get(b) ?? unknownWeightMs) - (weights.get(a) ?? unknownWeightMs) || a.localeCompare(b));
const serial = new Set(files.filter(isSerial));

mkdirSync(tmp, { recursive: true });
// The configured NATS and PostgreSQL when they answer, else containers (test/support/servers.ts).
const servers = await chooseTestServers({ log: (line) => console.error(line) }).catch((err: Error) => {
  console.error(`npm test: ${err.message}`);
  process.exit(1);
});
const env: NodeJS.ProcessEnv = { ...process.env, ...servers.env };
// Migrate the template every system's database is copied from once, before any file waits for it (env.ts reads
// the chosen server when it loads).
Object.assign(process.env, servers.env);
await (await import('./support/env.ts')).migratedTemplate();

// Before any file runs, while the machine is quiet: the run's time means little without it.
const sitting = await yardstick();
const started = Date.now();
// Its own folder per run: a test may start another run (test/deploy/test-servers.test.ts).
const buildDir = join(tmp, `build-${process.pid}`);
const built = fromSource ? null : await buildTests(root, [...files, failOnWarnings], buildDir);
if (built) env.ASSAY_TEST_CLI = built.cli;
rmSync(durationsPath, { force: true });
const results = await runAll().finally(() => rmSync(buildDir, { recursive: true, force: true }));
await servers.stop();

const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0 };
for (const r of results) for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.counts[k];
const failed = results.filter((r) => r.status !== 0);
printSlowest();
if (writeWeights) saveWeights();
for (const r of failed) {
  const printed = printedBeforeFailure(r.out);
  console.log(
    `\n── failures of ${r.file}\n` +
      (printed ? `what it printed before its first failure (the end of it):\n${printed}\n` : '') +
      failureSection(r.out),
  );
}
if (failed.length > 0) console.log(`\nfiles that failed:\n${failed.map((r) => `  ${r.file}`).join('\n')}`);
console.log(
  `\nnpm test: ${files.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s ` +
    `(${concurrency} at once, ${serial.size} of them serial): ` +
    `${totals.tests} tests, ${totals.pass} pass, ${totals.fail} fail, ${totals.cancelled} cancelled; ` +
    `machine yardstick ${sitting.opsPerMs} ops/ms (machineSpeed), ${sitting.nodeStartMs} ms a node start, ` +
    `${sitting.roundTripUs} µs a loopback round trip`,
);
process.exit(failed.length === 0 ? 0 : 1);

interface FileResult {
  file: string;
  status: number;
  ms: number;
  counts: { tests: number; pass: number; fail: number; cancelled: number };
  /** The file's whole report. */
  out: string;
}

/** Every file, `concurrency` at a time and at most one serial file among them, longest first. */
function runAll(): Promise<FileResult[]> {
  const pending = [...files];
  const results: FileResult[] = [];
  let running = 0;
  let serialRunning = false;
  return new Promise((resolve) => {
    const next = () => {
      while (running < concurrency) {
        const at = pending.findIndex((f) => !serialRunning || !serial.has(f));
        if (at < 0) break;
        const [file] = pending.splice(at, 1) as [string];
        const isSerialFile = serial.has(file);
        running++;
        if (isSerialFile) serialRunning = true;
        void runFile(file).then((r) => {
          results.push(r);
          writeFileSync(durationsPath, `${JSON.stringify({ file: r.file, ms: r.ms })}\n`, { flag: 'a' });
          running--;
          if (isSerialFile) serialRunning = false;
          if (pending.length === 0 && running === 0) resolve(results);
          else next();
        });
      }
    };
    if (pending.length === 0) resolve(results);
    else next();
  });
}

function runFile(file: string): Promise<FileResult> {
  const loader = built
    ? ['--enable-source-maps', '--import', built.outputOf(failOnWarnings)]
    : ['--import', 'tsx', '--import', `./${failOnWarnings}`];
  const begun = Date.now();
  const child = spawn(process.execPath, [...loader, '--test-reporter=spec', built ? built.outputOf(file) : file], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      const counts = { tests: 0, pass: 0, fail: 0, cancelled: 0 };
      for (const m of out.matchAll(/^ℹ (tests|pass|fail|cancelled) (\d+)$/gm)) {
        counts[m[1] as keyof typeof counts] = Number(m[2]);
      }
      // A file's report whole, under its name, so reports of files that ran side by side never interleave.
      process.stdout.write(`\n── ${file}\n${out}`);
      resolve({ file, status: code ?? 1, ms: Date.now() - begun, counts, out });
    }),
  );
}

/**
 * What a failed file's report says about its failures: the spec reporter's closing "failing tests" section, else
 * (a crash, a timeout of the whole file) the report's last lines. Capped in lines and in each line's length, so one
 * noisy file cannot push the rest out.
 */
function failureSection(out: string, maxLines = 120, maxLineChars = 400): string {
  const at = out.lastIndexOf('✖ failing tests:');
  const lines = (at >= 0 ? out.slice(at) : out)
    .trimEnd()
    .split('\n')
    .map((l) => (l.length > maxLineChars ? `${l.slice(0, maxLineChars)}…` : l));
  if (at >= 0) return lines.slice(0, maxLines).join('\n') + (lines.length > maxLines ? '\n  …' : '');
  return (lines.length > maxLines ? '  …\n' : '') + lines.slice(-maxLines).join('\n');
}

/**
 * What a failed file printed itself (its console and its roles' logs, not the reporter's lines) before its first
 * failing test was reported: the explanations a test logs when a wait times out. CI keeps only the tail of a run's
 * output, which holds this summary but not the file's whole report. Capped like `failureSection`.
 */
function printedBeforeFailure(out: string, maxLines = 50, maxLineChars = 400): string {
  const lines = out.split('\n');
  const firstFailure = lines.findIndex((l) => /^\s*✖ /.test(l) && !l.includes('✖ failing tests:'));
  if (firstFailure < 0) return '';
  const printed = lines
    .slice(0, firstFailure)
    .filter((l) => l.trim() !== '' && !/^\s*(✔|ℹ|﹣|▶)/.test(l))
    .map((l) => (l.length > maxLineChars ? `${l.slice(0, maxLineChars)}…` : l));
  return (printed.length > maxLines ? '  …\n' : '') + printed.slice(-maxLines).join('\n');
}

/** The slowest files of this run, to see where the suite's time goes. */
function printSlowest(): void {
  const runs = [...readDurations(durationsPath)].map(([file, ms]) => ({ file, ms }));
  runs.sort((a, b) => b.ms - a.ms);
  console.log('\nslowest files:');
  for (const r of runs.slice(0, 15)) {
    console.log(
      `  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${serial.has(r.file) ? 'serial  ' : '        '}${r.file}`,
    );
  }
}

function saveWeights(): void {
  const all = lastWeights();
  const sorted = Object.fromEntries([...all].filter(([f]) => files.includes(f)).sort((a, b) => b[1] - a[1]));
  writeFileSync(weightsPath, `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`wrote ${relative(root, weightsPath)}`);
}
