// Which NATS and PostgreSQL servers a test run uses (docs/deploy.md, Test servers). The configured ones
// (NATS_URL, TEST_PG_SERVER: what test/support/env.ts reads) when they answer; for each that does not, a container
// started with testcontainers. testcontainers is imported only then: it is slow to load, and 12.0.2+ cannot even be
// imported on Node 20 (STACK.md), so a machine with the servers running never loads it.
import { connect, type Socket } from 'node:net';

export const defaultNatsUrl = 'nats://127.0.0.1:4222';
export const defaultPgServerUrl = 'postgres://postgres@127.0.0.1:5432';

/** Pinned to what CI runs (Debian bookworm's nats-server 2.9, PostgreSQL 15), never a moving tag. */
export const containerImages = { nats: 'nats:2.9.22', postgres: 'postgres:15.8' } as const;

export type ServerName = 'nats' | 'postgres';

export interface ServerChoice {
  /** What the test processes get: env.ts reads these two. */
  env: { NATS_URL: string; TEST_PG_SERVER: string };
  /** Where each server came from. */
  sources: Record<ServerName, 'configured' | 'container'>;
  /** Stop the containers this choice started (nothing when it started none). */
  stop(): Promise<void>;
}

/** Neither the configured servers nor a container runtime: the run cannot start. */
export class TestServersUnavailable extends Error {}

/** The part of testcontainers used here, so a test can hand in its own. */
export interface ContainersModule {
  GenericContainer: new (image: string) => ContainerRequest;
  Wait: { forLogMessage(message: RegExp, times?: number): unknown };
}

export interface ContainerRequest {
  withCommand(command: string[]): ContainerRequest;
  withEnvironment(environment: Record<string, string>): ContainerRequest;
  withTmpFs(tmpFs: Record<string, string>): ContainerRequest;
  withExposedPorts(...ports: number[]): ContainerRequest;
  withWaitStrategy(waitStrategy: unknown): ContainerRequest;
  start(): Promise<StartedContainer>;
}

export interface StartedContainer {
  getHost(): string;
  getMappedPort(port: number): number;
  stop(): Promise<unknown>;
}

export interface ChooseOptions {
  env?: Record<string, string | undefined>;
  /** How testcontainers is loaded; called only when a server is missing. */
  importContainers?: () => Promise<ContainersModule>;
  /** How long a server may take to connect and greet. */
  probeTimeoutMs?: number;
  log?: (line: string) => void;
}

/** The server URLs a run is configured with, read as env.ts reads them. */
export function configuredServers(env: Record<string, string | undefined>): Record<ServerName, string> {
  return { nats: env.NATS_URL || defaultNatsUrl, postgres: env.TEST_PG_SERVER || defaultPgServerUrl };
}

