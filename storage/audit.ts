// What `assay audit` reads (actors/audit/audit.ts checks it): the LEDGER and LISTINGS streams up to a sequence fixed
// when the audit starts, through ordered consumers (no acknowledgements, no durable state on the server: the
// service never notices), and the projections' rows in one read-only repeatable-read transaction, so every table is
// read as of one instant whatever the projectors commit meanwhile. Nothing here writes.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Sql } from './postgres.ts';
import type { OrderRow } from './orders.ts';

/** The stream's last sequence now (0 when it does not exist or is empty): where an audit fixes its end. */
export async function streamLastSeq(nc: NatsConnection, stream: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream).catch(() => null);
  return info?.state.last_seq ?? 0;
}

/**
 * Every message of `stream` with sequence at most `throughSeq`, in order, parsed as JSON (`fact` null and `raw` set
 * when a message is not JSON). An ordered consumer fetches in large pulls; the callback runs synchronously per message.
 */
export async function replayStream<F>(
  nc: NatsConnection,
  stream: string,
  throughSeq: number,
  onFact: (seq: number, fact: F | null, raw: string) => void,
): Promise<number> {
  if (throughSeq === 0) return 0;
  const consumer = await jetstream(nc).consumers.get(stream, { opt_start_seq: 1 });
  // Short pulls, so a consumer lost with its NATS node shows as missed heartbeats within seconds, not a hang.
  const messages = await consumer.consume({ max_messages: 4000, expires: 5000 });
  let stalled = false;
  void (async () => {
    for await (const st of messages.status()) {
      if (st.type === 'heartbeats_missed') {
        stalled = true;
        await messages.close();
        return;
      }
    }
  })().catch(() => {});
  let read = 0;
  try {
    for await (const m of messages) {
      if (m.seq > throughSeq) break;
      read++;
      let fact: F | null = null;
      try {
        fact = m.json<F>();
      } catch {
        fact = null;
      }
      onFact(m.seq, fact, fact === null ? m.string() : '');
      // Nothing after it (a deleted message at the end): do not wait for a sequence that will not come.
      if (m.seq >= throughSeq || m.info.pending === 0) break;
    }
  } finally {
    await messages.close();
  }
  if (stalled) throw new Error(`reading ${stream} stalled at message ${read} of ${throughSeq} (its NATS node gone?)`);
  return read;
}

/** Each projection's checkpoint by name (`<projection>:<stream>`). */
export async function checkpointsNow(sql: Sql): Promise<Map<string, number>> {
  const rows = await sql<{ name: string; last_seq: number }[]>`SELECT name, last_seq FROM projection_checkpoints`;
  return new Map(rows.map((r) => [r.name, Number(r.last_seq)]));
}

/** Rows are read in chunks of this many, so a table of millions never sits in memory at once. */
const chunkRows = 5000;

/** The projections' rows as of one instant, read in chunks; each reader yields rows in a stable order. */
export interface AuditSnapshot {
  checkpoints: Map<string, number>;
  parked(): Promise<{ projection: string; stream_seq: number; error: string }[]>;
  ledgerEntries(): AsyncIterable<AuditLedgerEntryRow[]>;
  /** A row per principal ever charged back: few, read at once. */
  standing(): Promise<AuditStandingRow[]>;
  orders(): AsyncIterable<AuditOrderRow[]>;
  payouts(): AsyncIterable<AuditPayoutRow[]>;
  transfers(): AsyncIterable<AuditTransferRow[]>;
  events(): AsyncIterable<AuditEventRow[]>;
  listings(): AsyncIterable<AuditListingRow[]>;
}

export interface AuditLedgerEntryRow {
  stream_seq: number;
  id: string;
  principal_id: string;
  type: string;
  amount_cents: number;
  balance_after_cents: number;
  reference: string | null;
  sandbox: boolean;
  created_at: Date;
}

export interface AuditStandingRow {
  principal_id: string;
  open_disputes: number;
  owed_cents: number;
  updated_seq: number;
}

