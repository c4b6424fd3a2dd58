// The deploy files (docs/deploy.md) checked without a container engine: deploy/compose.yaml, deploy/haproxy.cfg,
// deploy/prometheus.yml, deploy/k8s/*.yaml and deploy/Dockerfile are parsed and held against what the code really
// does: the CLI's commands, contracts/config.ts's variables and their parsing, the gateway's and the metrics
// listener's ports and paths (probed on a running system), and the NATS cluster they describe.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import { parse, parseAllDocuments } from 'yaml';
import { allRoles } from '../../cli/roles.ts';
import { configKeys, loadConfig, operations } from '../../contracts/index.ts';
import { dropDatabase, freePort, systemEnv } from '../support/env.ts';
import { startSystem } from '../support/system.ts';
import { assayArgs } from '../support/assay-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
const deploy = join(root, 'deploy');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

// What the code knows.
const cliCommands = new Set([...read('cli/assay.ts').matchAll(/^\s*case '([a-z-]+)':/gm)].map((m) => m[1]!));
const serverRoles = new Set<string>(['serve', ...allRoles]);
const knownVariables = new Set(Object.values(configKeys).map((k) => k.env));
const defaults = loadConfig({});
const healthzPath = operations.find((o) => o.id === 'healthz')!.path;
/** The admin listener's only path (cli/metrics-listener.ts). */
const metricsPath = '/metrics';
/** Where the roles need PostgreSQL (cli/roles.ts: the gateway and the workers; migrate is the database step). */
const needsDatabase = new Set(['serve', 'gateway', 'workers', 'migrate']);

/** An Assay process's configuration as the deploy file sets it: every variable known, every value accepted. */
function checkEnvironment(where: string, role: string, env: Record<string, string>) {
  for (const name of Object.keys(env)) {
    assert.ok(knownVariables.has(name) || name.startsWith('OTEL_'), `${where}: ${name} is not in contracts/config.ts`);
  }
  const config = loadConfig(env); // throws "bad configuration" naming each bad value
  for (const name of ['NATS_URL', 'ASSAY_NAMESPACE', 'ASSAY_STREAM_REPLICAS']) {
    assert.ok(env[name], `${where}: ${name} is set`);
  }
  if (needsDatabase.has(role)) assert.ok(env.DATABASE_URL, `${where}: DATABASE_URL is set (${role} uses PostgreSQL)`);
  if (role === 'gateway' || role === 'serve') {
    assert.equal(config.host, '0.0.0.0', `${where}: the gateway listens beyond its own loopback (HOST)`);
    assert.ok(env.ASSAY_BASE_URL, `${where}: ASSAY_BASE_URL names the public URL`);
  }
  if (role !== 'migrate') {
    assert.equal(config.metricsHost, '0.0.0.0', `${where}: /metrics reachable by Prometheus and probes`);
    assert.ok(config.metricsPort > 0, `${where}: the metrics listener is on`);
  }
  return config;
}

/** `${NAME:-default}` and `${NAME}` as compose fills them in from an empty environment. */
function interpolate(value: string, where: string): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_all, name: string, fallback: string | undefined) => {
    assert.ok(fallback !== undefined, `${where}: \${${name}} has no default; compose would need it set`);
    return fallback;
  });
}

const stringEnv = (env: Record<string, unknown> | undefined, where: string) =>
  Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, interpolate(String(v), `${where} ${k}`)]));

/** Seconds of a compose duration such as 30s, 1m30s, 500ms. */
function durationSeconds(text: string): number {
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(n) * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit as 'ms' | 's' | 'm' | 'h'];
  }
  assert.ok(total > 0, `duration ${text}`);
  return total;
}

/** The value after a flag of a command line (`--flag value`), accepting its other spellings. */
function flag(args: string[], ...names: string[]): string | undefined {
  const i = args.findIndex((a) => names.includes(a));
  return i >= 0 ? args[i + 1] : undefined;
}

/** host:port of each entry of a comma-separated URL list. */
const urlHosts = (list: string, defaultPort: number) =>
  list.split(',').map((u) => {
    const url = new URL(u.trim());
    return `${url.hostname}:${url.port || defaultPort}`;
  });

// ---------------------------------------------------------------------------------------------------------------
// Docker Compose

