// The device sync sweep (docs/operations.md, Device sync sweep): what an upload leaves behind when it cannot clean
// up after itself. A gateway that died mid-upload leaves a reservation (quota set aside for nothing), a temporary
// file, or a blob renamed into place whose holding was never recorded; a file whose deletion failed stays too. Once
// per interval, by one gateway of the deployment at a time, the sweep releases reservations no upload touched for
// their TTL, then deletes blob files that no owner holds and no upload has reserved, and temporary files, older than
// the grace period. Files are only ever judged by their own digest's rows, so bytes someone holds are never touched.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { metrics } from '../runtime/telemetry.ts';
import { type BlobDir, type Sql, syncCollectOrphans, syncReleaseStale, syncUnreferenced } from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';

export interface SyncSweepDeps {
  sql: Sql;
  blobs: BlobDir;
  clock: Clock;
  log: Logger;
  /** ASSAY_SYNC_RESERVATION_TTL_SECONDS in milliseconds. */
  reservationTtlMs: number;
  /** ASSAY_SYNC_ORPHAN_GRACE_SECONDS in milliseconds. */
  orphanGraceMs: number;
}

export interface SyncSweepResult {
  reservations: { released: number; bytes: number };
  blobs: { removed: number; bytes: number };
  temporaries: { removed: number; bytes: number };
}

/** One pass of the sweep. */
export async function sweepSyncStore(d: SyncSweepDeps, signal?: AbortSignal): Promise<SyncSweepResult> {
  const now = d.clock.nowMs();
  const cutoffMs = now - d.orphanGraceMs;
  const stale = await syncReleaseStale(d.sql, new Date(now - d.reservationTtlMs).toISOString());
  const out: SyncSweepResult = {
    reservations: { released: stale.reservations, bytes: stale.bytes },
    blobs: { removed: 0, bytes: 0 },
    temporaries: { removed: 0, bytes: 0 },
  };
  for await (const digests of d.blobs.digestsByDirectory()) {
    if (signal?.aborted) return out;
    const unreferenced = await syncUnreferenced(d.sql, digests);
    const old: { digest: string; size: number }[] = [];
    for (const digest of unreferenced) {
      const file = await d.blobs.fileOf(digest);
      if (file !== null && file.mtimeMs <= cutoffMs) old.push({ digest, size: file.size });
    }
    if (old.length === 0) continue;
    const removed = new Set(
      await syncCollectOrphans(d.sql, {
        blobs: old,
        at: d.clock.nowIso(),
        deleteFiles: (gone) => d.blobs.remove(gone),
      }),
    );
    for (const b of old) {
      if (!removed.has(b.digest)) continue;
      out.blobs.removed++;
      out.blobs.bytes += b.size;
    }
  }
  for (const t of await d.blobs.temporaries()) {
    if (t.mtimeMs > cutoffMs) continue;
    await d.blobs.removeTemporary(t.name);
    out.temporaries.removed++;
    out.temporaries.bytes += t.size;
  }
  return out;
}

/** The sweep every `intervalMs` until `signal` aborts (a singleton job of the gateway role, cli/roles.ts). */
export async function runSyncSweep(d: SyncSweepDeps, intervalMs: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const r = await sweepSyncStore(d, signal);
      metrics.syncSweeps.inc({ outcome: 'ok' });
      metrics.syncReservationsExpired.inc(r.reservations.released);
      metrics.syncOrphansRemoved.inc({ kind: 'blob' }, r.blobs.removed);
      metrics.syncOrphanBytesRemoved.inc({ kind: 'blob' }, r.blobs.bytes);
      metrics.syncOrphansRemoved.inc({ kind: 'temporary' }, r.temporaries.removed);
      metrics.syncOrphanBytesRemoved.inc({ kind: 'temporary' }, r.temporaries.bytes);
      const found = r.reservations.released + r.blobs.removed + r.temporaries.removed > 0;
      d.log[found ? 'info' : 'debug'](r, 'device sync sweep');
    } catch (err) {
      metrics.syncSweeps.inc({ outcome: 'failed' });
      d.log.error({ err }, 'device sync sweep failed; the next pass tries again');
    }
    await sleep(intervalMs, undefined, { signal }).catch(() => {});
  }
}
