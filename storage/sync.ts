// Device sync's storage (docs/sync.md): the blob directory (content-addressed files under ASSAY_SYNC_DIR, written
// to a temporary file, fsynced and renamed into place, so a blob that exists is whole) and the tables of migration
// 026 (owners, usage, locators, revisions, commit keys).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, fdatasync, type WriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { SyncBlobUpload, SyncEntryT, SyncFinding } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';

/** Bytes of an upload written between two fdatasync calls. */
const syncEveryBytes = 32 * 1024 * 1024;

export class BlobDir {
  constructor(readonly dir: string) {}

  async init(): Promise<void> {
    await mkdir(join(this.dir, 'tmp'), { recursive: true });
  }

  /** Where a blob lives: two levels of fan-out by its hex digest, so no directory grows past 65,536 entries. */
  pathOf(digest: string): string {
    const hex = digest.slice('sha256:'.length);
    return join(this.dir, hex.slice(0, 2), hex.slice(2, 4), hex);
  }

  async has(digest: string): Promise<boolean> {
    return stat(this.pathOf(digest)).then(
      () => true,
      () => false,
    );
  }

  /**
   * Make the renames of these blobs durable: fsync each distinct parent directory once (a rename is in the
   * directory, not in the file). Called once per batch of records, before the batch's transaction commits.
   */
  async syncDirsOf(digests: string[]): Promise<void> {
    const dirs = [...new Set(digests.map((d) => join(this.pathOf(d), '..')))];
    await Promise.all(
      dirs.map(async (dir) => {
        const fh = await open(dir, 'r');
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      }),
    );
  }

  /** The digests among these whose files are not in the store. */
  async missing(digests: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    await Promise.all(
      digests.map(async (d) => {
        if (!(await this.has(d))) out.add(d);
      }),
    );
    return out;
  }

  /** Delete blobs' files (no owner holds them any more). */
  async remove(digests: string[]): Promise<void> {
    await Promise.all(digests.map((d) => rm(this.pathOf(d), { force: true })));
  }

  /** A blob file's size and last write, or null when it is not there. */
  async fileOf(digest: string): Promise<{ size: number; mtimeMs: number } | null> {
    return stat(this.pathOf(digest)).then(
      (s) => ({ size: s.size, mtimeMs: s.mtimeMs }),
      () => null,
    );
  }

  /**
   * The digests of the blob files in the store, one fan-out directory at a time (at most 256 x 256 of them, each
   * listed whole), so a sweep of millions of blobs holds one directory's names at once. Names that are not a
   * digest are not blobs and are left alone.
   */
  async *digestsByDirectory(): AsyncGenerator<string[]> {
    const hex2 = /^[0-9a-f]{2}$/;
    const names = async (dir: string) => readdir(dir).catch(() => [] as string[]);
    for (const a of (await names(this.dir)).filter((n) => hex2.test(n)).sort()) {
      for (const b of (await names(join(this.dir, a))).filter((n) => hex2.test(n)).sort()) {
        const digests = (await names(join(this.dir, a, b)))
          .filter((n) => /^[0-9a-f]{64}$/.test(n) && n.startsWith(a + b))
          .map((n) => `sha256:${n}`);
        if (digests.length > 0) yield digests;
      }
    }
  }

  /** Temporary upload files with their last write (an upload under way writes its own at least every body read). */
  async temporaries(): Promise<{ name: string; size: number; mtimeMs: number }[]> {
    const dir = join(this.dir, 'tmp');
    const names = await readdir(dir).catch(() => [] as string[]);
    const out = await Promise.all(
      names.map((name) =>
        stat(join(dir, name)).then(
          (s) => (s.isFile() ? { name, size: s.size, mtimeMs: s.mtimeMs } : null),
          () => null,
        ),
      ),
    );
    return out.filter((t) => t !== null);
  }

  async removeTemporary(name: string): Promise<void> {
    await rm(join(this.dir, 'tmp', name), { force: true });
  }

  read(digest: string, start = 0, end?: number): Readable {
    return createReadStream(this.pathOf(digest), { start, end, highWaterMark: 256 * 1024 });
  }

