// `assay status [--json]` (docs/operations.md, Status): what an operator asks of a running deployment, read from
// NATS (NATS_URL) and, for projection lag, PostgreSQL (DATABASE_URL): the processes alive and the shards and jobs
// each holds, leases about to lapse, the JetStream streams with their replicas and leader, how far each projection
// and the verifier are behind their streams, which projections are stalled, and the live alerts /healthz shows. It
// reads only; nothing it does changes the deployment.
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import {
  actorKinds,
  bucketKeys,
  type Config,
  type HealthAlert,
  names as namesOf,
  readHealthAlerts,
} from '../contracts/index.ts';
import { openNats, StartupError } from './roles.ts';
import { openPool } from '../storage/index.ts';

interface Lease {
  key: string;
  holder: string;
  /** Milliseconds since its holder's heartbeat last moved (null: its holder has none, so it has lapsed). */
  ageMs: number | null;
}

export interface DeploymentStatus {
  at: string;
  hosts: { pool: string; host: string; heartbeatAgeMs: number; alive: boolean; shards: Record<string, number> }[];
  /** Shards of each actor kind nobody holds now (nonzero: commands to them answer 503 until one is taken). */
  unownedShards: Record<string, number>;
  /** Singleton jobs (projectors, sweeper, payout run) and the process running each. */
  jobs: { job: string; host: string | null; ageMs: number | null }[];
  /** Live leases whose holder's heartbeat has not moved for over half their time to live: it may be dying. */
  leasesNearExpiry: Lease[];
  streams: { name: string; messages: number; lastSeq: number; replicas: number; leader: string | null }[];
  projections:
    | {
        name: string;
        appliedSeq: number;
        streamLastSeq: number;
        lag: number;
        /** Since when its projector has found it stalled (its `projection_stalled` alert), or null. */
        stalledSince: string | null;
      }[]
    | { error: string };
  verifier: { pending: number; inFlight: number } | null;
  /** The live operational alerts, as /healthz shows them (sorted by key). */
  alerts: HealthAlert[];
}

export async function readStatus(config: Config): Promise<DeploymentStatus> {
  const n = namesOf(config.namespace);
  const nc = await openNats(config, 'assay-status');
  try {
    const now = Date.now();
    const jsm = await jetstreamManager(nc);
    const kv = await new Kvm(nc).open(n.buckets.leases);
    const heartbeats: { pool: string; host: string; ageMs: number }[] = [];
    const leaseEntries: { key: string; holder: string; pool: string | null }[] = [];
    for (const key of await bucketKeys(jsm, n.buckets.leases)) {
      const e = await kv.get(key);
      if (e?.operation !== 'PUT') continue;
      if (key.startsWith('host.')) {
        const [, pool, ...host] = key.split('.');
        heartbeats.push({ pool: pool!, host: host.join('.'), ageMs: now - e.created.getTime() });
      } else if (key.startsWith('lease.')) {
        const value = e.json() as { host?: string; pool?: string };
        leaseEntries.push({ key: key.slice('lease.'.length), holder: value.host ?? '?', pool: value.pool ?? null });
      }
    }
    // A lease lives on its holder's heartbeat (actors/runtime/leases.ts): its age is that heartbeat's, in the lease's
    // pool (a lease written before leases named their pool: the holder's freshest heartbeat).
    const leases: Lease[] = leaseEntries.map((l) => {
      const ages = heartbeats.filter((h) => h.host === l.holder && (l.pool === null || h.pool === l.pool));
      return { key: l.key, holder: l.holder, ageMs: ages.length ? Math.min(...ages.map((h) => h.ageMs)) : null };
    });
    const alive = (ageMs: number | null) => ageMs !== null && ageMs <= config.leaseTtlMs;
    const liveLeases = leases.filter((l) => alive(l.ageMs));
    const hosts = heartbeats
      .filter((h) => !h.pool.startsWith('singleton_'))
      .map((h) => {
        const shards: Record<string, number> = {};
        for (const l of liveLeases) {
          const kind = l.key.split('.')[0]!;
          if (l.holder === h.host && !kind.startsWith('singleton_')) shards[kind] = (shards[kind] ?? 0) + 1;
        }
        return { pool: h.pool, host: h.host, heartbeatAgeMs: h.ageMs, alive: alive(h.ageMs), shards };
      })
      .sort((a, b) => a.host.localeCompare(b.host));
    const unownedShards: Record<string, number> = {};
    for (const [kind, { shardCount }] of Object.entries(actorKinds)) {
      const owned = new Set(liveLeases.filter((l) => l.key.startsWith(`${kind}.`)).map((l) => l.key));
      unownedShards[kind] = shardCount - owned.size;
    }
    const jobs = leases
      .filter((l) => l.key.startsWith('singleton_'))
      .map((l) => {
        const on = alive(l.ageMs);
        return { job: l.key.split('.')[0]!.slice('singleton_'.length), host: on ? l.holder : null, ageMs: l.ageMs };
      })
      .sort((a, b) => a.job.localeCompare(b.job));
    const leasesNearExpiry = liveLeases.filter((l) => l.ageMs! > config.leaseTtlMs / 2);

    const streams = [];
    for (const s of Object.values(n.streams)) {
      const info = await jsm.streams.info(s.name).catch(() => null);
      if (!info) continue;
      streams.push({
        name: s.name,
        messages: info.state.messages,
        lastSeq: info.state.last_seq,
        replicas: info.config.num_replicas,
        leader: info.cluster?.leader ?? null,
      });
    }
    const verify = await jsm.consumers.info(n.streams.verify.name, n.consumers.verifier).catch(() => null);
    const healthKv = await new Kvm(nc).open(n.buckets.health).catch(() => null);
    const alerts = healthKv
      ? (await readHealthAlerts(jsm, healthKv, n.buckets.health)).flatMap((e) => (e.alert ? [e.alert] : []))
      : [];
    return {
      at: new Date(now).toISOString(),
      hosts,
      unownedShards,
      jobs,
      leasesNearExpiry,
      streams,
      projections: await projectionLag(config, streams, alerts),
      verifier: verify && { pending: verify.num_pending, inFlight: verify.num_ack_pending },
      alerts,
    };
  } finally {
    await nc.drain().catch(() => {});
  }
}

