// Webhooks in PostgreSQL (docs/webhooks.md): the routing table the events projection writes from the owners' facts,
// the deliveries it fans out with each event, and what delivery workers claim, record and report.
import type { WebhookRecord } from '../contracts/index.ts';
import { jsonRows, type Sql } from './postgres.ts';
import { savedAndDeleted } from './newest-rows.ts';

/** A registration as the newest fact of a batch leaves it. `createdSeq` is null when it was created earlier. */
export type WebhookRow =
  | { kind: 'saved'; owner: string; seq: number; createdSeq: number | null; record: WebhookRecord }
  | { kind: 'deleted'; id: string };

export async function writeWebhooks(tx: Sql, rows: WebhookRow[]): Promise<void> {
  const { saved, deleted } = savedAndDeleted(rows, (r) => ({
    id: r.record.id,
    owner: r.owner,
    name: r.record.name,
    url: r.record.url,
    events: r.record.events,
    active: r.record.isActive,
    secret: r.record.secret,
    previous: r.record.previousSecret,
    until: r.record.previousSecretUntil,
    created: r.createdSeq ?? r.seq,
    seq: r.seq,
  }));
  if (saved.length > 0) {
    await tx`
      INSERT INTO webhooks AS w (id, owner_principal_id, name, url, events, is_active, secret, previous_secret,
        previous_secret_until, created_seq, last_seq)
      SELECT r.id, r.owner, r.name, r.url, ARRAY(SELECT json_array_elements_text(r.events)), r.active, r.secret,
             r.previous, r.until, r.created, r.seq
      FROM json_to_recordset(${jsonRows(saved)}::text::json)
           AS r(id uuid, owner uuid, name text, url text, events json, active boolean, secret text, previous text,
                until timestamptz, created bigint, seq bigint)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, events = excluded.events,
        is_active = excluded.is_active, secret = excluded.secret, previous_secret = excluded.previous_secret,
        previous_secret_until = excluded.previous_secret_until, last_seq = excluded.last_seq
      WHERE w.last_seq < excluded.last_seq`.execute();
    // A webhook paused or disabled delivers nothing more; re-enabled, it starts counting failures afresh.
    const inactive = saved.filter((r) => !r.active).map((r) => r.id);
    if (inactive.length > 0) await cancelPending(tx, inactive);
    const active = saved.filter((r) => r.active).map((r) => r.id);
    if (active.length > 0) {
      await tx`DELETE FROM webhook_health WHERE webhook_id = ANY(${active}::uuid[]) AND disabling`.execute();
    }
  }
  if (deleted.length > 0) {
    await tx`DELETE FROM webhooks WHERE id = ANY(${deleted}::uuid[])`.execute();
    await cancelPending(tx, deleted);
  }
}

async function cancelPending(tx: Sql, webhookIds: string[]): Promise<void> {
  await tx`
    UPDATE webhook_deliveries SET state = 'cancelled', finished_at = now(), claimed_until = NULL
    WHERE webhook_id = ANY(${webhookIds}::uuid[]) AND state = 'pending'`.execute();
}

/**
 * One delivery per (active webhook of the event's principal, event) whose types include the event's and which
 * existed before it: in the transaction that writes the events, so an event and its deliveries cannot disagree. A
 * `webhook.test` event goes to the webhook it names alone, whatever types that webhook takes.
 */
