// Per-test isolation: every system under test gets its own namespace (streams, buckets, subjects) and its own
// PostgreSQL database, on the machine's real servers.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import postgres from 'postgres';

export const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const pgServerUrl = process.env.TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

export function uniqueNamespace(prefix = 't'): string {
  return `${prefix}${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function dropDatabase(name: string): Promise<void> {
  const sql = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Environment for one system under test: its own namespace, database and port. */
export async function systemEnv(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  const ns = uniqueNamespace();
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
    // Suites load their principals far past the Free plan's rates; the fleet-controls suite sets plans itself.
    ASSAY_DEFAULT_PLAN: 'enterprise',
    // Many systems share one machine in the suite: the metrics listener only where a test asks for it.
    ASSAY_METRICS_PORT: '0',
    ...overrides,
  };
}
