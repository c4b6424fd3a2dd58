// The peers `bench:purchases` compares against, as the issue describes them: a conventional Node + PostgreSQL
// service that buys with one transaction per purchase (idempotency record, balance check and debit, order, ledger
// entry, outbox row), either as seven statements from Node or as one PL/pgSQL call. It serves the same
// `POST /v1/orders` the benchmark's wrk script sends (bearer token, Idempotency-Key, `{listing_id, formats}`).
//   PEER=transaction|plpgsql DATABASE_URL=... PORT=... node --import tsx test/bench/peer-server.ts
// The schema and seed are `peerSchema` and `seedPeer` in peers.ts.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import postgres from 'postgres';

const peer = process.env.PEER as 'transaction' | 'plpgsql';
// 32 connections: the PL/pgSQL peer's best on this machine (4: 1,089/s, 10: 1,456/s, 32: 2,021/s, 64: 1,993/s in
// one hour); more concurrent commits share each WAL flush. The 7-statement peer is the same at 32 and 64.
const sql = postgres(process.env.DATABASE_URL!, { max: Number(process.env.PEER_POOL ?? 32), onnotice: () => {} });

// A conventional service keeps its token lookup in memory too; Assay's gateway caches verified tokens the same way.
const principalByToken = new Map(
  (await sql<{ token_hash: string; principal_id: string }[]>`SELECT token_hash, principal_id FROM peer_tokens`).map(
    (r) => [r.token_hash, r.principal_id],
  ),
);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

interface Answer {
  status: number;
  body: unknown;
}

async function sevenStatements(
  principal: string,
  key: string,
  requestHash: string,
  listingId: string,
  formats: string[],
) {
  return sql.begin(async (tx): Promise<Answer> => {
    const [fresh] = await tx`
      INSERT INTO peer_idempotency (principal_id, key, request_hash) VALUES (${principal}, ${key}, ${requestHash})
      ON CONFLICT DO NOTHING RETURNING key`;
    if (!fresh) {
      const [prior] = await tx<{ request_hash: string; response: Answer | null }[]>`
        SELECT request_hash, response FROM peer_idempotency WHERE principal_id = ${principal} AND key = ${key}`;
      if (prior!.request_hash !== requestHash || !prior!.response)
        return { status: 409, body: { error: 'idempotency_conflict' } };
      return prior!.response;
    }
    const [listing] = await tx<{ price_cents: number }[]>`
      SELECT price_cents FROM peer_listings WHERE id = ${listingId} AND live`;
    if (!listing) return { status: 404, body: { error: 'not_found' } };
    const [account] = await tx<{ available_cents: number }[]>`
      UPDATE peer_accounts SET available_cents = available_cents - ${listing.price_cents}, held_cents = held_cents + ${listing.price_cents}
      WHERE principal_id = ${principal} AND available_cents >= ${listing.price_cents} RETURNING available_cents`;
    if (!account) return { status: 409, body: { error: 'insufficient_credits' } };
    const [order] = await tx<{ id: string }[]>`
      INSERT INTO peer_orders (principal_id, listing_id, formats, escrow_cents)
      VALUES (${principal}, ${listingId}, ${formats}, ${listing.price_cents}) RETURNING id`;
    await tx`
      INSERT INTO peer_ledger (principal_id, order_id, kind, amount_cents, balance_after)
      VALUES (${principal}, ${order!.id}, 'escrow_held', ${listing.price_cents}, ${account.available_cents})`;
    await tx`
      INSERT INTO peer_outbox (principal_id, type, data)
      VALUES (${principal}, 'order.state_changed', ${tx.json({ order_id: order!.id, state: 'held' })})`;
    const answer = {
      status: 201,
      body: { order_id: order!.id, state: 'held', escrow_cents: listing.price_cents, formats },
    };
    await tx`UPDATE peer_idempotency SET response = ${tx.json(answer)} WHERE principal_id = ${principal} AND key = ${key}`;
    return answer;
  });
}

async function onePlpgsqlCall(
  principal: string,
  key: string,
  requestHash: string,
  listingId: string,
  formats: string[],
) {
  const [r] = await sql<{ answer: Answer }[]>`
    SELECT peer_purchase(${principal}, ${key}, ${requestHash}, ${listingId}, ${formats}) AS answer`;
  return r!.answer;
}

const purchase = peer === 'plpgsql' ? onePlpgsqlCall : sevenStatements;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const send = (a: Answer) => {
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(a.body));
    };
    const principal = principalByToken.get(sha256((req.headers.authorization ?? '').replace(/^Bearer /, '')));
    const key = req.headers['idempotency-key'];
    if (req.method !== 'POST' || req.url !== '/v1/orders') return send({ status: 404, body: { error: 'not_found' } });
    if (!principal) return send({ status: 401, body: { error: 'unauthorized' } });
    if (typeof key !== 'string') return send({ status: 400, body: { error: 'validation_failed' } });
    const raw = Buffer.concat(chunks).toString();
    let body: { listing_id?: unknown; formats?: unknown };
    try {
      body = JSON.parse(raw);
    } catch {
      return send({ status: 400, body: { error: 'validation_failed' } });
    }
    const formats = body.formats;
    if (
      typeof body.listing_id !== 'string' ||
      !Array.isArray(formats) ||
      formats.length === 0 ||
      !formats.every((f) => f === 'md' || f === 'pdf')
    )
      return send({ status: 422, body: { error: 'validation_failed' } });
    purchase(principal, key, sha256(raw), body.listing_id, formats).then(send, (e) => {
      send({ status: 500, body: { error: 'internal', message: String(e) } });
    });
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`peer ${peer} listening`));
process.on('SIGTERM', () => {
  server.close();
  void sql.end({ timeout: 1 }).then(() => process.exit(0));
});
