// Raising and clearing operational alerts in the `<ns>_health` KV bucket (contracts/health.ts); every gateway
// watches the bucket and shows the live alerts on /healthz.
import type { KV } from '@nats-io/kv';
import { type HealthAlert, healthAlertKey } from '../contracts/index.ts';

export interface HealthAlerts {
  /**
   * Raise or update an alert; `count` is the total it stands for now. Best effort: never throws, and resolves to
   * whether the bucket took it (a caller that must see it through tries again later).
   */
  raise(kind: HealthAlert['kind'], subject: string, message: string, count: number): Promise<boolean>;
  /** Delete an alert (nothing if there is none); resolves to whether the bucket took it. Never throws. */
  clear(kind: HealthAlert['kind'], subject: string): Promise<boolean>;
}

export function healthAlerts(kv: KV, nowIso: () => string, onError: (err: unknown) => void): HealthAlerts {
  return {
    async raise(kind, subject, message, count) {
      const key = healthAlertKey(kind, subject);
      try {
        const earlier = await kv.get(key);
        const now = nowIso();
        const since = earlier?.operation === 'PUT' ? (earlier.json<HealthAlert>().since ?? now) : now;
        const alert: HealthAlert = { kind, subject, message, count, since, updatedAt: now };
        await kv.put(key, JSON.stringify(alert));
        return true;
      } catch (err) {
        onError(err);
        return false;
      }
    },
    async clear(kind, subject) {
      try {
        await kv.delete(healthAlertKey(kind, subject));
        return true;
      } catch (err) {
        onError(err);
        return false;
      }
    },
  };
}
