// The `assay` command behaves like a command-line tool (docs/sync.md, The command-line client): help on stdout with
// exit 0, for the whole command and for each command; sizes and counts worded as people read them; and client
// commands that start without loading any of the server's modules. No running service: every command here exits
// before it would need one.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { byteSize, count } from '../../cli/sync/progress.ts';
import { commandUsage } from '../../cli/usage.ts';
import { assayArgs } from '../support/assay-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'assay-cli-help-'));
after(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** Our own modules the process loaded, as paths from the repository root (only with `trace`). */
  loaded: string[];
}

let traces = 0;

/** `assay <args>` as a user runs it; with `trace`, every module it loads is recorded by a loader hook. */
function assay(args: string[], trace = false): Promise<Run> {
  const traceFile = join(work, `trace-${++traces}.txt`);
  // Traced runs load the sources through tsx, so the trace names our modules; the others run the build npm test made.
  const command = trace
    ? ['--import', 'tsx', '--import', './test/support/module-trace.mjs', 'cli/assay.ts']
    : assayArgs();
  const child = spawn(process.execPath, [...command, ...args], {
    cwd: root,
    env: {
      ...process.env,
      ASSAY_CONFIG_DIR: join(work, 'config'),
      ASSAY_CACHE_DIR: join(work, 'cache'),
      ASSAY_SERVER: '',
      ...(trace ? { ASSAY_MODULE_TRACE: traceFile } : {}),
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      let loaded: string[] = [];
      if (trace) {
        loaded = readFileSync(traceFile, 'utf8')
          .split('\n')
          .filter((u) => u.startsWith(`file://${root}`) && !u.includes('/node_modules/'))
          .map((u) => new URL(u).pathname.slice(root.length));
      }
      resolve({ code: code ?? 1, stdout, stderr, loaded });
    }),
  );
}

const serverFolders = /^(gateway|actors|storage)\//;

test('[CLI-HELP] assay --help, -h, help and no command print the usage on stdout and exit 0; an unknown command is a usage error', async () => {
  for (const args of [['--help'], ['-h'], ['help'], []]) {
    const r = await assay(args);
    assert.equal(r.code, 0, `assay ${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, '', 'nothing on stderr');
    assert.match(r.stdout, /^usage: assay <command>/);
    for (const command of Object.keys(commandUsage)) {
      assert.match(r.stdout, new RegExp(`^  ${command} `, 'm'), `the usage lists ${command}`);
    }
  }
  const unknown = await assay(['bogus']);
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stdout, '');
  assert.match(unknown.stderr, /no command bogus; assay --help lists them/);
});

test("[CLI-HELP-COMMANDS] assay <command> --help prints that command's usage on stdout and exits 0, for every command", async () => {
  const commands = Object.keys(commandUsage);
  // Two at a time: each is a Node start.
  const results = new Map<string, Run>();
  for (let i = 0; i < commands.length; i += 2) {
    const pair = commands.slice(i, i + 2);
    const runs = await Promise.all(pair.map((c) => assay([c, '--help'])));
    for (const [j, c] of pair.entries()) results.set(c, runs[j]!);
  }
  for (const [command, r] of results) {
    assert.equal(r.code, 0, `assay ${command} --help: ${r.stderr}`);
    assert.equal(r.stderr, '', `assay ${command} --help writes nothing on stderr`);
    assert.ok(r.stdout.startsWith(`usage: assay ${command}`), `assay ${command} --help: ${r.stdout}`);
  }
  // After other arguments, as -h, and as `assay help <command>`, too.
  const late = await assay(['sync', 'some-folder', '--jobs', '2', '--help']);
  assert.equal(late.code, 0);
  assert.match(late.stdout, /^usage: assay sync <folder>/);
  assert.match(late.stdout, /exit codes: 0 ok/, 'a client command lists its exit codes');
  const short = await assay(['restore', '-h']);
  assert.equal(short.code, 0);
  assert.match(short.stdout, /^usage: assay restore <locator> <dir>/);
  const viaHelp = await assay(['help', 'audit']);
  assert.equal(viaHelp.code, 0);
  assert.match(viaHelp.stdout, /^usage: assay audit \[--json\]/);
});

test('[CLI-LOAD] help and the client commands load none of the server modules (gateway/, actors/, storage/)', async () => {
  const folder = join(work, 'folder');
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder);
  writeFileSync(join(folder, 'a.md'), 'hello\n');
  const report = join(work, 'report.json');
  writeFileSync(report, '{"digest":"sha256:00","signature":"x"}');
  const keys = join(work, 'keys.json');
  writeFileSync(keys, '{"keys":[]}');
  const runs: [string, string[], number, string | null][] = [
    ['help', ['--help'], 0, null],
    ['a command help', ['sync', '--help'], 0, null],
    // Not logged in: the client answers 4 before any request, having loaded what a sync loads.
    ['sync', ['sync', folder, '--server', 'http://127.0.0.1:9'], 4, 'cli/sync/commands.ts'],
    ['verify-report', ['verify-report', report, '--keys', keys], 1, 'cli/verify.ts'],
  ];
  for (const [what, args, code, expected] of runs) {
    const r = await assay(args, true);
    assert.equal(r.code, code, `${what}: ${r.stderr}`);
    assert.ok(r.loaded.includes('cli/assay.ts'), `${what}: the trace records the entry (${r.loaded.join(', ')})`);
    if (expected) assert.ok(r.loaded.includes(expected), `${what} loads ${expected}`);
    const server = r.loaded.filter((p) => serverFolders.test(p));
    assert.deepEqual(server, [], `${what} loaded server modules`);
  }
  // The trace does see server modules where a command needs them: an operator command loads the server's.
  const operator = await assay(['plan'], true);
  assert.equal(operator.code, 1, operator.stderr);
  assert.match(operator.stderr, /usage: assay plan set/);
  assert.ok(
    operator.loaded.some((p) => p.startsWith('actors/')) && operator.loaded.some((p) => p.startsWith('storage/')),
    'an operator command loads actors/ and storage/, and the trace shows it',
  );
});

test('[CLI-WORDING] sizes read as people read them (B, kB, MB) and counts agree with their nouns', () => {
  const cases: [number, string][] = [
    [0, '0 B'],
    [6, '6 B'],
    [999, '999 B'],
    [1000, '1.0 kB'],
    [1536, '1.5 kB'],
    [12_345, '12.3 kB'],
    [99_960, '100 kB'],
    [123_456, '123 kB'],
    [999_600, '1.0 MB'],
    [5_500_000, '5.5 MB'],
    [734_003_200, '734 MB'],
    [1_073_741_824, '1.1 GB'],
  ];
  for (const [bytes, text] of cases) assert.equal(byteSize(bytes), text, `${bytes} bytes`);
  assert.equal(count(1, 'file'), '1 file');
  assert.equal(count(0, 'file'), '0 files');
  assert.equal(count(2, 'revision'), '2 revisions');
  assert.equal(count(1, 'entry', 'entries'), '1 entry');
  assert.equal(count(3, 'entry', 'entries'), '3 entries');
});