  async upload(): Promise<SyncBlobUpload> {
    const tmp = join(this.dir, 'tmp', `${Date.now()}-${randomBytes(8).toString('hex')}`);
    const out: WriteStream = createWriteStream(tmp, { highWaterMark: 1 << 20 });
    const failed = once(out, 'error').then(([err]) => err as Error);
    const hash = createHash('sha256');
    let unsynced = 0;
    let ended = false;
    const end = async () => {
      if (ended) return;
      ended = true;
      out.end();
      await Promise.race([once(out, 'finish'), failed.then((e) => Promise.reject(e))]);
    };
    return {
      async write(chunk) {
        hash.update(chunk);
        if (!out.write(chunk)) await Promise.race([once(out, 'drain'), failed.then((e) => Promise.reject(e))]);
        // Sync as the blob arrives, so the fsync before the answer is short: a large blob's whole fsync at the end
        // can outlast the connection's idle timeout while the client waits.
        unsynced += chunk.byteLength;
        if (unsynced >= syncEveryBytes && typeof (out as unknown as { fd: unknown }).fd === 'number') {
          unsynced = 0;
          await new Promise<void>((resolve, reject) =>
            fdatasync((out as unknown as { fd: number }).fd, (e) => (e ? reject(e) : resolve())),
          );
        }
      },
      async finish() {
        await end();
        return `sha256:${hash.digest('hex')}`;
      },
      keep: async (digest) => {
        await end();
        const fh = await open(tmp, 'r');
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
        const final = this.pathOf(digest);
        await mkdir(join(final, '..'), { recursive: true });
        // Another upload of the same bytes may have landed first: the rename replaces it with identical bytes.
        await rename(tmp, final);
      },
      async discard() {
        if (!ended) {
          ended = true;
          out.destroy();
        }
        await rm(tmp, { force: true });
      },
    };
  }
}

export interface SyncRevisionRow {
  id: string;
  number: number;
  locator: string;
  created_at: Date;
  file_count: number;
  total_bytes: number;
  files: SyncEntryT[] | null;
  findings: SyncFinding[];
}

export async function syncBlobHeld(sql: Sql, principalId: string, digest: string): Promise<number | null> {
  const [row] = await sql<{ size_bytes: number }[]>`
    SELECT size_bytes FROM sync_blob_owners WHERE principal_id = ${principalId} AND digest = ${digest}`;
  return row ? row.size_bytes : null;
}

/** Before an upload, in one round trip: the size of the blob if the owner holds it, and the owner's usage. */
export async function syncBlobHeldAndUsage(
  sql: Sql,
  principalId: string,
  digest: string,
): Promise<{ held: number | null; bytes: number }> {
  const [row] = await sql<{ held: number | null; bytes: number | null }[]>`
    SELECT (SELECT size_bytes FROM sync_blob_owners WHERE principal_id = ${principalId} AND digest = ${digest}) AS held,
           (SELECT bytes FROM sync_usage WHERE principal_id = ${principalId}) AS bytes`;
  return { held: row?.held ?? null, bytes: row?.bytes ?? 0 };
}

export async function syncUsage(sql: Sql, principalId: string): Promise<{ bytes: number; blobs: number }> {
  const [row] = await sql<{ bytes: number; blobs: number }[]>`
    SELECT bytes, blobs FROM sync_usage WHERE principal_id = ${principalId}`;
  return row ?? { bytes: 0, blobs: 0 };
}

/**
 * Reserve `size` bytes of the owner's quota for an upload, in one statement: the usage row is updated only when its
 * holdings, the reservations of its uploads under way and `size` fit the quota (a conditional update re-checks the
 * row it waited for, so two concurrent reservations cannot both pass). The reservation's id, or the usage that
 * refused it.
 */
