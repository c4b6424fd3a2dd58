// What every Assay process measures (docs/operations.md, Metrics): one registry per process, exposed in the
// Prometheus text format by the admin listener (gateway/metrics-listener.ts) and never on the public port. The
// instruments are module-level, so a process that runs every role (`assay serve`) reports them all from one
// place. The counters and histograms the request path counts into are bound-metrics.ts's (cheaper per observation
// than prom-client's own); the registry and the text format are prom-client's. Label values come from fixed sets
// (operation ids, faces, statuses, actor kinds, projection names): never a principal, listing or order id, so the
// number of series does not grow with traffic.
// Gauges whose truth lives elsewhere (an actor host's shards, a projection's position) are read when scraped, from
// the sources that registered themselves here.
import client from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';

export const metricsRegistry = new client.Registry();
client.collectDefaultMetrics({ register: metricsRegistry });

const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Things a scrape reads at its time: actor hosts, projections, the money totals. */
export interface ActorHostSource {
  kind: string;
  shardsOwned(): number;
  activations(): number;
  mailboxDepth(): number;
  /** Age of the oldest snapshot an active actor was loaded from, in seconds (0 with none). */
  oldestSnapshotAgeSeconds(): number;
}
export interface ProjectionSource {
  name: string;
  /** The stream sequence applied, and the stream's last sequence, as last seen. */
  position(): { applied: number; head: number };
}
export interface ScrapeSource {
  /** Readings that need a query (escrow totals, backlogs); refreshed at most once per scrape. */
  read(): Promise<void>;
}

const actorHosts = new Set<ActorHostSource>();
const projections = new Set<ProjectionSource>();
const scrapeSources = new Set<ScrapeSource>();

/** Register a source while it runs; the function returned unregisters it. */
export function registerActorHost(s: ActorHostSource): () => void {
  actorHosts.add(s);
  return () => actorHosts.delete(s);
}
export function registerProjection(s: ProjectionSource): () => void {
  projections.add(s);
  return () => projections.delete(s);
}
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
    help: 'Shard leases this process took over after their holder stopped renewing them (a dead host), by kind.',
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

/** Count one answered agent request (operation ids and the spec's statuses are closed sets: bounded labels). */
export function countRequest(operation: string, face: 'rest' | 'mcp', status: number, startedMs: number): void {
  metrics.requests.labels(operation, face, String(status)).inc();
  metrics.requestSeconds.labels(operation, face).observe((performance.now() - startedMs) / 1000);
}

/** One NATS round trip of the gateway's, by subject family and outcome (ok, timeout, no_responders, ...). */
export function timeNatsRequest(family: string, outcome: string, startedMs: number): void {
  metrics.natsRequestSeconds.labels(family, outcome).observe((performance.now() - startedMs) / 1000);
}

/** One command an actor decided: its outcome (ok, refused, failed) and time. */
export function countActorCommand(kind: string, outcome: string, startedMs: number): void {
  metrics.actorCommands.labels(kind, outcome).inc();
  metrics.actorCommandSeconds.labels(kind).observe((performance.now() - startedMs) / 1000);
}
