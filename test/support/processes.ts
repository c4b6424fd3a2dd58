// Child processes for fault tests: Assay roles started with the real CLI, and private nats-server instances that
// a test may stop, kill and restart.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { freePort } from './env.ts';
import { assayArgs } from './assay-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
/** How long a role process may take to say it serves. */
const roleStartBoundMs = 120_000;

export interface RoleProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Start `assay <role>` as a child process and resolve once its log says it serves. */
export async function startRoleProcess(
  role: string,
  env: Record<string, string>,
  readyText: string,
  /** The checkout to run: this one, or another commit's worktree (a benchmark's baseline). */
  codeRoot = root,
): Promise<RoleProcess> {
  // ROLE_NODE_ARGS adds Node options to every role process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile
  // a benchmark (NODE_OPTIONS refuses --cpu-prof).
  const nodeArgs = (process.env.ROLE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The same Node options as `npm start` and the container (docs/architecture.md, Performance notes).
  const serverArgs = ['--max-semi-space-size=32'];
  const child = spawn(process.execPath, [...nodeArgs, ...serverArgs, ...assayArgs(codeRoot), role], {
    cwd: codeRoot,
    env: { ...process.env, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    // Generous: on a loaded 2-core machine (load average above 20) starting a role under tsx took over 30 s.
    const timer = setTimeout(() => reject(new Error(`${role} did not start:\n${out}`)), roleStartBoundMs);
    const check = () => {
      if (out.includes(readyText)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${role} exited with ${code}:\n${out}`));
    });
  });
  return { child, output: () => out, exited };
}

/** Another gateway process of a running system: same NATS, namespace and public URLs, its own listening ports. */
export interface ExtraGateway {
  /** Its own `{base_url}` listener. */
  url: string;
  /** Its own `{api_url}` listener (the context-file API). */
  apiUrl: string;
  p: RoleProcess;
}

export async function startExtraGateway(
  env: Record<string, string>,
  extra: Record<string, string> = {},
): Promise<ExtraGateway> {
  const port = await freePort();
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const p = await startRoleProcess(
    'gateway',
    { ...env, PORT: String(port), ASSAY_API_PORT: String(apiPort), ASSAY_API_URL: apiUrl, ...extra },
    'gateway listening',
  );
  return { url: `http://127.0.0.1:${port}`, apiUrl, p };
}

export interface NatsServerProcess {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  cleanup(): Promise<void>;
}

/** A private nats-server with JetStream on a loopback port and a temporary store. */
export async function startNatsServer(): Promise<NatsServerProcess> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'assay-nats-'));
  let child: ChildProcess | null = null;
  const url = `nats://127.0.0.1:${port}`;
  const start = async () => {
    child = spawn('/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
      stdio: 'ignore',
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const nc = await connect({ servers: url, timeout: 500 });
        await nc.close();
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`nats-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill(signal);
    });
    child = null;
  };
  await start();
  return {
    url,
    port,
    start,
    kill,
    stop: () => kill('SIGTERM'),
    async cleanup() {
      await kill('SIGKILL');
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
