// Purchases: every refusal with its status and code in the documented order, changing nothing; the refund path
// end to end; double spending under concurrency; mandates; orders, payouts, events and compliance bundles.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { independentlyVerifyBundle, registerSeller, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let seller: Agent;
const buyerScopes = ['read:artifact', 'read:trust', 'purchase', 'manage:mandate'];

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

async function buyer(): Promise<Agent> {
  const r = await sys.call('POST', '/sandbox/agents', { body: { scopes: buyerScopes } });
  assert.equal(r.status, 201);
  return {
    token: r.body.token,
    principalId: r.body.principal_id,
    agentId: r.body.agent_id,
    balanceCents: r.body.balance_cents,
  };
}

/** A listing whose artifact's report has landed; `good` decides whether it meets its 0.7 floor. */
const listing = (key: string, o: { price: number; good: boolean; formats?: string[] }) =>
  verifiedListing(sys, seller.token, key, o);

const balance = async (a: Agent) =>
  (await sys.call('GET', '/v1/balance', { token: a.token })).body.balance_cents as number;
const orders = async (a: Agent) =>
  (await sys.call('GET', '/v1/orders?limit=200', { token: a.token })).body.items as any[];
const events = async (a: Agent) =>
  (await sys.call('GET', '/v1/events?limit=200', { token: a.token })).body.items as any[];
const buy = (a: Agent, body: object, key: string) => sys.call('POST', '/v1/orders', { token: a.token, body, key });

describe('refusals, in the documented order, each changing nothing', () => {
  test('[BUY-RULES] not_found, requote_required, mandate_exceeded, judge_version_rejected, min_trust, mandate_revoked, insufficient_credits', async () => {
    const b = await buyer();
    const l = await listing('rules', { price: 40_000, good: true, formats: ['md', 'pdf'] });
    const setMandate = async (body: object, key: string) => {
      const r = await sys.call('POST', '/v1/mandates', { token: b.token, body, key });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const before = { balance: await balance(b), orders: (await orders(b)).length, events: (await events(b)).length };
    const liveToken = await mintToken(sys.config, { sandbox: false, principalId: b.principalId, scopes: buyerScopes });
    const cases: [string, () => Promise<any>, number, string][] = [
      [
        'unknown listing',
        () => buy(b, { listing_id: '00000000-0000-4000-8000-000000000000', formats: ['md'] }, 'r1'),
        404,
        'not_found',
      ],
      [
        'across the sandbox line',
        () =>
          sys.call('POST', '/v1/orders', {
            token: liveToken,
            body: { listing_id: l.listingId, formats: ['md'] },
            key: 'r2',
          }),
        404,
        'not_found',
      ],
      [
        'price above max_price_cents',
        () => buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 39_999 }, 'r4'),
        409,
        'requote_required',
      ],
    ];
    for (const [name, run, status, code] of cases) {
      const r = await run();
      assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
      assert.ok(isTypedError(r.body, code), `${name}: ${JSON.stringify(r.body)}`);
    }
    // The cap (50,000 for sandbox mandates) lowered below the price; max_price_cents agrees, so the cap decides.
    await setMandate({ per_item_cap_cents: 10_000 }, 'm1');
    let r = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 40_000 }, 'r5');
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'mandate_exceeded'));
    // Both the cap and max_price_cents are exceeded: requote_required comes first.
    r = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 1 }, 'r5b');
    assert.equal(r.status, 409);
    assert.ok(isTypedError(r.body, 'requote_required'));
    // A judge floor above the report's version.
    await setMandate({ per_item_cap_cents: 100_000, min_judge_version: '9.0.0' }, 'm2');
    r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'r6');
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'judge_version_rejected'));
    // min_trust above the artifact's trust (one passing verification: 2/3).
    await setMandate({ per_item_cap_cents: 100_000, min_trust: 0.9 }, 'm3');
    r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'r7');
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'mandate_exceeded'));
    assert.match(r.body.message, /min_trust/);
    // Revoked.
    const m4 = await setMandate({ per_item_cap_cents: 100_000 }, 'm4');
    const revoked = await sys.call('POST', `/v1/mandates/${m4.id}/revoke`, { token: b.token, body: {}, key: 'm5' });
    assert.equal(revoked.status, 201);
    assert.equal(revoked.body.revoked, true);
    r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'r8');
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'mandate_revoked'));
    const change = await sys.call('POST', `/v1/mandates/${m4.id}/change`, {
      token: b.token,
      body: { min_trust: 0 },
      key: 'm6',
    });
    assert.equal(change.status, 403);
    assert.ok(isTypedError(change.body, 'mandate_revoked'));
    // Not enough credits: 100,000 cents cannot pay 40,000 three times.
    await setMandate({ per_item_cap_cents: 100_000 }, 'm7');
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'ok1')).status, 201);
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'ok2')).status, 201);
    r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'r9');
    assert.equal(r.status, 409);
    assert.ok(isTypedError(r.body, 'insufficient_credits'));
    assert.equal(r.body.remediation, 'top_up');
    assert.equal(await balance(b), before.balance - 80_000);
  });

  test('[BUY-RULES] refusals change nothing: balance, orders and events stay as they were', async () => {
    const b = await buyer();
    const l = await listing('nochange', { price: 500, good: true });
    const snapshot = async () => ({ balance: await balance(b), orders: await orders(b), events: await events(b) });
    const before = await snapshot();
    for (const [body, key] of [
      [{ listing_id: l.listingId, formats: ['md'], max_price_cents: 1 }, 'n1'],
      // A format the listing does not offer: 422 validation_failed (after not_found, before requote_required).
      [{ listing_id: l.listingId, formats: ['pdf'] }, 'n2'],
      [{ listing_id: '00000000-0000-4000-8000-000000000000', formats: ['md'] }, 'n3'],
      [{ listing_id: l.listingId, formats: [] }, 'n4'],
      [{ listing_id: l.listingId }, 'n5'],
      [{ listing_id: l.listingId, formats: ['md'], extra: 1 }, 'n6'],
    ] as const) {
      const r = await buy(b, body, key);
      assert.ok(r.status >= 400 && isTypedError(r.body), JSON.stringify(r.body));
    }
    assert.deepEqual(await snapshot(), before);
  });

  test('[BUY-JUDGE-ERRATA] reject_open_judge_errata refuses artifacts whose judge version has open errata', async () => {
    const b = await buyer();
    const l = await listing('errata', { price: 100, good: true });
    await sys.call('POST', '/v1/mandates', {
      token: b.token,
      body: { per_item_cap_cents: 1000, reject_open_judge_errata: true },
      key: 'e1',
    });
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'e2')).status, 201, 'no errata yet');
    // The operator's command notifies actor hosts, so the erratum applies within moments, not after the quote
    // cache's time to live (60 s).
    const opened = await runCli(sys, ['errata', 'open', '--title', 'test', '--judge-versions', '1.2.0']);
    assert.equal(opened.code, 0, opened.stderr);
    let n = 0;
    const refused = async (status: number) => {
      const x = await buy(b, { listing_id: l.listingId, formats: ['md'] }, `e3-${n++}`);
      return x.status === status ? x : undefined;
    };
    const r = await eventually('the actor host to see the erratum', () => refused(403), 2_000);
    assert.ok(isTypedError(r.body, 'judge_version_rejected'));
    const closed = await runCli(sys, ['errata', 'close', opened.stdout.trim()]);
    assert.equal(closed.code, 0, closed.stderr);
    await eventually('the actor host to see the erratum closed', () => refused(201), 2_000);
  });
});

