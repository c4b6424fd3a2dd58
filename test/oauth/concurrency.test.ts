// The token endpoint under concurrent load: more rotations in flight than the oauth service has database
// connections, running past the moment the service reloads its token keys (every 5 s), all complete; and one refresh
// token presented twice at the same moment yields exactly one successor and revokes the family.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { accountWithClient, approvedTokens, discover, type oauth, type WebJar } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let as: oauth.AuthorizationServer;
let jar: WebJar;
let client: oauth.Client;
/** Above the service's pool of 10 connections (storage/postgres.ts). */
const chains = 24;
/** Past the service's key reload interval (actors/oauth/tokens.ts, 5 s). */
const runMs = 6500;

before(async () => {
  sys = await startSystem({ ASSAY_SANDBOX_CORPUS_ARTIFACTS: '0' });
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

test('[OAUTH-CONCURRENT-ROTATION] more rotations than database connections, across a key reload, all complete', async () => {
  const grants = await Promise.all(Array.from({ length: chains }, newGrant));
  const until = performance.now() + runMs;
  const counts = await Promise.all(
    grants.map(async (g) => {
      let token = g.refresh_token!;
      let n = 0;
      while (performance.now() < until) {
        const r = await refresh(token);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.notEqual(r.body.refresh_token, token);
        token = r.body.refresh_token!;
        n++;
      }
      return n;
    }),
  );
  const total = counts.reduce((a, b) => a + b, 0);
  const [row] = await sys.sql<{ used: number; unused: number }[]>`
    SELECT count(*) FILTER (WHERE used_at IS NOT NULL)::int AS used, count(*) FILTER (WHERE used_at IS NULL)::int AS unused
    FROM oauth_refresh_tokens`;
  // Each rotation spent one token and stored one; each chain holds exactly one unspent token at the end.
  assert.deepEqual(row, { used: total, unused: chains });
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
