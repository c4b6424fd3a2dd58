// Device sync's storage (docs/sync.md): the blob directory (content-addressed files under ASSAY_SYNC_DIR, written
// to a temporary file, fsynced and renamed into place, so a blob that exists is whole) and the tables of migration
// 026 (owners, usage, locators, revisions, commit keys).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, fdatasync, type WriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
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

/** `gone`: the blob's file was deleted (a forget removed its last holder) while it was being stored; upload again. */
export type SyncAddResult = 'added' | 'held' | 'gone' | { overQuota: { bytes: number } };

/**
 * Add blobs to an owner's holdings, within its quota, in one transaction (the usage row is locked, so concurrent
 * uploads of one owner cannot both slip under the quota): the answers in the order of `blobs`, decided in that
 * order; a digest twice is held the second time. One transaction for a batch is the sync service's group commit
 * (actors/sync/service.ts).
 */
export async function syncAddOwnedBlobs(
  sql: Sql,
  o: {
    principalId: string;
    blobs: { digest: string; size: number }[];
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
    await tx`INSERT INTO sync_usage (principal_id) VALUES (${o.principalId}) ON CONFLICT DO NOTHING`;
    const [usage] = await tx<{ bytes: number }[]>`
      SELECT bytes FROM sync_usage WHERE principal_id = ${o.principalId} FOR UPDATE`;
    const heldRows = await tx<{ digest: string }[]>`
      SELECT digest FROM sync_blob_owners
      WHERE principal_id = ${o.principalId} AND digest = ANY(${fresh.map((b) => b[0])}::text[])`;
    const held = new Set(heldRows.map((r) => r.digest));
    let bytes = usage!.bytes;
    const added: { digest: string; size: number }[] = [];
    const results = o.blobs.map((b): SyncAddResult => {
      if (held.has(b.digest)) return 'held';
      if (lost.has(b.digest)) return 'gone';
      if (bytes + b.size > o.quotaBytes) return { overQuota: { bytes } };
      held.add(b.digest);
      bytes += b.size;
      added.push(b);
      return 'added';
    });
    if (added.length > 0) {
      await tx`INSERT INTO sync_blob_owners (principal_id, digest, size_bytes, created_at)
               SELECT ${o.principalId}, d, s, ${o.at}::timestamptz
               FROM unnest(${added.map((b) => b.digest)}::text[], ${added.map((b) => b.size)}::bigint[]) AS x(d, s)`;
      await tx`UPDATE sync_usage SET bytes = bytes + ${bytes - usage!.bytes}, blobs = blobs + ${added.length}
               WHERE principal_id = ${o.principalId}`;
    }
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
    await tx`INSERT INTO sync_usage (principal_id) VALUES (${o.principalId}) ON CONFLICT DO NOTHING`;
    await tx`SELECT 1 FROM sync_usage WHERE principal_id = ${o.principalId} FOR UPDATE`;
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