const composeText = readFileSync(join(deploy, 'compose.yaml'), 'utf8');
const compose = parse(composeText, { merge: true }) as { services: Record<string, any>; volumes?: Record<string, any> };
const services = Object.entries(compose.services);
const commandOf = (s: any): string[] =>
  Array.isArray(s.command) ? s.command.map(String) : String(s.command ?? '').split(' ');
/** Services built from this repository (deploy/Dockerfile). */
const isAssay = (s: any) => s.build !== undefined;
const assayServices = services.filter(([, s]) => isAssay(s));
const roleOf = (s: any) => commandOf(s)[0]!;
const natsServices = services.filter(([, s]) => String(s.image).startsWith('nats:'));
const gatewayServices = assayServices.filter(([, s]) => roleOf(s) === 'gateway');
const replicasOf = (s: any) => s.deploy?.replicas ?? 1;

test('[DEPLOY-COMPOSE] every Assay service runs a real CLI command with known, valid configuration, one deployment', () => {
  assert.ok(assayServices.length >= 4, 'the Assay services are found (by their build)');
  for (const role of serverRoles) assert.ok(cliCommands.has(role), `${role} is a command of cli/assay.ts`);
  const shared = new Map<string, string>();
  for (const [name, s] of assayServices) {
    const role = roleOf(s);
    assert.ok(cliCommands.has(role), `${name}: "${role}" is a command of cli/assay.ts`);
    const oneShot = s.restart === 'no';
    if (!oneShot) assert.ok(serverRoles.has(role), `${name}: a long-running service runs a server role, not ${role}`);
    const env = stringEnv(s.environment, name);
    checkEnvironment(`compose ${name}`, role, env);
    // One deployment: every process on the same NATS, database and namespace.
    for (const k of ['NATS_URL', 'DATABASE_URL', 'ASSAY_NAMESPACE', 'ASSAY_STREAM_REPLICAS']) {
      if (!shared.has(k)) shared.set(k, env[k]!);
      assert.equal(env[k], shared.get(k), `${name}: ${k} is the deployment's`);
    }
  }
  const counts = { gateway: 0, actors: 0, workers: 0 };
  for (const [, s] of assayServices) {
    const role = roleOf(s) as keyof typeof counts;
    if (role in counts) counts[role] += replicasOf(s);
  }
  assert.equal(counts.gateway, 2, 'two gateways');
  assert.equal(counts.actors, 3, 'three actor hosts');
  assert.ok(counts.workers >= 1, 'workers');
  assert.equal(gatewayServices.length, 2, 'two gateway services, each named in the balancer');
  assert.ok(
    existsSync(
      resolve(
        deploy,
        compose.services[assayServices[0]![0]].build.context,
        compose.services[assayServices[0]![0]].build.dockerfile,
      ),
    ),
  );
});

