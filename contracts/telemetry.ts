// What the roles measure and trace (docs/operations.md, Metrics and Traces), as types and a port. The composition
// root (cli/telemetry.ts) makes the process's instruments (prom-client) and, when the environment names an OTLP
// endpoint, its tracer (the OpenTelemetry SDK), and installs them in each layer's port (gateway/telemetry.ts,
// actors/runtime/telemetry.ts, storage/telemetry.ts). Until then, and in a process that starts neither, recording
// does nothing. Nothing here loads prom-client or OpenTelemetry: the imports below are types.
//
// Label values come from fixed sets (operation ids, faces, statuses, actor kinds, projection names): never a
// principal, listing or order id, so the number of series does not grow with traffic.
import type { Attributes, Context, Span, SpanKind } from '@opentelemetry/api';

type LabelValues<L extends string> = Partial<Record<L, string | number>>;

export interface CounterPort<L extends string = never> {
  inc(value?: number): void;
  inc(labels: LabelValues<L>, value?: number): void;
}
export interface GaugePort {
  inc(): void;
  dec(): void;
}
export interface HistogramPort<L extends string = never> {
  observe(value: number): void;
  observe(labels: LabelValues<L>, value: number): void;
}
/** A counter of the request path: children bound to their label values once (cli/bound-metrics.ts). */
export interface BoundCounterPort {
  labels(...values: string[]): { inc(by?: number): void };
}
/** A histogram of the request path: children bound to their label values once, or the one series without labels. */
export interface BoundHistogramPort {
  labels(...values: string[]): { observe(value: number): void };
  observe(value: number): void;
}

/** The instruments the gateway, the actors and the projectors count into (the gauges read at a scrape are cli's). */
export interface Instruments {
  // ----- the gateway -----
  requests: BoundCounterPort;
  requestSeconds: BoundHistogramPort;
  requestsInFlight: GaugePort;
  admissionRefusals: CounterPort;
  natsRequestSeconds: BoundHistogramPort;
  // ----- actor hosts -----
  actorCommands: BoundCounterPort;
  actorCommandSeconds: BoundHistogramPort;
  leaseTakeovers: CounterPort<'kind'>;
  leasesAcquired: CounterPort<'kind'>;
  // ----- projections -----
  settlementLagSeconds: BoundHistogramPort;
  projectionStalls: CounterPort<'projection'>;
  projectionConsumerRestarts: CounterPort<'projection' | 'reason'>;
  // ----- services -----
  webhookAttempts: CounterPort<'outcome'>;
  syncSweeps: CounterPort<'outcome'>;
  syncOrphansRemoved: CounterPort<'kind'>;
  syncOrphanBytesRemoved: CounterPort<'kind'>;
  syncReservationsExpired: CounterPort;
  judgeSeconds: HistogramPort<'judge'>;
}

/** What a scrape reads of an actor host at its time. */
export interface ActorHostSource {
  kind: string;
  shardsOwned(): number;
  activations(): number;
  mailboxDepth(): number;
  /** Age of the oldest snapshot an active actor was loaded from, in seconds (0 with none). */
  oldestSnapshotAgeSeconds(): number;
}
/** What a scrape reads of a projection at its time. */
export interface ProjectionSource {
  name: string;
  /** The stream sequence applied, and the stream's last sequence, as last seen. */
  position(): { applied: number; head: number };
  /** Whether its stream has been ahead of it for longer than the stall bound with nothing applied. */
  stalled(): boolean;
}
/** Where sources register while they run; each registration answers the function that removes it. */
export interface MetricReadings {
  actorHost(s: ActorHostSource): () => void;
  projection(s: ProjectionSource): () => void;
}

/**
 * Spans (the OpenTelemetry API's types): a request at the gateway, the actor or service that handles it on the far
 * side of NATS (the W3C `traceparent` travels in the message's headers), a JetStream append, a PostgreSQL statement.
 */
export interface Tracing {
  /** Run `work` in a span (child of `parent`, or of the active span) that ends when it settles, an error if it throws. */
  inSpan<T>(
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    work: (span: Span) => Promise<T>,
    parent?: Context,
  ): Promise<T>;
  /** The active span's `traceparent` into NATS message headers; whether any was written. */
  inject(headers: { set(k: string, v: string): void }): boolean;
  /** The context a message's headers carry; the root context without headers. */
  extract(headers: { get(k: string): string } | undefined): Context;
}

/** What the composition root installs: the instruments, where readings register, and the tracer if tracing is on. */
export interface Telemetry {
  metrics: Instruments;
  readings: MetricReadings;
  tracing: Tracing | null;
}

const ignore = (): void => {};
const noCounter = { inc: ignore };
const noHistogram = { observe: ignore };
const noBoundCounter = { labels: () => noCounter };
const noBoundHistogram = { labels: () => noHistogram, observe: ignore };
const unregistered = () => ignore;

/**
 * A layer's port: what its modules record through. `metrics` is one object for the port's life (modules keep it);
 * `use` puts the installed instruments in it. With tracing off (or before `use`) the tracing functions cost a
 * branch: `inSpan` is `work(null)`.
 */
export class TelemetryPort {
  readonly metrics: Instruments = {
    requests: noBoundCounter,
    requestSeconds: noBoundHistogram,
    requestsInFlight: { inc: ignore, dec: ignore },
    admissionRefusals: noCounter,
    natsRequestSeconds: noBoundHistogram,
    actorCommands: noBoundCounter,
    actorCommandSeconds: noBoundHistogram,
    leaseTakeovers: noCounter,
    leasesAcquired: noCounter,
    settlementLagSeconds: noBoundHistogram,
    projectionStalls: noCounter,
    projectionConsumerRestarts: noCounter,
    webhookAttempts: noCounter,
    syncSweeps: noCounter,
    syncOrphansRemoved: noCounter,
    syncOrphanBytesRemoved: noCounter,
    syncReservationsExpired: noCounter,
    judgeSeconds: noHistogram,
  };
  private readings: MetricReadings = { actorHost: unregistered, projection: unregistered };
  private tracing: Tracing | null = null;

  readonly use = (t: Telemetry): void => {
    // The port's own members only: an installed object may carry more (cli's scrape-time gauges).
    for (const key of Object.keys(this.metrics)) Reflect.set(this.metrics, key, Reflect.get(t.metrics, key));
    this.readings = t.readings;
    this.tracing = t.tracing;
  };

  readonly tracingOn = (): boolean => this.tracing !== null;

  /** `work` in a span, or `work(null)` with tracing off. */
  readonly inSpan = <T>(
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    work: (span: Span | null) => Promise<T>,
    parent?: Context,
  ): Promise<T> => (this.tracing ? this.tracing.inSpan(name, kind, attributes, work, parent) : work(null));

  /** The active span's `traceparent` into NATS headers, if tracing is on. */
  readonly injectTrace = (headers: { set(k: string, v: string): void }): boolean =>
    this.tracing ? this.tracing.inject(headers) : false;

  /** The context a message's headers carry (the root context without headers); undefined with tracing off. */
  readonly extractTrace = (headers: { get(k: string): string } | undefined): Context | undefined =>
    this.tracing?.extract(headers);

  /** Register an actor host's readings while it runs; the function returned unregisters it. */
  readonly registerActorHost = (s: ActorHostSource): (() => void) => this.readings.actorHost(s);

  /** Register a projection's readings while it runs; the function returned unregisters it. */
  readonly registerProjection = (s: ProjectionSource): (() => void) => this.readings.projection(s);
}
