// The composition root's building blocks: connect to NATS and PostgreSQL (with a clear message when either is
// unreachable), create what they need, and start the roles. `serve` starts all three in one process.
import { randomUUID } from 'node:crypto';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import pino, { type Logger } from 'pino';
import {
  ActorHost,
  authService,
  catalogService,
  deliveryService,
  oauthService,
  listingBehaviour,
  loadSandboxCorpus,
  runOutboxRelay,
  runSettlementSweeper,
  runApprovalSweep,
  runSubscriptionScheduler,
  runVerifier,
  ensureActiveKey,
  IdempotencyIndexClient,
  type Judges,
  judgesFromConfig,
  PgVerdictCache,
  ledgerService,
  skillsService,
  runWebhookDelivery,
  senderOptionsOf,
  webhooksService,
  paymentsService,
  runPayoutSchedule,
  eventsOf,
  principalFactsOf,
  principalBehaviour,
  QuoteCache,
  randomIds,
  sandboxService,
  serveService,
  startSingleton,
  systemClock,
  syncService,
  runSyncSweep,
  type SyncSweepDeps,
  type Clock,
  x402Service,
} from '../actors/index.ts';
import {
  assertOperationTable,
  type Config,
  type InProcessActors,
  idempotencyRetentionMs,
  type LedgerFact,
  mcpSessionBucketMaxAgeMs,
  names as namesOf,
  type Names,
  type Operation,
  operations,
  revokedRetentionMs,
  type SyncPort,
} from '../contracts/index.ts';
import {
  Gateway,
  Authenticator,
  GatewayBus,
  jwksOverBus,
  McpEndpoint,
  McpSessions,
  type McpSessionsBucket,
  Pipeline,
  admitAll,
  RateLimiter,
  RevokedSet,
  TokenVerifier,
  WebFace,
  ContextFace,
  OkfExport,
  SyncFace,
  X402Face,
} from '../gateway/index.ts';
import {
  connectNats,
  ensureDatabase,
  ensureStreams,
  migrate,
  openBuckets,
  openPool,
  listingProjection,
  healthAlerts,
  runProjection,
  runProjections,
  type Sql,
  BlobDir,
  escrowTotals,
  pendingDeliveries,
} from '../storage/index.ts';
import { startMetricsListener } from './metrics-listener.ts';
import { type ProcessMetrics, startTelemetry } from './telemetry.ts';
import { activeTraceId, tracingOn } from './tracing.ts';

export type Role = 'gateway' | 'actors' | 'workers';

export const allRoles: Role[] = ['gateway', 'actors', 'workers'];

export class StartupError extends Error {}

export async function openNats(config: Config, name: string): Promise<NatsConnection> {
  try {
    return await connectNats(config.natsUrl, name);
  } catch (err) {
    throw new StartupError(
      `cannot reach NATS at ${config.natsUrl} (${(err as Error).message}).\n` +
        'Start one with JetStream enabled, e.g. `nats-server -js` (Debian: apt-get install nats-server), or set NATS_URL.',
    );
  }
}

