// Device sync's rules (docs/sync.md) behind the gateway's sync face: quota (reserved when an upload begins) and
// ownership of blobs, the manifest
// answer, revisions, and the snapshot commit (Idempotency-Key, every blob held, the injection scan, one revision per
// change). Always one principal's data: another owner's blobs and folders are never consulted for an answer.
import type { Logger } from 'pino';
import type {
  SyncChanges,
  SyncEntryT,
  SyncFinding,
  SyncPort,
  SyncRevision,
  SyncSnapshotBodyT,
} from '../../contracts/index.ts';
import { syncFindingTypes, syncScanBytesMax } from '../../contracts/index.ts';
import { metrics } from '../runtime/telemetry.ts';
import {
  type BlobDir,
  type Sql,
  type SyncAddResult,
  syncCollectOrphans,
  syncForget,
  syncAddOwnedBlobs,
  syncBlobHeld,
  syncBlobHeldAndUsage,
  syncCommitKey,
  syncCommitSnapshot,
  syncKnownScans,
  syncLocatorExists,
  syncRelease,
  syncReserve,
  syncMissingDigests,
  type SyncRevisionRow,
  syncRevisionsOf,
  syncStoreScans,
  syncTouchReservation,
  syncUsage,
} from '../../storage/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import { scanContent, scanPaths } from './scan.ts';

export interface SyncDeps {
  sql: Sql;
  blobs: BlobDir;
  clock: Clock;
  ids: IdSource;
  quotaBytes: number;
  /** How long a reservation outlives its upload's last touch (ASSAY_SYNC_RESERVATION_TTL_SECONDS). */
  reservationTtlMs: number;
  log: Logger;
}

/** Scans of blobs not scanned before, this many at once (each reads up to syncScanBytesMax from disk). */
const scanConcurrency = 8;
/** Blob records of one owner committed in one transaction at most (the group commit of blobRecord). */
const recordBatchMax = 256;

