// Traces (docs/operations.md, Traces): the OpenTelemetry SDK for a process that runs roles, exported with OTLP
// over HTTP when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The SDK
// packages are imported only then, so a process without an endpoint never loads them; the layers record spans
// through their ports (contracts/telemetry.ts), which cost a branch per call site while tracing is off.
import { context, propagation, ROOT_CONTEXT, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Tracing } from '../contracts/index.ts';

let starting: Promise<Tracing | null> | null = null;
let tracing: Tracing | null = null;
let shutdown: (() => Promise<void>) | null = null;

export const tracingOn = (): boolean => tracing !== null;

/**
 * Set up tracing for this process if the environment names an OTLP endpoint; null when it does not (and tracing was
 * not set up before). Once set up, later calls answer the same tracer. `service` is the process's roles (`assay
 * serve`, `assay gateway`, ...), the `service.name` of its spans.
 */
export function startTracing(env: Record<string, string | undefined>, service: string): Promise<Tracing | null> {
  if (starting) return starting;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return Promise.resolve(null);
  starting = setUp(env, service);
  return starting;
}

async function setUp(env: Record<string, string | undefined>, service: string): Promise<Tracing> {
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, resources, sdk] =
    await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
    ]);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? `assay ${service}` }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: 200 })],
  });
  trace.setGlobalTracerProvider(provider);
  shutdown = () => provider.shutdown();
  tracing = tracingWith(provider.getTracer('assay'));
  return tracing;
}

/** Send what is buffered (a stopping process). */
export async function stopTracing(): Promise<void> {
  await shutdown?.().catch(() => {});
}

/** The trace id of the active span, for log lines; undefined with tracing off or outside a span. */
export function activeTraceId(): string | undefined {
  if (!tracing) return undefined;
  const span = trace.getActiveSpan();
  return span?.spanContext().traceId;
}

function tracingWith(tracer: Tracer): Tracing {
  return {
    inSpan(name, kind, attributes, work, parent) {
      const ctx = parent ?? context.active();
      return tracer.startActiveSpan(name, { kind, attributes }, ctx, async (span) => {
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
    },
    inject(headers) {
      let any = false;
      propagation.inject(context.active(), headers, {
        set(carrier, key, value) {
          carrier.set(key, value);
          any = true;
        },
      });
      return any;
    },
    extract(headers) {
      if (!headers) return ROOT_CONTEXT;
      return propagation.extract(ROOT_CONTEXT, headers, {
        get: (carrier, key) => carrier.get(key) || undefined,
        keys: () => ['traceparent', 'tracestate'],
      });
    },
  };
}