test('[DEPLOY-COMPOSE] 3 NATS nodes clustered with JetStream, each on its own volume; R3; PostgreSQL on a volume', () => {
  assert.equal(natsServices.length, 3, 'three NATS nodes');
  const declaredVolumes = new Set(Object.keys(compose.volumes ?? {}));
  const clusterPorts = new Map<string, string>();
  const volumes = new Set<string>();
  for (const [name, s] of natsServices) {
    const args = commandOf(s).filter((a) => a !== 'nats-server');
    assert.ok(args.includes('--jetstream') || args.includes('-js'), `${name}: JetStream on`);
    const storeDir = flag(args, '--store_dir', '-sd');
    assert.ok(storeDir, `${name}: a JetStream store directory`);
    const mount = (s.volumes ?? []).map(String).find((v: string) => v.split(':')[1] === storeDir);
    assert.ok(mount, `${name}: a volume holds ${storeDir}, so a recreated container keeps its streams`);
    const source = mount.split(':')[0]!;
    assert.ok(declaredVolumes.has(source), `${name}: ${source} is a named volume`);
    assert.ok(!volumes.has(source), `${name}: its own volume`);
    volumes.add(source);
    clusterPorts.set(name, new URL(flag(args, '--cluster')!).port);
    assert.equal(flag(args, '--server_name', '--name', '-n'), name, `${name}: its server name`);
    assert.equal(flag(args, '--cluster_name'), flag(commandOf(natsServices[0]![1]), '--cluster_name'), 'one cluster');
  }
  const everyRoute = natsServices.map(([name]) => `${name}:${clusterPorts.get(name)}`).sort();
  for (const [name, s] of natsServices) {
    const routes = urlHosts(flag(commandOf(s), '--routes') ?? '', 6222);
    for (const r of routes) assert.ok(everyRoute.includes(r), `${name}: route ${r} is a node of the cluster`);
    const others = everyRoute.filter((r) => !r.startsWith(`${name}:`));
    for (const r of others) assert.ok(routes.includes(r), `${name}: routes to ${r}`);
  }
  for (const [name, s] of assayServices) {
    const env = stringEnv(s.environment, name);
    assert.deepEqual(
      urlHosts(env.NATS_URL!, 4222).sort(),
      natsServices.map(([n]) => `${n}:4222`).sort(),
      `${name}: NATS_URL lists all three nodes`,
    );
    assert.equal(Number(env.ASSAY_STREAM_REPLICAS), natsServices.length, `${name}: streams on every node (R3)`);
    const db = new URL(env.DATABASE_URL!);
    const pg = compose.services[db.hostname];
    assert.ok(pg && String(pg.image).startsWith('postgres:'), `${name}: DATABASE_URL names the PostgreSQL service`);
    const pgEnv = stringEnv(pg.environment, db.hostname);
    assert.equal(decodeURIComponent(db.password), pgEnv.POSTGRES_PASSWORD, `${name}: the database password`);
  }
  const pg = services.find(([, s]) => String(s.image).startsWith('postgres:'))![1];
  const pgMount = (pg.volumes ?? []).map(String).find((v: string) => v.split(':')[1] === '/var/lib/postgresql/data');
  assert.ok(pgMount && declaredVolumes.has(pgMount.split(':')[0]), 'PostgreSQL keeps its data on a named volume');
});

test('[DEPLOY-COMPOSE] only the balancer publishes 8080; every service has a health check; roles wait for healthy stores', () => {
  const published = new Map<string, number[]>();
  for (const [name, s] of services) {
    for (const p of (s.ports ?? []).map(String)) {
      // "8080:8080", "127.0.0.1:8080:8080", "8080:8080/tcp": the host port is the one before the container port.
      const parts = p.replace(/\/(tcp|udp)$/, '').split(':');
      const host = Number(parts.length >= 2 ? parts[parts.length - 2] : parts[0]);
      published.set(name, [...(published.get(name) ?? []), host]);
    }
  }
  const on8080 = [...published].filter(([, ports]) => ports.includes(8080)).map(([n]) => n);
  assert.deepEqual(on8080, ['balancer'], 'only the balancer publishes 8080');
  for (const [name, s] of assayServices) {
    assert.equal(s.ports, undefined, `${name}: an Assay process publishes nothing (metrics stay private)`);
  }
  for (const [name, s] of services) {
    if (s.restart === 'no') continue; // a one-shot step: done, not healthy
    assert.ok(Array.isArray(s.healthcheck?.test) && !s.healthcheck.disable, `${name}: a health check`);
  }
  const stores = [...natsServices.map(([n]) => n), 'postgres'];
  for (const [name, s] of assayServices) {
    for (const store of stores) {
      assert.equal(s.depends_on?.[store]?.condition, 'service_healthy', `${name}: waits for ${store} to be healthy`);
    }
    const env = stringEnv(s.environment, name);
    const graceMs = loadConfig(env).shutdownGraceMs;
    const stopSeconds = durationSeconds(String(s.stop_grace_period ?? '10s'));
    assert.ok(stopSeconds * 1000 > graceMs, `${name}: stop_grace_period ${stopSeconds}s > ASSAY_SHUTDOWN_GRACE_MS`);
  }
  // Gateways share one device sync directory (ASSAY_SYNC_DIR) on one named volume.
  const syncMounts = gatewayServices.map(([name, s]) => {
    const dir = stringEnv(s.environment, name).ASSAY_SYNC_DIR;
    assert.ok(dir, `${name}: ASSAY_SYNC_DIR`);
    return (s.volumes ?? [])
      .map(String)
      .find((v: string) => v.split(':')[1] === dir)
      ?.split(':')[0];
  });
  assert.ok(syncMounts[0] && syncMounts.every((m) => m === syncMounts[0]), 'every gateway mounts the same sync volume');
  // Every file a service mounts from deploy/ exists.
  for (const [name, s] of services) {
    for (const v of (s.volumes ?? []).map(String)) {
      const source = v.split(':')[0]!;
      if (source.startsWith('.')) assert.ok(existsSync(resolve(deploy, source)), `${name}: ${source} exists`);
    }
  }
});

