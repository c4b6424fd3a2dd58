// Device sync (docs/sync.md): the routes under `{web_url}/api/sync/`, their bodies and error codes, the locator and
// digest forms, and the port the gateway's sync face calls (implemented by actors/sync/ over storage/). Sync data is
// bulk (blob streams, file lists past NATS's max_payload), so it is not a bus message: see docs/architecture.md.
import type { Readable } from 'node:stream';
import Type, { type Static } from 'typebox';

export const syncPathPrefix = '/api/sync/';

/** A blob's name: the SHA-256 of its bytes, in the form every digest of the service has. */
export const syncDigestPattern = /^sha256:[0-9a-f]{64}$/;

/**
 * A locator names one synced folder of one owner: `<device>/<folder>`, both chosen by the client (the CLI uses the
 * host name and the folder's base name). Locators live in their owner's namespace: the same locator of two owners
 * is two folders, and another owner's is simply unknown (404).
 */
export const syncLocatorPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The longest path of a file in a snapshot, in UTF-8 bytes (Linux's PATH_MAX). */
export const syncPathBytesMax = 4096;
/** Files in one snapshot, and digests in one manifest question. */
export const syncFilesMax = 200_000;
/** How much of a text file the injection scan reads. */
export const syncScanBytesMax = 4 * 1024 * 1024;
/** Revisions one GET answers at most, and by default. */
export const syncRevisionsPageMax = 100;
export const syncRevisionsPageDefault = 20;

const Digest = Type.String({ pattern: syncDigestPattern.source, description: 'sha256:<64 hex> of the bytes.' });
const Path = Type.String({ minLength: 1, maxLength: syncPathBytesMax, description: 'POSIX path inside the folder.' });
const Mode = Type.Integer({ minimum: 0, maximum: 0o7777, description: 'Permission bits (0644, 0755, ...).' });

export const SyncFileEntry = Type.Object(
  {
    path: Path,
    type: Type.Optional(Type.Literal('file')),
    mode: Mode,
    size: Type.Integer({ minimum: 0 }),
    digest: Digest,
  },
  { additionalProperties: false },
);
export const SyncSymlinkEntry = Type.Object(
  {
    path: Path,
    type: Type.Literal('symlink'),
    mode: Type.Optional(Mode),
    target: Type.String({ minLength: 1, maxLength: syncPathBytesMax }),
  },
  { additionalProperties: false },
);
export const SyncEntry = Type.Union([SyncFileEntry, SyncSymlinkEntry]);
export type SyncEntryT = Static<typeof SyncEntry>;

export const SyncManifestBody = Type.Object(
  { digests: Type.Array(Digest, { maxItems: syncFilesMax }) },
  { additionalProperties: false },
);
export const SyncSnapshotBody = Type.Object(
  { files: Type.Array(SyncEntry, { maxItems: syncFilesMax }) },
  { additionalProperties: false },
);
export type SyncSnapshotBodyT = Static<typeof SyncSnapshotBody>;

/** Revisions `forget` keeps at most (docs/sync.md, Retention). */
export const syncKeepMax = 10_000;
export const SyncForgetBody = Type.Object(
  {
    keep: Type.Integer({
      minimum: 1,
      maximum: syncKeepMax,
      description: 'How many of the newest revisions to keep; older ones are deleted.',
    }),
  },
  { additionalProperties: false },
);
export type SyncForgetBodyT = Static<typeof SyncForgetBody>;

/** What `forget` did: the revisions deleted, and the holdings no revision of the owner uses any more. */
export interface SyncForgetResult {
  forgotten: number[];
  kept: number;
  freed: { blobs: number; bytes: number };
  usage: { bytes: number; blobs: number; quota_bytes: number };
}

/** What the scan can find (docs/sync.md, Injection scan). The first four refuse the commit; the rest flag it. */
export const syncFindingTypes = {
  absolute_path: 'refuse',
  path_traversal: 'refuse',
  path_through_symlink: 'refuse',
  symlink_escape: 'refuse',
  model_instruction: 'flag',
  bidi_override: 'flag',
  tag_characters: 'flag',
  zero_width_run: 'flag',
} as const;
export type SyncFindingType = keyof typeof syncFindingTypes;

export interface SyncFinding {
  type: SyncFindingType;
  path: string;
  /** 1-based line of a content finding. */
  line?: number;
  detail: string;
}

export interface SyncRevision {
  id: string;
  /** 1, 2, 3, ... per locator: what `assay restore --revision` takes. */
  number: number;
  locator: string;
  created_at: string;
  file_count: number;
  total_bytes: number;
  /** True when the scan found something in the files' content (the findings say what and where). */
  flagged: boolean;
  findings: SyncFinding[];
  files?: SyncEntryT[];
}

export interface SyncChanges {
  added: string[];
  modified: string[];
  removed: string[];
}

/**
 * The error codes of the sync routes, with their HTTP status. Bodies are `{error, message}` like the context-file
 * API's on the same host, plus the field named here where one helps the client act.
 */
export const syncErrors = {
  invalid_request: { status: 400, detail: null },
  unauthorized: { status: 401, detail: null },
  forbidden: { status: 403, detail: null },
  not_found: { status: 404, detail: null },
  missing_blobs: { status: 409, detail: 'missing' },
  blob_too_large: { status: 413, detail: 'bytes_max' },
  body_too_large: { status: 413, detail: 'bytes_max' },
  digest_mismatch: { status: 422, detail: 'actual_digest' },
  idempotency_conflict: { status: 422, detail: null },
  unsafe_paths: { status: 422, detail: 'findings' },
  rate_limited: { status: 429, detail: null },
  unavailable: { status: 503, detail: null },
  quota_exceeded: { status: 507, detail: 'quota_bytes' },
} as const;
export type SyncErrorCode = keyof typeof syncErrors;

/** A refusal of the sync port, which the face turns into the HTTP answer. */
export interface SyncRefusal {
  refused: SyncErrorCode;
  message: string;
  extra?: Record<string, unknown>;
}

export type SyncResult<T> = { ok: T } | SyncRefusal;

/** A blob being received: bytes in, and at the end either kept under its digest or thrown away. */
export interface SyncBlobUpload {
  write(chunk: Uint8Array): Promise<void>;
  /** The digest of everything written; the bytes are not stored yet. */
  finish(): Promise<string>;
  /** Store the bytes under `digest` (once `finish` said they hash to it). */
  keep(digest: string): Promise<void>;
  /** Throw the bytes away. */
  discard(): Promise<void>;
}

/**
 * The start of an upload: the owner holds the blob already (the body is thrown away), or `size` bytes of its quota
 * are reserved for it under `reservation` until it is recorded or discarded (docs/sync.md, Quota and limits).
 */
export type SyncBlobBegun = { held: true } | { held: false; reservation: string };

/** What the gateway's sync face asks; one principal's data, always. */
export interface SyncPort {
  /** Before an upload: whether the owner holds the blob already, or else reserve `size` bytes of its quota. */
  blobBegin(principalId: string, digest: string, size: number): Promise<SyncResult<SyncBlobBegun>>;
  /**
   * A new upload's sink (a temporary file in the store). It keeps `reservation` alive while bytes arrive, and
   * `discard` releases it.
   */
  blobUpload(reservation: string): Promise<SyncBlobUpload>;
  /**
   * Record that the owner holds a blob that was received, checked and kept (counted against its quota, in place of
   * its reservation). A refused blob's file is deleted unless someone else holds or is uploading it.
   */
  blobRecord(
    principalId: string,
    digest: string,
    size: number,
    reservation: string,
  ): Promise<SyncResult<{ size: number }>>;
  /** The owner's blob, for download; null when the owner does not hold it. */
  blobRead(principalId: string, digest: string): Promise<{ size: number; stream: Readable } | null>;
  manifest(principalId: string, digests: string[]): Promise<{ missing: string[] }>;
  revisions(
    principalId: string,
    locator: string,
    o: { limit: number; revision: string | null; files: boolean },
  ): Promise<SyncResult<{ revisions: SyncRevision[]; usage: { bytes: number; blobs: number; quota_bytes: number } }>>;
  commit(
    principalId: string,
    locator: string,
    idempotencyKey: string,
    requestHash: string,
    body: SyncSnapshotBodyT,
  ): Promise<SyncResult<{ status: 200 | 201; replayed: boolean; body: unknown }>>;
  /** Delete all but the newest `keep` revisions of a folder, and the blobs of the owner no revision uses any more. */
  forget(principalId: string, locator: string, keep: number): Promise<SyncResult<SyncForgetResult>>;
}
