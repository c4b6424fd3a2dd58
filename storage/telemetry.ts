// Storage's port to metrics (contracts/telemetry.ts): the composition root installs the process's instruments in
// `telemetry`; until then, and in a process that starts none, recording does nothing.
import { TelemetryPort } from '../contracts/index.ts';

export const telemetry = new TelemetryPort();
export const { metrics, registerProjection } = telemetry;