export async function syncReserve(
  sql: Sql,
  o: { id: string; principalId: string; digest: string; size: number; quotaBytes: number; at: string },
): Promise<{ reservation: string } | { overQuota: { bytes: number; reservedBytes: number } }> {
  const [row] = await sql<{ id: string }[]>`
    WITH usage AS (
      INSERT INTO sync_usage AS u (principal_id, reserved_bytes)
      SELECT ${o.principalId}, ${o.size} WHERE ${o.size}::bigint <= ${o.quotaBytes}::bigint
      ON CONFLICT (principal_id) DO UPDATE SET reserved_bytes = u.reserved_bytes + EXCLUDED.reserved_bytes
      WHERE u.bytes + u.reserved_bytes + EXCLUDED.reserved_bytes <= ${o.quotaBytes}::bigint
      RETURNING u.principal_id)
    INSERT INTO sync_reservations (id, principal_id, digest, size_bytes, created_at, touched_at)
    SELECT ${o.id}, principal_id, ${o.digest}, ${o.size}, ${o.at}, ${o.at} FROM usage
    RETURNING id`;
  if (row) return { reservation: row.id };
  const [usage] = await sql<{ bytes: number; reserved_bytes: number }[]>`
    SELECT bytes, reserved_bytes FROM sync_usage WHERE principal_id = ${o.principalId}`;
  return { overQuota: { bytes: usage?.bytes ?? 0, reservedBytes: usage?.reserved_bytes ?? 0 } };
}

/** An upload under way is alive: its reservation is not released by the sweep for another TTL. */
export async function syncTouchReservation(sql: Sql, id: string, at: string): Promise<void> {
  await sql`UPDATE sync_reservations SET touched_at = ${at} WHERE id = ${id}`;
}

/**
 * Give a reservation's bytes back (an upload that failed or was dropped). Releasing it twice does nothing. A usage
 * row left all zero is deleted, so an upload that stored nothing leaves no trace (the row comes back with the next
 * reservation or holding).
 */
export async function syncRelease(sql: Sql, id: string): Promise<void> {
  await sql`
    WITH gone AS (DELETE FROM sync_reservations WHERE id = ${id} RETURNING principal_id, size_bytes),
    emptied AS (
      DELETE FROM sync_usage u USING gone
      WHERE u.principal_id = gone.principal_id AND u.bytes = 0 AND u.blobs = 0 AND u.reserved_bytes = gone.size_bytes
      RETURNING u.principal_id)
    UPDATE sync_usage u SET reserved_bytes = u.reserved_bytes - gone.size_bytes
    FROM gone WHERE u.principal_id = gone.principal_id AND NOT EXISTS (SELECT 1 FROM emptied)`;
}

/**
 * Release the reservations no upload touched since `before` (their gateway died mid-upload), in one statement: the
 * reservation rows first, then the usage rows, the order every writer of both takes. How many, and their bytes.
 */
export async function syncReleaseStale(sql: Sql, before: string): Promise<{ reservations: number; bytes: number }> {
  return sql.begin(async (tx) => {
    const rows = await tx<{ principal_id: string; n: number; b: number }[]>`
      WITH gone AS (DELETE FROM sync_reservations WHERE touched_at < ${before} RETURNING principal_id, size_bytes),
      per AS (SELECT principal_id, count(*)::int AS n, sum(size_bytes)::bigint AS b FROM gone GROUP BY principal_id)
      UPDATE sync_usage u SET reserved_bytes = u.reserved_bytes - per.b
      FROM per WHERE u.principal_id = per.principal_id
      RETURNING u.principal_id, per.n, per.b`;
    if (rows.length > 0) {
      await tx`DELETE FROM sync_usage
               WHERE principal_id = ANY(${rows.map((r) => r.principal_id)}::uuid[])
                 AND bytes = 0 AND blobs = 0 AND reserved_bytes = 0`;
    }
    return { reservations: rows.reduce((n, r) => n + r.n, 0), bytes: rows.reduce((n, r) => n + Number(r.b), 0) };
  });
}

/** The digests among these that no owner holds and no upload under way has reserved. */
export async function syncUnreferenced(sql: Sql, digests: string[]): Promise<string[]> {
  if (digests.length === 0) return [];
  const rows = await sql<{ digest: string }[]>`
    SELECT d.digest FROM unnest(${digests}::text[]) AS d(digest)
    WHERE NOT EXISTS (SELECT 1 FROM sync_blob_owners o WHERE o.digest = d.digest)
      AND NOT EXISTS (SELECT 1 FROM sync_reservations r WHERE r.digest = d.digest)`;
  return rows.map((r) => r.digest);
}

/**
 * Delete the blobs among these that no owner holds and no upload has reserved: their rows, and their files before
 * the transaction commits (`deleteFiles`). Each digest gets a row first (inserted if it has none, so an orphan left
 * by a crash has one too) and the row is deleted in the same transaction: an upload of the same bytes that records
 * meanwhile waits for this transaction through that row, then finds its file gone and answers "upload again"
 * (see syncAddOwnedBlobs), as it does after a forget. The digests deleted.
 */
