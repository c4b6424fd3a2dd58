// Time and ids are passed in: business code never reads Date.now() or draws random ids itself, so tests of
// expiry, retention and decay can own time.
import { randomUUID } from 'node:crypto';

export interface Clock {
  nowMs(): number;
  nowIso(): string;
}

export interface IdSource {
  uuid(): string;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  nowIso: () => new Date().toISOString(),
};

export const randomIds: IdSource = { uuid: () => randomUUID() };
