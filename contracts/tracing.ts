// Traces (docs/operations.md, Traces): OpenTelemetry spans for a request at the gateway, for the actor or service
// that handles it on the far side of NATS (the W3C `traceparent` travels in the message's headers), for the
// JetStream append and for PostgreSQL statements on the purchase path. Exported with OTLP over HTTP when the
// standard OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise nothing is set up
// and every helper here returns at once, so tracing off costs a branch per call site.
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

export { SpanKind };

let tracer: Tracer | null = null;
let provider: TracerProvider | null = null;

export const tracingOn = (): boolean => tracer !== null;

/**
 * Set up tracing for this process if the environment names an OTLP endpoint; idempotent. `service` is the
 * process's roles (`assay serve`, `assay gateway`, ...), the `service.name` of its spans.
 */
export function startTracing(env: Record<string, string | undefined>, service: string): boolean {
  if (tracer) return true;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return false;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? `assay ${service}` }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: 200 })],
  });
  trace.setGlobalTracerProvider(provider);
  tracer = provider.getTracer('assay');
  return true;
}

/** Send what is buffered (a stopping process). */
export async function stopTracing(): Promise<void> {
  await provider?.shutdown().catch(() => {});
}

/** The `traceparent` of the active span as NATS message headers take it (`set(name, value)`), if tracing is on. */
export function injectTrace(headers: { set(k: string, v: string): void }): boolean {
  if (!tracer) return false;
  let any = false;
  propagation.inject(context.active(), headers, {
    set(carrier, key, value) {
      carrier.set(key, value);
      any = true;
    },
  });
  return any;
}

/** The context a message's headers carry (`get(name)` as NATS headers answer it), or the root context. */
export function extractTrace(headers: { get(k: string): string } | undefined): Context {
  if (!tracer || !headers) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, {
    get: (carrier, key) => carrier.get(key) || undefined,
    keys: () => ['traceparent', 'tracestate'],
  });
}

/**
 * Run `work` inside a span named `name` (child of `parent`, or of the active span): the span ends when `work`
 * settles, marked an error if it throws. With tracing off this is `work()` itself.
 */
export function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  work: (span: Span | null) => Promise<T>,
  parent?: Context,
): Promise<T> {
  if (!tracer) return work(null);
  const t = tracer;
  const ctx = parent ?? context.active();
  return t.startActiveSpan(name, { kind, attributes }, ctx, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The trace id of the active span, for log lines; undefined with tracing off or outside a span. */
export function activeTraceId(): string | undefined {
  if (!tracer) return undefined;
  const span = trace.getActiveSpan();
  return span?.spanContext().traceId;
}

/** A PostgreSQL statement as a client span (OpenTelemetry database conventions); `summary` names it, as `SELECT orders`. */
export function pgSpan<T>(summary: string, work: () => Promise<T>): Promise<T> {
  if (!tracer) return work();
  return inSpan(
    summary,
    SpanKind.CLIENT,
    { 'db.system.name': 'postgresql', 'db.query.summary': summary, 'db.operation.name': summary.split(' ')[0]! },
    work,
  );
}
