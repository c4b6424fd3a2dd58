// Where a test run gets NATS and PostgreSQL (docs/deploy.md, Test servers): the configured servers when they
// answer, without loading testcontainers; containers (pinned images) for the ones that do not; and a prompt, clear
// failure when there is neither. Every address here is loopback.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { freePort, natsUrl, pgServerUrl } from '../support/env.ts';
import {
  type ContainersModule,
  chooseTestServers,
  configuredServers,
  containerImages,
  probeNats,
  TestServersUnavailable,
} from '../support/servers.ts';

const root = new URL('../../', import.meta.url).pathname;

const isLoopback = (url: string) => /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(new URL(url).hostname);

/** A stand-in for testcontainers that records what it was asked to start. */
function fakeContainers(o: { failImage?: string } = {}) {
  const requests: { image: string; command: string[]; env: Record<string, string>; ports: number[] }[] = [];
  const stopped: string[] = [];
  let imports = 0;
  let nextPort = 50000;
  class FakeContainer {
    private readonly request: (typeof requests)[number];
    constructor(image: string) {
      this.request = { image, command: [], env: {}, ports: [] };
    }
    withCommand(command: string[]) {
      this.request.command = command;
      return this;
    }
    withEnvironment(env: Record<string, string>) {
      this.request.env = { ...this.request.env, ...env };
      return this;
    }
    withTmpFs() {
      return this;
    }
    withExposedPorts(...ports: number[]) {
      this.request.ports.push(...ports);
      return this;
    }
    withWaitStrategy() {
      return this;
    }
    async start() {
      requests.push(this.request);
      const image = this.request.image;
      if (image === o.failImage) throw new Error(`pulling ${image} failed`);
      const mapped = new Map(this.request.ports.map((p) => [p, nextPort++]));
      return {
        getHost: () => 'localhost',
        getMappedPort: (p: number) => mapped.get(p)!,
        stop: async () => {
          stopped.push(image);
        },
      };
    }
  }
  const importer = async (): Promise<ContainersModule> => {
    imports++;
    return { GenericContainer: FakeContainer, Wait: { forLogMessage: () => ({}) } };
  };
  return { importer, requests, stopped, imports: () => imports };
}

/** A loopback listener that accepts connections and never says a word. */
async function silentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://postgres@127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        // Unread sockets never see their peer's end: close them here, or the server waits for them for ever.
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

test('[DEPLOY-TEST-SERVERS] with NATS and PostgreSQL answering on loopback, the run uses them and never loads testcontainers', async (t) => {
  if (!isLoopback(natsUrl) || !isLoopback(pgServerUrl)) {
    return t.skip('the configured test servers are not on loopback; this test connects to loopback only');
  }
  const fake = fakeContainers();
  const env = { NATS_URL: natsUrl, TEST_PG_SERVER: pgServerUrl };
  const choice = await chooseTestServers({ env, importContainers: fake.importer });
  assert.deepEqual(choice.env, env);
  assert.deepEqual(choice.sources, { nats: 'configured', postgres: 'configured' });
  assert.equal(fake.imports(), 0, 'testcontainers is not imported');
  await choice.stop();

  // The same with the real importer, in a fresh process: the module is not even loaded (its CommonJS files would be
  // in require's cache); importing it afterwards shows the check sees it when it is.
  const script = `
    import { createRequire } from 'node:module';
    import { chooseTestServers } from './test/support/servers.ts';
    const cache = createRequire(process.cwd() + '/').cache;
    const loaded = () => Object.keys(cache).some((k) => k.includes('/node_modules/testcontainers/'));
    const choice = await chooseTestServers();
    const before = loaded();
    await import('testcontainers');
    console.log(JSON.stringify({ sources: choice.sources, before, after: loaded() }));`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  const seen = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
  assert.deepEqual(seen, { sources: { nats: 'configured', postgres: 'configured' }, before: false, after: true });
});

test('[DEPLOY-TEST-SERVERS] the chooser reads the variables test/support/env.ts reads, with the same defaults', () => {
  const script = `import { natsUrl, pgServerUrl } from './test/support/env.ts'; console.log(JSON.stringify({ nats: natsUrl, postgres: pgServerUrl }));`;
  for (const env of [
    {},
    { NATS_URL: 'nats://127.0.0.1:14222', TEST_PG_SERVER: 'postgres://postgres@127.0.0.1:15432' },
  ] as Record<string, string>[]) {
    const childEnv: Record<string, string | undefined> = {
      ...process.env,
      NATS_URL: undefined,
      TEST_PG_SERVER: undefined,
    };
    Object.assign(childEnv, env);
    for (const k of Object.keys(childEnv)) if (childEnv[k] === undefined) delete childEnv[k];
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: childEnv as NodeJS.ProcessEnv,
      encoding: 'utf8',
    });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout.trim()), configuredServers(env));
  }
});