export async function fanOutDeliveries(tx: Sql, eventIds: string[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  const r = await tx`
    INSERT INTO webhook_deliveries (webhook_id, event_id, principal_id, state, due_at)
    SELECT w.id, e.id, e.principal_id, 'pending', now()
    FROM events e JOIN webhooks w ON w.owner_principal_id = e.principal_id
    WHERE e.id = ANY(${eventIds}::text[]) AND w.is_active AND e.source_seq > w.created_seq
      AND CASE WHEN e.type = 'webhook.test' THEN w.id::text = e.data #>> '{webhook,id}' ELSE e.type = ANY(w.events) END
    ON CONFLICT DO NOTHING`.execute();
  return r.count;
}

/** A claimed attempt: where to send what, and with which secrets. */
export interface DueDelivery {
  webhook_id: string;
  event_id: string;
  principal_id: string;
  attempts: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  event_type: string;
  event_data: Record<string, unknown>;
  event_created_at: Date;
}

/**
 * Claim up to `limit` due deliveries for `leaseMs`, oldest due first, taking from each active webhook at most what
 * keeps it under `perWebhookMax` attempts in flight (counted across workers), so a slow endpoint's backlog never
 * stands in front of another's. The claim counts as the attempt.
 */
export async function claimDueDeliveries(
  sql: Sql,
  o: { limit: number; perWebhookMax: number; leaseMs: number },
): Promise<DueDelivery[]> {
  return sql<DueDelivery[]>`
    WITH room AS (
      SELECT w.id, ${o.perWebhookMax} - (
        SELECT count(*) FROM webhook_deliveries b
        WHERE b.webhook_id = w.id AND b.claimed_until > now() AND b.state = 'pending'
      ) AS free
      FROM webhooks w WHERE w.is_active
    ), candidates AS (
      SELECT c.webhook_id, c.event_id, c.due_at
      FROM room r CROSS JOIN LATERAL (
        SELECT d.webhook_id, d.event_id, d.due_at FROM webhook_deliveries d
        WHERE d.webhook_id = r.id AND d.state = 'pending' AND d.due_at <= now()
          AND (d.claimed_until IS NULL OR d.claimed_until <= now())
        ORDER BY d.due_at LIMIT greatest(r.free, 0)
      ) c
      WHERE r.free > 0
    ), oldest AS (
      -- The oldest candidates first, twice what is wanted (rows another worker locked are skipped below): locking
      -- every webhook's share and sorting them all cost more than the deliveries they start.
      SELECT * FROM candidates ORDER BY due_at LIMIT ${o.limit * 2}
    ), picked AS (
      -- Locked by primary key; the state is checked again by the update (a partial-index plan here would walk a
      -- webhook's whole backlog for each row).
      SELECT d.webhook_id, d.event_id FROM webhook_deliveries d JOIN oldest c USING (webhook_id, event_id)
      ORDER BY c.due_at LIMIT ${o.limit}
      FOR UPDATE OF d SKIP LOCKED
    ), claimed AS (
      UPDATE webhook_deliveries d
      SET claimed_until = now() + make_interval(secs => ${o.leaseMs / 1000}), attempts = d.attempts + 1
      FROM picked p WHERE d.webhook_id = p.webhook_id AND d.event_id = p.event_id AND d.state = 'pending'
        AND (d.claimed_until IS NULL OR d.claimed_until <= now())
      RETURNING d.webhook_id, d.event_id, d.principal_id, d.attempts
    )
    SELECT c.*, w.url, w.secret, w.previous_secret, w.previous_secret_until,
           e.type AS event_type, e.data AS event_data, e.created_at AS event_created_at
    FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.id = c.event_id`;
}

export interface AttemptResult {
  webhookId: string;
  eventId: string;
  attempt: number;
  at: string;
  status: number | null;
  durationMs: number;
  error: string | null;
  /** delivered (2xx), retrying at `retryAt`, or failed (retries spent). */
  outcome: 'delivered' | 'retrying' | 'failed';
  retryAt: string | null;
}

/**
 * Record a batch of attempts and move each delivery on, in one transaction (one commit for the batch, not one per
 * attempt); for deliveries that ended, move each webhook's count of consecutive failed events (a success resets
 * it). Attempts are in the order they finished. Answers each touched webhook's count, for the disable rule.
 */
export async function recordAttempts(sql: Sql, batch: AttemptResult[]): Promise<Map<string, number>> {
  const rows = batch.map((a) => ({
    webhook_id: a.webhookId,
    event_id: a.eventId,
    attempt: a.attempt,
    at: a.at,
    status: a.status,
    duration_ms: a.durationMs,
    error: a.error,
    outcome: a.outcome,
    retry_at: a.retryAt,
  }));
  // Per webhook, in finishing order: whether a success reset the count, and the failed events after the last one.
  const health = new Map<string, { reset: boolean; failed: number }>();
  for (const a of batch) {
    if (a.outcome === 'retrying') continue;
    const h = health.get(a.webhookId) ?? { reset: false, failed: 0 };
    if (a.outcome === 'delivered') health.set(a.webhookId, { reset: true, failed: 0 });
    else health.set(a.webhookId, { ...h, failed: h.failed + 1 });
  }
  const counts = new Map<string, number>();
  await sql.begin(async (tx) => {
    await tx`
      WITH a AS (
        SELECT * FROM json_to_recordset(${jsonRows(rows)}::text::json)
          AS a(webhook_id uuid, event_id text, attempt int, at timestamptz, status int, duration_ms int, error text,
               outcome text, retry_at timestamptz)
      ), attempts AS (
        INSERT INTO webhook_attempts (webhook_id, event_id, attempt, at, status, duration_ms, error, outcome)
        SELECT webhook_id, event_id, attempt, at, status, duration_ms, error, outcome FROM a
      )
      UPDATE webhook_deliveries d
      SET state = CASE WHEN a.outcome = 'retrying' THEN 'pending' ELSE a.outcome END, claimed_until = NULL,
          last_status = a.status, last_error = a.error, due_at = coalesce(a.retry_at, d.due_at),
          finished_at = CASE WHEN a.outcome = 'retrying' THEN NULL ELSE now() END
      FROM a WHERE d.webhook_id = a.webhook_id AND d.event_id = a.event_id AND d.state = 'pending'`;
    if (health.size === 0) return;
    // In webhook id order, as every batch takes them: two batches locking the same rows never deadlock.
    const changes = [...health]
      .map(([webhook_id, h]) => ({ webhook_id, reset: h.reset, failed: h.failed }))
      .sort((x, y) => (x.webhook_id < y.webhook_id ? -1 : 1));
    await tx`
      INSERT INTO webhook_health (webhook_id, failed_events)
      SELECT webhook_id, 0 FROM json_to_recordset(${jsonRows(changes)}::text::json) AS x(webhook_id uuid)
      ON CONFLICT (webhook_id) DO NOTHING`;
    await tx`
      SELECT 1 FROM webhook_health WHERE webhook_id = ANY(${changes.map((c) => c.webhook_id)}::uuid[])
      ORDER BY webhook_id FOR UPDATE`;
    const updated = await tx<{ webhook_id: string; failed_events: number }[]>`
      UPDATE webhook_health h
      SET failed_events = CASE WHEN x.reset THEN x.failed ELSE h.failed_events + x.failed END
      FROM json_to_recordset(${jsonRows(changes)}::text::json) AS x(webhook_id uuid, reset boolean, failed int)
      WHERE h.webhook_id = x.webhook_id
      RETURNING h.webhook_id, h.failed_events`;
    for (const r of updated) counts.set(r.webhook_id, r.failed_events);
  });
  return counts;
}

/** Mark a webhook as being disabled, once: true for the one caller that should ask its owner's actor to. */
export async function startDisabling(sql: Sql, webhookId: string): Promise<boolean> {
  const r = await sql`
    UPDATE webhook_health SET disabling = true WHERE webhook_id = ${webhookId} AND NOT disabling`;
  return r.count === 1;
}

/** Undo `startDisabling` when the actor could not be told, so a later failure tries again. */
export async function stopDisabling(sql: Sql, webhookId: string): Promise<void> {
  await sql`UPDATE webhook_health SET disabling = false WHERE webhook_id = ${webhookId}`;
}

/**
 * Re-arm one event of a principal for every active webhook of its that takes the event's type: a new round of
 * attempts, due now. Answers how many were re-armed, or null when the principal has no such event.
 */
export async function rearmEvent(sql: Sql, principalId: string, eventId: string): Promise<number | null> {
  const [event] = await sql<{ id: string }[]>`
    SELECT id FROM events WHERE id = ${eventId} AND principal_id = ${principalId}`;
  if (!event) return null;
  const r = await sql`
    INSERT INTO webhook_deliveries AS d (webhook_id, event_id, principal_id, state, attempts, due_at)
    SELECT w.id, e.id, e.principal_id, 'pending', 0, now()
    FROM events e JOIN webhooks w ON w.owner_principal_id = e.principal_id
    WHERE e.id = ${eventId} AND w.is_active AND e.type = ANY(w.events)
    ON CONFLICT (webhook_id, event_id) DO UPDATE
      SET state = 'pending', attempts = 0, due_at = now(), finished_at = NULL, last_error = NULL, last_status = NULL
      WHERE d.claimed_until IS NULL OR d.claimed_until <= now()`;
  return r.count;
}

export interface AttemptRow {
  event_id: string;
  event_type: string;
  attempt: number;
  at: Date;
  status: number | null;
  duration_ms: number;
  error: string | null;
  outcome: 'delivered' | 'retrying' | 'failed';
}

/** A webhook's newest attempts, newest first; only its owner's. */
export async function webhookAttempts(
  sql: Sql,
  owner: string,
  webhookId: string,
  limit: number,
): Promise<AttemptRow[]> {
  return sql<AttemptRow[]>`
    SELECT a.event_id, e.type AS event_type, a.attempt, a.at, a.status, a.duration_ms, a.error, a.outcome
    FROM webhook_attempts a JOIN webhooks w ON w.id = a.webhook_id JOIN events e ON e.id = a.event_id
    WHERE a.webhook_id = ${webhookId} AND w.owner_principal_id = ${owner}
    ORDER BY a.id DESC LIMIT ${limit}`;
}