export async function syncCollectOrphans(
  sql: Sql,
  o: { blobs: { digest: string; size: number }[]; at: string; deleteFiles: (digests: string[]) => Promise<void> },
): Promise<string[]> {
  if (o.blobs.length === 0) return [];
  const sorted = [...new Map(o.blobs.map((b) => [b.digest, b.size]))].sort((x, y) => (x[0] < y[0] ? -1 : 1));
  return sql.begin(async (tx) => {
    await tx`INSERT INTO sync_blobs (digest, size_bytes, created_at)
             SELECT d, s, ${o.at}::timestamptz
             FROM unnest(${sorted.map((b) => b[0])}::text[], ${sorted.map((b) => b[1])}::bigint[]) AS x(d, s)
             ORDER BY d
             ON CONFLICT (digest) DO NOTHING`;
    const gone = await tx<{ digest: string }[]>`
      DELETE FROM sync_blobs s
      WHERE s.digest = ANY(${sorted.map((b) => b[0])}::text[])
        AND NOT EXISTS (SELECT 1 FROM sync_blob_owners o WHERE o.digest = s.digest)
        AND NOT EXISTS (SELECT 1 FROM sync_reservations r WHERE r.digest = s.digest)
      RETURNING digest`;
    const digests = gone.map((g) => g.digest);
    await o.deleteFiles(digests);
    return digests;
  });
}

/** `gone`: the blob's file was deleted (a forget removed its last holder) while it was being stored; upload again. */
export type SyncAddResult = 'added' | 'held' | 'gone' | { overQuota: { bytes: number } };

/**
 * Add blobs to an owner's holdings, in place of their uploads' reservations, within its quota, in one transaction
 * (the usage row is locked, so concurrent uploads of one owner cannot both slip under the quota): the answers in the
 * order of `blobs`, decided in that order; a digest twice is held the second time. Each blob's reservation is
 * released whatever its answer. A blob whose reservation was still there always fits (its bytes were set aside); one
 * whose reservation the sweep released fits only if the quota has room. One transaction for a batch is the sync
 * service's group commit (actors/sync/service.ts).
 */
export async function syncAddOwnedBlobs(
  sql: Sql,
  o: {
    principalId: string;
    blobs: { digest: string; size: number; reservation: string }[];
    quotaBytes: number;
    at: string;
    /**
     * The digests among these whose files are missing, asked once this transaction's rows of sync_blobs are
     * written (so a forget that deleted one of them has committed): its file was deleted after the rename.
     */
    missingFiles: (digests: string[]) => Promise<Set<string>>;
  },
): Promise<SyncAddResult[]> {
  if (o.blobs.length === 0) return [];
  return sql.begin(async (tx) => {
    const fresh = [...new Map(o.blobs.map((b) => [b.digest, b.size]))];
    await tx`INSERT INTO sync_blobs (digest, size_bytes, created_at)
             SELECT d, s, ${o.at}::timestamptz FROM unnest(${fresh.map((b) => b[0])}::text[], ${fresh.map((b) => b[1])}::bigint[]) AS x(d, s)
             ORDER BY d
             ON CONFLICT (digest) DO NOTHING`;
    const lost = await o.missingFiles(fresh.map((b) => b[0]));
    // The reservations go before the usage row is locked: every writer of both takes them in this order.
    const released = await tx<{ size_bytes: number }[]>`
      DELETE FROM sync_reservations WHERE id = ANY(${o.blobs.map((b) => b.reservation)}::uuid[]) RETURNING size_bytes`;
    const releasedBytes = released.reduce((n, r) => n + Number(r.size_bytes), 0);
    // The usage row, made if missing and locked in one statement (a release may delete a row left all zero).
    const [usage] = await tx<{ bytes: number; reserved_bytes: number }[]>`
      INSERT INTO sync_usage AS u (principal_id) VALUES (${o.principalId})
      ON CONFLICT (principal_id) DO UPDATE SET bytes = u.bytes
      RETURNING u.bytes, u.reserved_bytes`;
    // What the owner's other uploads under way have set aside stays set aside.
    const othersReserved = usage!.reserved_bytes - releasedBytes;
    const heldRows = await tx<{ digest: string }[]>`
      SELECT digest FROM sync_blob_owners
      WHERE principal_id = ${o.principalId} AND digest = ANY(${fresh.map((b) => b[0])}::text[])`;
    const held = new Set(heldRows.map((r) => r.digest));
    let bytes = usage!.bytes;
    const added: { digest: string; size: number }[] = [];
    const results = o.blobs.map((b): SyncAddResult => {
      if (held.has(b.digest)) return 'held';
      if (lost.has(b.digest)) return 'gone';
      if (bytes + othersReserved + b.size > o.quotaBytes) return { overQuota: { bytes } };
      held.add(b.digest);
      bytes += b.size;
      added.push(b);
      return 'added';
    });
    if (added.length > 0) {
      await tx`INSERT INTO sync_blob_owners (principal_id, digest, size_bytes, created_at)
               SELECT ${o.principalId}, d, s, ${o.at}::timestamptz
               FROM unnest(${added.map((b) => b.digest)}::text[], ${added.map((b) => b.size)}::bigint[]) AS x(d, s)`;
    }
    await tx`UPDATE sync_usage
             SET bytes = bytes + ${bytes - usage!.bytes}, blobs = blobs + ${added.length},
                 reserved_bytes = reserved_bytes - ${releasedBytes}
             WHERE principal_id = ${o.principalId}`;
    return results;
  });
}

