// What every Assay process that runs a role measures (docs/operations.md, Metrics): one registry per process,
// exposed in the Prometheus text format by the admin listener (cli/metrics-listener.ts) and never on the public
// port. The registry and its instruments are made when this module is loaded, which cli/telemetry.ts does when a
// process starts its roles (an operator or client command never loads prom-client); the layers count into the
// instruments through their ports (contracts/telemetry.ts), so a process that runs every role (`assay serve`)
// reports them all from one place. The counters and histograms the request path counts into are bound-metrics.ts's
// (cheaper per observation than prom-client's own); the registry and the text format are prom-client's. Label
// values come from fixed sets (operation ids, faces, statuses, actor kinds, projection names): never a principal,
// listing or order id, so the number of series does not grow with traffic.
// Gauges whose truth lives elsewhere (an actor host's shards, a projection's position) are read when scraped, from
// the sources that registered themselves here.
import client from 'prom-client';
import type { ActorHostSource, Instruments, MetricReadings, ProjectionSource } from '../contracts/index.ts';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';

export const metricsRegistry = new client.Registry();
client.collectDefaultMetrics({ register: metricsRegistry });

const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What a scrape refreshes before it reads the registry. */
export interface ScrapeSource {
  /** Readings that need a query (escrow totals, backlogs); refreshed at most once per scrape. */
  read(): Promise<void>;
}

const actorHosts = new Set<ActorHostSource>();
const projections = new Set<ProjectionSource>();
const scrapeSources = new Set<ScrapeSource>();

/** Where actor hosts and projections register while they run (through their layers' ports). */
export const readings: MetricReadings = {
  actorHost(s) {
    actorHosts.add(s);
    return () => actorHosts.delete(s);
  },
  projection(s) {
    projections.add(s);
    return () => projections.delete(s);
  },
};

/** Register a source while it runs; the function returned unregisters it. */
export function registerScrapeSource(s: ScrapeSource): () => void {
  scrapeSources.add(s);
  return () => scrapeSources.delete(s);
}

function hostGauge(name: string, help: string, value: (h: ActorHostSource) => number, max = false) {
  return new client.Gauge({
    name,
    help,
    labelNames: ['kind'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      const byKind = new Map<string, number>();
      for (const h of actorHosts) {
        const v = value(h);
        byKind.set(h.kind, max ? Math.max(byKind.get(h.kind) ?? 0, v) : (byKind.get(h.kind) ?? 0) + v);
      }
      for (const [kind, v] of byKind) this.set({ kind }, v);
    },
  });
}

