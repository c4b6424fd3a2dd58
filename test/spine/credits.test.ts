// The first vertical: sandbox registration, top-ups, balance and ledger, under concurrency, with the ledger
// projection checked against the stream and rebuilt by replay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeProtectedHeader, decodeJwt } from 'jose';
import pino from 'pino';
import { principalFactsOf } from '../../actors/index.ts';
import { openPool, rebuildProjection } from '../../storage/index.ts';
import { isTypedError } from '../support/http.ts';
import { eventually, ledgerFacts, projectedLedger, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
before(async () => {
  // One actor host, in this process, under a thousand top-ups at once. A CI run on a starved machine met a 503 "no
  // process serves this request" here: with one host, that is the host having stopped serving its shards, which it
  // does when its heartbeat's answer is 2.25 s late at the default time to live (the likeliest cause; the run's log
  // level hid the warning). No other host exists here to take the shards; a longer time to live keeps that safety
  // rule, which SPINE-LEASES-HEARTBEAT checks, out of what this file checks.
  sys = await startSystem({ ASSAY_LEASE_TTL_MS: '10000' });
});
after(async () => {
  await sys.stop();
});

const projectionRows = () => projectedLedger(sys);

/**
 * The projected ledger of these principals holds exactly what the test sent, each once: the grant first, then the
 * top-ups (in whatever order they committed), each balance the one before plus the entry's amount.
 */
async function projectedLedgerIs(sent: Map<string, { grantCents: number; topUpsCents: number[] }>) {
  const ids = [...sent.keys()];
  const total = [...sent.values()].reduce((n, s) => n + 1 + s.topUpsCents.length, 0);
  const rows = await eventually('projection to catch up', async () => {
    const r = await sys.sql<
      { id: string; principal_id: string; type: string; amount_cents: number; balance_after_cents: number }[]
    >`SELECT id, principal_id, type, amount_cents, balance_after_cents FROM ledger
      WHERE principal_id = ANY(${ids}::uuid[]) ORDER BY stream_seq`;
    return r.length >= total ? r : undefined;
  });
  assert.equal(rows.length, total, 'one entry per credit the test made, none twice');
  assert.equal(new Set(rows.map((r) => r.id)).size, rows.length, 'entry ids are unique');
  for (const [principalId, s] of sent) {
    const mine = rows.filter((r) => r.principal_id === principalId);
    assert.deepEqual([mine[0]!.type, mine[0]!.amount_cents], ['sandbox_grant', s.grantCents]);
    assert.ok(mine.slice(1).every((r) => r.type === 'topup_credited'));
    const amounts = (xs: number[]) => [...xs].sort((a, b) => a - b);
    assert.deepEqual(amounts(mine.slice(1).map((r) => r.amount_cents)), amounts(s.topUpsCents));
    let balance = 0;
    for (const r of mine) {
      balance += r.amount_cents;
      assert.equal(r.balance_after_cents, balance, `running balance of ${principalId}`);
    }
  }
  return rows.length;
}

describe('sandbox registration', () => {
  test('[SPINE-SANDBOX] returns an ES256 bearer token, test credits and an active test mandate', async () => {
    const r = await sys.call('POST', '/sandbox/agents', { body: { name: 'fleet-a' } });
    assert.equal(r.status, 201);
    const b = r.body;
    assert.equal(b.token_type, 'Bearer');
    assert.equal(b.sandbox, true);
    assert.deepEqual(b.scopes, ['read:artifact', 'read:trust', 'purchase']);
    assert.equal(decodeProtectedHeader(b.token).alg, 'ES256');
    const claims = decodeJwt(b.token);
    assert.equal(claims.principal_id, b.principal_id);
    assert.equal(claims.agent_id, b.agent_id);
    assert.equal(claims.sandbox, true);
    assert.equal(claims.scope, 'read:artifact read:trust purchase');
    assert.ok(typeof claims.exp === 'number' && claims.exp * 1000 > Date.now());
    assert.equal(b.balance_cents, sys.config.sandboxGrantCents);
    assert.equal(b.mandate.revoked, false);
    assert.equal(b.mandate.principalId, b.principal_id);
    const bal = await sys.call('GET', '/v1/balance', { token: b.token });
    assert.deepEqual(bal.body, { balance_cents: sys.config.sandboxGrantCents, currency: 'credit' });
    const mandates = await sys.call('GET', '/v1/mandates', { token: b.token });
    assert.equal(mandates.body.items.length, 1);
    assert.deepEqual(
      [mandates.body.items[0].id, mandates.body.items[0].revoked, mandates.body.items[0].current],
      [b.mandate.id, false, true],
    );
  });

  test('[SPINE-VALIDATION] registration with unknown properties gets 422 and creates nothing', async () => {
    const count = async () => (await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM principals`)[0]!.n;
    const before = await count();
    const r = await sys.call('POST', '/sandbox/agents', { body: { name: 'x', admin: true } });
    assert.equal(r.status, 422);
    assert.ok(isTypedError(r.body, 'validation_failed'));
    assert.equal(await count(), before);
  });

  test('[SPINE-SANDBOX-RATE] registration is limited per client address with 429 rate_limited', async () => {
    const limited = await startSystem({ ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '2' });
    try {
      // Six at once: even if a minute boundary splits them, at most 2 + 2 fit.
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => limited.call('POST', '/sandbox/agents', { body: {} })),
      );
      const refused = replies.filter((r) => r.status === 429);
      assert.ok(refused.length >= 2, `refused ${refused.length}`);
      for (const r of refused) {
        assert.ok(isTypedError(r.body, 'rate_limited'));
        assert.equal(r.body.retryable, true);
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
      }
      assert.ok(replies.every((r) => r.status === 201 || r.status === 429));
    } finally {
      await limited.stop();
    }
  });
});

describe('ledger', () => {
  test('[SPINE-LEDGER] newest first, cursor pages visit every entry once, ids stable, limit bounded', async () => {
    const a = await sys.register();
    for (let i = 1; i <= 7; i++) {
      const r = await sys.call('POST', '/v1/topups', { token: a.token, body: { credits: i }, key: `l-${i}` });
      assert.equal(r.status, 201);
    }
    const seen: any[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await sys.call('GET', `/v1/ledger?limit=3${cursor ? `&cursor=${cursor}` : ''}`, {
        token: a.token,
      });
      assert.equal(r.status, 200);
      assert.ok(r.body.items.length <= 3);
      seen.push(...r.body.items);
      cursor = r.body.next_cursor;
    } while (cursor);
    assert.equal(seen.length, 8, 'the grant and seven top-ups');
    assert.deepEqual(
      seen.map((e) => e.amount_cents),
      [700, 600, 500, 400, 300, 200, 100, sys.config.sandboxGrantCents],
    );
    assert.equal(seen.at(-1).type, 'sandbox_grant');
    assert.equal(seen[0].balance_after_cents, sys.config.sandboxGrantCents + 2800);
    assert.equal(new Set(seen.map((e) => e.id)).size, 8);
    const again = await sys.call('GET', '/v1/ledger', { token: a.token });
    assert.deepEqual(
      again.body.items.map((e: any) => e.id),
      seen.map((e) => e.id),
    );
    assert.equal((await sys.call('GET', '/v1/ledger?limit=201', { token: a.token })).status, 422);
    const bad = await sys.call('GET', '/v1/ledger?cursor=bm9wZQ', { token: a.token });
    assert.equal(bad.status, 422);
    assert.ok(isTypedError(bad.body, 'validation_failed'));
    const other = await sys.register();
    const theirs = await sys.call('GET', '/v1/ledger', { token: other.token });
    assert.equal(theirs.body.items.length, 1, 'another principal sees only its own grant');
  });
});

describe('concurrency and projections', () => {
  test('[SPINE-CONCURRENCY] 50 agents x 20 concurrent top-ups with replays: exact balances, projection = stream', async () => {
    const agents = await Promise.all(Array.from({ length: 50 }, () => sys.register()));
    const expected = new Map<string, number>();
    const sent = new Map(
      agents.map((a) => [a.principalId, { grantCents: a.balanceCents, topUpsCents: [] as number[] }]),
    );
    const results = await Promise.all(
      agents.flatMap((a, ai) =>
        Array.from({ length: 20 }, async (_, i) => {
          const credits = ((ai + i) % 9) + 1;
          const first = await sys.call('POST', '/v1/topups', { token: a.token, body: { credits }, key: `c-${i}` });
          // Replay every third key: must change nothing.
          const replay =
            i % 3 === 0
              ? await sys.call('POST', '/v1/topups', { token: a.token, body: { credits }, key: `c-${i}` })
              : null;
          return { a, credits, first, replay };
        }),
      ),
    );
    for (const { a, credits, first, replay } of results) {
      assert.equal(first.status, 201, JSON.stringify(first.body));
      if (replay) {
        assert.equal(replay.status, 201);
        assert.deepEqual(replay.body, first.body);
      }
      expected.set(a.principalId, (expected.get(a.principalId) ?? a.balanceCents) + credits * 100);
      sent.get(a.principalId)!.topUpsCents.push(credits * 100);
    }
    for (const a of agents) {
      const r = await sys.call('GET', '/v1/balance', { token: a.token });
      assert.equal(r.body.balance_cents, expected.get(a.principalId));
    }
    assert.equal(await projectedLedgerIs(sent), 50 * 21);
  });

  test('[SPINE-REBUILD] dropping and rebuilding the ledger projection by replay gives identical rows', async () => {
    const before = await eventually('the projection to hold every fact', async () => {
      const rows = await projectionRows();
      const [checkpoint] = await sys.sql<{ last: number }[]>`
        SELECT last_seq AS last FROM projection_checkpoints WHERE name LIKE 'principal_facts:%'`;
      const facts = await ledgerFacts(sys);
      return checkpoint && checkpoint.last >= facts.at(-1)!.seq ? rows : undefined;
    });
    // Damage the projection: an entry's amount changed, another entry gone. The rebuild must mend both.
    await sys.sql`UPDATE ledger_entries SET amount_cents = amount_cents + 1
                  WHERE stream_seq = (SELECT min(stream_seq) FROM ledger_entries)`;
    await sys.sql`DELETE FROM ledger_entries WHERE stream_seq = (SELECT max(stream_seq) FROM ledger_entries)`;
    assert.notDeepEqual(
      (await projectionRows()).map((r) => ({ ...r })),
      before.map((r) => ({ ...r })),
    );
    const sql = openPool(sys.config.databaseUrl, 2);
    try {
      const lastSeq = await rebuildProjection(sys.nc, sql, principalFactsOf(sys.names, sys.config), {
        log: pino({ level: 'silent' }),
      });
      assert.equal(lastSeq, before.at(-1)!.stream_seq);
    } finally {
      await sql.end();
    }
    const afterRows = await projectionRows();
    assert.equal(afterRows.length, before.length);
    afterRows.forEach((r, i) => {
      assert.deepEqual({ ...r }, { ...before[i] });
    });
  });
});
