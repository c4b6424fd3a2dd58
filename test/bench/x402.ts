// `npm run bench:x402`: purchases per second on the x402 rail against the loopback facilitator (test/support/
// x402-facilitator.ts: viem recovers each EIP-3009 signature at /verify and again at /settle), beside the card-free
// purchase path in the same system (a sandbox agent's credits: POST /v1/orders, then its content as JSON). Each x402
// purchase is one paid request (verify, the purchase rules, settle, credit, buy, deliver with a receipt and a signed
// x402 bundle), its payment signed before the clock starts, as a client that already read the 402 sends it; the
// credits purchase is the order and its delivery, so both rows hand the same content over. Rounds alternate the two
// paths and print medians; the facilitator's own time per purchase is shown beside the x402 rows. One process
// (`assay serve` in this process, with the facilitator and the clients): the figures share two cores with all of it.
//   npm run bench:x402 -- [--seconds 5] [--rounds 3] [--concurrency 16]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { publish, registerSeller, reportDigestOf, artifactContent } from '../support/catalog.ts';
import { startSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';
import { startFacilitator } from '../support/x402-facilitator.ts';
import { machineSpeed } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const network = 'eip155:84532';
const asset = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const priceCents = 50;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

const facilitator = await startFacilitator({ network, asset });
const operator = privateKeyToAccount(generatePrivateKey());
const sys = await startSystem({
  LOG_LEVEL: 'warn',
  ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
  ASSAY_SANDBOX_GRANT_CENTS: '100000000',
  ASSAY_X402_FACILITATOR_URL: facilitator.url,
  ASSAY_X402_NETWORK: network,
  ASSAY_X402_ASSET: asset,
  ASSAY_X402_PAY_TO: operator.address,
  ASSAY_X402_ASSET_NAME: 'USDC',
});
try {
  /** A listing whose report meets its floor, by a live seller (x402) or a sandbox one (credits). */
  async function listing(token: string, key: string): Promise<string> {
    const a = await publish(
      sys,
      token,
      { title: key, content: artifactContent(key, [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.']) },
      `a-${key}`,
    );
    await reportDigestOf(sys, token, a.id);
    const l = await sys.call('POST', '/v1/listings', {
      token,
      body: { artifact_id: a.id, price_cents: priceCents, floor: 0.7, formats: ['md'] },
      key: `l-${key}`,
    });
    if (l.status !== 201) throw new Error(`listing failed: ${l.status} ${JSON.stringify(l.body)}`);
    return l.body.id;
  }
  const liveSeller = await mintToken(sys.config, {
    sandbox: false,
    scopes: ['read:artifact', 'read:trust', 'purchase', 'publish'],
  });
  const x402Listing = await listing(liveSeller, 'bench-x402');
  const sandboxSeller = await registerSeller(sys);
  const creditsListing = await listing(sandboxSeller.token, 'bench-credits');
  const resource = `${sys.baseUrl}/x402/listings/${x402Listing}/content?format=md`;
  const required = decodePaymentRequiredHeader((await fetch(resource)).headers.get('payment-required')!);
  const req: PaymentRequirements = required.accepts[0]!;
  const agents = await Promise.all(Array.from({ length: concurrency }, () => sys.register()));
  const payers = Array.from({ length: concurrency }, () => privateKeyToAccount(generatePrivateKey()));
  for (const p of payers) facilitator.fund(p.address, 10n ** 15n);

  /** Payments signed ahead, so the measured window holds the service's work and not the client's signing. */
  async function signed(n: number): Promise<string[][]> {
    const now = Math.floor(Date.now() / 1000);
    return Promise.all(
      payers.map(async (account) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const authorization = {
            from: account.address,
            to: getAddress(req.payTo),
            value: req.amount,
            validAfter: '0',
            validBefore: String(now + 3600),
            nonce: `0x${randomBytes(32).toString('hex')}` as `0x${string}`,
          };
          const signature = await account.signTypedData({
            domain: { name: 'USDC', version: '2', chainId: 84532, verifyingContract: getAddress(asset) },
            types: authorizationTypes,
            primaryType: 'TransferWithAuthorization',
            message: { ...authorization, value: BigInt(req.amount), validAfter: 0n, validBefore: BigInt(now + 3600) },
          });
          out.push(
            encodePaymentSignatureHeader({ x402Version: 2, accepted: req, payload: { authorization, signature } }),
          );
        }
        return out;
      }),
    );
  }

  interface Row {
    perSecond: number;
    p50: number;
    p99: number;
    failed: number;
    facilitatorMsEach?: number;
  }

  async function x402Round(payments: string[][]): Promise<Row> {
    const latencies: number[] = [];
    let failed = 0;
    const busy0 = facilitator.busyMs;
    const until = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(
      payments.map(async (mine) => {
        for (const signature of mine) {
          if (performance.now() >= until) return;
          const t0 = performance.now();
          const res = await fetch(resource, { headers: { 'payment-signature': signature } });
          await res.arrayBuffer();
          if (res.status === 200) latencies.push(performance.now() - t0);
          else failed++;
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    return {
      perSecond: latencies.length / elapsed,
      p50: pct(latencies, 0.5),
      p99: pct(latencies, 0.99),
      failed,
      facilitatorMsEach: (facilitator.busyMs - busy0) / Math.max(1, latencies.length),
    };
  }

  async function creditsRound(round: number): Promise<Row> {
    const latencies: number[] = [];
    let failed = 0;
    const until = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(
      agents.map(async (agent, a) => {
        for (let i = 0; performance.now() < until; i++) {
          const t0 = performance.now();
          const bought = await sys.call('POST', '/v1/orders', {
            token: agent.token,
            body: { listing_id: creditsListing, formats: ['md'] },
            key: `bench-${round}-${a}-${i}`,
          });
          if (bought.status !== 201) {
            failed++;
            continue;
          }
          // The content, as the x402 answer carries it (retried while the projection catches up).
          for (let tries = 0; tries < 50; tries++) {
            const c = await sys.call('GET', `/v1/orders/${bought.body.order_id}/content?format=md`, {
              token: agent.token,
            });
            if (c.status === 200) break;
            await new Promise((r) => setTimeout(r, 20));
          }
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    return { perSecond: latencies.length / elapsed, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99), failed };
  }

  const line = (what: string, r: Row) =>
    `${what.padEnd(34)} ${r.perSecond.toFixed(1).padStart(7)}/s  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms` +
    (r.failed ? `  (${r.failed} not 200/201)` : '') +
    (r.facilitatorMsEach === undefined ? '' : `  facilitator ${r.facilitatorMsEach.toFixed(2)} ms a purchase`);

  console.log(
    `x402: ${concurrency} clients, ${seconds} s a row, ${rounds} rounds; price ${priceCents} cents; machine loop ${machineSpeed().toFixed(0)} ops/ms`,
  );
  const x: Row[] = [];
  const c: Row[] = [];
  // Enough signed payments for a round at a generous rate, signed before the round starts.
  const perClient = Math.max(20, Math.ceil((seconds * 400) / concurrency));
  for (let round = 1; round <= rounds; round++) {
    const payments = await signed(perClient);
    const xr = await x402Round(payments);
    const cr = await creditsRound(round);
    x.push(xr);
    c.push(cr);
    console.log(`round ${round}`);
    console.log(`  ${line('x402 (paid request)', xr)}`);
    console.log(`  ${line('credits (order + content)', cr)}`);
  }
  const med = (rows: Row[]): Row => ({
    perSecond: median(rows.map((r) => r.perSecond)),
    p50: median(rows.map((r) => r.p50)),
    p99: median(rows.map((r) => r.p99)),
    failed: rows.reduce((s, r) => s + r.failed, 0),
    ...(rows[0]!.facilitatorMsEach === undefined
      ? {}
      : { facilitatorMsEach: median(rows.map((r) => r.facilitatorMsEach!)) }),
  });
  console.log('medians');
  console.log(`  ${line('x402 (paid request)', med(x))}`);
  console.log(`  ${line('credits (order + content)', med(c))}`);
  console.log(
    `facilitator calls: verify ${facilitator.calls.verify}, settle ${facilitator.calls.settle}; operator received ${facilitator.balanceOf(operator.address)} atomic units`,
  );
} finally {
  await sys.stop();
  await facilitator.close();
}