export const metrics = {
  // ----- the gateway -----
  requests: new BoundCounter(
    'assay_requests_total',
    'Agent API requests answered, by operation, face (rest, mcp) and HTTP status.',
    ['operation', 'face', 'status'],
    metricsRegistry,
  ),
  requestSeconds: new BoundHistogram(
    'assay_request_duration_seconds',
    'Time from a request read to its answer decided, by operation and face.',
    ['operation', 'face'],
    latencyBuckets,
    metricsRegistry,
  ),
  requestsInFlight: new client.Gauge({
    name: 'assay_requests_in_flight',
    help: 'Requests admitted and not yet answered, in this process.',
    registers: [metricsRegistry],
  }),
  admissionRefusals: new client.Counter({
    name: 'assay_admission_refusals_total',
    help: 'Requests refused at admission (503): the gateway had as many in flight as it admits, or was stopping.',
    registers: [metricsRegistry],
  }),
  natsRequestSeconds: new BoundHistogram(
    'assay_nats_request_duration_seconds',
    'NATS request/reply round trips made by the gateway, by subject family (actor kind or service).',
    ['family', 'outcome'],
    latencyBuckets,
    metricsRegistry,
  ),
  // ----- actor hosts -----
  shardsOwned: hostGauge('assay_actor_shards_owned', 'Shards whose lease this process holds, by actor kind.', (h) =>
    h.shardsOwned(),
  ),
  activations: hostGauge('assay_actor_activations', 'Actors in memory (activated, cached), by kind.', (h) =>
    h.activations(),
  ),
  mailboxDepth: hostGauge(
    'assay_actor_mailbox_depth',
    'Commands queued behind the one each actor runs, summed by kind.',
    (h) => h.mailboxDepth(),
  ),
  snapshotAge: hostGauge(
    'assay_actor_snapshot_age_seconds',
    'Age of the oldest snapshot an actor in memory was loaded from (facts since then were replayed), by kind.',
    (h) => h.oldestSnapshotAgeSeconds(),
    true,
  ),
  actorCommands: new BoundCounter(
    'assay_actor_commands_total',
    'Commands actors decided, by kind and outcome (ok, refused, failed).',
    ['kind', 'outcome'],
    metricsRegistry,
  ),
  actorCommandSeconds: new BoundHistogram(
    'assay_actor_command_duration_seconds',
    'Time an actor spent on a command, its append included, by kind.',
    ['kind'],
    latencyBuckets,
    metricsRegistry,
  ),
  leaseTakeovers: new client.Counter({
    name: 'assay_lease_takeovers_total',
    help: "Shard leases this process took over after their holder's heartbeat stopped (a dead host), by kind.",
    labelNames: ['kind'],
    registers: [metricsRegistry],
  }),
  leasesAcquired: new client.Counter({
    name: 'assay_leases_acquired_total',
    help: 'Shard leases this process won (free, given back, or taken over), by kind.',
    labelNames: ['kind'],
    registers: [metricsRegistry],
  }),
  // ----- projections -----
  projectionApplied: new client.Gauge({
    name: 'assay_projection_applied_sequence',
    help: 'Stream sequence a projection has applied, by projection.',
    labelNames: ['projection'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      for (const p of projections) this.set({ projection: p.name }, p.position().applied);
    },
  }),
  projectionLag: new client.Gauge({
    name: 'assay_projection_lag_messages',
    help: 'Messages of its stream a projection has not applied yet (stream head minus applied), by projection.',
    labelNames: ['projection'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      for (const p of projections) {
        const { applied, head } = p.position();
        this.set({ projection: p.name }, Math.max(0, head - applied));
      }
    },
  }),
  projectionStalled: new client.Gauge({
    name: 'assay_projection_stalled',
    help: 'Whether a projection is stalled (1): its stream has been ahead of it for longer than ASSAY_PROJECTION_STALL_MS with nothing applied, by projection.',
    labelNames: ['projection'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      for (const p of projections) this.set({ projection: p.name }, p.stalled() ? 1 : 0);
    },
  }),
  projectionStalls: new client.Counter({
    name: 'assay_projection_stalls_total',
    help: 'Times a projection became stalled, by projection.',
    labelNames: ['projection'],
    registers: [metricsRegistry],
  }),
  projectionConsumerRestarts: new client.Counter({
    name: 'assay_projection_consumer_restarts_total',
    help: 'Stream consumers a projector dropped and re-created, by projection and reason (stalled: it delivered nothing while its stream moved on; heartbeats_missed; failed: NATS or PostgreSQL failed).',
    labelNames: ['projection', 'reason'],
    registers: [metricsRegistry],
  }),
  settlementLagSeconds: new BoundHistogram(
    'assay_settlement_lag_seconds',
    'Time from an order held to its settlement (release or refund) recorded.',
    [],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600],
    metricsRegistry,
  ),
  // ----- money and delivery, read when scraped -----
  escrowCents: new client.Gauge({
    name: 'assay_escrow_cents',
    help: 'Money in orders by state (held, released, refunded) and side of the sandbox line (sandbox, live), in cents.',
    labelNames: ['state', 'side'],
    registers: [metricsRegistry],
  }),
  outboxBacklog: new client.Gauge({
    name: 'assay_outbox_backlog',
    help: 'Webhook deliveries pending (due now or waiting for a retry).',
    registers: [metricsRegistry],
  }),
  webhookAttempts: new client.Counter({
    name: 'assay_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this process, by outcome (delivered, retrying, failed).',
    labelNames: ['outcome'],
    registers: [metricsRegistry],
  }),
  verificationQueue: new client.Gauge({
    name: 'assay_verification_queue_depth',
    help: 'Editions waiting in the VERIFY work queue for a verifier.',
    registers: [metricsRegistry],
  }),
  syncSweeps: new client.Counter({
    name: 'assay_sync_sweeps_total',
    help: 'Passes of the device sync sweep run by this process, by outcome (ok, failed).',
    labelNames: ['outcome'],
    registers: [metricsRegistry],
  }),
  syncOrphansRemoved: new client.Counter({
    name: 'assay_sync_orphans_removed_total',
    help: 'Device sync files no owner held, deleted: by the sweep (blob, temporary) or at once after a refused upload (refused).',
    labelNames: ['kind'],
    registers: [metricsRegistry],
  }),
  syncOrphanBytesRemoved: new client.Counter({
    name: 'assay_sync_orphan_bytes_removed_total',
    help: 'Bytes of the files counted by assay_sync_orphans_removed_total, by the same kinds.',
    labelNames: ['kind'],
    registers: [metricsRegistry],
  }),
  syncReservationsExpired: new client.Counter({
    name: 'assay_sync_reservations_expired_total',
    help: 'Device sync quota reservations the sweep released because their upload stopped (its gateway died).',
    registers: [metricsRegistry],
  }),
  judgeSeconds: new client.Histogram({
    name: 'assay_judge_duration_seconds',
    help: 'Time to judge one edition (every claim at once), by judge driver (builtin, openai).',
    labelNames: ['judge'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [metricsRegistry],
  }),
};

/** The text a scrape answers: the readings that need a query are refreshed first (a failed one keeps its last value). */
export async function metricsText(): Promise<string> {
  await Promise.all([...scrapeSources].map((s) => s.read().catch(() => {})));
  return metricsRegistry.metrics();
}

export const metricsContentType = metricsRegistry.contentType;

/** The instruments the layers count into (the rest of `metrics` is read or set at a scrape, here in cli/). */
export const instruments: Instruments = metrics;
