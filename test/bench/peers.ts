// The two PostgreSQL peers of `bench:purchases`, measured in the same run as Assay so that the ratios printed
// compare like with like on a VM whose speed drifts by half from one hour to the next. The service is
// peer-server.ts; this file owns its schema, its seed and the run.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { dropDatabase, freePort, pgServerUrl, uniqueNamespace } from '../support/env.ts';
import { loadGeneratorUsage, usageByGroup, usagePerUnit, type WrkResult, wrk } from './support.ts';

export type PeerKind = 'transaction' | 'plpgsql';

const peerSchema = `
CREATE TABLE peer_tokens (token_hash text PRIMARY KEY, principal_id uuid NOT NULL);
CREATE TABLE peer_accounts (principal_id uuid PRIMARY KEY, available_cents bigint NOT NULL, held_cents bigint NOT NULL DEFAULT 0);
CREATE TABLE peer_listings (id text PRIMARY KEY, price_cents bigint NOT NULL, live boolean NOT NULL DEFAULT true);
CREATE TABLE peer_idempotency (
  principal_id uuid NOT NULL, key text NOT NULL, request_hash text NOT NULL, response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (principal_id, key));
CREATE TABLE peer_orders (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(), principal_id uuid NOT NULL, listing_id text NOT NULL,
  formats text[] NOT NULL, escrow_cents bigint NOT NULL, state text NOT NULL DEFAULT 'held',
  created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON peer_orders (principal_id, created_at);
CREATE TABLE peer_ledger (
  id bigserial PRIMARY KEY, principal_id uuid NOT NULL, order_id uuid NOT NULL, kind text NOT NULL,
  amount_cents bigint NOT NULL, balance_after bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON peer_ledger (principal_id, id);
CREATE TABLE peer_outbox (
  id bigserial PRIMARY KEY, principal_id uuid NOT NULL, type text NOT NULL, data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON peer_outbox (principal_id, id);

CREATE FUNCTION peer_purchase(p_principal uuid, p_key text, p_hash text, p_listing text, p_formats text[])
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_prior peer_idempotency;
  v_price bigint;
  v_available bigint;
  v_order uuid;
  v_answer jsonb;
BEGIN
  INSERT INTO peer_idempotency (principal_id, key, request_hash) VALUES (p_principal, p_key, p_hash)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    SELECT * INTO v_prior FROM peer_idempotency WHERE principal_id = p_principal AND key = p_key;
    IF v_prior.request_hash <> p_hash OR v_prior.response IS NULL THEN
      RETURN jsonb_build_object('status', 409, 'body', jsonb_build_object('error', 'idempotency_conflict'));
    END IF;
    RETURN v_prior.response;
  END IF;
  SELECT price_cents INTO v_price FROM peer_listings WHERE id = p_listing AND live;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('status', 404, 'body', jsonb_build_object('error', 'not_found'));
  END IF;
  UPDATE peer_accounts SET available_cents = available_cents - v_price, held_cents = held_cents + v_price
  WHERE principal_id = p_principal AND available_cents >= v_price RETURNING available_cents INTO v_available;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('status', 409, 'body', jsonb_build_object('error', 'insufficient_credits'));
  END IF;
  INSERT INTO peer_orders (principal_id, listing_id, formats, escrow_cents)
  VALUES (p_principal, p_listing, p_formats, v_price) RETURNING id INTO v_order;
  INSERT INTO peer_ledger (principal_id, order_id, kind, amount_cents, balance_after)
  VALUES (p_principal, v_order, 'escrow_held', v_price, v_available);
  INSERT INTO peer_outbox (principal_id, type, data)
  VALUES (p_principal, 'order.state_changed', jsonb_build_object('order_id', v_order, 'state', 'held'));
  v_answer := jsonb_build_object('status', 201, 'body', jsonb_build_object(
    'order_id', v_order, 'state', 'held', 'escrow_cents', v_price, 'formats', to_jsonb(p_formats)));
  UPDATE peer_idempotency SET response = v_answer WHERE principal_id = p_principal AND key = p_key;
  RETURN v_answer;
END $$;
`;

export interface PeerResult extends WrkResult {
  kind: PeerKind;
  cpu: string;
}

/**
 * Start a fresh database and peer service for each kind, drive it with the same wrk script, agents and listing count
 * as Assay's run (warm-up, then `seconds` measured), and return what it sustained.
 */
export async function measurePeers(o: {
  kinds: PeerKind[];
  script: string;
  agents: number;
  listings: number;
  seconds: number;
  connections: number;
}): Promise<PeerResult[]> {
  const results: PeerResult[] = [];
  for (const kind of o.kinds) {
    const db = `assay_peer_${uniqueNamespace()}`;
    const admin = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE "${db}"`);
    await admin.end();
    const sql = postgres(`${pgServerUrl}/${db}`, { max: 1, onnotice: () => {} });
    const tokens = Array.from({ length: o.agents }, () => randomBytes(24).toString('base64url'));
    const listings = Array.from({ length: o.listings }, (_, i) => `lst_peer_${i}`);
    try {
      await sql.unsafe(peerSchema);
      const principals = tokens.map(() => crypto.randomUUID());
      await sql`INSERT INTO peer_tokens ${sql(tokens.map((t, i) => ({ token_hash: createHash('sha256').update(t).digest('hex'), principal_id: principals[i]! })))}`;
      await sql`INSERT INTO peer_accounts ${sql(principals.map((p) => ({ principal_id: p, available_cents: 1_000_000_000 })))}`;
      for (let i = 0; i < listings.length; i += 5000)
        await sql`INSERT INTO peer_listings ${sql(listings.slice(i, i + 5000).map((id, j) => ({ id, price_cents: 100 + ((i + j) % 50) * 100 })))}`;
      await sql`ANALYZE`;
      const port = await freePort();
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', new URL('./peer-server.ts', import.meta.url).pathname],
        {
          env: { ...process.env, PEER: kind, PORT: String(port), DATABASE_URL: `${pgServerUrl}/${db}` },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const exited = new Promise((resolve) => child.on('exit', resolve));
      try {
        await new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
          void exited.then(() => reject(new Error(`peer ${kind} exited before listening`)));
        });
        const url = `http://127.0.0.1:${port}/v1/orders`;
        const files = { LISTINGS_FILE: listings };
        await wrk({ url, script: o.script, tokens, files, seconds: 5, connections: o.connections });
        const named = { [`peer (${kind})`]: child.pid!, bench: process.pid };
        const before = usageByGroup(named);
        const r = await wrk({ url, script: o.script, tokens, files, seconds: o.seconds, connections: o.connections });
        const cpu = `${usagePerUnit(before, usageByGroup(named), r.requests)}; ${loadGeneratorUsage(r, o.seconds)}`;
        const [check] = await sql<{ orders: number }[]>`SELECT count(*)::int orders FROM peer_orders`;
        if (r.non2xx > 0 || check!.orders === 0) throw new Error(`peer ${kind} answered ${r.non2xx} non-2xx`);
        results.push({ ...r, kind, cpu });
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    } finally {
      await sql.end();
      await dropDatabase(db);
    }
  }
  return results;
}
