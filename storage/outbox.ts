// The transactional outbox: a change and the message announcing it commit together in PostgreSQL; the relay then
// publishes the message to JetStream with a message id, so a crash between publish and delete repeats nothing
// within the stream's duplicate window.
import type { Sql } from './postgres.ts';

export const outboxChannel = 'assay_outbox';

export async function enqueueOutbox(tx: Sql, subject: string, msgId: string, payload: unknown): Promise<void> {
  await tx`INSERT INTO outbox (subject, msg_id, payload) VALUES (${subject}, ${msgId}, ${JSON.stringify(payload)})`;
  await tx`SELECT pg_notify(${outboxChannel}, '')`;
}

export interface OutboxRow {
  id: number;
  subject: string;
  msg_id: string;
  payload: string;
}

export async function peekOutbox(sql: Sql, limit: number): Promise<OutboxRow[]> {
  return sql<OutboxRow[]>`SELECT id, subject, msg_id, payload FROM outbox ORDER BY id LIMIT ${limit}`;
}

export async function deleteOutbox(sql: Sql, ids: number[]): Promise<void> {
  if (ids.length > 0) await sql`DELETE FROM outbox WHERE id = ANY(${ids})`;
}

export async function enqueueOutboxBulk(
  tx: Sql,
  messages: { subject: string; msgId: string; payload: unknown }[],
): Promise<void> {
  if (messages.length === 0) return;
  await tx`
    INSERT INTO outbox (subject, msg_id, payload)
    SELECT * FROM unnest(${tx.array(messages.map((m) => m.subject) as never[], 25)}::text[],
                         ${tx.array(messages.map((m) => m.msgId) as never[], 25)}::text[],
                         ${tx.array(messages.map((m) => JSON.stringify(m.payload)) as never[], 25)}::text[])`;
  await tx`SELECT pg_notify(${outboxChannel}, '')`;
}
