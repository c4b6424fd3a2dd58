// No buyer's money waits on a judge for ever: an order whose edition gets no report within
// ASSAY_REPORT_WAIT_SECONDS (here 2 s) is refunded by the real settlement sweeper, with the reason on the order, its
// event and its compliance bundle, and no trust sample against anyone (nothing was judged). A report that lands
// afterwards changes nothing for that order.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { busRequest } from '../../actors/index.ts';
import { settleRequest } from '../../actors/principal/settlement.ts';
import {
  independentlyVerifyBundle,
  artifactContent,
  registerSeller,
  reportDigestOf,
  verifiedListing,
} from '../support/catalog.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let seller: Agent;
before(async () => {
  sys = await startSystem({ ASSAY_REPORT_WAIT_SECONDS: '2' });
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

const trustOf = async (subject: string) =>
  (await sys.call('GET', `/v1/trust/${subject}`, { token: seller.token })).body as { sampleSize: number };

test('[BUY-REPORT-WAIT] an order whose report does not arrive in time is refunded, with the reason, and judges no one', async () => {
  const buyer = await sys.register();
  const { artifactId, listingId } = await verifiedListing(sys, seller.token, 'wait', { price: 700, good: true });
  const trustBefore = await Promise.all([
    trustOf(`artifact:${artifactId}`),
    trustOf(`principal:${seller.principalId}`),
    trustOf(`agent:${buyer.agentId}`),
  ]);
  // With no active report key the verifier cannot sign: the new edition stays pending, as with a judge that is down.
  const [key] = await sys.sql<{ kid: string }[]>`
    UPDATE signing_keys SET retired_at = now() WHERE purpose = 'report' AND retired_at IS NULL RETURNING kid`;
  let orderId: string;
  let trustAfter: Awaited<ReturnType<typeof trustOf>>[];
  try {
    const content = artifactContent('wait', [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.']);
    const edition = await sys.call('POST', `/v1/artifacts/${artifactId}/editions`, {
      token: seller.token,
      body: { content: `${content}\n` },
      key: 'wait-2',
    });
    assert.equal(edition.status, 201);
    const bought = await sys.call('POST', '/v1/orders', {
      token: buyer.token,
      body: { listing_id: listingId, formats: ['md'] },
      key: 'wait-buy',
    });
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    orderId = bought.body.order_id;
    const refunded = await eventually(
      'the order to be refunded for want of a report',
      async () => {
        const o = (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items.find(
          (x: any) => x.id === orderId,
        );
        return o?.state === 'auto_refunded' ? o : undefined;
      },
      15_000,
    );
    assert.equal(refunded.refundReason, 'no_report');
    assert.ok(Date.parse(refunded.updatedAt) - Date.parse(refunded.createdAt) >= 2000, 'not before the wait bound');
    // Read while the key is still retired: once it is back, the verifier signs the pending edition, a sample of its
    // own for the artifact and the seller. The refund is projected with the order's state, so its samples (none)
    // are in already.
    trustAfter = await Promise.all([
      trustOf(`artifact:${artifactId}`),
      trustOf(`principal:${seller.principalId}`),
      trustOf(`agent:${buyer.agentId}`),
    ]);
  } finally {
    await sys.sql`UPDATE signing_keys SET retired_at = NULL WHERE kid = ${key!.kid}`;
  }
  assert.equal(
    (await sys.call('GET', '/v1/balance', { token: buyer.token })).body.balance_cents,
    buyer.balanceCents,
    'the buyer has the price back',
  );
  const events = (await sys.call('GET', '/v1/events?type=order.state_changed', { token: buyer.token })).body.items;
  assert.deepEqual(
    events.map((e: any) => [e.data.state, e.data.reason]),
    [
      ['held', undefined],
      ['auto_refunded', 'no_report'],
    ],
  );
  const bundle = await sys.call('GET', `/v1/orders/${orderId}/compliance-bundle`, { token: buyer.token });
  assert.equal(bundle.status, 200);
  assert.equal(bundle.body.body.report, null);
  assert.equal(bundle.body.body.judge, null);
  assert.deepEqual([bundle.body.body.outcome.kind, bundle.body.body.outcome.reason], ['refunded_escrow', 'no_report']);
  const keys = (await sys.call('GET', '/.well-known/report-keys')).body;
  assert.deepEqual(independentlyVerifyBundle(bundle.body, keys), { digestOk: true, signatureOk: true });
  // Nothing was judged: no trust sample for the artifact, its seller or the buying agent.
  // The verification of the first edition is a sample for the artifact and the seller already; the refund adds none.
  assert.deepEqual(
    trustAfter.map((t) => t.sampleSize),
    trustBefore.map((t) => t.sampleSize),
  );
  // The report lands late: settling with it (as the sweeper would, racing) finds nothing held; the buyer is not
  // charged again.
  const digest = await reportDigestOf(sys, seller.token, artifactId);
  const late = await busRequest(
    sys.nc,
    sys.names.actorSubject('principal', buyer.principalId),
    settleRequest({ orderId: orderId!, reportDigest: digest, meanEntailment: 1 }),
    5000,
  );
  assert.deepEqual(late.ok && late.body, { order_id: orderId!, settled: false });
  const order = (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items[0];
  assert.deepEqual([order.state, order.refundReason], ['auto_refunded', 'no_report']);
  assert.equal((await sys.call('GET', '/v1/balance', { token: buyer.token })).body.balance_cents, buyer.balanceCents);
});