test('[DEPLOY-BALANCER] the balancer names both gateways on their ports, checks /healthz, and HAProxy accepts it', (t) => {
  const cfg = readFileSync(join(deploy, 'haproxy.cfg'), 'utf8');
  const balancer = compose.services.balancer;
  assert.ok(
    (balancer.volumes ?? []).some((v: string) => v.startsWith('./haproxy.cfg:')),
    'compose mounts haproxy.cfg',
  );
  // Sections: "backend name" followed by its indented lines.
  const sections = new Map<string, string[]>();
  let current = '';
  for (const line of cfg.split('\n')) {
    if (/^\S/.test(line) && !line.startsWith('#')) {
      current = line.trim();
      sections.set(current, []);
    } else if (line.trim() && !line.trim().startsWith('#')) sections.get(current)?.push(line.trim());
  }
  const gateways = gatewayServices.map(([name, s]) => ({ name, config: loadConfig(stringEnv(s.environment, name)) }));
  const backendFor = (port: number) => {
    const frontend = [...sections].find(
      ([head, lines]) => head.startsWith('frontend') && lines.some((l) => l === `bind :${port}`),
    );
    assert.ok(frontend, `a frontend binds :${port}`);
    const backend = frontend[1].find((l) => l.startsWith('default_backend '))!.split(' ')[1]!;
    return sections.get(`backend ${backend}`)!;
  };
  const published = (balancer.ports ?? []).map((p: string) => Number(String(p).split(':').at(-1)));
  for (const [port, portOf] of [
    [8080, (c: (typeof gateways)[number]['config']) => c.port],
    [8081, (c: (typeof gateways)[number]['config']) => c.apiPort],
  ] as const) {
    assert.ok(published.includes(port), `the balancer publishes ${port}`);
    const lines = backendFor(port);
    const servers = lines.filter((l) => l.startsWith('server '));
    assert.deepEqual(
      servers.map((l) => l.split(/\s+/)[2]).sort(),
      gateways.map((g) => `${g.name}:${portOf(g.config)}`).sort(),
      `port ${port}: one server line for each gateway, on its port`,
    );
    // HTTP/1.1 with a Host: uWS leaves HAProxy's default check (HTTP/1.0, no Host) unanswered.
    assert.ok(lines.includes(`option httpchk GET ${healthzPath} HTTP/1.1`), `port ${port}: checks ${healthzPath}`);
    assert.ok(
      lines.some((l) => /^http-check send hdr host \S+$/.test(l)),
      `port ${port}: the check sends a Host`,
    );
    for (const l of servers) {
      const checkPort = /\bport (\d+)/.exec(l)?.[1];
      const server = gateways.find((g) => l.includes(` ${g.name}:`))!;
      assert.equal(Number(checkPort ?? portOf(server.config)), server.config.port, `${l}: checked on the gateway port`);
    }
  }
  assert.match(cfg, /^\s*tune\.http\.maxhdr 48$/m, 'header lines capped where uWS caps them');
  assert.match(cfg, /del-header x-forwarded-for/i, 'the client cannot choose the address the gateway trusts');

  const haproxy = '/usr/sbin/haproxy';
  if (!existsSync(haproxy)) {
    if (process.env.CI === 'true') assert.fail('CI installs haproxy (.ci/run); it is missing');
    return t.skip('haproxy is not installed (CI installs it)');
  }
  const check = spawnSync(haproxy, ['-c', '-f', join(deploy, 'haproxy.cfg')], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  // The only warnings allowed: gateway names that resolve inside compose's network, not here.
  const warnings = (check.stdout + check.stderr)
    .split('\n')
    .filter((l) => l.includes('[WARNING]') && !/could not resolve address 'gateway-\d'/.test(l));
  assert.deepEqual(warnings, []);
});

test('[DEPLOY-COMPOSE] Prometheus scrapes every Assay service on its metrics port, and its configuration is valid', (t) => {
  const prometheus = parse(readFileSync(join(deploy, 'prometheus.yml'), 'utf8'));
  const sd = prometheus.scrape_configs.flatMap((c: any) => c.dns_sd_configs ?? []);
  const scraped = new Set<string>(sd.flatMap((d: any) => d.names));
  const roles = assayServices.filter(([, s]) => s.restart !== 'no');
  assert.deepEqual([...scraped].sort(), roles.map(([n]) => n).sort(), 'every role service, nothing else');
  for (const [name, s] of roles) {
    const port = loadConfig(stringEnv(s.environment, name)).metricsPort;
    assert.ok(
      sd.some((d: any) => d.names.includes(name) && d.port === port),
      `${name}: scraped on its port ${port}`,
    );
  }
  const promtool = '/usr/bin/promtool';
  if (!existsSync(promtool)) {
    if (process.env.CI === 'true') assert.fail('CI installs the prometheus package; promtool is missing');
    return t.skip('promtool is not installed (CI installs the prometheus package)');
  }
  const check = spawnSync(promtool, ['check', 'config', join(deploy, 'prometheus.yml')], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stdout + check.stderr);
});

// ---------------------------------------------------------------------------------------------------------------
// Kubernetes

const k8sFiles = readdirSync(join(deploy, 'k8s')).filter((f) => /\.ya?ml$/.test(f));
const k8s = k8sFiles.flatMap((f) =>
  parseAllDocuments(readFileSync(join(deploy, 'k8s', f), 'utf8')).map((d) => {
    assert.deepEqual(d.errors, [], `${f} parses`);
    return d.toJS() as any;
  }),
);
const kind = (k: string) => k8s.filter((o) => o?.kind === k);
const named = (k: string, name: string) => kind(k).find((o) => o.metadata.name === name);
const workloads = [...kind('Deployment'), ...kind('StatefulSet'), ...kind('Job')];
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** A container's environment: its ConfigMaps, then its own entries (a Secret's value stands in as a sample). */
function containerEnv(c: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const cm = named('ConfigMap', from.configMapRef?.name);
    assert.ok(cm, `${c.name}: ConfigMap ${from.configMapRef?.name} is in deploy/k8s`);
    Object.assign(env, cm.data);
  }
  for (const e of c.env ?? []) {
    if (e.valueFrom?.secretKeyRef) env[e.name] = 'postgres://assay:secret@postgres:5432/assay';
    else if (e.valueFrom) env[e.name] = 'from-the-pod';
    else env[e.name] = String(e.value);
  }
  return env;
}

