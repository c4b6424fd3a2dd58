// Revocation reaches every gateway: a token revoked at one gateway process (RFC 7009, or the account page) is
// refused by another process within the bound docs/oauth.md states (1 s), and stays refused across a restart of
// that gateway (the bucket, not the process, remembers).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { freePort } from '../support/env.ts';
import {
  accessTokenClaims,
  accountWithClient,
  approvedTokens,
  discover,
  insecure,
  oauth,
  type WebJar,
} from '../support/oauth.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

/** The bound docs/oauth.md promises: a revocation is in force on every gateway this soon after it is answered. */
const revocationBoundMs = 1000;

let sys: TestSystem;
let second: RoleProcess | null = null;
let secondUrl: string;
let as: oauth.AuthorizationServer;
let jar: WebJar;
let client: oauth.Client;

async function startSecondGateway() {
  const port = await freePort();
  const apiPort = await freePort();
  secondUrl = `http://127.0.0.1:${port}`;
  // The same public base URL (the issuer and audience of tokens), another port: two gateways behind one name.
  second = await startRoleProcess(
    'gateway',
    { ...sys.env, PORT: String(port), ASSAY_API_PORT: String(apiPort) },
    'gateway listening',
  );
}

before(async () => {
  sys = await startSystem();
  await startSecondGateway();
  as = await discover(sys.baseUrl);
  ({ jar, client } = await accountWithClient(as, sys.baseUrl, 'lin@example.com'));
});
after(async () => {
  second?.child.kill('SIGTERM');
  await second?.exited;
  await sys.stop();
});

const newTokens = () => approvedTokens(as, jar, client);

const balanceAt = (baseUrl: string, token: string) =>
  fetch(`${baseUrl}/v1/balance`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

/** How long after `revokedAt` the second gateway first refused the token (polling every 20 ms). */
async function refusedAfter(token: string, revokedAt: number): Promise<number> {
  for (;;) {
    const status = await balanceAt(secondUrl, token);
    if (status === 401) return performance.now() - revokedAt;
    assert.equal(status, 200);
    if (performance.now() - revokedAt > 10 * revocationBoundMs) return Number.POSITIVE_INFINITY;
    await sleep(20);
  }
}

test('[OAUTH-REVOCATION-BOUND] a token revoked at one gateway is refused by another within the stated bound', async (t) => {
  // An access token revoked through RFC 7009 at the first gateway.
  const a = await newTokens();
  assert.equal(await balanceAt(secondUrl, a.access_token), 200, 'the second gateway accepts it (and caches it)');
  let t0 = performance.now();
  const revoked = await oauth.revocationRequest(as, client, oauth.None(), a.access_token, insecure);
  await oauth.processRevocationResponse(revoked);
  const tokenMs = await refusedAfter(a.access_token, t0);
  assert.ok(tokenMs <= revocationBoundMs, `refused after ${tokenMs.toFixed(0)} ms`);

  // A grant revoked on the account page: its access token (cached at the second gateway) and its refresh token.
  const b = await newTokens();
  assert.equal(await balanceAt(secondUrl, b.access_token), 200);
  const claims = accessTokenClaims(b.access_token);
  t0 = performance.now();
  const res = await jar.post(`/account/grants/${claims.gid}/revoke`, {});
  assert.equal(res.status, 303);
  const grantMs = await refusedAfter(b.access_token, t0);
  assert.ok(grantMs <= revocationBoundMs, `refused after ${grantMs.toFixed(0)} ms`);
  t.diagnostic(`refused by the other gateway after ${tokenMs.toFixed(0)} ms (token), ${grantMs.toFixed(0)} ms (grant)`);

  // A gateway started after the revocation knows it from the bucket.
  second!.child.kill('SIGTERM');
  await second!.exited;
  await startSecondGateway();
  assert.equal(await balanceAt(secondUrl, a.access_token), 401);
  assert.equal(await balanceAt(secondUrl, b.access_token), 401);
  const live = await newTokens();
  assert.equal(await balanceAt(secondUrl, live.access_token), 200);
});
