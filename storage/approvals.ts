// Approval requests in PostgreSQL: the state and expiry of each (written with the other principal facts,
// principal-facts.ts), which the approvals sweep reads to expire pending requests past their time. The requests
// themselves live in their principal's actor; this table only says where to look.
import { jsonRows, type Sql } from './postgres.ts';

export interface ApprovalUpsertRow {
  id: string;
  principal: string;
  state: 'pending' | 'approved' | 'declined' | 'expired';
  expires: string;
  seq: number;
}

export async function upsertApprovals(tx: Sql, rows: ApprovalUpsertRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx`
    INSERT INTO approvals AS a (id, principal_id, state, expires_at, last_seq)
    SELECT r.id, r.principal, r.state, r.expires, r.seq
    FROM json_to_recordset(${jsonRows(rows)}::text::json)
         AS r(id uuid, principal uuid, state text, expires timestamptz, seq bigint)
    ON CONFLICT (id) DO UPDATE SET state = excluded.state, last_seq = excluded.last_seq
    WHERE a.last_seq < excluded.last_seq`.execute();
}

/** Pending requests past their time as of `asOf`, oldest first. */
export function expiredApprovals(sql: Sql, asOf: Date, limit: number) {
  return sql<{ id: string; principal_id: string }[]>`
    SELECT id, principal_id FROM approvals
    WHERE state = 'pending' AND expires_at <= ${asOf}
    ORDER BY expires_at
    LIMIT ${limit}`;
}
