// The actors' port to metrics and traces (contracts/telemetry.ts): the composition root installs the process's
// instruments and tracer in `telemetry`; until then, and in a process that starts neither, recording does nothing.
import { SpanKind } from '@opentelemetry/api';
import { TelemetryPort } from '../../contracts/index.ts';

export { SpanKind };

export const telemetry = new TelemetryPort();
export const { metrics, inSpan, injectTrace, extractTrace, tracingOn, registerActorHost } = telemetry;

/** One command an actor decided: its outcome (ok, refused, failed) and time. */
export function countActorCommand(kind: string, outcome: string, startedMs: number): void {
  metrics.actorCommands.labels(kind, outcome).inc();
  metrics.actorCommandSeconds.labels(kind).observe((performance.now() - startedMs) / 1000);
}

/** A PostgreSQL statement as a client span (OpenTelemetry database conventions); `summary` names it, as `SELECT orders`. */
export function pgSpan<T>(summary: string, work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  return inSpan(
    summary,
    SpanKind.CLIENT,
    { 'db.system.name': 'postgresql', 'db.query.summary': summary, 'db.operation.name': summary.split(' ')[0]! },
    work,
  );
}
