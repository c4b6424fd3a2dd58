// Subscriptions in PostgreSQL: the projection of the records the buyers' principal actors keep (written with the
// other principal facts, principal-facts.ts), the pages GET /v1/subscriptions reads, and the scheduler's claims on
// due cycles (claimed with FOR UPDATE SKIP LOCKED, so schedulers in many workers never wait on one another).
import type { SubscriptionRecord } from '../contracts/index.ts';
import { jsonRows, type Sql } from './postgres.ts';

/** One subscription record as its newest fact in a batch carries it. */
export interface SubscriptionUpsertRow {
  buyer: string;
  seq: number;
  record: SubscriptionRecord;
}

export async function upsertSubscriptions(tx: Sql, rows: SubscriptionUpsertRow[]): Promise<void> {
  if (rows.length === 0) return;
  const flat = rows.map(({ buyer, seq, record: r }) => ({
    id: r.id,
    buyer,
    seller: r.sellerPrincipalId,
    listing: r.listingId,
    agent: r.agentId,
    sandbox: r.sandbox,
    state: r.state,
    interval: r.intervalSeconds,
    cycle: r.cycle,
    failures: r.consecutiveFailures,
    next: r.nextCycleAt,
    last: r.lastCycle,
    by: r.canceledBy,
    created: r.createdAt,
    updated: r.updatedAt,
    seq,
  }));
  await tx`
    INSERT INTO subscriptions AS s (id, buyer_principal_id, seller_principal_id, listing_id, agent_id, sandbox, state,
      interval_seconds, cycle, consecutive_failures, next_cycle_at, last_cycle, canceled_by, created_at, updated_at,
      last_seq)
    SELECT r.id, r.buyer, r.seller, r.listing, r.agent, r.sandbox, r.state, r.interval, r.cycle, r.failures, r.next,
           r.last, r.by, r.created, r.updated, r.seq
    FROM json_to_recordset(${jsonRows(flat)}::text::json)
         AS r(id uuid, buyer uuid, seller uuid, listing uuid, agent uuid, sandbox boolean, state text, interval integer,
              cycle integer, failures integer, next timestamptz, last jsonb, by text, created timestamptz,
              updated timestamptz, seq bigint)
    ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id, state = excluded.state, cycle = excluded.cycle,
      consecutive_failures = excluded.consecutive_failures, next_cycle_at = excluded.next_cycle_at,
      last_cycle = excluded.last_cycle, canceled_by = excluded.canceled_by, updated_at = excluded.updated_at,
      last_seq = excluded.last_seq
    WHERE s.last_seq < excluded.last_seq`.execute();
}

export interface SubscriptionRow {
  id: string;
  buyer_principal_id: string;
  seller_principal_id: string;
  listing_id: string;
  agent_id: string;
  sandbox: boolean;
  state: SubscriptionRecord['state'];
  interval_seconds: number;
  cycle: number;
  consecutive_failures: number;
  next_cycle_at: Date | null;
  last_cycle: SubscriptionRecord['lastCycle'];
  canceled_by: SubscriptionRecord['canceledBy'];
  created_at: Date;
  updated_at: Date;
  /** The listing's live price, what the next cycle bills. */
  price_cents: number;
}

/** The record a row stands for (the shape the actor keeps). */
export function subscriptionRecordOf(r: SubscriptionRow): SubscriptionRecord {
  return {
    id: r.id,
    listingId: r.listing_id,
    sellerPrincipalId: r.seller_principal_id,
    agentId: r.agent_id,
    intervalSeconds: r.interval_seconds,
    sandbox: r.sandbox,
    state: r.state,
    cycle: r.cycle,
    consecutiveFailures: r.consecutive_failures,
    nextCycleAt: r.next_cycle_at?.toISOString() ?? null,
    lastCycle: r.last_cycle,
    canceledBy: r.canceled_by,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** A principal's subscriptions as buyer or as seller, newest first, after the (created_at, id) of the cursor. */
export function subscriptionsPage(
  sql: Sql,
  q: {
    principalId: string;
    role: 'buyer' | 'seller';
    sandbox: boolean;
    after: { createdAt: Date; id: string } | null;
    limit: number;
  },
) {
  const column = q.role === 'buyer' ? sql`s.buyer_principal_id` : sql`s.seller_principal_id`;
  return sql<SubscriptionRow[]>`
    SELECT s.id, s.buyer_principal_id, s.seller_principal_id, s.listing_id, s.agent_id, s.sandbox, s.state,
           s.interval_seconds, s.cycle, s.consecutive_failures, s.next_cycle_at, s.last_cycle, s.canceled_by,
           s.created_at, s.updated_at, coalesce(l.price_cents, 0)::int AS price_cents
    FROM subscriptions s LEFT JOIN listings l ON l.id = s.listing_id
    WHERE ${column} = ${q.principalId} AND s.sandbox = ${q.sandbox}
      ${q.after ? sql`AND (s.created_at, s.id) < (${q.after.createdAt}, ${q.after.id})` : sql``}
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT ${q.limit}`;
}

export async function subscriptionParties(sql: Sql, id: string) {
  const [row] = await sql<{ buyer_principal_id: string; seller_principal_id: string; sandbox: boolean }[]>`
    SELECT buyer_principal_id, seller_principal_id, sandbox FROM subscriptions WHERE id = ${id}`;
  return row ?? null;
}

export interface ClaimedCycle {
  id: string;
  buyer_principal_id: string;
  cycle: number;
}

/**
 * Claim up to `limit` cycles due as of `asOf` that nobody holds a live claim on, for `claimSeconds`. Rows another
 * scheduler is claiming right now are skipped, not waited for.
 */
export function claimDueCycles(sql: Sql, asOf: Date, claimSeconds: number, limit: number) {
  const until = new Date(asOf.getTime() + claimSeconds * 1000);
  return sql<ClaimedCycle[]>`
    UPDATE subscriptions s SET claimed_cycle = s.cycle + 1, claimed_until = ${until}
    FROM (SELECT id FROM subscriptions
          WHERE state = 'active' AND next_cycle_at <= ${asOf}
            AND (claimed_cycle IS NULL OR claimed_cycle <= cycle OR claimed_until <= ${asOf})
          ORDER BY next_cycle_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED) due
    WHERE s.id = due.id
    RETURNING s.id, s.buyer_principal_id, s.claimed_cycle AS cycle`;
}

/** Give claims back early (their command failed), so the next pass after `retryAt` tries again. */
export async function releaseClaims(sql: Sql, ids: string[], retryAt: Date): Promise<void> {
  if (ids.length > 0) await sql`UPDATE subscriptions SET claimed_until = ${retryAt} WHERE id = ANY(${ids}::uuid[])`;
}

/** Subscriptions not canceled yet whose listing is unlisted: each is to be canceled by its buyer's actor. */
export function subscriptionsOfUnlistedListings(sql: Sql, limit: number) {
  return sql<{ id: string; buyer_principal_id: string; seller_principal_id: string }[]>`
    SELECT s.id, s.buyer_principal_id, s.seller_principal_id
    FROM listings l JOIN subscriptions s ON s.listing_id = l.id AND s.state <> 'canceled'
    WHERE l.state = 'unlisted'
    LIMIT ${limit}`;
}
