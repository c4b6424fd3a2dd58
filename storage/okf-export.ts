// The OKF export's reads (docs/contexts.md, The OKF export): the public files' tag, and pages of public files in id
// order. `is_public` in these statements is the only thing that lets a file into the export.
import { okfTag } from '../contracts/index.ts';
import type { Sql } from './postgres.ts';

/** The tag of the public files as they are now (migration 022's triggers keep the state it is made of). */
export async function okfExportTag(sql: Sql): Promise<string> {
  const [row] = await sql<{ epoch: string; changes: string }[]>`SELECT epoch, changes FROM context_export_state`;
  if (!row) throw new Error('context_export_state has no row (migration 022)');
  return okfTag(row.epoch, row.changes);
}

/**
 * A page of the export, as the bytes the gateway streams: the page's head line (`OkfPageHead`: how many files, the
 * last id), then one OKF line per public file after `after`: at most `rowsMax` files, cut before the first whose
 * content would start past `contentBytesMax` bytes (the first is always in; sizes come from the index alone).
 *
 * PostgreSQL writes the lines: to_json escapes text exactly as JSON.stringify does, and a test holds every line
 * byte-equal to `okfContextLine`. So a page goes from PostgreSQL's socket to the bus as one buffer, never as
 * JavaScript strings, which a 100,000-file export would otherwise churn through the service's heap.
 */
export async function okfPageBytes(
  sql: Sql,
  after: string | null,
  rowsMax: number,
  contentBytesMax: number,
): Promise<Buffer> {
  const [row] = await sql`
    SELECT '{"count":' || count(*) || ',"last":' || coalesce('"' || max(c.id::text COLLATE "C") || '"', 'null')
      || '}' || chr(10) || coalesce(string_agg(
        '{"type":"context","id":"' || c.id || '","name":' || to_json(c.name) || ',"slug":' || to_json(c.slug)
        || ',"description":' || to_json(c.description) || ',"content":' || to_json(c.content)
        || ',"sha256":"' || c.content_sha256 || '","bytes":' || c.content_bytes
        || ',"created_at":"' || to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        || '","updated_at":"' || to_char(c.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        || '"}' || chr(10), '' ORDER BY c.id), '')
    FROM (
      SELECT id, sum(content_bytes) OVER (ORDER BY id) - content_bytes AS before
      FROM (
        SELECT id, content_bytes FROM context_files
        WHERE is_public ${after === null ? sql`` : sql`AND id > ${after}::uuid`}
        ORDER BY id LIMIT ${rowsMax}
      ) candidates
    ) sized
    JOIN context_files c ON c.id = sized.id AND c.is_public
    WHERE sized.before < ${contentBytesMax}`.raw();
  // raw(): the column's bytes as PostgreSQL sent them (UTF-8), not decoded into a string.
  return row![0] as Buffer;
}
