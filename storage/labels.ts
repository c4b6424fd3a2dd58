// What the account page names things by instead of their ids (issue 43): a listing's artifact title, price, floor
// and its current report's score, and an agent's name (an OAuth client's agent carries the client's name).
import type { Sql } from './postgres.ts';

export interface ListingLabelRow {
  id: string;
  artifact_id: string;
  title: string;
  price_cents: string;
  floor: number;
  mean_entailment: number | null;
  report_digest: string | null;
}

/** The listings among `ids` that exist, with their artifacts' titles and current reports. */
export async function listingLabels(sql: Sql, ids: readonly string[]): Promise<ListingLabelRow[]> {
  if (ids.length === 0) return [];
  return sql<ListingLabelRow[]>`
    SELECT l.id, l.artifact_id, a.title, l.price_cents::text AS price_cents, l.floor,
           a.current_mean_entailment AS mean_entailment, a.current_report_digest AS report_digest
    FROM listings l JOIN artifacts a ON a.id = l.artifact_id
    WHERE l.id = ANY(${ids as string[]}::uuid[])`;
}

/** The names of the agents among `ids` that belong to one of `principalIds` (another principal's are not named). */
export async function agentNames(
  sql: Sql,
  principalIds: readonly string[],
  ids: readonly string[],
): Promise<{ id: string; name: string | null }[]> {
  if (ids.length === 0) return [];
  return sql<{ id: string; name: string | null }[]>`
    SELECT id, name FROM agents
    WHERE id = ANY(${ids as string[]}::uuid[]) AND principal_id = ANY(${principalIds as string[]}::uuid[])`;
}
