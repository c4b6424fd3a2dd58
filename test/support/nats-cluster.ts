// A private 3-node (or n-node) nats-server JetStream cluster on loopback ports, for fault tests: each node has its
// own store directory, server name and cluster port, with routes to every other node, and a node can be killed and
// restarted with the same name, ports and store (so it rejoins and catches up as the same peer).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './env.ts';

export interface ClusterNode {
  name: string;
  url: string;
  port: number;
  clusterPort: number;
  running(): boolean;
  /** Start (or restart) the node; resolves once it accepts clients. */
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** What the server printed (kept across restarts), for a failure message. */
  output(): string;
}

export interface NatsCluster {
  nodes: ClusterNode[];
  /** Every node's client URL, comma-separated: what NATS_URL takes. */
  url: string;
  /** Resolves once the JetStream meta group has a leader and every running node answers the JetStream API. */
  ready(timeoutMs?: number): Promise<void>;
  cleanup(): Promise<void>;
}

export const natsServerBinary = '/usr/sbin/nats-server';
const binary = natsServerBinary;

/** Why a cluster test cannot run here (no nats-server binary outside CI), or false; CI installs it (.ci/run). */
export function clusterUnavailable(): string | false {
  if (existsSync(natsServerBinary) || process.env.CI === 'true') return false;
  return `${natsServerBinary} is not installed (apt-get install nats-server)`;
}

export async function startNatsCluster(size = 3, clusterName = 'assay-test'): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'assay-nats-cluster-'));
  const ports: { port: number; clusterPort: number }[] = [];
  for (let i = 0; i < size; i++) ports.push({ port: await freePort(), clusterPort: await freePort() });
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p.clusterPort}`);
  const nodes = ports.map((p, i) => node(dir, `n${i + 1}`, clusterName, p.port, p.clusterPort, routes));
  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (const n of nodes.filter((x) => x.running())) {
        for (;;) {
          try {
            const nc = await connect({ servers: n.url, timeout: 1000 });
            try {
              // Answers only once this node knows the meta leader (before that: "JetStream system temporarily
              // unavailable" or a timeout).
              await (await jetstreamManager(nc, { timeout: 1000 })).getAccountInfo();
            } finally {
              await nc.close();
            }
            break;
          } catch (err) {
            if (Date.now() > deadline)
              throw new Error(`JetStream cluster not ready on ${n.name}: ${String(err)}\n${n.output()}`);
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      }
    },
    async cleanup() {
      for (const n of nodes) await n.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    await cluster.ready();
  } catch (err) {
    await cluster.cleanup();
    throw err;
  }
  return cluster;
}

function node(
  dir: string,
  name: string,
  clusterName: string,
  port: number,
  clusterPort: number,
  routes: string[],
): ClusterNode {
  const storeDir = join(dir, name);
  const configFile = join(dir, `${name}.conf`);
  // A configuration file rather than flags: 2.9's flags have no server name for JetStream clustering.
  writeFileSync(
    configFile,
    [
      `server_name: ${name}`,
      'listen: 127.0.0.1:' + port,
      `jetstream { store_dir: "${storeDir}" }`,
      'cluster {',
      `  name: ${clusterName}`,
      `  listen: 127.0.0.1:${clusterPort}`,
      `  routes: [${routes.filter((r) => !r.endsWith(`:${clusterPort}`)).join(', ')}]`,
      '}',
      '',
    ].join('\n'),
  );
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let out = '';
  const self: ClusterNode = {
    name,
    url,
    port,
    clusterPort,
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
    async start() {
      if (self.running()) return;
      const c = spawn(binary, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      const keep = (d: Buffer) => {
        // Only the tail matters for a failure message; a long run must not grow this without bound.
        out = (out + d.toString()).slice(-20_000);
      };
      c.stdout!.on('data', keep);
      c.stderr!.on('data', keep);
      const deadline = Date.now() + 10_000;
      for (;;) {
        if (c.exitCode !== null) throw new Error(`nats-server ${name} exited with ${c.exitCode}:\n${out}`);
        try {
          const nc = await connect({ servers: url, timeout: 500 });
          await nc.close();
          return;
        } catch {
          if (Date.now() > deadline) throw new Error(`nats-server ${name} on ${port} did not start:\n${out}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    },
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill(signal);
      });
      child = null;
    },
    output: () => out,
  };
  return self;
}
