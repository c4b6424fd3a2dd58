// Judge errata: which judge model and versions an erratum affects; the artifacts it touches are those whose current
// report was made by that model at an affected version, derived at read time.
import type { Sql } from './postgres.ts';

export interface ErratumRow {
  id: string;
  title: string;
  description: string;
  judge_model: string;
  judge_versions: string[];
  state: 'open' | 'closed';
  opened_at: Date;
  closed_at: Date | null;
  affected_total: number;
}

export async function openErratum(
  sql: Sql,
  e: { id: string; title: string; description: string; judgeModel: string; judgeVersions: string[]; at: string },
): Promise<void> {
  await sql`INSERT INTO errata (id, title, description, judge_model, judge_versions, state, opened_at)
            VALUES (${e.id}, ${e.title}, ${e.description}, ${e.judgeModel}, ${e.judgeVersions}, 'open', ${e.at})
            ON CONFLICT (id) DO NOTHING`;
}

export async function closeErratum(sql: Sql, id: string, at: string): Promise<boolean> {
  const r = await sql`UPDATE errata SET state = 'closed', closed_at = ${at} WHERE id = ${id} AND state = 'open'`;
  return r.count === 1;
}

const withTotals = (sql: Sql) => sql`
  SELECT e.*, (SELECT count(*)::int FROM artifacts a
               WHERE a.current_judge_model = e.judge_model AND a.current_judge_version = ANY(e.judge_versions))
              AS affected_total
  FROM errata e`;

/** Errata affecting an artifact's current report, newest first. */
export async function errataForArtifact(sql: Sql, artifactId: string): Promise<ErratumRow[]> {
  return sql<ErratumRow[]>`
    SELECT * FROM (${withTotals(sql)}) e
    WHERE EXISTS (SELECT 1 FROM artifacts a WHERE a.id = ${artifactId} AND a.current_judge_model = e.judge_model
                  AND a.current_judge_version = ANY(e.judge_versions))
    ORDER BY e.opened_at DESC, e.id DESC`;
}

/** Errata affecting the current reports of any of these artifacts, with the affected ones of them. */
export async function errataForArtifacts(
  sql: Sql,
  artifactIds: string[],
): Promise<(ErratumRow & { artifact_ids: string[] })[]> {
  if (artifactIds.length === 0) return [];
  return sql<(ErratumRow & { artifact_ids: string[] })[]>`
    SELECT e.*, array(SELECT a.id FROM artifacts a WHERE a.id = ANY(${sql.array(artifactIds, 2950)}::uuid[])
                      AND a.current_judge_model = e.judge_model AND a.current_judge_version = ANY(e.judge_versions)
                      ORDER BY a.id) AS artifact_ids
    FROM (${withTotals(sql)}) e
    WHERE EXISTS (SELECT 1 FROM artifacts a WHERE a.id = ANY(${sql.array(artifactIds, 2950)}::uuid[])
                  AND a.current_judge_model = e.judge_model AND a.current_judge_version = ANY(e.judge_versions))
    ORDER BY e.opened_at DESC, e.id DESC`;
}
