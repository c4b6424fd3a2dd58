// Operational alerts: a background job that hits something an operator must look at (a fact a projection had to
// park, a projection that stopped moving) raises an alert in the `<ns>_health` KV bucket; every gateway watches the
// bucket and shows the live alerts on /healthz. An alert is cleared by deleting its key (a rebuild that projects the
// parked facts does; a stalled projection's projector does once it moves again).
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';
import { Compile } from 'typebox/compile';
import { HealthAlert as HealthAlertSchema } from './schemas.ts';

export interface HealthAlert {
  /**
   * What kind of trouble: `projection_parked` is a fact a projection could not write and set aside;
   * `projection_stalled` a projection its stream has been ahead of for longer than the stall bound with nothing
   * applied (storage/projection-liveness.ts).
   */
  kind: 'projection_parked' | 'projection_stalled';
  /** What it concerns, e.g. the projection's checkpoint name. */
  subject: string;
  message: string;
  /** How many occurrences this alert stands for (facts parked; facts waiting, for a stalled projection). */
  count: number;
  /** ISO 8601 time of the first occurrence and of the latest. */
  since: string;
  updatedAt: string;
}

/** KV key of an alert: `alert.<kind>.<subject>`, the subject reduced to characters a KV key token may hold. */
export function healthAlertKey(kind: HealthAlert['kind'], subject: string): string {
  return `alert.${kind}.${subject.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

const isAlert = Compile(HealthAlertSchema);

/** A key of the alerts bucket as last written: its alert, or null when deleted (or not an alert at all). */
export interface HealthAlertEntry {
  key: string;
  revision: number;
  alert: HealthAlert | null;
}

/**
 * The keys of a KV bucket (deleted ones included), sorted, read without a consumer: from the subjects of the
 * bucket's stream, which its leader answers for. A watch or `kv.keys()` reads through a consumer of one replica,
 * which nats-server 2.9 may place on a dead node (and a watch whose node died stays silent until its 30 s heartbeats
 * are missed): an operator's view must not depend on one when a node has died.
 */
export async function bucketKeys(jsm: JetStreamManager, bucket: string): Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
  return Object.keys(info.state.subjects ?? {})
    .map((subject) => subject.slice(prefix.length))
    .sort();
}

/** Every key of the alerts bucket with its latest value (a direct get), sorted by key, read without a consumer. */
export async function readHealthAlerts(jsm: JetStreamManager, kv: KV, bucket: string): Promise<HealthAlertEntry[]> {
  const entries: HealthAlertEntry[] = [];
  for (const key of await bucketKeys(jsm, bucket)) {
    const e = await kv.get(key);
    if (!e) continue;
    entries.push({ key, revision: e.revision, alert: e.operation === 'PUT' ? alertOf(e) : null });
  }
  return entries;
}

/** The alert a bucket value holds, or null when it holds something else. */
export function alertOf(e: KvEntry): HealthAlert | null {
  let value: unknown;
  try {
    value = e.json();
  } catch {
    return null;
  }
  return isAlert.Check(value) ? value : null;
}
