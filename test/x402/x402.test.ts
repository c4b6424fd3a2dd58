// The x402 rail end to end (docs/x402.md): a real x402 client (@x402/fetch with a local viem account) buys a live
// listing through the loopback facilitator (signatures checked with viem against an in-memory chain), and each way a
// payment can fail gets its documented answer and changes nothing: no credit, no order, no token moved.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { getAddress } from 'viem';
import { x402PayerIds } from '../../actors/index.ts';
import { artifactContent, independentlyVerify, verifiedListing } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { connectMcp } from '../support/mcp.ts';
import { eventually, projectionsCaughtUp, runCli, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';
import { type LoopbackFacilitator, startFacilitator } from '../support/x402-facilitator.ts';

const network = 'eip155:84532';
const asset = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const atomicPerCent = 10_000n;
const artifacts = new URL('../../test-artifacts/x402/', import.meta.url).pathname;
const sha256 = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

let sys: TestSystem;
let seller: string;
let facilitator: LoopbackFacilitator;
const operator = privateKeyToAccount(generatePrivateKey());
let good: { listingId: string; artifactId: string };
let missing: { listingId: string; artifactId: string };
/** The same price as `good`: a payment for one is a well-formed payment for the other. */
let twin: { listingId: string; artifactId: string };
/** Priced above the x402 payers' mandate cap (95 cents). */
let pricey: { listingId: string; artifactId: string };

before(async () => {
  facilitator = await startFacilitator({ network, asset });
  sys = await startSystem({
    ASSAY_X402_FACILITATOR_URL: facilitator.url,
    ASSAY_X402_NETWORK: network,
    ASSAY_X402_ASSET: asset,
    ASSAY_X402_PAY_TO: operator.address,
    ASSAY_X402_ASSET_NAME: 'USDC',
    ASSAY_X402_ASSET_VERSION: '2',
    ASSAY_X402_MANDATE_CAP_CENTS: '95',
    ASSAY_REPORT_WAIT_SECONDS: '2',
  });
  seller = await mintToken(sys.config, {
    sandbox: false,
    scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'],
  });
  good = await verifiedListing(sys, seller, 'x402-good', { price: 90, good: true });
  missing = await verifiedListing(sys, seller, 'x402-miss', { price: 60, good: false });
  pricey = await verifiedListing(sys, seller, 'x402-pricey', { price: 99, good: true });
  twin = await verifiedListing(sys, seller, 'x402-twin', { price: 90, good: true });
  await mkdir(artifacts, { recursive: true });
});
after(async () => {
  await sys.stop();
  await facilitator.close();
});

const resource = (listingId: string, format = 'md') =>
  `${sys.baseUrl}/x402/listings/${listingId}/content?format=${format}`;

/** A funded buyer with its own key, paying through @x402/fetch; `sent` keeps each PAYMENT-SIGNATURE it sent. */
function buyer(usdcAtomic = 10_000_000n) {
  const account = privateKeyToAccount(generatePrivateKey());
  facilitator.fund(account.address, usdcAtomic);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account, networks: [network] });
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const signature = request.headers.get('payment-signature');
    if (signature) sent.push(signature);
    return fetch(request);
  };
  return { account, client, pay: wrapFetchWithPayment(recording, client), sent };
}

/** What the payer's principal holds: its orders and its balance (read from the projections of its facts). */
/** The payer principal's orders and credits, read once every fact appended so far is projected (a second credit
 * appended by a retry must be seen, not missed because the projection lags on a busy machine). */
async function principalState(address: string) {
  const { principalId } = x402PayerIds(network, address);
  await projectionsCaughtUp(sys);
  const [orders] = await sys.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM orders WHERE buyer_principal_id = ${principalId}`;
  const [credits] = await sys.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM ledger_entries WHERE principal_id = ${principalId}`;
  return { principalId, orders: orders!.n, credits: credits!.n };
}

