// `npm run bench:oauth`: the OAuth server's token endpoint and what its tokens cost on the agent API, through the
// whole path (HTTP -> gateway -> NATS -> oauth service -> PostgreSQL). It measures refresh_token grants per second
// (each a rotation: the old token spent, a new access and refresh token signed and stored) from many grants at
// once, next to the ES256 signing rate of one process (the ceiling of what one worker could sign), and then
// GET /v1/balance with OAuth access tokens and with sandbox tokens in the same run: the gateway's verification cache
// and revocation check must keep the two equal.
//   npm run bench:oauth -- [--seconds 10] [--grants 64] [--connections 32]
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { systemEnv } from '../support/env.ts';
import { accountWithClient, approvedTokens, discover, insecure, oauth } from '../support/oauth.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { ensureWrk, registerAgents, usageByGroup, usagePerUnit, type WrkResult, wrk } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    grants: { type: 'string', default: '64' },
    connections: { type: 'string', default: '32' },
  },
});
const seconds = Number(values.seconds);
const grantCount = Number(values.grants);
const connections = Number(values.connections);
ensureWrk();

const line = (what: string, r: { perSecond: number; p50Ms: number; p99Ms: number }, extra = '') =>
  `${what.padEnd(46)} ${Math.round(r.perSecond).toString().padStart(6)}/s  p50 ${r.p50Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms${extra}`;

/** ES256 signatures one process makes per second (jose, as the oauth service signs). */
async function signCeiling(ms = 2000): Promise<number> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  await exportJWK(publicKey);
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < ms) {
    await new SignJWT({ scope: 'read:artifact purchase' }).setProtectedHeader({ alg: 'ES256' }).sign(privateKey);
    n++;
  }
  return (n * 1000) / (performance.now() - started);
}

const env = await systemEnv({ LOG_LEVEL: 'warn', ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000' });
const procs: RoleProcess[] = [];
try {
  procs.push(await startRoleProcess('actors', env, 'actor host serving'));
  procs.push(await startRoleProcess('workers', env, 'workers serving'));
  procs.push(await startRoleProcess('gateway', env, 'gateway listening'));
  const baseUrl = env.ASSAY_BASE_URL!;
  const named = Object.fromEntries(['actors', 'workers', 'gateway'].map((r, i) => [r, procs[i]!.child.pid!]));

  const as = await discover(baseUrl);
  const { jar, client } = await accountWithClient(as, baseUrl, 'bench@example.com');
  const grants: oauth.TokenEndpointResponse[] = [];
  for (let i = 0; i < grantCount; i++) grants.push(await approvedTokens(as, jar, client));
  console.log(`oauth: ${grantCount} grants of one client; ${connections} wrk connections; ${seconds} s per row`);

  // Refresh grants: every grant refreshes in a loop (rotation is sequential per grant), all grants at once.
  const latencies: number[] = [];
  const refreshFor = async (ms: number, record: boolean) => {
    const until = performance.now() + ms;
    await Promise.all(
      grants.map(async (g, i) => {
        let refresh = g.refresh_token!;
        while (performance.now() < until) {
          const t0 = performance.now();
          const res = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refresh, insecure);
          const next = await oauth.processRefreshTokenResponse(as, client, res);
          if (record) latencies.push(performance.now() - t0);
          refresh = next.refresh_token!;
          grants[i] = next;
        }
      }),
    );
  };
  await refreshFor(2000, false);
  const before = usageByGroup(named);
  const started = performance.now();
  await refreshFor(seconds * 1000, true);
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const refreshRate = {
    perSecond: latencies.length / elapsed,
    p50Ms: latencies[Math.floor(latencies.length / 2)]!,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)]!,
  };
  console.log(line('refresh_token grants (rotation)', refreshRate));
  console.log(`  CPU per grant: ${usagePerUnit(before, usageByGroup(named), latencies.length)}`);
  console.log(
    `  ceiling: ES256 signatures of one process ${Math.round(await signCeiling())}/s (a grant signs one access token)`,
  );

  // The agent API with OAuth tokens and with sandbox tokens, same run, same route, same number of agents.
  const oauthTokens = grants.map((g) => g.access_token);
  const sandboxTokens = await registerAgents(baseUrl, grantCount);
  const script = new URL('./balance.lua', import.meta.url).pathname;
  console.log(
    `token lengths: sandbox ${sandboxTokens[0]!.length} characters, OAuth ${oauthTokens[0]!.length} characters`,
  );
  // Alternated twice, so drift of the machine over the run (page cache, CPU frequency) does not favour either kind.
  const rows: [string, string[]][] = [
    ['GET /v1/balance, sandbox tokens', sandboxTokens],
    ['GET /v1/balance, OAuth access tokens', oauthTokens],
  ];
  const rates = new Map<string, number[]>();
  for (const round of [1, 2]) {
    for (const [what, tokens] of rows) {
      const o = { url: `${baseUrl}/v1/balance`, script, tokens, connections };
      if (round === 1) await wrk({ ...o, seconds: 3 });
      const u0 = usageByGroup(named);
      const r: WrkResult = await wrk({ ...o, seconds });
      rates.set(what, [...(rates.get(what) ?? []), r.perSecond]);
      console.log(line(`${what} (round ${round})`, r, `  non-2xx ${r.non2xx}`));
      console.log(`  CPU per request: ${usagePerUnit(u0, usageByGroup(named), r.requests)}`);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [sandboxRate, oauthRate] = rows.map(([what]) => mean(rates.get(what)!));
  console.log(`OAuth tokens / sandbox tokens on GET /v1/balance: ${((oauthRate! / sandboxRate!) * 100).toFixed(1)}%`);
} finally {
  for (const p of procs.reverse()) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
  await dropEnv(env).catch(() => {});
}