describe('cached quotes', () => {
  test('[BUY-QUOTE-FRESH] a reprice and an unlisting apply to the very next purchase', async () => {
    const b = await buyer();
    const l = await listing('fresh', { price: 300, good: true });
    // Warm the actor host's quote cache (its time to live is 60 s).
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'f1')).status, 201);
    const repriced = await sys.call('POST', `/v1/listings/${l.listingId}/reprice`, {
      token: seller.token,
      body: { price_cents: 400 },
      key: 'f-reprice',
    });
    assert.equal(repriced.status, 201);
    let n = 0;
    // The listing's fact is the notice; it reaches the host a moment after the seller's reply, so allow 2 s.
    const requote = await eventually(
      'the reprice to reach the quote cache',
      async () => {
        const r = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 300 }, `f2-${n++}`);
        return r.status === 201 ? undefined : r;
      },
      2_000,
    );
    assert.equal(requote.status, 409);
    assert.ok(isTypedError(requote.body, 'requote_required'));
    const unlisted = await sys.call('POST', `/v1/listings/${l.listingId}/unlist`, {
      token: seller.token,
      body: {},
      key: 'f-unlist',
    });
    assert.equal(unlisted.status, 201);
    const gone = await eventually(
      'the unlisting to reach the quote cache',
      async () => {
        const r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, `f3-${n++}`);
        return r.status === 201 ? undefined : r;
      },
      2_000,
    );
    assert.equal(gone.status, 404);
    assert.ok(isTypedError(gone.body, 'not_found'));
  });
});