/**
 * Each projection's checkpoint against its stream's last sequence, and whether its projector finds it stalled
 * (PostgreSQL unreachable: says so).
 */
async function projectionLag(
  config: Config,
  streams: { name: string; lastSeq: number }[],
  alerts: HealthAlert[],
): Promise<DeploymentStatus['projections']> {
  const sql = openPool(config.databaseUrl, 1);
  try {
    const rows = await sql<{ name: string; last_seq: string }[]>`SELECT name, last_seq FROM projection_checkpoints`;
    return rows
      .map((r) => {
        const [name, stream] = r.name.split(':');
        const last = streams.find((s) => s.name === stream);
        if (!last) return null;
        const applied = Number(r.last_seq);
        const stalled = alerts.find((a) => a.kind === 'projection_stalled' && a.subject === r.name);
        return {
          name: name!,
          appliedSeq: applied,
          streamLastSeq: last.lastSeq,
          lag: Math.max(0, last.lastSeq - applied),
          stalledSince: stalled?.since ?? null,
        };
      })
      .filter((p) => p !== null)
      .sort((a, b) => a.name.localeCompare(b.name));
  } catch (err) {
    return { error: `PostgreSQL could not be read: ${(err as Error).message}` };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function formatStatus(s: DeploymentStatus): string {
  const lines = [`Assay status at ${s.at}`, '', 'Processes (heartbeat age, shards held):'];
  if (s.hosts.length === 0) lines.push('  none: no actor host or worker is running');
  for (const h of s.hosts) {
    const shards = Object.entries(h.shards)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    lines.push(
      `  ${h.alive ? 'alive' : 'GONE '} ${h.pool} ${h.host} (${seconds(h.heartbeatAgeMs)})${shards ? `: ${shards}` : ''}`,
    );
  }
  const unowned = Object.entries(s.unownedShards).filter(([, v]) => v > 0);
  lines.push(
    '',
    unowned.length === 0
      ? 'Every actor shard has an owner.'
      : `Shards without an owner: ${unowned.map(([k, v]) => `${k} ${v}`).join(', ')}`,
  );
  lines.push('', 'Jobs (one process each):');
  for (const j of s.jobs) lines.push(`  ${j.job}: ${j.host ?? 'NOBODY (its holder stopped its heartbeat)'}`);
  if (s.leasesNearExpiry.length > 0) {
    lines.push('', "Leases whose holder's heartbeat is late (the holder may be dying):");
    for (const l of s.leasesNearExpiry)
      lines.push(`  ${l.key} held by ${l.holder}, heartbeat ${seconds(l.ageMs ?? 0)} ago`);
  }
  lines.push('', 'Streams (messages, last sequence, replicas, leader):');
  for (const st of s.streams) {
    lines.push(`  ${st.name}: ${st.messages}, ${st.lastSeq}, R${st.replicas}, ${st.leader ?? 'no cluster'}`);
  }
  lines.push('', 'Projections (applied / stream, lag):');
  if ('error' in s.projections) lines.push(`  ${s.projections.error}`);
  else
    for (const p of s.projections) {
      const stalled = p.stalledSince ? `, STALLED since ${p.stalledSince}` : '';
      lines.push(`  ${p.name}: ${p.appliedSeq} / ${p.streamLastSeq}, lag ${p.lag}${stalled}`);
    }
  if (s.verifier)
    lines.push('', `Verifier: ${s.verifier.pending} editions waiting, ${s.verifier.inFlight} being judged`);
  lines.push('', s.alerts.length === 0 ? 'No alerts.' : 'Alerts (as /healthz shows them):');
  for (const a of s.alerts) lines.push(`  ${a.kind} ${a.subject} since ${a.since}: ${a.message}`);
  return `${lines.join('\n')}\n`;
}

export async function statusCommand(config: Config, args: string[]): Promise<number> {
  const json = args.includes('--json');
  if (args.some((a) => a !== '--json')) throw new StartupError('usage: assay status [--json]');
  const status = await readStatus(config);
  process.stdout.write(json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
  return 0;
}