/** An order row as the orders projection holds it, with the request hash its idempotency record keeps. */
export type AuditOrderRow = Omit<OrderRow, 'updated_at'> & { request_hash: string | null };

export interface AuditPayoutRow {
  id: string;
  order_id: string;
  seller_principal_id: string;
  listing_id: string;
  amount_cents: number;
  state: string;
  sandbox: boolean;
  stream_seq: number;
  created_at: Date;
}

export interface AuditTransferRow {
  id: string;
  seller_principal_id: string;
  account_id: string;
  amount_cents: number;
  from_seq: number;
  through_seq: number;
  state: string;
  processor_transfer_id: string | null;
}

export interface AuditEventRow {
  principal_id: string;
  seq: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  sandbox: boolean;
  source_seq: number;
  created_at: Date;
}

export interface AuditListingRow {
  id: string;
  artifact_id: string;
  seller_principal_id: string;
  price_cents: number;
  floor: number;
  formats: string[];
  billing_interval_seconds: number | null;
  state: string;
  sandbox: boolean;
  created_at: Date;
  updated_at: Date;
  last_seq: number;
}

/**
 * Run `read` inside one read-only repeatable-read transaction: the checkpoints and every row it reads are of the
 * same instant, so a row can be judged against the checkpoint that covers it. The transaction takes no lock a
 * projector waits for.
 */
export async function withAuditSnapshot<T>(sql: Sql, read: (s: AuditSnapshot) => Promise<T>): Promise<T> {
  return (await sql.begin('isolation level repeatable read read only', async (tx) => {
    const t = tx as unknown as Sql;
    const chunks = <R>(query: unknown) => (query as { cursor(n: number): AsyncIterable<R[]> }).cursor(chunkRows);
    const snapshot: AuditSnapshot = {
      checkpoints: await checkpointsNow(t),
      parked: () =>
        t<{ projection: string; stream_seq: number; error: string }[]>`
          SELECT projection, stream_seq, error FROM parked_facts ORDER BY projection, stream_seq`,
      ledgerEntries: () =>
        chunks<AuditLedgerEntryRow>(t`SELECT stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, sandbox,
                        created_at
                 FROM ledger_entries`),
      standing: () =>
        t<AuditStandingRow[]>`SELECT principal_id, open_disputes, owed_cents::float8 AS owed_cents,
                                     updated_seq::float8 AS updated_seq
                              FROM chargeback_standing`,
      orders: () =>
        chunks<AuditOrderRow>(t`SELECT id, buyer_principal_id, buyer_agent_id, listing_id, artifact_id, edition_id,
                        seller_principal_id, subscription_id, state, escrow_cents, floor, formats, idempotency_key,
                        request_hash, price_snapshot_id, report_digest, refund_reason, sandbox, held_seq, held_fact_id,
                        held_balance_after_cents, created_at, settled_at, settled_seq, settled_fact_id,
                        settled_balance_after_cents
                 FROM orders`),
      payouts: () =>
        chunks<AuditPayoutRow>(t`SELECT id, order_id, seller_principal_id, listing_id, amount_cents, state, sandbox, stream_seq,
                        created_at
                 FROM payouts`),
      transfers: () =>
        chunks<AuditTransferRow>(t`SELECT id, seller_principal_id, account_id, amount_cents, from_seq, through_seq, state,
                        processor_transfer_id
                 FROM payout_transfers`),
      events: () =>
        chunks<AuditEventRow>(t`SELECT principal_id, seq, id, type, data, sandbox, source_seq, created_at
                 FROM events ORDER BY principal_id, seq`),
      listings: () =>
        chunks<AuditListingRow>(t`SELECT id, artifact_id, seller_principal_id, price_cents, floor, formats, billing_interval_seconds,
                        state, sandbox, created_at, updated_at, last_seq
                 FROM listings`),
    };
    return read(snapshot);
  })) as T;
}
