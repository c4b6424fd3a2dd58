// The model judge's verdict cache in PostgreSQL: one row per (model, prompt, passage chunk, claim) key, shared by
// every worker process, so a claim is paid for once across the deployment and across restarts.
import { jsonRows, type Sql } from './postgres.ts';

/** The stored verdicts of these keys, by key. */
export async function getVerdicts(sql: Sql, keys: readonly string[]): Promise<Map<string, unknown>> {
  if (keys.length === 0) return new Map();
  const rows = await sql<{ key: string; verdict: unknown }[]>`
    SELECT key, verdict FROM judge_verdicts WHERE key = ANY(${keys as string[]}::text[])`;
  return new Map(rows.map((r) => [r.key, r.verdict]));
}

/** Store verdicts; a key stored already keeps its first verdict (the same question has one answer in the cache). */
export async function putVerdicts(sql: Sql, entries: readonly { key: string; verdict: unknown }[]): Promise<void> {
  if (entries.length === 0) return;
  await sql`
    INSERT INTO judge_verdicts (key, verdict)
    SELECT r.key, r.verdict FROM json_to_recordset(${jsonRows(entries)}::text::json) AS r(key text, verdict jsonb)
    ON CONFLICT (key) DO NOTHING`;
}
