// The gateway's port to metrics and traces (contracts/telemetry.ts): the composition root installs the process's
// instruments and tracer in `telemetry`; until then, and in a process that starts neither, recording does nothing.
import { TelemetryPort } from '../contracts/index.ts';

export { SpanKind } from '@opentelemetry/api';

export const telemetry = new TelemetryPort();
export const { metrics, inSpan, injectTrace, tracingOn } = telemetry;

/** Count one answered agent request (operation ids and the spec's statuses are closed sets: bounded labels). */
export function countRequest(operation: string, face: 'rest' | 'mcp', status: number, startedMs: number): void {
  metrics.requests.labels(operation, face, String(status)).inc();
  metrics.requestSeconds.labels(operation, face).observe((performance.now() - startedMs) / 1000);
}

/** One NATS round trip of the gateway's, by subject family and outcome (ok, timeout, no_responders, ...). */
export function timeNatsRequest(family: string, outcome: string, startedMs: number): void {
  metrics.natsRequestSeconds.labels(family, outcome).observe((performance.now() - startedMs) / 1000);
}
