// Context files in PostgreSQL: the projection of their facts (written with the other principal facts,
// principal-facts.ts) and the reads other principals make of public files. The owner's own reads are served by its
// actor (actors/principal/contexts.ts), which sees its writes at once.
import type { ContextRecord } from '../contracts/index.ts';
import { jsonRows, type Sql } from './postgres.ts';
import { savedAndDeleted } from './newest-rows.ts';

/** A file as its newest fact in a batch leaves it: saved (with its text when the fact carries it) or deleted. */
export type ContextFileRow =
  | { kind: 'saved'; owner: string; seq: number; record: ContextRecord; content: string | null }
  | { kind: 'deleted'; id: string; seq: number };

export async function writeContextFiles(tx: Sql, rows: ContextFileRow[]): Promise<void> {
  const { saved, deleted } = savedAndDeleted(rows, (r) => ({
    id: r.record.id,
    owner: r.owner,
    name: r.record.name,
    slug: r.record.slug,
    description: r.record.description,
    content: r.content,
    sha: r.record.contentSha256,
    bytes: r.record.contentBytes,
    preview: r.record.preview,
    public: r.record.isPublic,
    created: r.record.createdAt,
    updated: r.record.updatedAt,
    seq: r.seq,
  }));
  if (saved.length > 0) {
    // A change that keeps the text carries none: the row keeps the text it has.
    await tx`
      INSERT INTO context_files AS c (id, owner_principal_id, name, slug, description, content, content_sha256,
        content_bytes, preview, is_public, created_at, updated_at, last_seq)
      SELECT r.id, r.owner, r.name, r.slug, r.description, coalesce(r.content, ''), r.sha, r.bytes, r.preview,
             r.public, r.created, r.updated, r.seq
      FROM json_to_recordset(${jsonRows(saved)}::text::json)
           AS r(id uuid, owner uuid, name text, slug text, description text, content text, sha text, bytes integer,
                preview text, public boolean, created timestamptz, updated timestamptz, seq bigint)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, slug = excluded.slug, description = excluded.description,
        content = CASE WHEN excluded.content_sha256 = c.content_sha256 THEN c.content ELSE excluded.content END,
        content_sha256 = excluded.content_sha256, content_bytes = excluded.content_bytes, preview = excluded.preview,
        is_public = excluded.is_public, updated_at = excluded.updated_at, last_seq = excluded.last_seq
      WHERE c.last_seq < excluded.last_seq`.execute();
  }
  if (deleted.length > 0) await tx`DELETE FROM context_files WHERE id = ANY(${deleted}::uuid[])`.execute();
}

export interface PublicContextRow {
  id: string;
  owner_principal_id: string;
  name: string;
  slug: string;
  description: string;
  content: string;
  content_sha256: string;
  content_bytes: number;
  preview: string;
  created_at: Date;
  updated_at: Date;
}

/** A public context file by id, or null (private files are never read here). */
export async function publicContextFile(sql: Sql, id: string): Promise<PublicContextRow | null> {
  const [row] = await sql<PublicContextRow[]>`
    SELECT id, owner_principal_id, name, slug, description, content, content_sha256, content_bytes, preview,
           created_at, updated_at
    FROM context_files WHERE id = ${id} AND is_public`;
  return row ?? null;
}

/** Of these files, the ones `reader` may read: its own, and other owners' public ones. */
export async function readableContextFiles(sql: Sql, reader: string, ids: string[]): Promise<PublicContextRow[]> {
  if (ids.length === 0) return [];
  return sql<PublicContextRow[]>`
    SELECT id, owner_principal_id, name, slug, description, content, content_sha256, content_bytes, preview,
           created_at, updated_at
    FROM context_files WHERE id = ANY(${ids}::uuid[]) AND (owner_principal_id = ${reader} OR is_public)`;
}