export function syncService(d: SyncDeps): SyncPort {
  const { sql } = d;

  async function readHead(digest: string, size: number): Promise<Uint8Array> {
    const end = Math.min(size, syncScanBytesMax) - 1;
    if (end < 0) return new Uint8Array(0);
    const chunks: Buffer[] = [];
    for await (const c of d.blobs.read(digest, 0, end)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  /** Content findings of every file, from the scan cache or a scan of the blob (whose result is cached). */
  async function contentFindings(files: SyncEntryT[]): Promise<SyncFinding[]> {
    const regular = files.filter((f): f is Extract<SyncEntryT, { digest: string }> => f.type !== 'symlink');
    const digests = [...new Set(regular.map((f) => f.digest))];
    const known = await syncKnownScans(sql, digests);
    const unscanned = digests.filter((x) => !known.has(x));
    const sizes = new Map(regular.map((f) => [f.digest, f.size]));
    const fresh: { digest: string; findings: Omit<SyncFinding, 'path'>[] | null }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(scanConcurrency, unscanned.length) }, async () => {
        while (next < unscanned.length) {
          const digest = unscanned[next++]!;
          fresh.push({ digest, findings: scanContent(await readHead(digest, sizes.get(digest)!)) });
        }
      }),
    );
    await syncStoreScans(sql, fresh);
    for (const f of fresh) known.set(f.digest, { findings: f.findings });
    const out: SyncFinding[] = [];
    for (const f of regular) {
      for (const finding of known.get(f.digest)?.findings ?? []) out.push({ ...finding, path: f.path });
    }
    return out;
  }

  // Group commit of blob records (docs/sync.md, Measured): every record of an owner locks its usage row until the
  // commit, so one owner's uploads would queue on that lock one transaction (and one WAL flush) each. Records that
  // arrive while the owner's previous batch commits wait for it and then go together: one transaction, one fsync of
  // each blob directory the batch's renames touched. A lone upload is recorded at once.
  const recording = new Map<
    string,
    {
      digest: string;
      size: number;
      reservation: string;
      done: (r: SyncAddResult) => void;
      failed: (e: unknown) => void;
    }[]
  >();
  async function drainRecords(principalId: string): Promise<void> {
    const queue = recording.get(principalId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, recordBatchMax);
      try {
        await d.blobs.syncDirsOf(batch.map((b) => b.digest));
        const results = await syncAddOwnedBlobs(sql, {
          principalId,
          blobs: batch,
          quotaBytes: d.quotaBytes,
          at: d.clock.nowIso(),
          missingFiles: (digests) => d.blobs.missing(digests),
        });
        // A refused blob was renamed into the store before the refusal: delete its file now rather than at the
        // next sweep, unless another owner holds the same bytes or is uploading them.
        const refused = batch.filter((_, i) => results[i] !== 'added' && results[i] !== 'held');
        if (refused.length > 0) {
          await syncCollectOrphans(sql, {
            blobs: refused,
            at: d.clock.nowIso(),
            deleteFiles: (digests) => d.blobs.remove(digests),
          }).then(
            (removed) => {
              const sizes = new Map(refused.map((b) => [b.digest, b.size]));
              metrics.syncOrphansRemoved.inc({ kind: 'refused' }, removed.length);
              metrics.syncOrphanBytesRemoved.inc(
                { kind: 'refused' },
                removed.reduce((n, x) => n + sizes.get(x)!, 0),
              );
            },
            (err) => d.log.warn({ err }, 'deleting refused sync blobs failed; the sweep deletes them later'),
          );
        }
        for (const [i, b] of batch.entries()) b.done(results[i]!);
      } catch (err) {
        for (const b of batch) b.failed(err);
      }
    }
    recording.delete(principalId);
  }
  function record(principalId: string, digest: string, size: number, reservation: string): Promise<SyncAddResult> {
    return new Promise((done, failed) => {
      const queue = recording.get(principalId);
      if (queue) {
        queue.push({ digest, size, reservation, done, failed });
        return;
      }
      recording.set(principalId, [{ digest, size, reservation, done, failed }]);
      void drainRecords(principalId);
    });
  }

  /** Touch a reservation at most this often while its upload's bytes arrive. */
  const touchEveryMs = Math.floor(d.reservationTtlMs / 4);

  return {
    async blobBegin(principalId, digest, size) {
      const { held, bytes } = await syncBlobHeldAndUsage(sql, principalId, digest);
      if (held !== null) return { ok: { held: true } };
      // Refused without a write when the holdings alone leave no room.
      if (bytes + size > d.quotaBytes) return overQuota(bytes, d.quotaBytes, size, 0);
      const r = await syncReserve(sql, {
        id: d.ids.uuid(),
        principalId,
        digest,
        size,
        quotaBytes: d.quotaBytes,
        at: d.clock.nowIso(),
      });
      if ('overQuota' in r) return overQuota(r.overQuota.bytes, d.quotaBytes, size, r.overQuota.reservedBytes);
      return { ok: { held: false, reservation: r.reservation } };
    },

    async blobUpload(reservation) {
      const file = await d.blobs.upload().catch(async (err: unknown) => {
        await syncRelease(sql, reservation);
        throw err;
      });
      let touchedMs = d.clock.nowMs();
      return {
        async write(chunk) {
          await file.write(chunk);
          if (d.clock.nowMs() - touchedMs >= touchEveryMs) {
            touchedMs = d.clock.nowMs();
            await syncTouchReservation(sql, reservation, d.clock.nowIso());
          }
        },
        finish: () => file.finish(),
        keep: (digest) => file.keep(digest),
        async discard() {
          await file.discard();
          await syncRelease(sql, reservation);
        },
      };
    },

    async blobRecord(principalId, digest, size, reservation) {
      const r = await record(principalId, digest, size, reservation);
      if (r === 'gone') {
        return {
          refused: 'unavailable' as const,
          message: 'the blob was removed (a forget freed it) while it was being stored; upload it again',
        };
      }
      if (typeof r === 'object') return overQuota(r.overQuota.bytes, d.quotaBytes, size, 0);
      return { ok: { size } };
    },

    async blobRead(principalId, digest) {
      const size = await syncBlobHeld(sql, principalId, digest);
      if (size === null || !(await d.blobs.has(digest))) return null;
      return { size, stream: d.blobs.read(digest) };
    },

    async manifest(principalId, digests) {
      return { missing: await syncMissingDigests(sql, principalId, [...new Set(digests)]) };
    },

    async revisions(principalId, locator, o) {
      if (!(await syncLocatorExists(sql, principalId, locator))) {
        return { refused: 'not_found', message: `you have no synced folder with the locator ${locator}` };
      }
      const byNumber = o.revision !== null && /^\d{1,9}$/.test(o.revision) ? Number(o.revision) : null;
      const byId = o.revision !== null && byNumber === null ? o.revision : null;
      if (byId !== null && !/^[0-9a-f-]{36}$/.test(byId)) {
        return { refused: 'invalid_request', message: 'revision is a revision number or id' };
      }
      const rows = await syncRevisionsOf(sql, principalId, locator, {
        limit: o.limit,
        number: byNumber,
        id: byId,
        files: o.files,
      });
      if (o.revision !== null && rows.length === 0) {
        return { refused: 'not_found', message: `the folder ${locator} has no revision ${o.revision}` };
      }
      const usage = await syncUsage(sql, principalId);
      return {
        ok: { revisions: rows.map((r) => revisionView(r, o.files)), usage: { ...usage, quota_bytes: d.quotaBytes } },
      };
    },

    async commit(principalId, locator, key, requestHash, body) {
      const stored = await syncCommitKey(sql, principalId, key);
      if (stored) return replay(stored, requestHash);
      const files = sortedFiles(body);
      const dup = duplicatePath(files);
      if (dup !== null) return { refused: 'invalid_request', message: `the path ${dup} appears more than once` };
      const unsafe = scanPaths(files);
      if (unsafe.length > 0) {
        return {
          refused: 'unsafe_paths',
          message: `the snapshot has ${unsafe.length} unsafe path(s); nothing was committed`,
          extra: { findings: unsafe },
        };
      }
      const digests = files.flatMap((f) => (f.type === 'symlink' ? [] : [f.digest]));
      const missing = await syncMissingDigests(sql, principalId, [...new Set(digests)]);
      if (missing.length > 0) {
        return {
          refused: 'missing_blobs',
          message: `${missing.length} blob(s) of the snapshot are not uploaded; upload them and commit again`,
          extra: { missing },
        };
      }
      const findings = await contentFindings(files);
      for (const f of findings)
        if (syncFindingTypes[f.type] !== 'flag') throw new Error('a refusing finding in content');
      const totalBytes = files.reduce((n, f) => n + (f.type === 'symlink' ? 0 : f.size), 0);
      const canonical = files.map(entryKey);
      const answer = await syncCommitSnapshot(sql, {
        principalId,
        locator,
        key,
        requestHash,
        id: d.ids.uuid(),
        at: d.clock.nowIso(),
        files,
        totalBytes,
        findings,
        same: (latest) => latest.length === canonical.length && latest.every((f, i) => entryKey(f) === canonical[i]),
        build(latest, created) {
          const revision = created ?? latest!;
          return {
            status: created ? 201 : 200,
            body: {
              revision: revisionView(revision, false),
              created: created !== null,
              changes: changesBetween(created ? (latest?.files ?? []) : files, files),
            },
          };
        },
      });
      if (answer !== null && 'missing' in answer) {
        // A forget removed holdings between the check above and the commit.
        return {
          refused: 'missing_blobs',
          message: `${answer.missing.length} blob(s) of the snapshot are not uploaded; upload them and commit again`,
          extra: { missing: answer.missing },
        };
      }
      if (answer === null) {
        // A concurrent commit with this key won: answer as it did.
        const won = await syncCommitKey(sql, principalId, key);
        if (!won) throw new Error('a commit key conflicted but is not stored');
        return replay(won, requestHash);
      }
      return { ok: { status: answer.status as 200 | 201, replayed: false, body: answer.body } };
    },

    async forget(principalId, locator, keep) {
      const r = await syncForget(sql, {
        principalId,
        locator,
        keep,
        deleteFiles: (digests) => d.blobs.remove(digests),
      });
      if (r === null) {
        return { refused: 'not_found', message: `you have no synced folder with the locator ${locator}` };
      }
      const usage = await syncUsage(sql, principalId);
      const kept = await syncRevisionsOf(sql, principalId, locator, {
        limit: keep,
        number: null,
        id: null,
        files: false,
      });
      return {
        ok: {
          forgotten: r.forgotten,
          kept: kept.length,
          freed: r.freed,
          usage: { ...usage, quota_bytes: d.quotaBytes },
        },
      };
    },
  };
}