describe('settlement', () => {
  test('[BUY-REFUND] a report that misses its floor: held -> auto_refunded, balance restored, both events pollable', async () => {
    const b = await buyer();
    const l = await listing('refund', { price: 2_500, good: false });
    const start = await balance(b);
    const r = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 2_500 }, 'rf1');
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body).sort(), ['escrow_cents', 'formats', 'order_id', 'poll', 'state']);
    assert.equal(r.body.state, 'held');
    assert.equal(r.body.escrow_cents, 2_500);
    const order = await eventually('the order to be refunded', async () => {
      const o = (await orders(b)).find((x) => x.id === r.body.order_id);
      return o?.state === 'auto_refunded' ? o : undefined;
    });
    assert.equal(order.escrowCents, 2_500);
    assert.equal(await balance(b), start, 'the buyer is credited back with no request');
    const states = (await events(b))
      .filter((e) => e.type === 'order.state_changed' && e.data.order_id === r.body.order_id)
      .map((e) => e.data.state);
    assert.deepEqual(states, ['held', 'auto_refunded']);
    const payouts = (await sys.call('GET', '/v1/payouts', { token: seller.token })).body;
    assert.equal(payouts.items.filter((p: any) => p.order_id === r.body.order_id).length, 0, 'no payout for a refund');
  });

  test('[BUY-RELEASE] a report that meets its floor: released, the payout accrues, the bundle verifies independently', async () => {
    const b = await buyer();
    const l = await listing('release', { price: 1_200, good: true });
    const start = await balance(b);
    const r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'rl1');
    assert.equal(r.status, 201);
    await eventually('the order to be released', async () =>
      (await orders(b)).find((x) => x.id === r.body.order_id)?.state === 'released' ? true : undefined,
    );
    assert.equal(await balance(b), start - 1_200);
    const payouts = (await sys.call('GET', '/v1/payouts', { token: seller.token })).body;
    assert.equal(payouts.payouts_enabled, false);
    assert.deepEqual(
      payouts.items.filter((p: any) => p.order_id === r.body.order_id).map((p: any) => [p.amount_cents, p.state]),
      [[1_200, 'accrued']],
    );
    const bundle = await sys.call('GET', `/v1/orders/${r.body.order_id}/compliance-bundle`, { token: b.token });
    assert.equal(bundle.status, 200);
    assert.equal(bundle.body.body.bundle_version, 'compliance-bundle/1');
    assert.equal(bundle.body.body.outcome.kind, 'cleared_escrow');
    assert.equal(bundle.body.body.order.id, r.body.order_id);
    assert.equal(bundle.body.signature.alg, 'ES256');
    // Independent check: sha256 of our own JCS of the body, ES256 with node:crypto.
    const keys = (await sys.call('GET', '/.well-known/report-keys')).body;
    assert.deepEqual(independentlyVerifyBundle(bundle.body, keys), { digestOk: true, signatureOk: true });
    const tampered = structuredClone(bundle.body);
    tampered.body.order.escrow_cents = 1;
    assert.equal(independentlyVerifyBundle(tampered, keys).digestOk, false);

    const again = await sys.call('GET', `/v1/orders/${r.body.order_id}/compliance-bundle`, { token: b.token });
    assert.equal(again.body.digest, bundle.body.digest, 'issued once, the same every time');
    const stranger = await buyer();
    const theirs = await sys.call('GET', `/v1/orders/${r.body.order_id}/compliance-bundle`, { token: stranger.token });
    assert.equal(theirs.status, 404);
  });
});

describe('concurrency', () => {
  test('[BUY-DOUBLE-SPEND] credits for exactly 3 purchases, 50 concurrent under distinct keys: 3 succeed', async () => {
    const b = await buyer();
    const l = await listing('double', { price: 30_000, good: true });
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => buy(b, { listing_id: l.listingId, formats: ['md'] }, `ds-${i}`)),
    );
    const ok = replies.filter((r) => r.status === 201);
    const refused = replies.filter((r) => r.status === 409 && r.body.code === 'insufficient_credits');
    assert.equal(ok.length, 3);
    assert.equal(refused.length, 47);
    assert.equal(new Set(ok.map((r) => r.body.order_id)).size, 3);
    assert.equal(await balance(b), 100_000 - 90_000);
  });

  test('[BUY-IDEMPOTENT] a purchase replays under its key and conflicts under another body', async () => {
    const b = await buyer();
    const l = await listing('idem', { price: 300, good: true });
    const first = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'i1');
    const again = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'i1');
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const other = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: 300 }, 'i1');
    assert.equal(other.status, 422);
    assert.ok(isTypedError(other.body, 'idempotency_conflict'));
    assert.equal((await orders(b)).filter((o) => o.id === first.body.order_id).length, 1);
  });

  test('[BUY-ORDERS] another principal cannot see an order, and orders list newest first', async () => {
    const b = await buyer();
    const l = await listing('list', { price: 10, good: true });
    for (const k of ['o1', 'o2', 'o3'])
      assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, k)).status, 201);
    const mine = await orders(b);
    assert.equal(mine.length, 3);
    assert.deepEqual(
      mine.map((o) => o.idempotencyKey),
      ['o3', 'o2', 'o1'],
    );
    for (const o of mine) {
      assert.equal(o.buyerPrincipalId, b.principalId);
      assert.equal(o.listingId, l.listingId);
      assert.match(o.priceSnapshotId, new RegExp(`^${l.listingId}@\\d+$`));
    }
    const stranger = await buyer();
    assert.equal((await orders(stranger)).length, 0);
  });
});
