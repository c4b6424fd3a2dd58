// A job that must run in exactly one process of a deployment at a time (a projector, a scheduler): every worker
// competes for a one-shard lease, the holder runs the job, and another takes over when it stops or dies.
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import { ShardLeases } from './leases.ts';

export interface SingletonOptions {
  name: string;
  kv: KV;
  hostId: string;
  ttlMs: number;
  renewMs: number;
  clock: Clock;
  log: Logger;
  run(signal: AbortSignal): Promise<void>;
}

export async function startSingleton(o: SingletonOptions): Promise<{ stop(): Promise<void> }> {
  let current: { abort: AbortController; done: Promise<void> } | null = null;
  const leases = new ShardLeases({
    kv: o.kv,
    hostId: o.hostId,
    pool: `singleton_${o.name}`,
    kinds: [{ kind: `singleton_${o.name}`, shardCount: 1 }],
    ttlMs: o.ttlMs,
    renewMs: o.renewMs,
    clock: o.clock,
    log: o.log,
    acquired: async () => {
      const abort = new AbortController();
      current = {
        abort,
        done: o.run(abort.signal).catch((err) => o.log.error({ err, job: o.name }, 'singleton job failed')),
      };
      o.log.info({ job: o.name }, 'singleton job started here');
    },
    released: async () => {
      const c = current;
      current = null;
      if (!c) return;
      c.abort.abort();
      await c.done;
    },
  });
  await leases.start();
  return { stop: () => leases.stop() };
}
