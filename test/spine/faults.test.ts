// Faults around the process: NATS going away and coming back, start-up without NATS or PostgreSQL, and SIGTERM
// with requests in flight.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import { agentBucket, type LedgerFact, plans } from '../../contracts/index.ts';
import { connectNats } from '../../storage/index.ts';
import { freePort, systemEnv } from '../support/env.ts';
import { startNatsServer, startRoleProcess } from '../support/processes.ts';
import { call } from '../support/http.ts';
import { dropEnv, eventually, startSystem, type TestSystem } from '../support/system.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

test('[SPINE-NATS-OUTAGE] with NATS stopped the gateway answers 503 promptly, and serves again when it is back', async () => {
  const nats = await startNatsServer();
  cleanups.push(() => nats.cleanup());
  const requestTimeoutMs = 2000;
  const sys: TestSystem = await startSystem({ NATS_URL: nats.url, ASSAY_REQUEST_TIMEOUT_MS: String(requestTimeoutMs) });
  cleanups.push(() => sys.stop());
  const agent = await sys.register();
  assert.equal(
    (await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 3 }, key: 'o-1' })).status,
    201,
  );

  await nats.stop();
  const started = Date.now();
  const during = await Promise.all([
    sys.call('GET', '/v1/balance', { token: agent.token }),
    sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 5 }, key: 'o-2' }),
  ]);
  const elapsed = Date.now() - started;
  for (const r of during) {
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'unavailable');
    assert.equal(r.body.retryable, true);
  }
  assert.ok(elapsed < requestTimeoutMs + 1000, `answered after ${elapsed} ms`);
  const health = await sys.call('GET', '/healthz');
  assert.equal(health.body.nats, false);

  await nats.start();
  const balance = await eventually(
    'the gateway to serve again',
    async () => {
      const r = await sys.call('GET', '/v1/balance', { token: agent.token });
      return r.status === 200 ? r.body.balance_cents : undefined;
    },
    30_000,
  );
  assert.equal(balance, agent.balanceCents + 300, 'the stream kept what was acknowledged');
  // The refused top-up may be retried with its key: applied exactly once.
  const retried = await eventually('the top-up to go through', async () => {
    const r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 5 }, key: 'o-2' });
    return r.status === 201 ? r : undefined;
  });
  assert.equal(retried.body.amount_cents, 500);
  const final = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.equal(final.body.balance_cents, agent.balanceCents + 800);
});

test('[SPINE-STARTUP] with NATS unreachable, start exits at once naming the URL it tried', async () => {
  const port = await freePort();
  const env = await systemEnv({ NATS_URL: `nats://127.0.0.1:${port}` });
  const started = Date.now();
  const p = startRoleProcess('serve', env, 'gateway listening').catch((err: Error) => err.message);
  const message = await p;
  assert.ok(typeof message === 'string');
  assert.match(message, new RegExp(`cannot reach NATS at nats://127\\.0\\.0\\.1:${port}`));
  assert.match(message, /exited with 1/);
  assert.ok(Date.now() - started < 15_000);
});

test('[SPINE-STARTUP] with PostgreSQL unreachable, start exits at once naming the URL it tried', async () => {
  const port = await freePort();
  const env = await systemEnv({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/assay_x` });
  const message = await startRoleProcess('serve', env, 'gateway listening').catch((err: Error) => err.message);
  assert.ok(typeof message === 'string');
  assert.match(message, new RegExp(`cannot reach PostgreSQL at postgres://postgres@127\\.0\\.0\\.1:${port}/assay_x`));
  assert.match(message, /exited with 1/);
});

test('[SPINE-SHUTDOWN] SIGTERM finishes in-flight requests, refuses new ones, and exits 0', async () => {
  const env = await systemEnv();
  cleanups.push(() => dropEnv(env));
  const serve = await startRoleProcess('serve', env, 'gateway listening');
  const baseUrl = env.ASSAY_BASE_URL!;
  const reg = await call(baseUrl, 'POST', '/sandbox/agents', { body: {} });
  const token = reg.body.token as string;
  const outcomes: (number | 'refused')[] = [];
  const topUp = (key: string) =>
    call(baseUrl, 'POST', '/v1/topups', { token, body: { credits: 1 }, key }).then(
      (r) => r.status,
      () => 'refused' as const,
    );
  // SIGTERM goes out the moment the first top-up is answered, with the rest still in flight. As many as one agent's
  // top-up bucket holds on the Enterprise plan the suites run under, so the rate limit refuses none of them.
  const count = agentBucket(plans.enterprise.principal.topup).burst;
  let signalled = false;
  const inflight = Array.from({ length: count }, (_, i) =>
    topUp(`s-${i}`).then((outcome) => {
      outcomes.push(outcome);
      if (!signalled && outcome === 201) {
        signalled = true;
        serve.child.kill('SIGTERM');
      }
    }),
  );
  // Once the gateway says it drains, a new request is refused (503 on an open connection, or no connection).
  const draining = await eventually('the gateway to start draining', async () => {
    const line = serve
      .output()
      .split('\n')
      .find((l) => l.includes('gateway draining'));
    return line ? (JSON.parse(line) as { inflight: number }) : undefined;
  });
  const late = await topUp('after-signal');
  await Promise.all(inflight);
  assert.ok(signalled, 'no top-up was answered before the shutdown');
  assert.ok(draining.inflight > 0, 'requests were in flight when the gateway began to drain');
  assert.ok(late === 503 || late === 'refused', `a request after SIGTERM got ${late}`);
  assert.equal(await serve.exited, 0);
  assert.ok(
    outcomes.every((o) => o === 201 || o === 503 || o === 'refused'),
    JSON.stringify(outcomes),
  );
  assert.match(serve.output(), /"unfinished":0,"msg":"gateway drained"/, 'every request in flight was finished');
  const ok = outcomes.filter((o) => o === 201).length;
  // Every request the service answered 201 is in the stream, and nothing else was applied.
  const nc = await connectNats(env.NATS_URL!, 'assay-test');
  cleanups.push(async () => {
    await nc.drain();
  });
  const stream = `${env.ASSAY_NAMESPACE!.toUpperCase()}_LEDGER`;
  const js = jetstream(nc);
  const info = await (await js.jetstreamManager()).streams.info(stream);
  const consumer = await js.consumers.get(stream);
  let topups = 0;
  const messages = await consumer.consume();
  for await (const m of messages) {
    const f = m.json<LedgerFact>();
    if (f.type === 'credited' && f.source === 'sandbox_topup') topups++;
    if (m.seq >= info.state.last_seq) break;
  }
  await messages.close();
  assert.equal(topups, ok);
  console.log(
    `SIGTERM with ${count} in flight: ${draining.inflight} in flight at the drain, ${ok} answered 201, ${outcomes.length - ok} refused or 503; one sent after it: ${late}`,
  );
});