function overQuota(used: number, quota: number, size: number, reserved: number) {
  const under = reserved > 0 ? ` and ${reserved} are reserved by your uploads under way` : '';
  return {
    refused: 'quota_exceeded' as const,
    message: `this blob (${size} bytes) does not fit: ${used} of your ${quota} bytes of sync storage are used${under}`,
    extra: { quota_bytes: quota, used_bytes: used, reserved_bytes: reserved },
  };
}

function replay(stored: { request_hash: string; status: number; response: unknown }, requestHash: string) {
  if (stored.request_hash !== requestHash) {
    return {
      refused: 'idempotency_conflict' as const,
      message: 'this Idempotency-Key was used with another snapshot; use a new key',
    };
  }
  return { ok: { status: stored.status as 200 | 201, replayed: true, body: stored.response } };
}

function sortedFiles(body: SyncSnapshotBodyT): SyncEntryT[] {
  return body.files
    .map(
      (f): SyncEntryT =>
        f.type === 'symlink'
          ? { path: f.path, type: 'symlink', target: f.target, ...(f.mode === undefined ? {} : { mode: f.mode }) }
          : { path: f.path, mode: f.mode, size: f.size, digest: f.digest },
    )
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function duplicatePath(sorted: SyncEntryT[]): string | null {
  for (let i = 1; i < sorted.length; i++) if (sorted[i]!.path === sorted[i - 1]!.path) return sorted[i]!.path;
  return null;
}

/** One entry as a comparable string (jsonb does not keep key order, so entries are compared field by field). */
function entryKey(f: SyncEntryT): string {
  return f.type === 'symlink'
    ? `${f.path}\0l\0${f.target}\0${f.mode ?? ''}`
    : `${f.path}\0f\0${f.digest}\0${f.size}\0${f.mode}`;
}

export function changesBetween(before: SyncEntryT[], after: SyncEntryT[]): SyncChanges {
  const old = new Map(before.map((f) => [f.path, entryKey(f)]));
  const now = new Map(after.map((f) => [f.path, entryKey(f)]));
  const added: string[] = [];
  const modified: string[] = [];
  for (const [path, k] of now) {
    const was = old.get(path);
    if (was === undefined) added.push(path);
    else if (was !== k) modified.push(path);
  }
  const removed = [...old.keys()].filter((p) => !now.has(p));
  return { added, modified, removed };
}

function revisionView(r: SyncRevisionRow, files: boolean): SyncRevision {
  return {
    id: r.id,
    number: r.number,
    locator: r.locator,
    created_at: r.created_at.toISOString(),
    file_count: r.file_count,
    total_bytes: r.total_bytes,
    flagged: r.findings.length > 0,
    findings: r.findings,
    ...(files ? { files: r.files ?? [] } : {}),
  };
}