/** An EIP-3009 payment signed by hand, for the cases a well-behaved client never sends. */
async function handMadePayment(
  account: PrivateKeyAccount,
  req: PaymentRequirements,
  o: { value?: string; validBefore?: string; network?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from: account.address,
    to: getAddress(req.payTo),
    value: o.value ?? req.amount,
    validAfter: '0',
    validBefore: o.validBefore ?? String(now + req.maxTimeoutSeconds),
    nonce: `0x${randomBytes(32).toString('hex')}` as `0x${string}`,
  };
  const chainId = Number((o.network ?? req.network).split(':')[1]);
  const signature = await account.signTypedData({
    domain: {
      name: String(req.extra.name),
      version: String(req.extra.version),
      chainId,
      verifyingContract: getAddress(req.asset),
    },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: 0n,
      validBefore: BigInt(authorization.validBefore),
    },
  });
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted: { ...req, network: (o.network ?? req.network) as `${string}:${string}` },
    payload: { authorization, signature },
  });
}

async function requirementsOf(listingId: string): Promise<PaymentRequirements> {
  const res = await fetch(resource(listingId));
  assert.equal(res.status, 402);
  return decodePaymentRequiredHeader(res.headers.get('payment-required')!).accepts[0]!;
}

test('[X402-402] an unpaid request answers 402 with PAYMENT-REQUIRED: exact scheme, the configured network, asset and payTo, the price at the configured rate, the USDC EIP-712 domain, and a description naming the artifact, its content hash, report and verdict, and the refund rule', async () => {
  const res = await fetch(resource(good.listingId));
  assert.equal(res.status, 402);
  const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
  assert.equal(required.x402Version, 2);
  assert.deepEqual(await res.json(), JSON.parse(JSON.stringify(required)), 'the body is the same object');
  const [req] = required.accepts;
  assert.equal(required.accepts.length, 1);
  assert.equal(req!.scheme, 'exact');
  assert.equal(req!.network, network);
  assert.equal(req!.asset, asset);
  assert.equal(req!.payTo, operator.address);
  assert.equal(req!.amount, String(90n * atomicPerCent));
  assert.deepEqual(req!.extra, { name: 'USDC', version: '2' });
  assert.equal(required.resource.url, resource(good.listingId));
  const artifact = (
    await sys.sql<{ current_content_hash: string; current_report_digest: string }[]>`
    SELECT current_content_hash, current_report_digest FROM artifacts WHERE id = ${good.artifactId}`
  )[0]!;
  const d = required.resource.description ?? '';
  for (const part of [good.artifactId, artifact.current_content_hash, artifact.current_report_digest, 'meets']) {
    assert.ok(d.includes(part), `the description names ${part}: ${d}`);
  }
  assert.match(d, /refunded to the payer's Assay credit balance/);
  // The report the description names is readable with no account, and verifies offline with the public keys.
  const reportUrl = /readable without an account at (\S+) /.exec(d)?.[1];
  assert.equal(reportUrl, `${sys.baseUrl}/x402/reports/${artifact.current_report_digest}`);
  const report = await (await fetch(reportUrl!)).json();
  const jwks = await (await fetch(`${sys.config.webUrl}/.well-known/report-keys`)).json();
  assert.deepEqual(independentlyVerify(report, jwks), { digestOk: true, signatureOk: true });
  assert.equal((await fetch(`${sys.baseUrl}/x402/reports/sha256:${'0'.repeat(64)}`)).status, 404);
  const miss = decodePaymentRequiredHeader((await fetch(resource(missing.listingId))).headers.get('payment-required')!);
  assert.match(miss.resource.description ?? '', /misses the listing's floor/);
  // A HEAD with a payment pays nothing: it is answered as the unpaid GET.
  const head = await fetch(resource(good.listingId), { method: 'HEAD', headers: { 'payment-signature': 'e30=' } });
  assert.equal(head.status, 402);
  assert.ok(head.headers.get('payment-required'));
  const unknown = await fetch(resource('00000000-0000-4000-8000-000000000000'));
  assert.equal(unknown.status, 404);
  assert.ok(isTypedError(await unknown.json(), 'not_found'));
});

test('[X402-BUY] @x402/fetch with a local account buys a listing: 402, payment, content whose sha256 is the content hash, PAYMENT-RESPONSE, and a receipt and x402 bundle that assay verify-report checks', async () => {
  const b = buyer();
  const before = facilitator.balanceOf(b.account.address);
  const res = await b.pay(resource(good.listingId));
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(b.sent.length, 1, 'one payment was sent, after the 402');
  assert.equal(sha256(body.content), body.content_hash, 'the bytes are the judged bytes');
  const artifact = (
    await sys.sql<{ current_content_hash: string }[]>`
    SELECT current_content_hash FROM artifacts WHERE id = ${good.artifactId}`
  )[0]!;
  assert.equal(body.content_hash, artifact.current_content_hash);
  const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
  assert.equal(settled.success, true);
  assert.equal(settled.network, network);
  assert.match(settled.transaction, /^0x[0-9a-f]{64}$/);
  const orderId = res.headers.get('assay-order-id');
  assert.equal(body.order_id, orderId);
  // The token moved once, to the operator.
  assert.equal(facilitator.balanceOf(b.account.address), before - 90n * atomicPerCent);
  assert.equal(facilitator.balanceOf(operator.address) >= 90n * atomicPerCent, true);
  // Bought through the ordinary purchase path for the payer's principal: credited, held, released.
  const p = await principalState(b.account.address);
  const [order] = await sys.sql<{ state: string; escrow_cents: number; buyer_principal_id: string }[]>`
    SELECT state, escrow_cents::int, buyer_principal_id FROM orders WHERE id = ${orderId}`;
  assert.deepEqual(order, { state: 'released', escrow_cents: 90, buyer_principal_id: p.principalId });
  assert.equal(body.receipt.body.order_id, orderId);
  assert.equal(body.receipt.body.content_hash, body.content_hash);
  assert.equal(body.bundle.body.bundle_version, 'x402-bundle/1');
  assert.equal(body.bundle.body.facilitator.settle.transaction, settled.transaction);
  assert.equal(body.bundle.body.compliance_bundle.body.outcome.kind, 'cleared_escrow');
  for (const [name, doc] of [
    ['receipt', body.receipt],
    ['bundle', body.bundle],
  ] as const) {
    const file = `${artifacts}${name}.json`;
    await writeFile(file, JSON.stringify(doc));
    const r = await runCli(sys, ['verify-report', file, '--keys', `${sys.baseUrl}/.well-known/report-keys`]);
    assert.equal(r.code, 0, `${name}: ${r.stdout}${r.stderr}`);
    if (name === 'bundle') {
      for (const inner of ['compliance bundle', 'report', 'receipt']) {
        assert.match(r.stdout, new RegExp(`the embedded ${inner} sha256:[0-9a-f]{64} verifies`));
      }
    }
  }
  // A bundle whose embedded payment was edited no longer verifies.
  const forged = structuredClone(body.bundle);
  forged.body.payment_payload.payload.authorization.value = '1';
  await writeFile(`${artifacts}forged.json`, JSON.stringify(forged));
  const r = await runCli(sys, [
    'verify-report',
    `${artifacts}forged.json`,
    '--keys',
    `${sys.baseUrl}/.well-known/report-keys`,
  ]);
  assert.equal(r.code, 1);

  firstBuy = { sent: b.sent, orderId: orderId!, address: b.account.address, balance: before - 90n * atomicPerCent };
});

let firstBuy: { sent: string[]; orderId: string; address: string; balance: bigint } | undefined;

test('[X402-REPLAY] a replayed payment signature buys nothing: the same order again, no settlement, no token moved; two copies sent at once buy once', async () => {
  assert.ok(firstBuy, 'X402-BUY ran first');
  const settles = facilitator.calls.settle;
  const again = await fetch(resource(good.listingId), { headers: { 'payment-signature': firstBuy.sent[0]! } });
  const replayed = await again.json();
  assert.equal(again.status, 200, JSON.stringify(replayed));
  assert.equal(replayed.order_id, firstBuy.orderId);
  assert.equal(facilitator.calls.settle, settles, 'nothing settled again');
  assert.equal(facilitator.balanceOf(firstBuy.address), firstBuy.balance);
  const p = await principalState(firstBuy.address);
  assert.deepEqual([p.orders, p.credits], [1, 1], 'one order and one credit');
  // Sent to another listing's resource, it buys nothing there either.
  const elsewhere = await fetch(resource(twin.listingId), { headers: { 'payment-signature': firstBuy.sent[0]! } });
  assert.equal(elsewhere.status, 402);
  assert.match(decodePaymentRequiredHeader(elsewhere.headers.get('payment-required')!).error ?? '', /another listing/);
  assert.equal(facilitator.calls.settle, settles, 'nothing settled for it');

  // Two copies of one new signature at the same moment: one settlement, one credit, one order.
  const req = await requirementsOf(good.listingId);
  const account = privateKeyToAccount(generatePrivateKey());
  facilitator.fund(account.address, 10_000_000n);
  const signature = await handMadePayment(account, req);
  const answers = await Promise.all(
    [1, 2].map(() => fetch(resource(good.listingId), { headers: { 'payment-signature': signature } })),
  );
  const statuses = answers.map((a) => a.status);
  assert.ok(statuses.includes(200), `one copy delivers: ${statuses}`);
  for (const st of statuses)
    assert.ok(st === 200 || st === 402, `each copy delivers or is told it settled elsewhere: ${st}`);
  assert.equal(facilitator.balanceOf(account.address), 10_000_000n - BigInt(req.amount), 'paid once');
  const q = await principalState(account.address);
  assert.deepEqual([q.orders, q.credits], [1, 1], 'one order and one credit');
});

test('[X402-RESUME] a payment settled but not yet bought (the process stopped between the steps) is finished by its retry: credited once, bought once', async () => {
  const b = buyer();
  const first = await b.pay(resource(good.listingId));
  assert.equal(first.status, 200);
  const orderId = first.headers.get('assay-order-id')!;
  // What a crash after the settlement and before the purchase leaves: the payment recorded as settled, no order.
  await sys.sql`UPDATE x402_payments SET order_id = NULL WHERE order_id = ${orderId}`;
  const settles = facilitator.calls.settle;
  const again = await fetch(resource(good.listingId), { headers: { 'payment-signature': b.sent[0]! } });
  const body = await again.json();
  assert.equal(again.status, 200, JSON.stringify(body));
  assert.equal(body.order_id, orderId, 'the same order');
  assert.equal(facilitator.calls.settle, settles, 'not settled again');
  const p = await principalState(b.account.address);
  assert.deepEqual([p.orders, p.credits], [1, 1], 'one order and one credit');
  const [balance] = await sys.sql<{ available: number }[]>`
    SELECT balance_after_cents::int AS available FROM ledger WHERE principal_id = ${p.principalId}
    ORDER BY stream_seq DESC LIMIT 1`;
  assert.equal(balance!.available, 0, 'the credit paid for the order, nothing more');
});

test('[X402-PENDING] a payment for an edition whose report is pending holds the order: 503 with PAYMENT-RESPONSE and the order id, the same signature again charges nothing, and an order refunded for want of a report answers order_refunded', async () => {
  const pend = await verifiedListing(sys, seller, 'x402-pend', { price: 70, good: true });
  // With no active report key the verifier cannot sign: the new edition stays pending, as with a judge that is down.
  const [key] = await sys.sql<{ kid: string }[]>`
    UPDATE signing_keys SET retired_at = now() WHERE purpose = 'report' AND retired_at IS NULL RETURNING kid`;
  let retired = true;
  try {
    const edition = await sys.call('POST', `/v1/artifacts/${pend.artifactId}/editions`, {
      token: seller,
      body: {
        content: `${artifactContent('x402-pend', [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.'])}\n`,
      },
      key: 'x402-pend-2',
    });
    assert.equal(edition.status, 201, JSON.stringify(edition.body));
    const required = decodePaymentRequiredHeader(
      (await fetch(resource(pend.listingId))).headers.get('payment-required')!,
    );
    assert.match(required.resource.description ?? '', /not judged yet/);
    const b = buyer();
    const held = await b.pay(resource(pend.listingId));
    const heldBody = await held.json();
    assert.equal(held.status, 503, JSON.stringify(heldBody));
    assert.ok(isTypedError(heldBody, 'unavailable'));
    assert.equal(held.headers.get('retry-after'), '2');
    assert.equal(decodePaymentResponseHeader(held.headers.get('payment-response')!).success, true);
    const orderId = held.headers.get('assay-order-id')!;
    const settles = facilitator.calls.settle;
    const again = await fetch(resource(pend.listingId), { headers: { 'payment-signature': b.sent[0]! } });
    assert.equal(again.status, 503);
    assert.equal(again.headers.get('assay-order-id'), orderId, 'the same order');
    assert.equal(facilitator.calls.settle, settles, 'charged once');
    await eventually(
      'the order refunded for want of a report',
      async () => {
        const [o] = await sys.sql<{ state: string }[]>`SELECT state FROM orders WHERE id = ${orderId}`;
        return o?.state === 'auto_refunded' ? true : undefined;
      },
      30_000,
    );
    await sys.sql`UPDATE signing_keys SET retired_at = NULL WHERE kid = ${key!.kid}`;
    retired = false;
    const refunded = await fetch(resource(pend.listingId), { headers: { 'payment-signature': b.sent[0]! } });
    const body = await refunded.json();
    assert.equal(refunded.status, 409, JSON.stringify(body));
    assert.ok(isTypedError(body, 'order_refunded'));
    assert.equal(body.balance_cents, 70);
    assert.equal(body.bundle.body.compliance_bundle.body.outcome.reason, 'no_report');
    assert.equal(body.bundle.body.receipt, null, 'nothing was delivered');
  } finally {
    if (retired) await sys.sql`UPDATE signing_keys SET retired_at = NULL WHERE kid = ${key!.kid}`;
  }
});

test('[X402-FLOOR] a payment for an edition that misses its floor is refunded to the payer principal: 409 order_refunded with PAYMENT-RESPONSE, the balance and the evidence bundle', async () => {
  const b = buyer();
  const res = await b.pay(resource(missing.listingId));
  const body = await res.json();
  assert.equal(res.status, 409, JSON.stringify(body));
  assert.ok(isTypedError(body, 'order_refunded'));
  assert.equal(decodePaymentResponseHeader(res.headers.get('payment-response')!).success, true);
  assert.equal(body.order_id, res.headers.get('assay-order-id'));
  assert.equal(body.balance_cents, 60, 'the price is back on the payer principal');
  assert.equal(body.bundle.body.compliance_bundle.body.outcome.kind, 'refunded_escrow');
  const [order] = await sys.sql<{ state: string }[]>`SELECT state FROM orders WHERE id = ${body.order_id}`;
  assert.equal(order!.state, 'auto_refunded');
});

test('[X402-REFUSED] an underpayment, a wrong network, an expired authorization and a facilitator that is down each get their documented answer and change nothing', async () => {
  const req = await requirementsOf(good.listingId);
  const account = privateKeyToAccount(generatePrivateKey());
  facilitator.fund(account.address, 10_000_000n);
  const now = Math.floor(Date.now() / 1000);
  const cases: [string, () => Promise<string>, number, RegExp][] = [
    ['underpayment', () => handMadePayment(account, req, { value: String(BigInt(req.amount) - 1n) }), 402, /value/],
    ['overpayment', () => handMadePayment(account, req, { value: String(BigInt(req.amount) + 1n) }), 402, /value/],
    ['wrong network', () => handMadePayment(account, req, { network: 'eip155:8453' }), 402, /invalid_network/],
    ['expired', () => handMadePayment(account, req, { validBefore: String(now - 60) }), 402, /valid_before/],
    ['garbage', async () => 'not base64 json', 402, /invalid_payload/],
  ];
  const settles = facilitator.calls.settle;
  for (const [what, make, status, error] of cases) {
    const res = await fetch(resource(good.listingId), { headers: { 'payment-signature': await make() } });
    assert.equal(res.status, status, what);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.match(required.error ?? '', error, what);
    assert.equal(required.accepts[0]!.amount, req.amount, `${what}: the requirements again`);
  }
  // The purchase rules run before anything is settled: a price above the x402 mandate's cap is refused as for
  // any buyer, and the payment is never submitted.
  const over = await fetch(resource(pricey.listingId), {
    headers: { 'payment-signature': await handMadePayment(account, await requirementsOf(pricey.listingId)) },
  });
  const overBody = await over.json();
  assert.equal(over.status, 403, JSON.stringify(overBody));
  assert.ok(isTypedError(overBody, 'mandate_exceeded'));
  assert.match(overBody.message, /nothing was settled/);
  facilitator.down = true;
  try {
    const res = await fetch(resource(good.listingId), {
      headers: { 'payment-signature': await handMadePayment(account, req) },
    });
    assert.equal(res.status, 503);
    assert.ok(isTypedError(await res.json(), 'unavailable'));
  } finally {
    facilitator.down = false;
  }
  assert.equal(facilitator.calls.settle, settles, 'nothing was settled');
  assert.equal(facilitator.balanceOf(account.address), 10_000_000n, 'no token moved');
  const p = await principalState(account.address);
  assert.deepEqual([p.orders, p.credits], [0, 0], 'no credit and no order');
});

test('[X402-DISCOVERY] the live listings are x402 discovery items by the search rules, each with its requirements', async () => {
  const res = await fetch(`${sys.baseUrl}/x402/discovery/resources?topic=testing`);
  assert.equal(res.status, 200);
  const page = await res.json();
  assert.equal(page.x402Version, 2);
  const item = page.items.find((i: any) => i.resource === resource(good.listingId));
  assert.ok(item, 'the listing is discoverable');
  assert.equal(item.type, 'http');
  assert.equal(item.accepts[0].amount, String(90n * atomicPerCent));
  assert.equal(item.metadata.listing_id, good.listingId);
  const cheap = await (await fetch(`${sys.baseUrl}/x402/discovery/resources?max_price=50`)).json();
  assert.ok(
    !cheap.items.some((i: any) => i.metadata.listing_id === good.listingId),
    'max_price filters as search does',
  );
  const bad = await fetch(`${sys.baseUrl}/x402/discovery/resources?limit=0`);
  assert.equal(bad.status, 422);
});

test('[X402-MCP] buy_listing_x402 says it needs payment the way the x402 MCP transport does, and buys with the payment in _meta["x402/payment"]', async () => {
  const agent = await sys.register();
  const { client } = await connectMcp(sys.baseUrl, agent.token);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'buy_listing_x402'));
    const unpaid = await client.callTool({ name: 'buy_listing_x402', arguments: { listing_id: good.listingId } });
    assert.equal(unpaid.isError, true);
    const required = unpaid.structuredContent as any;
    assert.equal(required.x402Version, 2);
    assert.equal(required.accepts[0].amount, String(90n * atomicPerCent));
    assert.deepEqual(JSON.parse((unpaid.content as any)[0].text), required, 'the text is the same PaymentRequired');
    const b = buyer();
    const payment = await b.client.createPaymentPayload(required);
    const paid = await client.callTool({
      name: 'buy_listing_x402',
      arguments: { listing_id: good.listingId },
      _meta: { 'x402/payment': payment },
    });
    const delivery = paid.structuredContent as any;
    assert.notEqual(paid.isError, true, JSON.stringify(delivery));
    assert.equal(sha256(delivery.content), delivery.content_hash);
    const settled = (paid._meta as any)['x402/payment-response'];
    assert.equal(settled.success, true);
    assert.equal(facilitator.balanceOf(b.account.address), 10_000_000n - 90n * atomicPerCent);
    // The session's own principal paid nothing: the payment bought for the payer.
    assert.equal((await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents, agent.balanceCents);
  } finally {
    await client.close();
  }
});

test('[X402-AUDIT] after x402 purchases, refunds and refusals, assay audit holds: credits = available + held + spent', async () => {
  const r = await runCli(sys, ['audit', '--json']);
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 0, JSON.stringify(report.violations ?? r.stderr));
  const live = report.money.live;
  assert.ok(live.creditedCents >= 90 + 60);
  assert.equal(
    live.creditedCents,
    live.availableCents + live.heldCents + live.spentCents + live.withheldCents + live.reversedCents,
  );
});