const assayContainers = workloads.flatMap((w) =>
  w.spec.template.spec.containers
    .filter((c: any) => !String(c.image).startsWith('nats:'))
    .map((c: any) => ({ workload: w, container: c })),
);

test('[DEPLOY-K8S] NATS is a 3-node JetStream StatefulSet with volume claims, routes to every node, and R3', () => {
  const sts = kind('StatefulSet').find((s) =>
    s.spec.template.spec.containers.some((c: any) => c.image.startsWith('nats:')),
  );
  assert.ok(sts, 'a NATS StatefulSet');
  const replicas = sts.spec.replicas;
  assert.equal(replicas, 3);
  assert.equal(sts.spec.podManagementPolicy, 'Parallel', 'all nodes start together (JetStream needs a quorum)');
  const headless = named('Service', sts.spec.serviceName);
  assert.ok(headless && headless.spec.clusterIP === 'None', 'the governing Service is headless');
  assert.equal(headless.spec.publishNotReadyAddresses, true, 'routes resolve before the nodes are ready');
  assert.ok(matches(headless.spec.selector, sts.spec.template.metadata.labels));
  const c = sts.spec.template.spec.containers.find((x: any) => x.image.startsWith('nats:'));
  const args: string[] = c.args.map(String);
  assert.ok(args.includes('--jetstream') || args.includes('-js'), 'JetStream on');
  const storeDir = flag(args, '--store_dir', '-sd');
  const mount = c.volumeMounts.find((m: any) => m.mountPath === storeDir);
  assert.ok(mount, 'the store directory is mounted');
  assert.ok(
    sts.spec.volumeClaimTemplates.some((v: any) => v.metadata.name === mount.name),
    'from a volume claim per node',
  );
  // Each pod names itself after its stable pod name.
  assert.equal(flag(args, '--server_name', '--name', '-n'), '$(POD_NAME)');
  assert.equal(c.env.find((e: any) => e.name === 'POD_NAME')?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
  const clusterPort = new URL(flag(args, '--cluster')!).port;
  const nodes = Array.from({ length: replicas }, (_, i) => `${sts.metadata.name}-${i}.${headless.metadata.name}`);
  assert.deepEqual(
    urlHosts(flag(args, '--routes')!, 6222).sort(),
    nodes.map((n) => `${n}:${clusterPort}`).sort(),
    'routes name every node',
  );
  const monitorPort = Number(flag(args, '--http_port', '-m'));
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    assert.equal(c[probe]?.httpGet?.port, monitorPort, `nats ${probe} on the monitoring port`);
    assert.match(c[probe].httpGet.path, /^\/healthz/);
  }
  const pdb = kind('PodDisruptionBudget').filter((p) =>
    matches(p.spec.selector.matchLabels, sts.spec.template.metadata.labels),
  );
  assert.equal(pdb.length, 1, 'a PodDisruptionBudget for NATS');
  assert.equal(pdb[0].spec.maxUnavailable, 1, 'one node at a time keeps the quorum');
  for (const { workload, container } of assayContainers) {
    const env = containerEnv(container);
    assert.deepEqual(
      urlHosts(env.NATS_URL!, 4222).sort(),
      nodes.map((n) => `${n}:4222`).sort(),
      `${workload.metadata.name}: NATS_URL lists all three nodes`,
    );
    assert.equal(Number(env.ASSAY_STREAM_REPLICAS), replicas, `${workload.metadata.name}: R3 on 3 nodes`);
  }
});