export async function chooseTestServers(o: ChooseOptions = {}): Promise<ServerChoice> {
  const configured = configuredServers(o.env ?? process.env);
  const timeoutMs = o.probeTimeoutMs ?? 2000;
  const [natsProblem, pgProblem] = await Promise.all([
    probeNats(configured.nats, timeoutMs),
    probePostgres(configured.postgres, timeoutMs),
  ]);
  const problems: Partial<Record<ServerName, string>> = {};
  if (natsProblem) problems.nats = natsProblem;
  if (pgProblem) problems.postgres = pgProblem;
  const missing = Object.keys(problems) as ServerName[];
  if (missing.length === 0) {
    return {
      env: { NATS_URL: configured.nats, TEST_PG_SERVER: configured.postgres },
      sources: { nats: 'configured', postgres: 'configured' },
      stop: async () => {},
    };
  }

  const said = missing.map((name) => `${shownName(name)} at ${redact(configured[name])}: ${problems[name]}`).join('; ');
  o.log?.(`test servers: ${said}; starting ${missing.join(' and ')} with testcontainers`);
  const started: StartedContainer[] = [];
  const stop = async () => {
    await Promise.all(started.map((c) => c.stop().catch(() => {})));
  };
  try {
    const load: () => Promise<ContainersModule> = o.importContainers ?? (() => import('testcontainers'));
    const tc = await load();
    const urls = { ...configured };
    if (problems.nats) {
      const c = await new tc.GenericContainer(containerImages.nats)
        .withCommand(['-js'])
        .withExposedPorts(4222)
        .withWaitStrategy(tc.Wait.forLogMessage(/Server is ready/))
        .start();
      started.push(c);
      urls.nats = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
    }
    if (problems.postgres) {
      const c = await new tc.GenericContainer(containerImages.postgres)
        // Trust auth as user postgres, as the suite expects of a local server (README, Quick start).
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
        .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
        .withExposedPorts(5432)
        // The image starts the server twice (initdb, then for real): the second message is the real one.
        .withWaitStrategy(tc.Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      started.push(c);
      urls.postgres = `postgres://postgres@${c.getHost()}:${c.getMappedPort(5432)}`;
    }
    o.log?.(`test servers: NATS ${urls.nats}, PostgreSQL ${urls.postgres}`);
    return {
      env: { NATS_URL: urls.nats, TEST_PG_SERVER: urls.postgres },
      sources: {
        nats: problems.nats ? 'container' : 'configured',
        postgres: problems.postgres ? 'container' : 'configured',
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw new TestServersUnavailable(
      `the tests need NATS with JetStream and PostgreSQL: neither the configured ${missing.map(shownName).join(' and ')} ` +
        `nor a container runtime is available.\n  ${said}\n  testcontainers: ${(err as Error).message}\n` +
        'Start them (`nats-server -js`, PostgreSQL with trust auth for user postgres; see README, Quick start), ' +
        'point NATS_URL and TEST_PG_SERVER at running ones, or start a Docker engine.',
    );
  }
}

/** Undefined when a server of NATS_URL greets with JetStream on; otherwise why not. */
export async function probeNats(natsUrl: string, timeoutMs: number): Promise<string | undefined> {
  const problems: string[] = [];
  // NATS_URL may list several servers: the client connects to any that answers.
  for (const entry of natsUrl.split(',')) {
    const { host, port } = hostPort(entry.trim(), 4222);
    // A NATS server speaks first: one INFO line with its JSON (jetstream: true when it is on).
    const greeting = await exchange(host, port, null, (data) => /\r?\n/.test(data.toString('latin1')), timeoutMs);
    if (typeof greeting === 'string') {
      problems.push(greeting);
      continue;
    }
    const line = greeting.toString('utf8').split(/\r?\n/)[0]!;
    if (!line.startsWith('INFO ')) {
      problems.push('the server there does not speak NATS');
      continue;
    }
    try {
      if ((JSON.parse(line.slice(5)) as { jetstream?: boolean }).jetstream === true) return undefined;
    } catch {
      problems.push('the server there does not speak NATS');
      continue;
    }
    problems.push('the NATS server there runs without JetStream (-js)');
  }
  return problems.join(', ');
}

/** Undefined when a PostgreSQL server answers at the URL's host and port; otherwise why not. */
export async function probePostgres(serverUrl: string, timeoutMs: number): Promise<string | undefined> {
  const { host, port } = hostPort(serverUrl, 5432);
  // SSLRequest (length 8, code 80877103): a PostgreSQL server answers one byte, S or N, before any authentication.
  const request = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const answer = await exchange(host, port, request, (data) => data.length >= 1, timeoutMs);
  if (typeof answer === 'string') return answer;
  return answer.length === 1 && (answer[0] === 0x53 || answer[0] === 0x4e)
    ? undefined
    : 'the server there does not speak PostgreSQL';
}

const shownName = (name: ServerName) => (name === 'nats' ? 'NATS' : 'PostgreSQL');

function hostPort(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url);
  // URL keeps the brackets of an IPv6 literal; net.connect wants the bare address.
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port: Number(u.port) || defaultPort };
}

/** Connect, optionally send, and collect what the server sends until `enough`; a string says what went wrong. */
function exchange(
  host: string,
  port: number,
  send: Buffer | null,
  enough: (data: Buffer) => boolean,
  timeoutMs: number,
): Promise<Buffer | string> {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    let socket: Socket | null = null;
    const finish = (result: Buffer | string) => {
      clearTimeout(timer);
      socket?.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket = connect({ host, port }, () => {
      if (send) socket!.write(send);
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (enough(data)) finish(data);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => finish(err.code === 'ECONNREFUSED' ? 'refused' : err.message));
    socket.on('close', () => finish(data.length > 0 ? data : 'closed without an answer'));
  });
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}
