// Device sync's routes (docs/sync.md): one table that drives the face's routing (methods and query parameters) and
// the routes' entries in the web OpenAPI document (gateway/openapi/sync.ts), as the context-file API's table does for
// its own.
import type { TSchema } from 'typebox';
import Type from 'typebox';
import {
  SyncForgetBody,
  SyncManifestBody,
  SyncSnapshotBody,
  syncDigestPattern,
  type syncErrors,
  syncKeepMax,
  syncLocatorPattern,
  syncPathPrefix,
  syncRevisionsPageDefault,
  syncRevisionsPageMax,
} from '../../contracts/index.ts';

export type SyncRouteName = 'blob' | 'manifest' | 'revisions' | 'snapshots' | 'forget';

export interface SyncRoute {
  name: SyncRouteName;
  /** GET routes answer HEAD too. */
  method: 'GET' | 'PUT' | 'POST';
  /** Under syncPathPrefix. */
  path: string;
  summary: string;
  query: { name: string; required: boolean; schema: TSchema; description: string }[];
  headers?: { name: string; required: boolean; description: string }[];
  /** A JSON body, or the blob's bytes. */
  body?: TSchema | 'bytes';
  /** Success statuses and what they carry (a JSON schema, or the blob's bytes). */
  answers: Record<number, { description: string; schema: TSchema | 'bytes' }>;
  /** The error codes (syncErrors) this route can answer with, beyond those every route has. */
  errors: (keyof typeof syncErrors)[];
}

const locator = {
  name: 'locator',
  required: true,
  schema: Type.String({ pattern: syncLocatorPattern.source }),
  description: 'The folder: `<device>/<folder>` of the caller (docs/sync.md, Locators and owners).',
};
const Digest = Type.String({ pattern: syncDigestPattern.source });
const Usage = Type.Object({ bytes: Type.Integer(), blobs: Type.Integer(), quota_bytes: Type.Integer() });
const Revision = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    number: Type.Integer({ minimum: 1 }),
    locator: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    file_count: Type.Integer(),
    total_bytes: Type.Integer(),
    flagged: Type.Boolean(),
    findings: Type.Array(Type.Object({ type: Type.String(), path: Type.String(), detail: Type.String() })),
    files: Type.Optional(Type.Array(Type.Object({ path: Type.String() }))),
  },
  { description: 'A revision; `files` as in the snapshot body, left out with files=false.' },
);
const Changes = Type.Object({
  added: Type.Array(Type.String()),
  modified: Type.Array(Type.String()),
  removed: Type.Array(Type.String()),
});
const Stored = Type.Object({ digest: Digest, size: Type.Integer(), stored: Type.Boolean() });
const Committed = Type.Object({ revision: Revision, created: Type.Boolean(), changes: Changes });

export const syncRoutes: SyncRoute[] = [
  {
    name: 'blob',
    method: 'GET',
    path: 'blobs/{digest}',
    summary: 'Download a blob the caller holds (streamed, with ETag, Content-Digest and X-Blob-Size).',
    query: [],
    answers: { 200: { description: 'The bytes.', schema: 'bytes' } },
    errors: [],
  },
  {
    name: 'blob',
    method: 'PUT',
    path: 'blobs/{digest}',
    summary: 'Upload a blob: the body is hashed while it is stored and kept only if it hashes to the digest.',
    query: [],
    headers: [
      {
        name: 'X-Blob-Size',
        required: false,
        description:
          'The size of a blob sent chunked (1 GB and more: the HTTP layer refuses a 10-digit Content-Length).',
      },
    ],
    body: 'bytes',
    answers: {
      201: { description: 'Stored and counted against the quota.', schema: Stored },
      200: { description: 'The caller holds it already: the body was read and thrown away.', schema: Stored },
    },
    errors: ['blob_too_large', 'digest_mismatch', 'quota_exceeded'],
  },
  {
    name: 'manifest',
    method: 'POST',
    path: 'manifest',
    summary: 'Which of these digests the caller does not hold yet (only its own holdings are consulted).',
    query: [locator],
    body: SyncManifestBody,
    answers: { 200: { description: 'The missing digests.', schema: Type.Object({ missing: Type.Array(Digest) }) } },
    errors: ['body_too_large'],
  },
  {
    name: 'revisions',
    method: 'GET',
    path: 'revisions',
    summary: "A folder's revisions, newest first, with the caller's usage.",
    query: [
      locator,
      {
        name: 'limit',
        required: false,
        schema: Type.Integer({ minimum: 1, maximum: syncRevisionsPageMax, default: syncRevisionsPageDefault }),
        description: 'Revisions at most.',
      },
      {
        name: 'revision',
        required: false,
        schema: Type.String(),
        description: 'One revision, by number or id.',
      },
      {
        name: 'files',
        required: false,
        schema: Type.Boolean({ default: true }),
        description: 'false leaves out the file lists.',
      },
    ],
    answers: {
      200: {
        description: 'The revisions.',
        schema: Type.Object({ locator: Type.String(), revisions: Type.Array(Revision), usage: Usage }),
      },
    },
    errors: [],
  },
  {
    name: 'snapshots',
    method: 'POST',
    path: 'snapshots',
    summary:
      'Commit a snapshot as the next revision (scanned for injection first); the files of the latest revision again make none.',
    query: [locator],
    headers: [
      {
        name: 'Idempotency-Key',
        required: true,
        description: '1 to 200 printable ASCII characters; the same key and body replay the answer.',
      },
    ],
    body: SyncSnapshotBody,
    answers: {
      201: { description: 'A new revision.', schema: Committed },
      200: { description: 'Unchanged since the latest revision (or a replay of a 200).', schema: Committed },
    },
    errors: ['missing_blobs', 'unsafe_paths', 'idempotency_conflict', 'body_too_large'],
  },
  {
    name: 'forget',
    method: 'POST',
    path: 'forget',
    summary: `Keep the newest \`keep\` revisions of a folder (1 to ${syncKeepMax}) and delete the older ones, with the caller's blobs no remaining revision uses.`,
    query: [locator],
    body: SyncForgetBody,
    answers: {
      200: {
        description: 'What was deleted and freed (the same request again deletes nothing more).',
        schema: Type.Object({
          locator: Type.String(),
          forgotten: Type.Array(Type.Integer(), { description: 'Numbers of the revisions deleted.' }),
          kept: Type.Integer(),
          freed: Type.Object({ blobs: Type.Integer(), bytes: Type.Integer() }),
          usage: Usage,
        }),
      },
    },
    errors: ['body_too_large'],
  },
];

/** The query parameters each route name accepts; others are 400. */
export const syncRouteQuery: Record<SyncRouteName, string[]> = {
  blob: [],
  manifest: [],
  revisions: [],
  snapshots: [],
  forget: [],
};
for (const r of syncRoutes) syncRouteQuery[r.name] = r.query.map((q) => q.name);

export const syncRoutePath = (r: SyncRoute) => `${syncPathPrefix}${r.path}`;