test('[DEPLOY-TEST-SERVERS] a server that does not answer, or answers wrong, is started as a pinned container, and only that one', async (t) => {
  const pinned = /^[a-z]+:\d+\.\d+(\.\d+)?$/;
  assert.match(containerImages.nats, pinned);
  assert.match(containerImages.postgres, pinned);

  await t.test('NATS refused: one NATS container with JetStream, PostgreSQL as configured', async () => {
    const fake = fakeContainers();
    const freed = `nats://127.0.0.1:${await freePort()}`;
    const choice = await chooseTestServers({
      env: { NATS_URL: freed, TEST_PG_SERVER: pgServerUrl },
      importContainers: fake.importer,
    });
    assert.equal(fake.imports(), 1);
    assert.equal(fake.requests.length, 1);
    const [nats] = fake.requests;
    assert.equal(nats!.image, containerImages.nats);
    assert.ok(nats!.command.includes('-js'), 'JetStream on');
    assert.deepEqual(nats!.ports, [4222]);
    assert.deepEqual(choice.sources, { nats: 'container', postgres: 'configured' });
    assert.deepEqual(choice.env, { NATS_URL: 'nats://localhost:50000', TEST_PG_SERVER: pgServerUrl });
    await choice.stop();
    assert.deepEqual(fake.stopped, [containerImages.nats]);
  });

  await t.test('PostgreSQL silent, NATS without JetStream: both as containers', async (t) => {
    if (!existsSync('/usr/sbin/nats-server')) {
      if (process.env.CI === 'true') assert.fail('CI installs nats-server');
      return t.skip('nats-server is not installed');
    }
    const silent = await silentServer();
    const port = await freePort();
    const plain: ChildProcess = spawn('/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(port)], {
      stdio: 'ignore',
    });
    try {
      const plainUrl = `nats://127.0.0.1:${port}`;
      // Wait until it greets: the probe then says what is wrong with it.
      let said: string | undefined = '';
      for (let i = 0; i < 200 && !said?.includes('JetStream'); i++) {
        said = await probeNats(plainUrl, 300);
        if (!said?.includes('JetStream')) await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(said, 'the NATS server there runs without JetStream (-js)');
      const fake = fakeContainers();
      const choice = await chooseTestServers({
        env: { NATS_URL: plainUrl, TEST_PG_SERVER: silent.url },
        importContainers: fake.importer,
        probeTimeoutMs: 300,
      });
      assert.deepEqual(
        fake.requests.map((r) => r.image),
        [containerImages.nats, containerImages.postgres],
      );
      const pg = fake.requests[1]!;
      assert.equal(pg.env.POSTGRES_HOST_AUTH_METHOD, 'trust', 'trust auth as user postgres, as the suite expects');
      assert.deepEqual(pg.ports, [5432]);
      assert.deepEqual(choice.sources, { nats: 'container', postgres: 'container' });
      assert.deepEqual(choice.env, {
        NATS_URL: 'nats://localhost:50000',
        TEST_PG_SERVER: 'postgres://postgres@localhost:50001',
      });
      await choice.stop();
      assert.deepEqual(fake.stopped.sort(), [containerImages.nats, containerImages.postgres].sort());
    } finally {
      plain.kill('SIGKILL');
      await silent.close();
    }
  });

  await t.test('a container that fails to start stops the one started before it, and says why', async () => {
    const fake = fakeContainers({ failImage: containerImages.postgres });
    const freedNats = `nats://127.0.0.1:${await freePort()}`;
    const freedPg = `postgres://postgres@127.0.0.1:${await freePort()}`;
    const err = await chooseTestServers({
      env: { NATS_URL: freedNats, TEST_PG_SERVER: freedPg },
      importContainers: fake.importer,
    }).catch((e: Error) => e);
    assert.ok(err instanceof TestServersUnavailable, String(err));
    assert.match(err.message, new RegExp(`pulling ${containerImages.postgres} failed`));
    assert.deepEqual(fake.stopped, [containerImages.nats]);
  });
});

test('[DEPLOY-TEST-SERVERS] with no container runtime, a missing server fails npm test at once, naming the server and the missing runtime', {
  timeout: 60_000,
}, async (t) => {
  if (process.env.DOCKER_HOST || existsSync('/var/run/docker.sock')) {
    return t.skip('a container runtime may be present here: this test would start a real container');
  }
  const freed = `nats://127.0.0.1:${await freePort()}`;
  const err = await chooseTestServers({ env: { NATS_URL: freed, TEST_PG_SERVER: pgServerUrl } }).catch((e: Error) => e);
  assert.ok(err instanceof TestServersUnavailable, String(err));
  assert.match(err.message, /neither the configured NATS nor a container runtime is available/);
  assert.ok(err.message.includes(`NATS at ${freed}: refused`), err.message);
  assert.match(err.message, /Could not find a working container runtime strategy/);

  // The runner itself stops there: exit 1, the message on stderr, no test file run.
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'test/run.ts', 'test/deploy/test-servers'], {
    cwd: root,
    env: { ...process.env, NATS_URL: freed },
    encoding: 'utf8',
  });
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(run.stderr, /npm test: the tests need NATS with JetStream and PostgreSQL/);
  assert.doesNotMatch(run.stdout, /DEPLOY-TEST-SERVERS/, 'no test ran');
});
