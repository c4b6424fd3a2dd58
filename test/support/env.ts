// Per-test isolation: every system under test gets its own namespace (streams, buckets, subjects) and its own
// PostgreSQL database, on the machine's real servers.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { migrate, openPool } from '../../storage/postgres.ts';

export const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const pgServerUrl = process.env.TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

export function uniqueNamespace(prefix = 't'): string {
  return `${prefix}${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/**
 * Ports handed out to test processes on this machine, one file per port. A probed port is free only until its
 * system listens on it, seconds later; meanwhile another test process (three files, mutant copies) can be handed the
 * same one. The file, created exclusively, makes the port this process's alone; one older than the longest test
 * file is taken as left by a run that ended.
 */
const portClaims = join(tmpdir(), 'assay-test-ports');
const portClaimStaleMs = 30 * 60_000;

function claimPort(port: number): boolean {
  mkdirSync(portClaims, { recursive: true });
  const path = join(portClaims, String(port));
  try {
    closeSync(openSync(path, 'wx'));
    return true;
  } catch {
    try {
      if (Date.now() - statSync(path).mtimeMs < portClaimStaleMs) return false;
      const now = new Date();
      utimesSync(path, now, now);
      return true;
    } catch {
      return false;
    }
  }
}

function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A loopback port free now and handed to no other test process on this machine. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await probePort();
    if (claimPort(port)) return port;
  }
}

export async function dropDatabase(name: string): Promise<void> {
  const sql = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const migrationsDir = new URL('../../storage/migrations/', import.meta.url);

/** The template's name says which migrations it holds, so checkouts with other migrations never share one. */
function templateName(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(migrationsDir).sort())
    hash.update(file).update(readFileSync(new URL(file, migrationsDir)));
  return `assay_template_${hash.digest('hex').slice(0, 16)}`;
}

let template: Promise<string> | undefined;

/**
 * A database with every migration applied, made once (per migration set, under an advisory lock, so concurrent
 * test files wait for one builder) and copied for each system: a copy takes about 0.15 s where migrating a fresh
 * database takes 0.5 to 1.4 s. It is built under another name and renamed when complete, so a copy never starts from
 * a half-migrated template, and nothing stays connected to it (PostgreSQL copies only an idle template).
 */
export function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = templateName();
    const admin = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
    try {
      await admin`SELECT pg_advisory_lock(hashtext('assay.test-template'))`;
      const [found] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
      if (!found) {
        const building = `${name}_building`;
        await admin.unsafe(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
        await admin.unsafe(`CREATE DATABASE "${building}"`);
        const sql = openPool(`${pgServerUrl}/${building}`, 1);
        try {
          await migrate(sql);
        } finally {
          await sql.end({ timeout: 1 });
        }
        await admin.unsafe(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      }
      return name;
    } finally {
      await admin`SELECT pg_advisory_unlock(hashtext('assay.test-template'))`.catch(() => {});
      await admin.end({ timeout: 1 });
    }
  })();
  return template;
}

/** Create a test's database as a copy of the migrated template (the roles then find nothing left to migrate). */
async function createMigratedDatabase(name: string): Promise<void> {
  const from = await migratedTemplate();
  const admin = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
  try {
    // PostgreSQL 15 copies through the WAL by default; copying the files costs the server less than half the CPU
    // (0.11 s against 0.27 s for this template), and a run makes about a hundred.
    const [version] = await admin<{ v: number }[]>`SELECT current_setting('server_version_num')::int AS v`;
    const strategy = (version?.v ?? 0) >= 150000 ? ' STRATEGY FILE_COPY' : '';
    await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${from}"${strategy}`);
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/**
 * Environment for one system under test: its own namespace, database and port. The database is created here, already
 * migrated, unless the caller names its own `DATABASE_URL`.
 */
export async function systemEnv(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  const ns = uniqueNamespace();
  if (overrides.DATABASE_URL === undefined) await createMigratedDatabase(`assay_${ns}`);
  const port = overrides.PORT ?? String(await freePort());
  const apiPort = overrides.ASSAY_API_PORT ?? String(await freePort());
  return {
    PORT: port,
    ASSAY_API_PORT: apiPort,
    ASSAY_API_URL: `http://127.0.0.1:${apiPort}`,
    HOST: '127.0.0.1',
    NATS_URL: natsUrl,
    DATABASE_URL: `${pgServerUrl}/assay_${ns}`,
    ASSAY_NAMESPACE: ns,
    ASSAY_BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'error',
    ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '100000',
    // Suites that need the synthetic corpus ask for it; the rest start faster without it.
    ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0',
    // Suites load their principals far past the Free plan's rates, and sandbox agents past the sandbox plan's; the
    // fleet-controls suites set plans themselves.
    ASSAY_DEFAULT_PLAN: 'enterprise',
    ASSAY_SANDBOX_PLAN: 'enterprise',
    // Many systems share one machine in the suite: the metrics listener only where a test asks for it.
    ASSAY_METRICS_PORT: '0',
    // Password hashes at 4 MiB instead of 128 MiB (each of those costs half a CPU second, and the suite signs up and
    // in hundreds of times). The production cost is OAUTH-PASSWORD-HASH (test/unit/passwords.test.ts); a system
    // storing the configured cost, OAUTH-SIGNUP-ONCE.
    ASSAY_PASSWORD_SCRYPT_LOG_N: '12',
    ...overrides,
  };
}