export async function openDatabase(config: Config): Promise<Sql> {
  const shown = redact(config.databaseUrl);
  try {
    await ensureDatabase(config.databaseUrl);
    const sql = openPool(config.databaseUrl);
    await migrate(sql);
    return sql;
  } catch (err) {
    throw new StartupError(
      `cannot reach PostgreSQL at ${shown} (${(err as Error).message}).\n` +
        'Start a PostgreSQL 15+ server, e.g. `pg_ctlcluster 15 main start` (Debian: apt-get install postgresql), or set DATABASE_URL.',
    );
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * Device sync's store for a gateway: the blob directory (ASSAY_SYNC_DIR, or one per namespace under the temporary
 * directory, with a warning) and the rules over PostgreSQL, with the deps of its sweep (docs/operations.md, Device
 * sync sweep).
 */
export async function openSync(
  config: Config,
  sql: Sql,
  log: Logger,
): Promise<{ port: SyncPort; sweep: SyncSweepDeps }> {
  let dir = config.syncDir;
  if (dir === '') {
    dir = join(tmpdir(), 'assay-sync', config.namespace);
    log.warn({ dir }, 'ASSAY_SYNC_DIR is not set: device sync blobs go to a temporary directory');
  }
  const blobs = new BlobDir(dir);
  await blobs.init();
  const reservationTtlMs = config.syncReservationTtlSeconds * 1000;
  return {
    port: syncService({
      sql,
      blobs,
      clock: systemClock,
      ids: randomIds,
      quotaBytes: config.syncQuotaBytes,
      reservationTtlMs,
      log,
    }),
    sweep: {
      sql,
      blobs,
      clock: systemClock,
      log,
      reservationTtlMs,
      orphanGraceMs: config.syncOrphanGraceSeconds * 1000,
    },
  };
}

export interface Running {
  names: Names;
  gateway: Gateway | null;
  host: ActorHost | null;
  port: number;
  stop(): Promise<void>;
}

/** The process's logger (JSON lines on stdout, or on `destination`). */
export function makeLogger(config: Config, destination?: { write(line: string): void }): Logger {
  // With tracing on, a line logged inside a span carries its trace id (tracing off: no mixin at all).
  const mixin = tracingOn() ? () => (activeTraceId() ? { trace_id: activeTraceId() } : {}) : undefined;
  const options = { level: config.logLevel, base: { ns: config.namespace }, ...(mixin ? { mixin } : {}) };
  return destination ? pino(options, destination) : pino(options);
}

/** What a test may put in place of the real thing. */
export interface RoleOptions {
  /** The clock of the principal actors and the subscription scheduler, so tests move billing time. */
  clock?: Clock;
}

/** Start the given roles in this process. Resolves once every role serves. */
export async function startRoles(
  config: Config,
  roles: Role[],
  log: Logger = makeLogger(config),
  options: RoleOptions = {},
): Promise<Running> {
  assertOperationTable();
  // Metrics in every process that runs a role; traces only when the environment names an OTLP endpoint
  // (docs/operations.md, Metrics and Traces). Installed before any role starts, so every instrument counts.
  const telemetry = await startTelemetry(process.env, roles.length === 3 ? 'serve' : roles.join('+'));
  const names = namesOf(config.namespace);
  const nc = await openNats(config, `assay-${roles.join('+')}`);
  await ensureStreams(nc, names, config.streamReplicas);
  const buckets = await openBuckets(nc, names, config.streamReplicas, {
    mcpSessionMaxAgeMs: mcpSessionBucketMaxAgeMs(config.mcpSessionIdleSeconds * 1000),
    revokedMaxAgeMs: revokedRetentionMs(config.oauthAccessTokenSeconds),
  });
  // The gateway reads and writes device sync's tables itself (docs/sync.md), so it needs PostgreSQL too.
  const needsSql = roles.includes('workers') || roles.includes('gateway');
  const sql = needsSql ? await openDatabase(config) : null;
  const stops: (() => Promise<void>)[] = [];
  const hostId = `${hostname()}-${process.pid}-${randomIds.uuid().slice(0, 8)}`;
  let gateway: Gateway | null = null;
  let host: ActorHost | null = null;
  // A job that runs once per deployment: the process holding its lease runs it, another takes over on failure.
  const singleton = (name: string, run: (signal: AbortSignal) => Promise<void>) =>
    startSingleton({
      name,
      kv: buckets.leases,
      hostId,
      ttlMs: config.leaseTtlMs,
      renewMs: config.leaseRenewMs,
      clock: systemClock,
      log,
      run,
    });

  if (roles.includes('workers') && sql) {
    await ensureActiveKey(sql, 'token', systemClock);
    await ensureActiveKey(sql, 'report', systemClock);
    let judges: Judges;
    try {
      judges = judgesFromConfig(config, { cache: new PgVerdictCache(sql) });
      await judges.configured.start?.();
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    const deps = {
      nc,
      sql,
      names,
      config,
      clock: systemClock,
      ids: randomIds,
      judgeVersion: judges.configured.version,
      log,
    };
    const settlementDeps = {
      nc,
      sql,
      names,
      log,
      clock: systemClock,
      timeoutMs: config.requestTimeoutMs,
      reportWaitMs: config.reportWaitSeconds * 1000,
    };
    const alerts = healthAlerts(buckets.health, systemClock.nowIso, (err) => log.warn({ err }, 'health alert failed'));
    const projector = { log, alerts, stallMs: config.projectionStallMs };
    const subs = [
      serveService(nc, names, 'auth', authService(sql), log),
      serveService(nc, names, 'sandbox', sandboxService(deps), log),
      serveService(nc, names, 'ledger', await ledgerService(deps), log),
      serveService(nc, names, 'catalog', catalogService(deps), log),
      serveService(nc, names, 'delivery', await deliveryService({ ...deps, log }), log),
      serveService(nc, names, 'oauth', await oauthService({ ...deps, revoked: buckets.revoked, log }), log),
      serveService(nc, names, 'skills', await skillsService({ ...deps, log }), log),
      serveService(nc, names, 'webhooks', webhooksService({ sql, sender: senderOptionsOf(config) }), log),
      serveService(nc, names, 'payments', paymentsService({ nc, sql, names, config, log }), log),
      serveService(nc, names, 'x402', x402Service({ nc, sql, names, config, clock: systemClock, log }), log),
    ];
    // The workers' jobs that run once per deployment.
    const jobs = [
      await singleton('listing_projector', (signal) =>
        runProjection(nc, sql, listingProjection(names), projector, signal),
      ),
      await singleton('outbox_relay', (signal) => runOutboxRelay(nc, sql, log, signal)),
      // The LEDGER stream's two projections share one pass: each fact is delivered, parsed and committed once for
      // both, off the purchase path (a purchase is answered once appended). The events store keeps its own
      // checkpoint (a rebuild resets it alone); after each commit it tells gateways whose events it wrote
      // (notifications of the MCP resource assay://events).
      await singleton('ledger_projector', (signal) =>
        runProjections(nc, sql, [principalFactsOf(names, config), eventsOf(names, nc)], projector, signal),
      ),
      await singleton('settlement_sweeper', (signal) => runSettlementSweeper(settlementDeps, signal)),
      // Seller payouts on a schedule, by one worker at a time (`assay payouts run` asks for one at once).
      ...(config.payoutIntervalMs > 0 && config.stripeSecretKey
        ? [
            await singleton('payout_run', (signal) =>
              runPayoutSchedule({ nc, sql, names, config, log }, config.payoutIntervalMs, signal),
            ),
          ]
        : []),
    ];
    // Every worker verifies: the VERIFY work queue hands each edition to one of them.
    const verifying = new AbortController();
    const verifier = runVerifier(
      { nc, sql, names, clock: systemClock, log, judges },
      verifying.signal,
      config.verifierConcurrency,
    );
    // In the background: a large corpus takes a while, and the workers already serve meanwhile.
    // Every worker schedules subscription cycles: claims split the due ones between them (scheduler.ts).
    const scheduling = new AbortController();
    const dueWork = { nc, sql, names, clock: options.clock ?? systemClock, log, timeoutMs: config.requestTimeoutMs };
    const scheduler = runSubscriptionScheduler(
      { ...dueWork, pollMs: config.subscriptionPollMs, claimSeconds: config.subscriptionClaimSeconds },
      scheduling.signal,
    );
    // Every worker expires approval requests past their time; the actor makes each expiry happen once.
    const approvalSweep = runApprovalSweep({ ...dueWork, pollMs: config.approvalSweepMs }, scheduling.signal);
    // Every worker delivers webhooks: claims in PostgreSQL split the due deliveries between them.
    // Its own connections: a burst of deliveries must not queue the projectors and services behind it.
    const webhookSql = openPool(config.databaseUrl, 8);
    const webhookDelivery = runWebhookDelivery(
      { nc, sql: webhookSql, names, config, clock: options.clock ?? systemClock, log },
      scheduling.signal,
    );
    const corpusLoading = new AbortController();
    const corpus = loadSandboxCorpus(
      { nc, sql, names, log, nowIso: systemClock.nowIso },
      config.sandboxCorpusSeed,
      config.sandboxCorpusArtifacts,
      corpusLoading.signal,
    ).catch((err) => log.error({ err }, 'sandbox corpus load failed; it resumes at the next start'));
    // Readings a scrape takes from the stores: escrow totals, the webhook backlog, the verification queue.
    const readingsJsm = await jetstreamManager(nc);
    const unregisterReadings = telemetry.registerScrapeSource({
      read: () => readWorkerMetrics(telemetry.metrics, readingsJsm, sql, names),
    });
    stops.push(async () => {
      unregisterReadings();
      await Promise.all(subs.map((s) => s.drain().catch(() => {})));
      corpusLoading.abort();
      await corpus;

      scheduling.abort();
      await scheduler;
      await approvalSweep;
      await webhookDelivery;
      await webhookSql.end();
      verifying.abort();
      await verifier;
      await judges.close();

      for (const job of jobs) await job.stop();
    });
    log.info(
      'workers serving (auth, sandbox, ledger, catalog, delivery, oauth, verifier, subscription scheduler, approval sweep, webhook delivery, projectors, outbox relay)',
    );
  }

  if (roles.includes('actors')) {
    // The host stops before what its commands use (quotes, the idempotency index): a stop lets commands under way
    // finish before it hands the shards over.
    const hostStopAt = stops.length;
    const quotes = new QuoteCache(
      nc,
      names,
      config.quoteTtlMs,
      Math.max(100, config.requestTimeoutMs - 1500),
      systemClock.nowMs,
    );
    await quotes.start();
    stops.push(async () => quotes.stop());
    const idempotencyIndex = new IdempotencyIndexClient(nc, names, config.requestTimeoutMs);
    await idempotencyIndex.start();
    stops.push(async () => idempotencyIndex.stop());
    const ledgerReader = await jetstreamManager(nc);
    host = new ActorHost({
      nc,
      names,
      snapshots: buckets.snapshots,
      leasesKv: buckets.leases,
      behaviours: [
        principalBehaviour({
          names,
          clock: options.clock ?? systemClock,
          ids: randomIds,
          idempotencyRetentionMs: idempotencyRetentionMs(config),
          hotKeysMax: config.idempotencyHotKeys,
          index: idempotencyIndex,
          async loadFact(principalId, seq) {
            const m = await ledgerReader.direct.getMessage(names.streams.ledger.name, { seq }).catch(() => null);
            return m && m.subject === names.ledgerSubject(principalId) ? m.json<LedgerFact>() : null;
          },
          quotes,
          defaultPlan: config.defaultPlan,
          sandboxPlan: config.sandboxPlan,
          rateLeaseMs: config.rateLeaseMs,
          approvalTtlMs: config.approvalTtlSeconds * 1000,
          processorConfigured: config.stripeSecretKey !== '',
        }),
        listingBehaviour({
          names,
          clock: systemClock,
          ids: randomIds,
          nc,
          baseUrl: config.baseUrl,
          requestTimeoutMs: Math.max(100, config.requestTimeoutMs - 1000),
        }),
      ],
      hostId,
      clock: systemClock,
      log,
      leaseTtlMs: config.leaseTtlMs,
      leaseRenewMs: config.leaseRenewMs,
      mailboxDepthMax: config.mailboxDepthMax,
      snapshotEvery: config.snapshotEvery,
      actorsCachedMax: config.actorsCachedMax,
      appendTimeoutMs: Math.min(config.requestTimeoutMs, 5000),
      // Leave the gateway time to receive the answer of a call that had to ask another actor or service.
      callTimeoutMs: Math.max(100, config.requestTimeoutMs - 500),
    });
    await host.start();
    const h = host;
    stops.splice(hostStopAt, 0, () => h.stop());
    log.info({ shards: host.heldShards().length }, 'actor host serving');
  }

  let port = 0;
  if (roles.includes('gateway')) {
    // With the actor host in this process, the gateway hands it its shards' requests directly (docs/architecture.md,
    // Where we deviated): the same bytes and mailbox, without the round trip through nats-server.
    const h = host;
    const sync = sql ? await openSync(config, sql, log) : null;
    if (sync) {
      // The gateway owns device sync, so it owns the sweep of its store: one gateway of the deployment at a time.
      const sweep = await singleton('sync_sweep', (signal) => runSyncSweep(sync.sweep, config.syncSweepMs, signal));
      stops.push(() => sweep.stop());
    }
    gateway = wireGateway({
      config,
      names,
      nc,
      log,
      buckets,
      sync: sync?.port ?? null,
      inProcess: h && ((subject, req, timeoutMs, headers) => h.answerInProcess(subject, req, timeoutMs, headers)),
    });
    port = await gateway.listen();
    const g = gateway;
    // The gateway stops first so no new work arrives while the others drain.
    stops.unshift(() => g.close());
    log.info({ port, baseUrl: config.baseUrl, apiPort: g.apiPort }, 'gateway listening');
  }

  // One admin listener per process, covering every role it runs.
  const metricsListener = await startMetricsListener(config, log, telemetry);
  if (metricsListener) stops.push(() => new Promise<void>((resolve) => metricsListener.close(() => resolve())));

  return {
    names,
    gateway,
    host,
    port,
    async stop() {
      const orderly = (async () => {
        for (const stop of stops) await stop().catch((err) => log.error({ err }, 'stopping a role failed'));
        await nc.drain().catch(() => {});
      })();
      // Work stuck in flight (a handler waiting on a database pool that never frees a connection) would hold the
      // drains above forever. Past twice the grace period (the gateway's drain takes at most one), the database is
      // closed under it: its queries fail, the handlers end, and the orderly stop finishes.
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([
        orderly.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), 2 * config.shutdownGraceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!inTime) {
        log.warn(
          { graceMs: config.shutdownGraceMs },
          'work still in flight after the grace period; closing the database under it',
        );
        await sql?.end({ timeout: 0 });
        await orderly;
      }
      await sql?.end({ timeout: 2 });
    },
  };
}

/** Set the gauges a scrape reads from PostgreSQL and JetStream (a failed reading keeps the last value). */
async function readWorkerMetrics(
  metrics: ProcessMetrics['metrics'],
  jsm: JetStreamManager,
  sql: Sql,
  names: Names,
): Promise<void> {
  const [totals, backlog, verify] = await Promise.all([
    escrowTotals(sql),
    pendingDeliveries(sql),
    jsm.consumers.info(names.streams.verify.name, names.consumers.verifier),
  ]);
  metrics.escrowCents.reset();
  for (const t of totals) {
    const state = t.state === 'auto_refunded' ? 'refunded' : t.state;
    metrics.escrowCents.set({ state, side: t.sandbox ? 'sandbox' : 'live' }, t.cents);
  }
  metrics.outboxBacklog.set(backlog);
  metrics.verificationQueue.set(verify.num_pending + verify.num_ack_pending);
}

/**
 * The gateway and what it runs, wired: the bus client, the token verifier (public keys from the auth service over
 * the bus), the pipeline, the MCP endpoint with its session store, and the health alerts bucket. `nowMs` lets a test
 * move the gateway's clock.
 */
export function wireGateway(o: {
  config: Config;
  names: Names;
  nc: NatsConnection;
  log: Logger;
  buckets: { health: KV; mcpSessions: McpSessionsBucket; revoked: KV };
  nowMs?: () => number;
  /** The operation table to serve instead of the contracts' one (a test's, with a row marked deprecated). */
  operations?: readonly Operation[];
  /** Device sync's store; without it the sync routes answer 503. */
  sync?: SyncPort | null;
  /** The actor host of this process, if it runs one. */
  inProcess?: InProcessActors | null;
}): Gateway {
  const { config, names, log } = o;
  const nowMs = o.nowMs ?? Date.now;
  const ops = o.operations ?? operations;
  const bus = new GatewayBus(o.nc, config.requestTimeoutMs, log, o.inProcess ?? null, names);
  const revoked = new RevokedSet(o.buckets.revoked, log, nowMs, revokedRetentionMs(config.oauthAccessTokenSeconds));
  const verifier = new TokenVerifier({
    issuer: config.baseUrl,
    nowMs,
    revoked,
    fetchJwks: jwksOverBus(bus),
    onFetchError: (err) => log.warn({ err }, 'fetching the token key set failed'),
  });
  const auth = new Authenticator(verifier, bus);
  const limiter = new RateLimiter({ bus, names, leaseMs: config.rateLeaseMs, nowMs, log });
  const pipeline = new Pipeline({ names, baseUrl: config.baseUrl, bus, auth, limiter }, ops);
  const sessions = new McpSessions(o.buckets.mcpSessions, {
    idleMs: config.mcpSessionIdleSeconds * 1000,
    perPrincipalMax: config.mcpSessionsPerPrincipalMax,
    nowMs,
    newId: randomUUID,
    onError: (err, what) => log.warn({ err }, what),
  });
  const mcp = new McpEndpoint({ config, pipeline, bus, sessions, ops, log, nowMs });
  const web = new WebFace({ config, log, bus, pipeline, auth });
  if (config.contextRateLimit === 'off') {
    log.warn("ASSAY_CONTEXT_RATE_LIMIT=off: the context-file API admits every request, whatever the principal's plan");
  }
  const contextLimiter = config.contextRateLimit === 'on' ? limiter : admitAll;
  const context = new ContextFace({ config, log, bus, auth, limiter: contextLimiter });
  const okf = new OkfExport({ config, log, bus, names });
  const sync = new SyncFace({ config, log, auth, port: o.sync ?? null, limiter });
  const x402 = new X402Face({ config, log, bus });
  return new Gateway({
    config,
    log,
    pipeline,
    bus,
    mcp,
    health: { kv: o.buckets.health, bucket: names.buckets.health, nc: o.nc },
    web,
    context,
    okf,
    sync,
    x402,
    revoked,
    nowMs,
    operations: ops,
  });
}
