// The token endpoint under concurrent load: more rotations in flight than the oauth service has database
// connections, running while an operator rotates the token key and the service reads its keys again (observed: every
// chain goes on until it is handed an access token signed with the new key), all complete; and one refresh token
// presented twice at the same moment yields exactly one successor and revokes the family.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import { rotateKey, systemClock } from '../../actors/index.ts';
import { accountWithClient, approvedTokens, discover, type oauth, type WebJar } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let jar: WebJar;
let client: oauth.Client;
/** Above the service's pool of 10 connections (storage/postgres.ts). */
const chains = 24;
/** Rotations each chain makes with the first key before the key is rotated, so the pool is busy when it is. */
const rotationsBeforeKeyChange = 3;
/** How long the chains may take to see the new key before the test gives up (a bound, not an expectation). */
const keyChangeBoundMs = 30_000;

before(async () => {
  // The service reads its keys every 200 ms (ASSAY_OAUTH_KEYS_TTL_MS): many reloads while the chains run.
  sys = await startSystem({ ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0', ASSAY_OAUTH_KEYS_TTL_MS: '200' });
  as = await discover(sys.baseUrl);
  ({ jar, client } = await accountWithClient(as, sys.baseUrl, 'load@example.com'));
});
after(async () => {
  await sys.stop();
});

const newGrant = () => approvedTokens(as, jar, client);

/** One refresh over plain HTTP; a request that hangs fails the test instead of the run. */
async function refresh(token: string): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${sys.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id }),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, body: await res.json() };
}

/** The id of the key an access token (asyo_ + JWT) was signed with. */
const keyIdOf = (accessToken: string) => decodeProtectedHeader(accessToken.replace(/^asyo_/, '')).kid;

test('[OAUTH-CONCURRENT-ROTATION] more rotations than database connections, across a key rotation, all complete', async () => {
  const grants = await Promise.all(Array.from({ length: chains }, newGrant));
  const firstKid = keyIdOf(grants[0]!.access_token);
  assert.ok(firstKid);
  let newKid: string | null = null;
  let readyChains = 0;
  let markReady!: () => void;
  const allReady = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const deadline = performance.now() + keyChangeBoundMs;

  const chainsDone = Promise.all(
    grants.map(async (g) => {
      let token = g.refresh_token!;
      let n = 0;
      let last = g.access_token;
      // Until this chain holds an access token signed with the new key (and the bound has not passed).
      while (newKid === null || keyIdOf(last) !== newKid) {
        assert.ok(performance.now() < deadline, `no access token signed with the rotated key ${newKid} yet`);
        const r = await refresh(token);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.notEqual(r.body.refresh_token, token);
        token = r.body.refresh_token!;
        last = r.body.access_token!;
        assert.ok([firstKid, newKid].includes(keyIdOf(last) ?? ''), 'signed with the first key or the new one');
        n++;
        if (n === rotationsBeforeKeyChange && ++readyChains === chains) markReady();
      }
      return { n, last };
    }),
  );
  // A chain that fails before all are ready ends the wait too (chainsDone settles early only by failing).
  await Promise.race([allReady, chainsDone]);
  // What `assay rotate-key --purpose token` does (cli/assay.ts), without paying a CLI start while the chains run.
  const rotated = await rotateKey(sys.sql, 'token', systemClock);
  assert.notEqual(rotated.kid, firstKid);
  newKid = rotated.kid;
  const results = await chainsDone;

  const total = results.reduce((a, r) => a + r.n, 0);
  const [row] = await sys.sql<{ used: number; unused: number }[]>`
    SELECT count(*) FILTER (WHERE used_at IS NOT NULL)::int AS used, count(*) FILTER (WHERE used_at IS NULL)::int AS unused
    FROM oauth_refresh_tokens`;
  // Each rotation spent one token and stored one; each chain holds exactly one unspent token at the end.
  assert.deepEqual(row, { used: total, unused: chains });
  // A token signed with the new key is accepted by the gateway too.
  const balance = await sys.call('GET', '/v1/balance', { token: results[0]!.last });
  assert.equal(balance.status, 200, JSON.stringify(balance.body));
});

test('[OAUTH-CONCURRENT-ROTATION] one refresh token presented twice at once: one successor, and the family is revoked', async () => {
  const g = await newGrant();
  const [a, b] = await Promise.all([refresh(g.refresh_token!), refresh(g.refresh_token!)]);
  const statuses = [a.status, b.status].sort();
  assert.deepEqual(statuses, [200, 400]);
  const winner = a.status === 200 ? a : b;
  const loser = a.status === 200 ? b : a;
  assert.equal(loser.body.error, 'invalid_grant');
  // The successor the winner got dies with the family.
  const next = await refresh(winner.body.refresh_token!);
  assert.equal(next.status, 400);
  assert.equal(next.body.error, 'invalid_grant');
  const balance = await sys.call('GET', '/v1/balance', { token: winner.body.access_token! });
  assert.equal(balance.status, 401);
});
