// `npm run bench:sync`: `assay sync` (the real CLI, a child process) against `assay serve` on this machine, for a
// folder of many small files and for one large file: files/s and MB/s of the first sync, the second sync of the
// unchanged folder, and the peak resident memory of the client and of the server. It prints what it compares
// against: `cp -r` of the same folder on the same disk (the local ceiling of moving those files) and SHA-256 of the
// same bytes in one process (the ceiling of hashing them), both measured in the same run.
//   npm run bench:sync -- [--small-files 10000] [--small-bytes 1024] [--large-mib 1024] [--jobs 8] [--stores]
// The 1 GiB case takes a while (writing the file, hashing it twice, storing it); `--large-mib 0` skips it, and
// `--large-mib 256` makes it shorter. `--stores` also runs the blob-store measurement behind docs/sync.md.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemEnv } from '../support/env.ts';
import { deviceLogin, signUp } from '../support/oauth.ts';
import { startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { measureStores } from './sync-stores.ts';

const { values } = parseArgs({
  options: {
    'small-files': { type: 'string', default: '10000' },
    'small-bytes': { type: 'string', default: '1024' },
    'large-mib': { type: 'string', default: '1024' },
    jobs: { type: 'string', default: '8' },
    stores: { type: 'boolean', default: false },
  },
});
const smallFiles = Number(values['small-files']);
const smallBytes = Number(values['small-bytes']);
const largeMiB = Number(values['large-mib']);
const root = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'assay-bench-sync-'));
const cliEnv = {
  ...process.env,
  ASSAY_CONFIG_DIR: join(work, 'config'),
  ASSAY_CACHE_DIR: join(work, 'cache'),
  ASSAY_DEVICE: 'bench',
  LOG_LEVEL: 'error',
};

function rss(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb * 1024;
  } catch {
    return 0;
  }
}

/** Run the CLI; its wall time, exit code, output, and the peak RSS of it and of the server while it ran. */
function runCli(args: string[], serverPid: number) {
  return new Promise<{
    seconds: number;
    code: number;
    stdout: string;
    stderr: string;
    clientPeak: number;
    serverPeak: number;
  }>((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'cli/assay.ts', ...args], { cwd: root, env: cliEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    let clientPeak = 0;
    let serverPeak = 0;
    const sample = () => {
      clientPeak = Math.max(clientPeak, rss(child.pid!, 'VmHWM'));
      serverPeak = Math.max(serverPeak, rss(serverPid, 'VmRSS'));
    };
    const timer = setInterval(sample, 25);
    child.on('close', (code) => {
      clearInterval(timer);
      resolve({
        seconds: (performance.now() - started) / 1000,
        code: code ?? 1,
        stdout,
        stderr,
        clientPeak,
        serverPeak,
      });
    });
  });
}

const mb = (bytes: number) => bytes / 1e6;
/** How many files a sync read to hash (its --json `hashed`): 0 for an unchanged folder, through the hash cache. */
const hashedOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop() ?? '{}').hashed?.files ?? '?';
const fmt = (n: number, digits = 1) => n.toFixed(digits);

function timed(f: () => void): number {
  const t = performance.now();
  f();
  return (performance.now() - t) / 1000;
}

