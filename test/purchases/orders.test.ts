// Purchases: every refusal with its status and code in the documented order, changing nothing; the refund path
// end to end; double spending under concurrency; mandates; orders, payouts, events and compliance bundles.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { currentJudgeVersion } from '../../actors/index.ts';
import { independentlyVerifyBundle, registerSeller, registerWithScopes, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp } from '../support/mcp.ts';
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

const buyer = () => registerWithScopes(sys, buyerScopes);

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

/** Everything a refusal must leave alone: balance, orders, events, and the principal's ledger subject. */
async function snapshot(a: Agent) {
  const jsm = await jetstreamManager(sys.nc);
  // A registered buyer always has a fact (its sandbox grant), so this never reads an empty subject.
  const last = await jsm.streams.getMessage(sys.names.streams.ledger.name, {
    last_by_subj: sys.names.ledgerSubject(a.principalId),
  });
  return { balance: await balance(a), orders: await orders(a), events: await events(a), lastFactSeq: last!.seq };
}

describe('refusals, in the documented order, each changing nothing', () => {
  // The listings the rule tables buy from, with hand-written facts about them: `main` offers md only at 400 cents,
  // its artifact judged by the current judge version and trusted 2/3 (one passing verification); `dear` costs more than a new buyer's
  // 100,000 credits; `gone` lists an artifact that no longer exists; `unlisted` was taken off sale.
  const price = 400;
  const dearPrice = 150_000;
  let main: { listingId: string; artifactId: string };
  let dear: { listingId: string; artifactId: string };
  let gone: { listingId: string; artifactId: string };
  let unlisted: { listingId: string; artifactId: string };
  let weak: { listingId: string; artifactId: string };
  let erratumId: string;

  before(async () => {
    main = await listing('rules', { price, good: true });
    dear = await listing('rules-dear', { price: dearPrice, good: true });
    unlisted = await listing('rules-unlisted', { price, good: true });
    // Floor 0.7 like the others, but its report supports one claim of three.
    weak = await listing('rules-weak', { price, good: false });
    const u = await sys.call('POST', `/v1/listings/${unlisted.listingId}/unlist`, {
      token: seller.token,
      body: {},
      key: 'rules-unlist',
    });
    assert.equal(u.status, 201);
    // No route removes an artifact, so the test removes one from the catalog's tables (as an operator would), once
    // its listing is projected, and tells the actor hosts as the catalog does after a change.
    gone = await listing('rules-gone', { price, good: true });
    await eventually('the listing to be projected', async () =>
      (await sys.sql`SELECT 1 FROM listings WHERE id = ${gone.listingId}`).length === 1 ? true : undefined,
    );
    await sys.sql.begin(async (tx) => {
      await tx`DELETE FROM reports WHERE artifact_id = ${gone.artifactId}`;
      await tx`DELETE FROM listings WHERE artifact_id = ${gone.artifactId}`;
      await tx`DELETE FROM editions WHERE artifact_id = ${gone.artifactId}`;
      await tx`DELETE FROM artifacts WHERE id = ${gone.artifactId}`;
    });
    sys.nc.publish(sys.names.notices.artifact(gone.artifactId));
    await sys.nc.flush();
    // An open erratum on the current judge version, the version that judged every listing here; only mandates that
    // reject open errata see it. The command notifies the actor hosts before it exits.
    const opened = await runCli(sys, ['errata', 'open', '--title', 'rules', '--judge-versions', currentJudgeVersion]);
    assert.equal(opened.code, 0, opened.stderr);
    erratumId = opened.stdout.trim();
  });
  after(async () => {
    const closed = await runCli(sys, ['errata', 'close', erratumId]);
    assert.equal(closed.code, 0, closed.stderr);
  });

  interface Case {
    name: string;
    /** Which listing to buy; the default is `main`. */
    listing?: () => string;
    formats?: string[];
    maxPriceCents?: number;
    /** Fields of the buyer's mandate over a base that lets everything through (a cap above every price here). */
    mandate?: Record<string, unknown>;
    revoked?: boolean;
    /** Buy with a live token for the same principal (across the sandbox line). */
    live?: boolean;
    status: number;
    code: string;
    /** For rules that share a code: which one decided. */
    message?: RegExp;
    /** What the message must not reveal. */
    hides?: RegExp;
  }

  const baseMandate = { per_item_cap_cents: 200_000, min_trust: 0, min_judge_version: null };

  /** A new buyer under the case's mandate tries the purchase: exactly the case's refusal, and nothing changes. */
  async function refused(c: Case): Promise<void> {
    const b = await buyer();
    const m = await sys.call('POST', '/v1/mandates', {
      token: b.token,
      body: { ...baseMandate, reject_open_judge_errata: false, ...c.mandate },
      key: 'mandate',
    });
    assert.equal(m.status, 201, `${c.name}: ${JSON.stringify(m.body)}`);
    if (c.revoked) {
      const r = await sys.call('POST', `/v1/mandates/${m.body.id}/revoke`, { token: b.token, body: {}, key: 'revoke' });
      assert.equal(r.status, 201, `${c.name}: ${JSON.stringify(r.body)}`);
    }
    const token = c.live
      ? await mintToken(sys.config, { sandbox: false, principalId: b.principalId, scopes: buyerScopes })
      : b.token;
    const body = {
      listing_id: c.listing?.() ?? main.listingId,
      formats: c.formats ?? ['md'],
      ...(c.maxPriceCents === undefined ? {} : { max_price_cents: c.maxPriceCents }),
    };
    const before = await snapshot(b);
    const r = await sys.call('POST', '/v1/orders', { token, body, key: 'buy' });
    assert.equal(r.status, c.status, `${c.name}: ${JSON.stringify(r.body)}`);
    assert.ok(isTypedError(r.body, c.code), `${c.name}: ${JSON.stringify(r.body)}`);
    if (c.message) assert.match(r.body.message, c.message, c.name);
    if (c.hides) assert.doesNotMatch(r.body.message, c.hides, `${c.name}: nothing about the listing leaks`);
    assert.deepEqual(await snapshot(b), before, `${c.name}: balance, orders, events and ledger unchanged`);
  }

  // docs/purchases.md, "Buying", one row each, in the table's order.
  const rules: Case[] = [
    { name: '1 a format the listing does not offer', formats: ['pdf'], status: 422, code: 'validation_failed' },
    {
      name: '2 the listed artifact no longer exists',
      listing: () => gone.listingId,
      status: 404,
      code: 'not_found',
      message: /artifact no longer exists/,
    },
    {
      name: '3 the live price is above max_price_cents',
      maxPriceCents: price - 1,
      status: 409,
      code: 'requote_required',
    },
    { name: '4 the mandate is revoked', revoked: true, status: 403, code: 'mandate_revoked' },
    {
      name: "5 the price exceeds the mandate's per-item cap",
      mandate: { per_item_cap_cents: price - 1 },
      status: 403,
      code: 'mandate_exceeded',
      message: /per-item cap/,
    },
    {
      name: "6 the artifact's trust (2/3) is below min_trust",
      mandate: { min_trust: 0.9 },
      status: 403,
      code: 'mandate_exceeded',
      message: /min_trust/,
    },
    {
      name: `7 the judge version (${currentJudgeVersion}) is below the mandate's minimum`,
      mandate: { min_judge_version: '9.0.0' },
      status: 403,
      code: 'judge_version_rejected',
      message: /requires 9\.0\.0/,
    },
    {
      name: `8 the mandate rejects open judge errata, and one affects ${currentJudgeVersion}`,
      mandate: { reject_open_judge_errata: true },
      status: 403,
      code: 'judge_version_rejected',
      message: /open judge errata/,
    },
    {
      name: '9 available credits are below the price',
      listing: () => dear.listingId,
      status: 409,
      code: 'insufficient_credits',
    },
    {
      name: "10 the listing's floor (0.7) is below the mandate's min_floor",
      mandate: { min_floor: 0.8 },
      status: 409,
      code: 'floor_not_met',
      message: /listing's floor 0\.7/,
    },
    {
      name: "11 the edition's report is below min_floor, though the listing's floor is not",
      listing: () => weak.listingId,
      mandate: { min_floor: 0.7 },
      status: 409,
      code: 'floor_not_met',
      message: /report shows mean entailment/,
    },
  ];

  test('[BUY-RULES] each purchase rule alone answers its exact status and code, and changes nothing', async () => {
    for (const c of rules) await refused(c);
    // The same base lets a purchase through: each refusal above came from its own rule alone.
    const b = await buyer();
    const m = await sys.call('POST', '/v1/mandates', { token: b.token, body: baseMandate, key: 'mandate' });
    assert.equal(m.status, 201);
    const ok = await buy(b, { listing_id: main.listingId, formats: ['md'], max_price_cents: price }, 'buy');
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.escrow_cents, price);
  });

  test('[BUY-RULES] when two adjacent rules refuse, the one documented first wins, and nothing changes', async () => {
    const pairs: Case[] = [
      {
        name: '1 over 2: a format not offered, and the artifact is gone',
        listing: () => gone.listingId,
        formats: ['pdf'],
        status: 422,
        code: 'validation_failed',
      },
      {
        name: '2 over 3: the artifact is gone, and the price is above max_price_cents',
        listing: () => gone.listingId,
        maxPriceCents: 1,
        status: 404,
        code: 'not_found',
        message: /artifact no longer exists/,
      },
      {
        name: '3 over 4: the price is above max_price_cents, and the mandate is revoked',
        maxPriceCents: price - 1,
        revoked: true,
        status: 409,
        code: 'requote_required',
      },
      {
        name: '4 over 5: the mandate is revoked, and its cap is below the price',
        mandate: { per_item_cap_cents: price - 1 },
        revoked: true,
        status: 403,
        code: 'mandate_revoked',
      },
      {
        name: '5 over 6: the cap is below the price, and the trust below min_trust',
        mandate: { per_item_cap_cents: price - 1, min_trust: 0.9 },
        status: 403,
        code: 'mandate_exceeded',
        message: /per-item cap/,
      },
      {
        name: '6 over 7: the trust is below min_trust, and the judge version below the minimum',
        mandate: { min_trust: 0.9, min_judge_version: '9.0.0' },
        status: 403,
        code: 'mandate_exceeded',
        message: /min_trust/,
      },
      {
        name: '7 over 8: the judge version is below the minimum, and open errata are rejected',
        mandate: { min_judge_version: '9.0.0', reject_open_judge_errata: true },
        status: 403,
        code: 'judge_version_rejected',
        message: /requires 9\.0\.0/,
      },
      {
        name: '8 over 9: open errata are rejected, and the credits are below the price',
        listing: () => dear.listingId,
        mandate: { reject_open_judge_errata: true },
        status: 403,
        code: 'judge_version_rejected',
        message: /open judge errata/,
      },
      {
        name: "9 over 10: the credits are below the price, and the listing's floor below min_floor",
        listing: () => dear.listingId,
        mandate: { min_floor: 0.8 },
        status: 409,
        code: 'insufficient_credits',
      },
      {
        name: "10 over 11: the listing's floor and its report are both below min_floor",
        listing: () => weak.listingId,
        mandate: { min_floor: 0.8 },
        status: 409,
        code: 'floor_not_met',
        message: /listing's floor/,
      },
    ];
    for (const c of pairs) await refused(c);
  });

  test('[BUY-RULES] a listing that does not exist, is unlisted or is across the sandbox line is 404 whatever else is wrong', async () => {
    // Each of these also breaks rule 1 (validation_failed), which would otherwise come first.
    const hidden: Case[] = [
      {
        name: 'no such listing',
        listing: () => '00000000-0000-4000-8000-000000000000',
        formats: ['pdf'],
        status: 404,
        code: 'not_found',
      },
      {
        name: 'unlisted',
        listing: () => unlisted.listingId,
        formats: ['pdf'],
        maxPriceCents: 1,
        status: 404,
        code: 'not_found',
      },
      { name: 'across the sandbox line', live: true, formats: ['pdf'], status: 404, code: 'not_found' },
    ];
    for (const c of hidden) await refused({ ...c, hides: /offers|price|mandate|trust|judge|credits/ });
  });

  test('[BUY-RULES] a body the schema refuses is 422 validation_failed and changes nothing', async () => {
    const b = await buyer();
    const before = await snapshot(b);
    for (const [body, key] of [
      [{ listing_id: main.listingId, formats: [] }, 'n1'],
      [{ listing_id: main.listingId }, 'n2'],
      [{ listing_id: main.listingId, formats: ['docx'] }, 'n3'],
      [{ listing_id: main.listingId, formats: ['md'], extra: 1 }, 'n4'],
      [{ listing_id: 'not-a-uuid', formats: ['md'] }, 'n5'],
      [{ listing_id: main.listingId, formats: ['md'], max_price_cents: -1 }, 'n6'],
    ] as const) {
      const r = await buy(b, body, key);
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.ok(isTypedError(r.body, 'validation_failed'), JSON.stringify(r.body));
    }
    assert.deepEqual(await snapshot(b), before);
  });

  test('[BUY-RULES] a revoked mandate cannot be changed: 403 mandate_revoked', async () => {
    const b = await buyer();
    const m = await sys.call('POST', '/v1/mandates', { token: b.token, body: baseMandate, key: 'm1' });
    assert.equal(m.status, 201);
    assert.equal(
      (await sys.call('POST', `/v1/mandates/${m.body.id}/revoke`, { token: b.token, body: {}, key: 'm2' })).status,
      201,
    );
    const change = await sys.call('POST', `/v1/mandates/${m.body.id}/change`, {
      token: b.token,
      body: { min_trust: 0 },
      key: 'm3',
    });
    assert.equal(change.status, 403);
    assert.ok(isTypedError(change.body, 'mandate_revoked'));
  });
});

