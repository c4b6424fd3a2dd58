// Artifacts, editions and reports in PostgreSQL, and the search query over them.
import type { Sql } from './postgres.ts';

export interface ArtifactRow {
  id: string;
  catalog_seq: number;
  type: string;
  owner_principal_id: string;
  sandbox: boolean;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  created_at: Date;
  current_edition_id: string;
  current_content_hash: string;
  current_report_digest: string | null;
  current_mean_entailment: number | null;
  current_judge_version: string | null;
  live_listing_count: number;
  min_live_price_cents: number | null;
}

export interface EditionRow {
  id: string;
  artifact_id: string;
  number: number;
  content_hash: string;
  content: string;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  judge_version: string;
  report_digest: string | null;
  created_at: Date;
}

export interface NewEdition {
  id: string;
  artifactId: string;
  contentHash: string;
  content: string;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  judgeVersion: string;
  createdAt: string;
}

const artifactColumns = `id, catalog_seq, type, owner_principal_id, sandbox, title, topics, description, floor, created_at,
  current_edition_id, current_content_hash, current_report_digest, current_mean_entailment, current_judge_version,
  live_listing_count, min_live_price_cents`;

export async function getArtifact(sql: Sql, id: string): Promise<ArtifactRow | null> {
  const rows = await sql<ArtifactRow[]>`SELECT ${sql.unsafe(artifactColumns)} FROM artifacts WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function getEdition(sql: Sql, id: string): Promise<EditionRow | null> {
  const rows = await sql<EditionRow[]>`SELECT * FROM editions WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function currentEdition(sql: Sql, artifactId: string): Promise<EditionRow | null> {
  const rows = await sql<EditionRow[]>`
    SELECT e.* FROM editions e JOIN artifacts a ON a.current_edition_id = e.id WHERE a.id = ${artifactId}`;
  return rows[0] ?? null;
}

/**
 * What a purchase quote needs of an artifact's current edition: its judge version, report, and open errata. With a
 * report, the judge is the report's (model and version); while the report is pending, the version the edition is to
 * be judged with, and any open erratum naming that version counts (the model is not known until it answers).
 */
export async function purchaseEdition(sql: Sql, artifactId: string) {
  const rows = await sql<
    {
      id: string;
      judge_version: string;
      report_digest: string | null;
      mean_entailment: number | null;
      open_errata: boolean;
    }[]
  >`
    SELECT e.id, coalesce(r.judge_version, e.judge_version) AS judge_version, r.digest AS report_digest,
           r.mean_entailment,
           EXISTS (SELECT 1 FROM errata x WHERE x.state = 'open'
                   AND coalesce(r.judge_version, e.judge_version) = ANY(x.judge_versions)
                   AND (r.judge_model IS NULL OR x.judge_model = r.judge_model)) AS open_errata
    FROM artifacts a JOIN editions e ON e.id = a.current_edition_id
    LEFT JOIN reports r ON r.edition_id = e.id
    WHERE a.id = ${artifactId}`;
  return rows[0] ?? null;
}

/** Insert a new artifact and its first edition. Returns false when the artifact id exists already. */

export async function insertArtifact(
  tx: Sql,
  a: { id: string; ownerPrincipalId: string; sandbox: boolean },
  e: NewEdition,
): Promise<boolean> {
  const inserted = await tx`
    INSERT INTO artifacts (id, owner_principal_id, sandbox, title, topics, description, floor, created_at,
                           current_edition_id, current_content_hash, search_tsv)
    VALUES (${a.id}, ${a.ownerPrincipalId}, ${a.sandbox}, ${e.title}, ${e.topics}, ${e.description}, ${e.floor},
            ${e.createdAt}, ${e.id}, ${e.contentHash},
            to_tsvector('english'::regconfig, ${`${e.title} ${e.topics.join(' ')} ${e.description}`}))
    ON CONFLICT (id) DO NOTHING`;
  if (inserted.count === 0) return false;
  await insertEditionRow(tx, e, 1);
  return true;
}

/** Add an edition as the artifact's current one (its report pending). Returns the edition number. */
export async function insertEdition(tx: Sql, e: NewEdition): Promise<number> {
  const [row] = await tx<{ n: number }[]>`
    SELECT coalesce(max(number), 0) + 1 AS n FROM editions WHERE artifact_id = ${e.artifactId}`;
  await insertEditionRow(tx, e, row!.n);
  await tx`
    UPDATE artifacts SET current_edition_id = ${e.id}, current_content_hash = ${e.contentHash}, title = ${e.title},
      topics = ${e.topics}, description = ${e.description}, floor = ${e.floor}, current_report_digest = NULL,
      current_mean_entailment = NULL, current_judge_version = NULL,
      search_tsv = to_tsvector('english'::regconfig, ${`${e.title} ${e.topics.join(' ')} ${e.description}`})
    WHERE id = ${e.artifactId}`;
  return row!.n;
}

async function insertEditionRow(tx: Sql, e: NewEdition, number: number): Promise<void> {
  await tx`
    INSERT INTO editions (id, artifact_id, number, content_hash, content, title, topics, description, floor,
                          judge_version, created_at)
    VALUES (${e.id}, ${e.artifactId}, ${number}, ${e.contentHash}, ${e.content}, ${e.title}, ${e.topics},
            ${e.description}, ${e.floor}, ${e.judgeVersion}, ${e.createdAt})`;
}

export interface StoredReportInput {
  digest: string;
  editionId: string;
  artifactId: string;
  sandbox: boolean;
  judgeModel: string;
  judgeVersion: string;
  meanEntailment: number;
  signingKeyId: string;
  body: string;
  createdAt: string;
  /** What judging the edition cost at a model endpoint (calls, tokens, cached claims); null for the built-in judge. */
  judgeUsage: object | null;
}

/**
 * Store an edition's report once: the first report for an edition wins (a second verifier's is dropped). Updates
 * the artifact's current report when the edition is still current. Returns whether this call stored it.
 */
export async function storeReport(tx: Sql, r: StoredReportInput): Promise<boolean> {
  const inserted = await tx`
    INSERT INTO reports (digest, edition_id, artifact_id, sandbox, judge_model, judge_version, mean_entailment,
                         signing_key_id, body, created_at, judge_usage)
    VALUES (${r.digest}, ${r.editionId}, ${r.artifactId}, ${r.sandbox}, ${r.judgeModel}, ${r.judgeVersion},
            ${r.meanEntailment}, ${r.signingKeyId}, ${r.body}, ${r.createdAt},
            ${r.judgeUsage === null ? null : JSON.stringify(r.judgeUsage)}::text::jsonb)
    ON CONFLICT DO NOTHING`;
  if (inserted.count === 0) return false;
  await tx`UPDATE editions SET report_digest = ${r.digest} WHERE id = ${r.editionId}`;
  await tx`
    UPDATE artifacts SET current_report_digest = ${r.digest}, current_mean_entailment = ${r.meanEntailment},
      current_judge_model = ${r.judgeModel}, current_judge_version = ${r.judgeVersion}
    WHERE id = ${r.artifactId} AND current_edition_id = ${r.editionId}`;
  return true;
}

export async function getReport(sql: Sql, digest: string): Promise<{ body: string; sandbox: boolean } | null> {
  const rows = await sql<
    { body: string; sandbox: boolean }[]
  >`SELECT body, sandbox FROM reports WHERE digest = ${digest}`;
  return rows[0] ?? null;
}

export interface SearchFilters {
  sandbox: boolean;
  type?: string;
  topic?: string;
  floor?: number;
  maxPriceCents?: number;
  beforeSeq: number | null;
  limit: number;
}

/**
 * Artifacts with at least one live listing, newest first, on one side of the sandbox line. Keyset pagination on
 * catalog_seq: a cursor walk visits every match that existed when it started exactly once. Query plans are in
 * docs/search.md.
 */
export async function searchArtifacts(sql: Sql, f: SearchFilters): Promise<ArtifactRow[]> {
  return sql<ArtifactRow[]>`
    SELECT ${sql.unsafe(artifactColumns)} FROM artifacts
    WHERE sandbox = ${f.sandbox} AND live_listing_count > 0
      ${f.type === undefined ? sql`` : sql`AND type = ${f.type}`}
      ${f.topic === undefined ? sql`` : sql`AND search_tsv @@ websearch_to_tsquery('english'::regconfig, ${f.topic})`}
      ${f.floor === undefined ? sql`` : sql`AND current_mean_entailment >= ${f.floor}`}
      ${f.maxPriceCents === undefined ? sql`` : sql`AND min_live_price_cents <= ${f.maxPriceCents}`}
      ${f.beforeSeq === null ? sql`` : sql`AND catalog_seq < ${f.beforeSeq}`}
    ORDER BY catalog_seq DESC
    LIMIT ${f.limit}`;
}

/**
 * Insert many new artifacts, each with its first edition, in three statements (arrays unnested), skipping ids
 * that exist. Used by the corpus loader, where one statement per row would dominate the load time.
 */
export async function insertArtifactsBulk(
  tx: Sql,
  rows: { artifact: { id: string; ownerPrincipalId: string; sandbox: boolean }; edition: NewEdition }[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const col = <T>(f: (r: (typeof rows)[number]) => T, oid: number) => tx.array(rows.map(f) as never[], oid);
  const text = 25;
  const uuid = 2950;
  const created = await tx<{ id: string }[]>`
    INSERT INTO artifacts (id, owner_principal_id, sandbox, title, topics, description, floor, created_at,
                           current_edition_id, current_content_hash, search_tsv)
    SELECT r.id, r.owner, r.sandbox, r.title, string_to_array(r.topics, E'\\x1f'), r.description, r.floor, r.created_at,
           r.edition_id, r.content_hash,
           to_tsvector('english'::regconfig, r.title || ' ' || replace(r.topics, E'\\x1f', ' ') || ' ' || r.description)
    FROM unnest(${col((r) => r.artifact.id, uuid)}::uuid[], ${col((r) => r.artifact.ownerPrincipalId, uuid)}::uuid[],
                ${col((r) => r.artifact.sandbox, 16)}::boolean[], ${col((r) => r.edition.title, text)}::text[],
                ${col((r) => r.edition.topics.join('\u001f'), text)}::text[], ${col((r) => r.edition.description, text)}::text[],
                ${col((r) => r.edition.floor, 701)}::float8[], ${col((r) => r.edition.createdAt, 1184)}::timestamptz[],
                ${col((r) => r.edition.id, uuid)}::uuid[], ${col((r) => r.edition.contentHash, text)}::text[])
         AS r(id, owner, sandbox, title, topics, description, floor, created_at, edition_id, content_hash)
    ON CONFLICT (id) DO NOTHING
    RETURNING id`;
  const createdIds = new Set(created.map((r) => r.id));
  const fresh = rows.filter((r) => createdIds.has(r.artifact.id));
  if (fresh.length === 0) return [];
  const fcol = <T>(f: (r: (typeof rows)[number]) => T, oid: number) => tx.array(fresh.map(f) as never[], oid);
  await tx`
    INSERT INTO editions (id, artifact_id, number, content_hash, content, title, topics, description, floor,
                          judge_version, created_at)
    SELECT r.id, r.artifact_id, 1, r.content_hash, r.content, r.title, string_to_array(r.topics, E'\\x1f'),
           r.description, r.floor, r.judge_version, r.created_at
    FROM unnest(${fcol((r) => r.edition.id, uuid)}::uuid[], ${fcol((r) => r.artifact.id, uuid)}::uuid[],
                ${fcol((r) => r.edition.contentHash, text)}::text[], ${fcol((r) => r.edition.content, text)}::text[],
                ${fcol((r) => r.edition.title, text)}::text[], ${fcol((r) => r.edition.topics.join('\u001f'), text)}::text[],
                ${fcol((r) => r.edition.description, text)}::text[], ${fcol((r) => r.edition.floor, 701)}::float8[],
                ${fcol((r) => r.edition.judgeVersion, text)}::text[], ${fcol((r) => r.edition.createdAt, 1184)}::timestamptz[])
         AS r(id, artifact_id, content_hash, content, title, topics, description, floor, judge_version, created_at)`;
  return fresh.map((r) => r.artifact.id);
}