async function hashSeconds(files: string[]): Promise<number> {
  const t = performance.now();
  for (const f of files) {
    const h = createHash('sha256');
    for await (const c of createReadStream(f, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
    h.digest();
  }
  return (performance.now() - t) / 1000;
}

async function main(): Promise<void> {
  const env = await systemEnv({ ASSAY_SYNC_DIR: join(work, 'blobs'), ASSAY_SYNC_QUOTA_BYTES: String(64 * 1024 ** 3) });
  const server = await startRoleProcess('serve', env, 'gateway listening');
  const base = env.ASSAY_BASE_URL!;
  try {
    // Log in as a person would: the device grant, approved over the verification page's form.
    const jar = await signUp(base, 'bench@example.com');
    await deviceLogin(jar, { assay: ['--import', 'tsx', 'cli/assay.ts'], server: base, cwd: root, env: cliEnv });

    console.log(
      `assay sync benchmark: server ${base} (assay serve, one process), client the real CLI, ${values.jobs} uploads at once`,
    );
    const rows: Record<string, string | number>[] = [];

    // Many small files.
    const small = join(work, 'small');
    for (let i = 0; i < smallFiles; i++) {
      const dir = join(small, `d${i % 100}`);
      if (i < 100) mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, `f${i}.txt`),
        `${i} ${randomBytes(Math.max(0, smallBytes / 2 - 8)).toString('hex')}\n`.slice(0, smallBytes),
      );
    }
    const smallTotal = smallFiles * smallBytes;
    const cpSmall = timed(() => execFileSync('cp', ['-r', small, join(work, 'small-copy')]));
    rmSync(join(work, 'small-copy'), { recursive: true, force: true });
    const first = await runCli(['sync', small, '--server', base, '--json', '--jobs', values.jobs], server.child.pid!);
    if (first.code !== 0) throw new Error(`sync failed: ${first.stderr}${first.stdout}`);
    const second = await runCli(['sync', small, '--server', base, '--json', '--jobs', values.jobs], server.child.pid!);
    rows.push({
      case: `${smallFiles} files of ${smallBytes} B`,
      'first sync s': fmt(first.seconds, 2),
      'files/s': Math.round(smallFiles / first.seconds),
      'MB/s': fmt(mb(smallTotal) / first.seconds),
      'second sync s': fmt(second.seconds, 2),
      'second sync files read': hashedOf(second.stdout),
      'client peak RSS MiB': Math.round(first.clientPeak / 2 ** 20),
      'server peak RSS MiB': Math.round(first.serverPeak / 2 ** 20),
      'cp -r files/s': Math.round(smallFiles / cpSmall),
    });

    if (largeMiB > 0) {
      const large = join(work, 'large');
      mkdirSync(large, { recursive: true });
      const chunk = randomBytes(1 << 20);
      const file = join(large, 'big.bin');
      writeFileSync(file, '');
      for (let i = 0; i < largeMiB; i++) writeFileSync(file, chunk, { flag: 'a' });
      const bytes = largeMiB * 2 ** 20;
      const cpLarge = timed(() => execFileSync('cp', [file, join(work, 'big-copy.bin')]));
      rmSync(join(work, 'big-copy.bin'), { force: true });
      const hashS = await hashSeconds([file]);
      const one = await runCli(['sync', large, '--server', base, '--json', '--jobs', values.jobs], server.child.pid!);
      if (one.code !== 0) throw new Error(`sync failed: ${one.stderr}${one.stdout}\n${server.output().slice(-3000)}`);
      const again = await runCli(['sync', large, '--server', base, '--json', '--jobs', values.jobs], server.child.pid!);
      rows.push({
        case: `1 file of ${largeMiB} MiB`,
        'first sync s': fmt(one.seconds, 2),
        'files/s': fmt(1 / one.seconds, 2),
        'MB/s': fmt(mb(bytes) / one.seconds),
        'second sync s': fmt(again.seconds, 2),
        'second sync files read': hashedOf(again.stdout),
        'client peak RSS MiB': Math.round(one.clientPeak / 2 ** 20),
        'server peak RSS MiB': Math.round(one.serverPeak / 2 ** 20),
        'cp -r files/s': `${fmt(mb(bytes) / cpLarge)} MB/s`,
      });
      console.log(
        `compares against: cp of the ${largeMiB} MiB file ${fmt(mb(bytes) / cpLarge)} MB/s; SHA-256 of it in one process ${fmt(mb(bytes) / hashS)} MB/s (a first sync hashes it on the client and again on the server, and writes it once)`,
      );
    }
    console.log(
      `compares against: cp -r of the small folder ${Math.round(smallFiles / cpSmall)} files/s, ${fmt(mb(smallTotal) / cpSmall)} MB/s (same disk, no network, no hashing)`,
    );
    console.table(rows);
    console.log(
      'second sync: the unchanged folder (the hash cache skips reading files; one manifest question, one commit that answers "unchanged"); RSS peaks sampled every 25 ms (client VmHWM, server VmRSS while the sync ran)',
    );
    if (values.stores) {
      const r = await measureStores();
      console.log(`blob store candidates: ${r.small}; ${r.large}`);
      console.table(r.rows);
    }
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await dropEnv(env).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