describe('judge errata', () => {
  test('[BUY-JUDGE-ERRATA] reject_open_judge_errata refuses artifacts whose judge version has open errata', async () => {
    const b = await buyer();
    const l = await listing('errata', { price: 100, good: true });
    await sys.call('POST', '/v1/mandates', {
      token: b.token,
      body: { per_item_cap_cents: 1000, reject_open_judge_errata: true },
      key: 'e1',
    });
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'e2')).status, 201, 'no errata yet');
    // The operator's command commits the erratum, then publishes the errata notice and drains its connection before
    // it exits; the actor host reads that notice before any request sent after the exit (one connection, in the
    // server's order), and drops its cached quotes. So the very next purchase sees the erratum, and the very next
    // after closing it sees it closed: no waiting for the quote cache's time to live (60 s).
    const opened = await runCli(sys, ['errata', 'open', '--title', 'test', '--judge-versions', currentJudgeVersion]);
    assert.equal(opened.code, 0, opened.stderr);
    const r = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'e3');
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.ok(isTypedError(r.body, 'judge_version_rejected'));
    const closed = await runCli(sys, ['errata', 'close', opened.stdout.trim()]);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal((await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'e4')).status, 201);
  });
});

describe('cached quotes', () => {
  test('[BUY-QUOTE-FRESH] a reprice and an unlisting apply to the very next purchase', async () => {
    // The listing actor's fact is the notice that drops the quote (docs/purchases.md). The server queues it for
    // every core subscriber, the actor hosts' quote caches among them, as it takes in the append, before the stream
    // stores and acknowledges it; the seller's 201 comes after that acknowledgement and after the seller's own
    // principal records the call. An actor host reads notices and purchase requests on one connection, in the
    // order the server queued them, so a purchase sent after the 201 arrives after the notice. No waiting and no
    // retries: the very next purchase must see the change.
    const b = await buyer();
    const l = await listing('fresh', { price: 300, good: true });
    // Warm the actor host's quote cache (its time to live is 60 s).
    const warm = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'f-warm');
    assert.equal(warm.status, 201);
    assert.equal(warm.body.escrow_cents, 300);
    let previous = 300;
    // Up and down: a stale quote either charges the old price or refuses the agreed one.
    for (const [i, price] of [400, 350, 500, 25, 450].entries()) {
      const repriced = await sys.call('POST', `/v1/listings/${l.listingId}/reprice`, {
        token: seller.token,
        body: { price_cents: price },
        key: `f-reprice-${i}`,
      });
      assert.equal(repriced.status, 201);
      assert.equal(repriced.body.priceCents, price);
      const r = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: price }, `f-buy-${i}`);
      assert.equal(r.status, 201, `after repricing ${previous} -> ${price}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.escrow_cents, price, `after repricing ${previous} -> ${price}, the new price is charged`);
      previous = price;
    }
    // A raise above what the buyer agreed to is a requote at once.
    const raised = await sys.call('POST', `/v1/listings/${l.listingId}/reprice`, {
      token: seller.token,
      body: { price_cents: 600 },
      key: 'f-reprice-raise',
    });
    assert.equal(raised.status, 201);
    const requote = await buy(b, { listing_id: l.listingId, formats: ['md'], max_price_cents: previous }, 'f-requote');
    assert.equal(requote.status, 409, JSON.stringify(requote.body));
    assert.ok(isTypedError(requote.body, 'requote_required'));
    const unlisted = await sys.call('POST', `/v1/listings/${l.listingId}/unlist`, {
      token: seller.token,
      body: {},
      key: 'f-unlist',
    });
    assert.equal(unlisted.status, 201);
    const gone = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'f-gone');
    assert.equal(gone.status, 404, JSON.stringify(gone.body));
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

describe('one commit per purchase', () => {
  test('[BUY-ONE-COMMIT] a purchase whose report is known is held and settled by one append; the ledger pages through both entries one at a time', async () => {
    const b = await buyer();
    const good = await listing('one-commit-good', { price: 300, good: true });
    const bad = await listing('one-commit-bad', { price: 200, good: false });
    const before = (await snapshot(b)).lastFactSeq;
    const released = await buy(b, { listing_id: good.listingId, formats: ['md'] }, 'oc1');
    const refunded = await buy(b, { listing_id: bad.listingId, formats: ['md'] }, 'oc2');
    assert.equal(released.status, 201);
    assert.equal(refunded.status, 201);

    // The principal's subject got exactly one message per purchase, each recording the hold and its settlement.
    const jsm = await jetstreamManager(sys.nc);
    const stored: any[] = [];
    for (let seq = before + 1; ; ) {
      const m = await jsm.direct.getMessage(sys.names.streams.ledger.name, {
        next_by_subj: sys.names.ledgerSubject(b.principalId),
        seq,
      });
      if (!m) break;
      stored.push(m.json());
      seq = m.seq + 1;
    }
    assert.deepEqual(
      stored.map((f) => [f.type, f.orderId, f.settled?.type]),
      [
        ['escrow_held', released.body.order_id, 'escrow_released'],
        ['escrow_held', refunded.body.order_id, 'escrow_refunded'],
      ],
    );
    // Settled at commit: no wait for a second fact.
    const states = new Map((await orders(b)).map((o) => [o.id, o.state]));
    assert.equal(states.get(released.body.order_id), 'released');
    assert.equal(states.get(refunded.body.order_id), 'auto_refunded');

    // Each purchase is two ledger entries at one stream sequence: a page may end between them and lose neither.
    const whole = (await sys.call('GET', '/v1/ledger?limit=200', { token: b.token })).body.items as any[];
    assert.deepEqual(
      whole.slice(0, 4).map((e) => [e.type, e.reference, e.balance_after_cents]),
      [
        ['escrow_refunded', refunded.body.order_id, 100_000 - 300],
        ['escrow_held', refunded.body.order_id, 100_000 - 300 - 200],
        ['escrow_released', released.body.order_id, 100_000 - 300],
        ['escrow_held', released.body.order_id, 100_000 - 300],
      ],
    );
    assert.deepEqual(
      whole.slice(0, 4).map((e) => e.id),
      [stored[1].settled.id, stored[1].id, stored[0].settled.id, stored[0].id],
    );
    const paged: any[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; body: any } = await sys.call(
        'GET',
        `/v1/ledger?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        { token: b.token },
      );
      assert.equal(r.status, 200);
      paged.push(...r.body.items);
      cursor = r.body.next_cursor;
    } while (cursor);
    assert.deepEqual(
      paged.map((e) => e.id),
      whole.map((e) => e.id),
    );
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

  test('[BUY-ORDER-ONE] GET /v1/orders/{order_id} and get_order read one order as the list shows it; another principal gets 404', async () => {
    const b = await buyer();
    const l = await listing('one', { price: 10, good: true });
    const bought = await buy(b, { listing_id: l.listingId, formats: ['md'] }, 'one-1');
    assert.equal(bought.status, 201);
    const orderId: string = bought.body.order_id;
    // Read at once: the order is there (held or settled already), not a 404 from a projection behind the purchase.
    const first = await sys.call('GET', `/v1/orders/${orderId}`, { token: b.token });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.id, orderId);
    const settled = await eventually('the order to settle', async () => {
      const r = await sys.call('GET', `/v1/orders/${orderId}`, { token: b.token });
      return r.body.state === 'released' ? r.body : undefined;
    });
    const listed = (await orders(b)).find((o) => o.id === orderId);
    assert.deepEqual(settled, listed, 'the same record as the list item');
    const mcp = await connectMcp(sys.baseUrl, b.token);
    try {
      const viaTool = await mcp.client.callTool({ name: 'get_order', arguments: { order_id: orderId } });
      assert.notEqual(viaTool.isError, true, JSON.stringify(viaTool));
      assert.deepEqual(viaTool.structuredContent, listed);
    } finally {
      await mcp.client.close();
    }
    // Another principal, and an id that names no order: the same 404, so neither tells whether the order exists.
    const stranger = await buyer();
    for (const [token, id] of [
      [stranger.token, orderId],
      [b.token, '7d1c8a52-58c4-4a51-9a3e-2d8f4d0c9b11'],
    ] as const) {
      const r = await sys.call('GET', `/v1/orders/${id}`, { token });
      assert.equal(r.status, 404);
      assert.ok(isTypedError(r.body, 'not_found'), JSON.stringify(r.body));
    }
    const strangerMcp = await connectMcp(sys.baseUrl, stranger.token);
    try {
      const r = await strangerMcp.client.callTool({ name: 'get_order', arguments: { order_id: orderId } });
      assert.equal(r.isError, true);
      assert.equal((r.structuredContent as any).code, 'not_found');
    } finally {
      await strangerMcp.client.close();
    }
    const bad = await sys.call('GET', '/v1/orders/not-a-uuid', { token: b.token });
    assert.equal(bad.status, 422);
    assert.ok(isTypedError(bad.body, 'validation_failed'));
  });
});
