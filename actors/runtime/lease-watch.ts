// One watch of the lease bucket per process, shared by every lease pool the process runs (the actor host and each
// singleton job). Each pool used to open its own: a process serving every role held seven ordered consumers on the
// bucket, and every heartbeat written was delivered to it seven times. Each pool still sees every entry, in the
// bucket's order; one that joins late is first given the newest entry of every key seen so far (deletions too), as
// its own watch would have been.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { QueuedIterator } from '@nats-io/nats-core';
import type { Logger } from 'pino';

export type LeaseEntryListener = (e: KvWatchEntry) => void;

class SharedLeaseWatch {
  private readonly listeners = new Set<LeaseEntryListener>();
  /** The newest entry of each key seen: what a listener that joins now is given first. */
  private readonly newest = new Map<string, KvWatchEntry>();
  private watcher: Promise<QueuedIterator<KvWatchEntry>> | null = null;

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
    private readonly ended: () => void,
  ) {}

  async join(listener: LeaseEntryListener): Promise<() => void> {
    this.watcher ??= this.open();
    try {
      await this.watcher;
    } catch (err) {
      this.watcher = null;
      throw err;
    }
    // Nothing runs between these lines and the next entry: the listener misses none and sees none twice.
    for (const e of this.newest.values()) listener(e);
    this.listeners.add(listener);
    return () => this.leave(listener);
  }

  private async open(): Promise<QueuedIterator<KvWatchEntry>> {
    const it = await this.kv.watch({ key: '>' });
    void (async () => {
      for await (const e of it) {
        this.newest.set(e.key, e);
        // One pool's failure to take an entry must not end the watch for the others.
        for (const l of this.listeners) {
          try {
            l(e);
          } catch (err) {
            this.log.error({ err, key: e.key }, 'a lease pool failed to take a watched entry');
          }
        }
      }
    })().catch((err) => this.log.error({ err }, 'lease watch ended'));
    return it;
  }

  private leave(listener: LeaseEntryListener): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
    // The last pool left: stop the watch; a pool that starts later opens a new one.
    this.ended();
    void this.watcher?.then((it) => it.stop());
  }
}

const watches = new WeakMap<KV, SharedLeaseWatch>();

/**
 * Receive every entry of the lease bucket `kv` (a bucket handle is shared by the pools of a process), starting with
 * the newest entry of each key already seen. Resolves once the watch is open, with the function that leaves it.
 */
export function watchLeases(kv: KV, log: Logger, listener: LeaseEntryListener): Promise<() => void> {
  let shared = watches.get(kv);
  if (!shared) {
    const made = new SharedLeaseWatch(kv, log, () => {
      if (watches.get(kv) === made) watches.delete(kv);
    });
    shared = made;
    watches.set(kv, shared);
  }
  return shared.join(listener);
}
