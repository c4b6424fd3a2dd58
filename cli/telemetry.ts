// Metrics and traces for a process that runs roles (docs/operations.md, Metrics and Traces): the registry and its
// instruments (cli/metrics.ts, prom-client) and, when the environment names an OTLP endpoint, the tracer
// (cli/tracing.ts, the OpenTelemetry SDK), installed in the ports the gateway, the actors and the projectors record
// through. Both are loaded here, when roles start: an operator or client command that starts none loads neither.
import { actorsTelemetry } from '../actors/index.ts';
import { gatewayTelemetry } from '../gateway/index.ts';
import { storageTelemetry } from '../storage/index.ts';
import type * as metricsModule from './metrics.ts';
import { startTracing } from './tracing.ts';

/** The process's registry and instruments (cli/metrics.ts), once loaded. */
export type ProcessMetrics = typeof metricsModule;

/** Start this process's telemetry (once: later calls answer the same registry) and install it in every layer. */
export async function startTelemetry(
  env: Record<string, string | undefined>,
  service: string,
): Promise<ProcessMetrics> {
  const [metrics, tracing] = await Promise.all([import('./metrics.ts'), startTracing(env, service)]);
  const installed = { metrics: metrics.instruments, readings: metrics.readings, tracing };
  for (const port of [gatewayTelemetry, actorsTelemetry, storageTelemetry]) port.use(installed);
  return metrics;
}