/** The digests among `digests` the owner does not hold (only the owner's holdings are consulted). */
export async function syncMissingDigests(sql: Sql, principalId: string, digests: string[]): Promise<string[]> {
  if (digests.length === 0) return [];
  const rows = await sql<{ digest: string }[]>`
    SELECT d.digest FROM unnest(${digests}::text[]) AS d(digest)
    WHERE NOT EXISTS (SELECT 1 FROM sync_blob_owners o WHERE o.principal_id = ${principalId} AND o.digest = d.digest)`;
  return rows.map((r) => r.digest);
}

/** Scan results already known for these digests (text content scanned once, binary marked with null). */
export async function syncKnownScans(
  sql: Sql,
  digests: string[],
): Promise<Map<string, { findings: Omit<SyncFinding, 'path'>[] | null }>> {
  if (digests.length === 0) return new Map();
  const rows = await sql<{ digest: string; scan: Omit<SyncFinding, 'path'>[] | null }[]>`
    SELECT digest, scan FROM sync_blobs WHERE digest = ANY(${digests}::text[]) AND scanned`;
  return new Map(rows.map((r) => [r.digest, { findings: r.scan }]));
}

export async function syncStoreScans(
  sql: Sql,
  scans: { digest: string; findings: Omit<SyncFinding, 'path'>[] | null }[],
): Promise<void> {
  if (scans.length === 0) return;
  const rows = scans.map((s) => ({ digest: s.digest, scan: s.findings }));
  await sql`UPDATE sync_blobs b SET scan = r.scan, scanned = true
            FROM jsonb_to_recordset(${sql.json(rows as never)}::jsonb) AS r(digest text, scan jsonb)
            WHERE b.digest = r.digest`;
}

