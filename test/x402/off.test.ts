// The x402 rail when the operator has not configured it: its routes do not exist and nothing advertises it; and
// the settings refuse a facilitator with nowhere to pay.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../contracts/index.ts';
import { isTypedError } from '../support/http.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
before(async () => {
  sys = await startSystem({}, ['gateway']);
});
after(async () => {
  await sys.stop();
});

test('[X402-OFF] with no facilitator configured the x402 routes answer 404 and nothing is advertised', async () => {
  for (const path of [
    '/x402/listings/00000000-0000-4000-8000-000000000000/content?format=md',
    '/x402/discovery/resources',
    `/x402/reports/sha256:${'0'.repeat(64)}`,
  ]) {
    const res = await fetch(`${sys.baseUrl}${path}`, { headers: { 'payment-signature': 'e30=' } });
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get('payment-required'), null);
    assert.ok(isTypedError(await res.json(), 'not_found'), path);
  }
  const openapi = await (await fetch(`${sys.baseUrl}/openapi.json`)).text();
  assert.ok(!openapi.includes('x402'), 'the OpenAPI document does not mention the rail');
});

test('[X402-CONFIG] the settings refuse a facilitator without a pay-to address, and a network or asset that is not an EVM one', () => {
  const base = { ASSAY_X402_FACILITATOR_URL: 'http://127.0.0.1:9/' };
  assert.throws(() => loadConfig(base), /ASSAY_X402_PAY_TO/);
  const payTo = '0x1111111111111111111111111111111111111111';
  assert.equal(loadConfig({ ...base, ASSAY_X402_PAY_TO: payTo }).x402FacilitatorUrl, 'http://127.0.0.1:9');
  assert.throws(
    () => loadConfig({ ...base, ASSAY_X402_PAY_TO: payTo, ASSAY_X402_NETWORK: 'solana:mainnet' }),
    /CAIP-2/,
  );
  assert.throws(() => loadConfig({ ...base, ASSAY_X402_PAY_TO: payTo, ASSAY_X402_ASSET: 'USDC' }), /EVM address/);
  assert.throws(() => loadConfig({ ...base, ASSAY_X402_PAY_TO: payTo, ASSAY_X402_ATOMIC_PER_CENT: '0' }), /integer/);
});