test('[DEPLOY-K8S] gateways, actor hosts and workers: real commands, known configuration, probes on real ports, resources, grace above ASSAY_SHUTDOWN_GRACE_MS', () => {
  const roles = new Map<string, any>();
  const images = new Set<string>();
  for (const { workload, container: c } of assayContainers) {
    const where = `${workload.kind} ${workload.metadata.name}`;
    const command = String((c.args ?? c.command ?? [])[0]);
    assert.ok(cliCommands.has(command), `${where}: "${command}" is a command of cli/assay.ts`);
    images.add(c.image);
    const env = containerEnv(c);
    const config = checkEnvironment(where, command, env);
    if (workload.kind === 'Job') continue;
    assert.equal(workload.kind, 'Deployment', `${where}: roles run as Deployments`);
    assert.ok(serverRoles.has(command), `${where}: runs a server role`);
    roles.set(command, workload);
    const ports = new Map<string | number, number>(
      (c.ports ?? []).flatMap((p: any) => [
        [p.containerPort, p.containerPort],
        ...(p.name ? [[p.name, p.containerPort]] : []),
      ]),
    );
    const probed =
      command === 'gateway'
        ? { path: healthzPath, port: config.port }
        : { path: metricsPath, port: config.metricsPort };
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      const get = c[probe]?.httpGet;
      assert.ok(get, `${where}: ${probe}`);
      assert.equal(get.path, probed.path, `${where}: ${probe} path`);
      assert.equal(ports.get(get.port), probed.port, `${where}: ${probe} on the port the process serves it`);
    }
    if (command === 'gateway') {
      for (const p of [config.port, config.apiPort]) assert.ok(ports.has(p), `${where}: containerPort ${p}`);
    }
    assert.ok(c.resources?.requests?.cpu && c.resources?.requests?.memory, `${where}: resource requests`);
    assert.ok(c.resources?.limits?.memory, `${where}: a memory limit`);
    const preStop = c.lifecycle?.preStop?.exec?.command;
    const preStopSeconds = preStop?.[0] === 'sleep' ? Number(preStop[1]) : 0;
    const grace = workload.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    assert.ok(
      grace * 1000 > config.shutdownGraceMs + preStopSeconds * 1000,
      `${where}: terminationGracePeriodSeconds ${grace} > ASSAY_SHUTDOWN_GRACE_MS ${config.shutdownGraceMs} ms + preStop ${preStopSeconds} s`,
    );
    // One PodDisruptionBudget selects this workload's pods, and no other workload's.
    const labels = workload.spec.template.metadata.labels;
    const pdbs = kind('PodDisruptionBudget').filter((p) => matches(p.spec.selector.matchLabels, labels));
    assert.equal(pdbs.length, 1, `${where}: one PodDisruptionBudget`);
    for (const other of workloads.filter((w) => w !== workload)) {
      assert.ok(
        !matches(pdbs[0].spec.selector.matchLabels, other.spec.template.metadata.labels),
        `${where}: its PodDisruptionBudget does not select ${other.metadata.name}`,
      );
    }
    assert.ok(matches(workload.spec.selector.matchLabels, labels), `${where}: the selector matches the pods`);
    const budget = pdbs[0].spec;
    assert.ok(
      budget.maxUnavailable >= 1 || budget.minAvailable < workload.spec.replicas,
      `${where}: the budget lets a drain move a pod`,
    );
    if (command === 'gateway') {
      const dir = config.syncDir;
      assert.ok(dir, `${where}: ASSAY_SYNC_DIR set`);
      const mount = c.volumeMounts.find((m: any) => m.mountPath === dir);
      const volume = workload.spec.template.spec.volumes.find((v: any) => v.name === mount?.name);
      const claim = named('PersistentVolumeClaim', volume?.persistentVolumeClaim?.claimName);
      assert.ok(claim?.spec.accessModes.includes('ReadWriteMany'), `${where}: every gateway sees the sync directory`);
    }
  }
  assert.deepEqual([...roles.keys()].sort(), ['actors', 'gateway', 'workers']);
  assert.equal(roles.get('gateway').spec.replicas, 2);
  assert.equal(roles.get('actors').spec.replicas, 3);
  assert.equal(images.size, 1, 'every Assay container runs the same image');

  // The Service in front of the gateways selects only them, on ports they open.
  const gateway = roles.get('gateway');
  const services = kind('Service').filter((s) => matches(s.spec.selector ?? {}, gateway.spec.template.metadata.labels));
  assert.equal(services.length, 1, 'a Service for the gateways');
  const gatewayPorts = gateway.spec.template.spec.containers[0].ports;
  for (const p of services[0].spec.ports) {
    assert.ok(
      gatewayPorts.some((g: any) => g.containerPort === p.targetPort || g.name === p.targetPort),
      `Service port ${p.port} reaches a gateway port`,
    );
    assert.notEqual(p.targetPort, defaults.metricsPort, 'the metrics port is never behind the public Service');
  }
  for (const other of workloads.filter((w) => w !== gateway)) {
    assert.ok(!matches(services[0].spec.selector, other.spec.template.metadata.labels), `not ${other.metadata.name}`);
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Checks that run the code

/** A command's exit status, without blocking this process's event loop. */
function exitStatus(command: string, args: string[]): Promise<number | null> {
  return new Promise((resolve) => spawn(command, args, { stdio: 'ignore' }).on('exit', (code) => resolve(code)));
}

test('[DEPLOY-COMPOSE] the health checks and probes answer on a running system, and fail when it is not there', async () => {
  const metricsPort = await freePort();
  const sys = await startSystem({ ASSAY_METRICS_PORT: String(metricsPort) }, ['gateway', 'actors', 'workers']);
  try {
    const live = { gateway: sys.config.port, metrics: metricsPort };
    const deadPort = await freePort();
    // Compose: each Assay health check command, run as it is with its port moved to the test system's.
    for (const [name, s] of assayServices.filter(([, x]) => x.healthcheck?.test && !x.healthcheck.disable)) {
      const [form, program, ...args] = s.healthcheck.test as string[];
      assert.equal(form, 'CMD');
      assert.equal(program, 'node', `${name}: the image has node (and no curl)`);
      const config = loadConfig(stringEnv(s.environment, name));
      const wanted = roleOf(s) === 'gateway' ? config.port : config.metricsPort;
      const script = args.at(-1)!;
      assert.ok(script.includes(`http://127.0.0.1:${wanted}/`), `${name}: checks its own port ${wanted}`);
      const port = roleOf(s) === 'gateway' ? live.gateway : live.metrics;
      for (const [p, expected] of [
        [port, 0],
        [deadPort, 1],
      ] as const) {
        // Asynchronously: the system answering it runs in this process.
        const status = await exitStatus(process.execPath, [
          ...args.slice(0, -1),
          script.replace(`:${wanted}/`, `:${p}/`),
        ]);
        assert.equal(status, expected, `${name}: health check against port ${p}`);
      }
    }
    // Kubernetes: each probe's path answers 200 on the process that serves that port.
    for (const { workload, container: c } of assayContainers) {
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const get = c[probe]?.httpGet;
        if (!get) continue;
        const port = get.path === healthzPath ? live.gateway : live.metrics;
        const r = await fetch(`http://127.0.0.1:${port}${get.path}`);
        await r.arrayBuffer();
        assert.equal(r.status, 200, `${workload.metadata.name} ${probe} ${get.path}`);
      }
    }
  } finally {
    await sys.stop();
  }
});

test('[DEPLOY-MIGRATE] assay migrate creates the database and applies every migration, and again changes nothing', async () => {
  const env = await systemEnv();
  const database = new URL(env.DATABASE_URL!).pathname.slice(1);
  try {
    const run = () =>
      spawnSync(process.execPath, [...assayArgs(), 'migrate'], {
        cwd: root,
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
    const migrations = readdirSync(join(root, 'storage/migrations')).filter((f) => /^\d{3}_.+\.sql$/.test(f));
    for (let i = 0; i < 2; i++) {
      const r = run();
      assert.equal(r.status, 0, r.stderr);
      const sql = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM schema_migrations`;
        assert.equal(row!.count, migrations.length, 'every migration applied, each once');
      } finally {
        await sql.end();
      }
    }
  } finally {
    await dropDatabase(database).catch(() => {});
  }
});

// ---------------------------------------------------------------------------------------------------------------
// The image

test('[DEPLOY-IMAGE] the image copies every file the CLI loads and starts the real CLI', () => {
  const dockerfile = readFileSync(join(deploy, 'Dockerfile'), 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY\s+(.+)$/gm)].flatMap((m) => {
    const parts = m[1]!.split(/\s+/);
    return parts.slice(0, -1).map((p) => p.replace(/\/$/, ''));
  });
  for (const path of copied) assert.ok(existsSync(join(root, path)), `COPY ${path}: exists`);
  const isCopied = (file: string) => copied.some((c) => file === c || file.startsWith(`${c}/`));

  // Every module reachable from cli/assay.ts through relative imports (static and dynamic).
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)) {
      visit(relative(root, resolve(root, dirname(file), m[1]!)));
    }
  };
  visit('cli/assay.ts');
  assert.ok(seen.size > 50, `the import graph is walked (${seen.size} modules)`);
  const missing = [...seen].filter((f) => !isCopied(f));
  assert.deepEqual(missing, [], 'modules the CLI loads that the image does not copy');
  // Files read at run time: the gateway's Markdown documents and the migrations.
  for (const m of read('gateway/server.ts').matchAll(/markdownDocument\('([^']+)'\)/g)) {
    assert.ok(isCopied(`docs/${m[1]}`), `docs/${m[1]} is copied (the gateway serves it)`);
  }
  assert.ok(isCopied('storage/migrations/001_init.sql') || isCopied('storage'), 'the migrations are copied');
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json']) assert.ok(isCopied(f), `${f} is copied`);

  const entrypoint = JSON.parse(/^ENTRYPOINT\s+(\[.+\])$/m.exec(dockerfile)![1]!) as string[];
  assert.equal(entrypoint[0], 'node');
  assert.ok(entrypoint.includes('tsx') && entrypoint.at(-1) === 'cli/assay.ts', 'the entrypoint is the CLI');
  assert.deepEqual(
    entrypoint.slice(1, -1).filter((a) => a !== '--import' && a !== 'tsx'),
    ['--max-semi-space-size=32'],
    'the Node options of npm start',
  );
  const user = /^USER\s+(\S+)$/m.exec(dockerfile)?.[1];
  assert.ok(user && user !== 'root' && user !== '0', 'the processes do not run as root');
  // The uid the Kubernetes manifests ask for is the image's user (node: 1000).
  for (const w of workloads.filter((x) => x.spec.template.spec.securityContext?.runAsUser !== undefined)) {
    if (w.spec.template.spec.containers.some((c: any) => String(c.image).startsWith('nats:'))) continue;
    assert.equal(w.spec.template.spec.securityContext.runAsUser, 1000, `${w.metadata.name}: runs as the image's user`);
  }
  const ignored = readFileSync(join(deploy, 'Dockerfile.dockerignore'), 'utf8').split('\n');
  for (const path of copied) assert.ok(!ignored.includes(path), `${path} is copied, so not ignored`);
});