export async function syncLocatorExists(sql: Sql, principalId: string, locator: string): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM sync_locators WHERE principal_id = ${principalId} AND locator = ${locator}`;
  return rows.length > 0;
}

export async function syncRevisionsOf(
  sql: Sql,
  principalId: string,
  locator: string,
  o: { limit: number; number: number | null; id: string | null; files: boolean },
): Promise<SyncRevisionRow[]> {
  const files = o.files ? sql`files` : sql`NULL::jsonb AS files`;
  return sql<SyncRevisionRow[]>`
    SELECT id, number, locator, created_at, file_count, total_bytes, ${files}, findings
    FROM sync_revisions
    WHERE principal_id = ${principalId} AND locator = ${locator}
      ${o.number === null ? sql`` : sql`AND number = ${o.number}`}
      ${o.id === null ? sql`` : sql`AND id = ${o.id}`}
    ORDER BY number DESC LIMIT ${o.limit}`;
}

export interface StoredCommit {
  request_hash: string;
  status: number;
  response: unknown;
}

export async function syncCommitKey(sql: Sql, principalId: string, key: string): Promise<StoredCommit | null> {
  const [row] = await sql<StoredCommit[]>`
    SELECT request_hash, status, response FROM sync_commit_keys
    WHERE principal_id = ${principalId} AND idempotency_key = ${key}`;
  return row ?? null;
}

/**
 * Commit a snapshot: lock the locator, compare with its latest revision, and (when the files changed) add the next
 * revision; the answer `build` makes of it is stored under the Idempotency-Key in the same transaction. Null when the
 * key was taken meanwhile by a concurrent commit (the caller reads and replays it).
 */
export async function syncCommitSnapshot(
  sql: Sql,
  o: {
    principalId: string;
    locator: string;
    key: string;
    requestHash: string;
    id: string;
    at: string;
    files: SyncEntryT[];
    totalBytes: number;
    findings: SyncFinding[];
    /** Whether the latest revision's files are these (then no revision is added). */
    same(latestFiles: SyncEntryT[]): boolean;
    build(latest: SyncRevisionRow | null, created: SyncRevisionRow | null): { status: number; body: unknown };
  },
): Promise<{ status: number; body: unknown } | { missing: string[] } | null> {
  try {
    return await sql.begin(async (tx) => {
      // Every blob still held, under a share lock of the owner's usage row: a forget (which locks it for update)
      // cannot remove a holding between this check and the commit (docs/sync.md, Retention).
      await tx`SELECT 1 FROM sync_usage WHERE principal_id = ${o.principalId} FOR SHARE`;
      const digests = [...new Set(o.files.flatMap((f) => (f.type === 'symlink' ? [] : [f.digest])))];
      const missing = await tx<{ digest: string }[]>`
        SELECT d.digest FROM unnest(${digests}::text[]) AS d(digest)
        WHERE NOT EXISTS (SELECT 1 FROM sync_blob_owners b WHERE b.principal_id = ${o.principalId} AND b.digest = d.digest)`;
      if (missing.length > 0) return { missing: missing.map((m) => m.digest) };
      await tx`INSERT INTO sync_locators (principal_id, locator, created_at) VALUES (${o.principalId}, ${o.locator}, ${o.at})
               ON CONFLICT DO NOTHING`;
      const [loc] = await tx<{ last_number: number }[]>`
        SELECT last_number FROM sync_locators WHERE principal_id = ${o.principalId} AND locator = ${o.locator} FOR UPDATE`;
      const [latest] = await tx<SyncRevisionRow[]>`
        SELECT id, number, locator, created_at, file_count, total_bytes, files, findings FROM sync_revisions
        WHERE principal_id = ${o.principalId} AND locator = ${o.locator} AND number = ${loc!.last_number}`;
      const unchanged = latest !== undefined && o.same(latest.files ?? []);
      let created: SyncRevisionRow | null = null;
      if (!unchanged) {
        const number = loc!.last_number + 1;
        const [row] = await tx<SyncRevisionRow[]>`
          INSERT INTO sync_revisions (id, principal_id, locator, number, created_at, file_count, total_bytes, files, findings)
          VALUES (${o.id}, ${o.principalId}, ${o.locator}, ${number}, ${o.at}, ${o.files.length}, ${o.totalBytes},
                  ${tx.json(o.files as never)}, ${tx.json(o.findings as never)})
          RETURNING id, number, locator, created_at, file_count, total_bytes, files, findings`;
        created = row ?? null;
        await tx`UPDATE sync_locators SET last_number = ${number}
                 WHERE principal_id = ${o.principalId} AND locator = ${o.locator}`;
      }
      const answer = o.build(latest ?? null, created);
      await tx`INSERT INTO sync_commit_keys (principal_id, idempotency_key, request_hash, status, response, created_at)
               VALUES (${o.principalId}, ${o.key}, ${o.requestHash}, ${answer.status}, ${tx.json(answer.body as never)}, ${o.at})`;
      return answer;
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return null;
    throw err;
  }
}

/**
 * Retention (docs/sync.md): delete all but the newest `keep` revisions of a folder, then the owner's holdings that no
 * remaining revision of any of its folders uses (usage goes down by them), then the blobs no owner holds any more
 * (their rows; the caller deletes their files with `deleteFiles` before the transaction commits, so an upload of the
 * same bytes that races it sees the file gone when it records, see syncAddOwnedBlobs). The owner's usage row is
 * locked for update: blob records and commits of the owner wait, and a commit checks its blobs again after.
 * Null when the folder is unknown.
 */
export async function syncForget(
  sql: Sql,
  o: { principalId: string; locator: string; keep: number; deleteFiles: (digests: string[]) => Promise<void> },
): Promise<{ forgotten: number[]; freed: { blobs: number; bytes: number } } | null> {
  return sql.begin(async (tx) => {
    const [loc] =
      await tx`SELECT 1 FROM sync_locators WHERE principal_id = ${o.principalId} AND locator = ${o.locator}`;
    if (!loc) return null;
    await tx`INSERT INTO sync_usage AS u (principal_id) VALUES (${o.principalId})
             ON CONFLICT (principal_id) DO UPDATE SET bytes = u.bytes`;
    const gone = await tx<{ number: number }[]>`
      DELETE FROM sync_revisions
      WHERE principal_id = ${o.principalId} AND locator = ${o.locator}
        AND number NOT IN (SELECT number FROM sync_revisions WHERE principal_id = ${o.principalId} AND locator = ${o.locator}
                           ORDER BY number DESC LIMIT ${o.keep})
      RETURNING number`;
    const freed = await tx<{ digest: string; size_bytes: number }[]>`
      WITH used AS (
        SELECT DISTINCT f->>'digest' AS digest
        FROM sync_revisions r CROSS JOIN LATERAL jsonb_array_elements(r.files) AS f
        WHERE r.principal_id = ${o.principalId} AND f ? 'digest')
      DELETE FROM sync_blob_owners b
      WHERE b.principal_id = ${o.principalId} AND NOT EXISTS (SELECT 1 FROM used WHERE used.digest = b.digest)
      RETURNING digest, size_bytes`;
    const bytes = freed.reduce((n, f) => n + f.size_bytes, 0);
    if (freed.length > 0) {
      await tx`UPDATE sync_usage SET bytes = bytes - ${bytes}, blobs = blobs - ${freed.length}
               WHERE principal_id = ${o.principalId}`;
      const orphans = await tx<{ digest: string }[]>`
        DELETE FROM sync_blobs s
        WHERE s.digest = ANY(${freed.map((f) => f.digest)}::text[])
          AND NOT EXISTS (SELECT 1 FROM sync_blob_owners b WHERE b.digest = s.digest)
        RETURNING digest`;
      await o.deleteFiles(orphans.map((r) => r.digest));
    }
    return { forgotten: gone.map((g) => g.number).sort((a, b) => a - b), freed: { blobs: freed.length, bytes } };
  });
}

/**
 * Everything device sync holds about a principal, for the account export: its folders (locators) with every
 * revision and its file list, and its blob accounting (digests and sizes, never the bytes).
 */
export async function syncExportFor(sql: Sql, principalId: string) {
  const usage = await syncUsage(sql, principalId);
  const blobs = await sql<{ digest: string; size_bytes: number; created_at: Date }[]>`
    SELECT digest, size_bytes, created_at FROM sync_blob_owners WHERE principal_id = ${principalId} ORDER BY digest`;
  const locators = await sql<{ locator: string; created_at: Date }[]>`
    SELECT locator, created_at FROM sync_locators WHERE principal_id = ${principalId} ORDER BY locator`;
  const revisions = await sql<SyncRevisionRow[]>`
    SELECT id, number, locator, created_at, file_count, total_bytes, files, findings FROM sync_revisions
    WHERE principal_id = ${principalId} ORDER BY locator, number`;
  return {
    usage: { bytes: usage.bytes, blobs: usage.blobs },
    blobs: blobs.map((b) => ({ digest: b.digest, size_bytes: b.size_bytes, created_at: b.created_at.toISOString() })),
    locators: locators.map((l) => ({
      locator: l.locator,
      created_at: l.created_at.toISOString(),
      revisions: revisions
        .filter((r) => r.locator === l.locator)
        .map((r) => ({
          id: r.id,
          number: r.number,
          created_at: r.created_at.toISOString(),
          file_count: r.file_count,
          total_bytes: r.total_bytes,
          files: r.files ?? [],
          findings: r.findings,
        })),
    })),
  };
}
