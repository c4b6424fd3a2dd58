// Operational alerts: a background job that hits something an operator must look at (a fact a projection had to
// park) raises an alert in the `<ns>_health` KV bucket; every gateway watches the bucket and shows the live alerts
// on /healthz. An alert is cleared by deleting its key (a rebuild that projects the parked facts does).

export interface HealthAlert {
  /** What kind of trouble: `projection_parked` is a fact a projection could not write and set aside. */
  kind: 'projection_parked';
  /** What it concerns, e.g. the projection's checkpoint name. */
  subject: string;
  message: string;
  /** How many occurrences this alert stands for (facts parked). */
  count: number;
  /** ISO 8601 time of the first occurrence and of the latest. */
  since: string;
  updatedAt: string;
}

/** KV key of an alert: `alert.<kind>.<subject>`, the subject reduced to characters a KV key token may hold. */
export function healthAlertKey(kind: HealthAlert['kind'], subject: string): string {
  return `alert.${kind}.${subject.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}
