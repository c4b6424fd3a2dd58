// The pipeline in spec order, over real HTTP against a real system: authentication, scope, validation,
// Idempotency-Key, handler. Each refusal is checked to change nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isTypedError } from '../support/http.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let agent: Agent;

before(async () => {
  sys = await startSystem({ ASSAY_BODY_BYTES_MAX: '4096' });
  agent = await sys.register();
});
after(async () => {
  await sys.stop();
});

const balance = async (token = agent.token) =>
  (await sys.call('GET', '/v1/balance', { token })).body.balance_cents as number;

describe('pipeline order', () => {
  test('[SPINE-ORDER-SCOPE] a token without the scope posting an invalid body gets 403 forbidden', async () => {
    const before = await balance();
    const token = await mintToken(sys.config, { principalId: agent.principalId, scopes: ['read:artifact'] });
    const r = await sys.call('POST', '/v1/topups', { token, body: { credits: 'many', extra: 1 }, key: 'k-scope' });
    assert.equal(r.status, 403);
    assert.ok(isTypedError(r.body, 'forbidden'));
    assert.equal(r.body.remediation, 'request_scope');
    const valid = await sys.call('POST', '/v1/topups', { token, body: { credits: 1 }, key: 'k-scope-valid' });
    assert.equal(valid.status, 403, 'a valid body does not get past the missing scope either');
    assert.equal(await balance(), before, 'nothing was credited');
  });

  test('[SPINE-VALIDATION] a valid token with an invalid body gets 422 validation_failed and credits nothing', async () => {
    const before = await balance();
    for (const body of [{ credits: 0 }, { credits: 1.5 }, { credits: '3' }, { credits: 1, extra: true }, {}, []]) {
      const r = await sys.call('POST', '/v1/topups', {
        token: agent.token,
        body,
        key: `k-invalid-${JSON.stringify(body)}`,
      });
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.ok(isTypedError(r.body, 'validation_failed'));
      assert.equal(r.body.remediation, 'fix_the_request_body');
    }
    const q = await sys.call('GET', '/v1/ledger?limit=0', { token: agent.token });
    assert.equal(q.status, 422);
    assert.ok(isTypedError(q.body, 'validation_failed'));
    const unknown = await sys.call('GET', '/v1/ledger?color=red', { token: agent.token });
    assert.equal(unknown.status, 422);
    assert.equal(await balance(), before);
  });

  test('[SPINE-IDEM-KEY] a valid body without Idempotency-Key or with a 201-character key gets 422', async () => {
    const before = await balance();
    const none = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 1 } });
    assert.equal(none.status, 422);
    assert.ok(isTypedError(none.body, 'validation_failed'));
    const long = await sys.call('POST', '/v1/topups', {
      token: agent.token,
      body: { credits: 1 },
      key: 'x'.repeat(201),
    });
    assert.equal(long.status, 422);
    assert.ok(isTypedError(long.body, 'validation_failed'));
    const max = await sys.call('POST', '/v1/topups', {
      token: agent.token,
      body: { credits: 1 },
      key: 'y'.repeat(200),
    });
    assert.equal(max.status, 201, 'a 200-character key is accepted');
    assert.equal(await balance(), before + 100);
  });

  test('[SPINE-IDEM-REPLAY] a replay with the same key and body gives the same status and body and credits once', async () => {
    const before = await balance();
    const first = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 7 }, key: 'k-replay' });
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { status: 'credited', amount_cents: 700, sandbox: true });
    const second = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 7 }, key: 'k-replay' });
    assert.equal(second.status, first.status);
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(await balance(), before + 700);
  });

  test('[SPINE-IDEM-CONFLICT] the same key with another body gets 422 idempotency_conflict', async () => {
    await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 2 }, key: 'k-conflict' });
    const before = await balance();
    const r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 3 }, key: 'k-conflict' });
    assert.equal(r.status, 422);
    assert.ok(isTypedError(r.body, 'idempotency_conflict'));
    assert.equal(r.body.remediation, 'use_a_new_idempotency_key');
    assert.equal(await balance(), before);
  });

  test('[SPINE-IDEM-CONCURRENT] 20 concurrent requests with one key: one credit, identical answers', async () => {
    const before = await balance();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 4 }, key: 'k-concurrent' }),
      ),
    );
    for (const r of replies) {
      assert.equal(r.status, 201);
      assert.deepEqual(r.body, { status: 'credited', amount_cents: 400, sandbox: true });
    }
    assert.equal(replies.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1);
    assert.equal(await balance(), before + 400);
  });

  test('[SPINE-AUTH] no token, a tampered token or an expired token gets 401 with remediation authenticate', async () => {
    const before = await balance();
    const [head, payload, sig] = agent.token.split('.');
    const forged = Buffer.from(payload!, 'base64url')
      .toString()
      .replace(agent.principalId, '00000000-0000-4000-8000-000000000000');
    const tampered = [
      `${head}.${Buffer.from(forged).toString('base64url')}.${sig}`,
      `${head}.${payload}.${sig!.slice(0, -4)}AAAA`,
      'not-a-jwt',
    ];
    const expired = await mintToken(sys.config, {
      principalId: agent.principalId,
      ttlSeconds: 60,
      issuedAtMs: Date.now() - 3_600_000,
    });
    const cases: { name: string; headers: Record<string, string> }[] = [
      { name: 'none', headers: {} },
      { name: 'basic', headers: { authorization: 'Basic dXNlcjpwYXNz' } },
      ...tampered.map((t, i) => ({ name: `tampered ${i}`, headers: { authorization: `Bearer ${t}` } })),
      { name: 'expired', headers: { authorization: `Bearer ${expired}` } },
    ];
    for (const c of cases) {
      const r = await sys.call('POST', '/v1/topups', {
        headers: c.headers,
        body: { credits: 1 },
        key: `k-auth-${c.name}`,
      });
      assert.equal(r.status, 401, c.name);
      assert.ok(isTypedError(r.body, 'unauthorized'), c.name);
      assert.equal(r.body.remediation, 'authenticate');
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="/);
    }
    assert.equal(await balance(), before, 'nothing was credited');
  });
});

describe('transport refusals', () => {
  test('[SPINE-TRANSPORT] malformed JSON gets 400 validation_failed after auth and scope', async () => {
    const r = await sys.call('POST', '/v1/topups', {
      token: agent.token,
      rawBody: '{"credits": 1',
      key: 'k-malformed',
    });
    assert.equal(r.status, 400);
    assert.ok(isTypedError(r.body, 'validation_failed'));
    const anon = await sys.call('POST', '/v1/topups', { rawBody: '{"credits": 1', key: 'k-malformed' });
    assert.equal(anon.status, 401, 'authentication comes first');
  });

  test('[SPINE-TRANSPORT] a body over the configured limit gets 413 with the typed error', async () => {
    const before = await balance();
    const r = await sys.call('POST', '/v1/topups', {
      token: agent.token,
      rawBody: JSON.stringify({ credits: 1, pad: 'x'.repeat(5000) }),
      key: 'k-large',
    });
    assert.equal(r.status, 413);
    assert.ok(isTypedError(r.body, 'validation_failed'));
    assert.equal(await balance(), before);
  });

  test('[SPINE-TRANSPORT] a chunked body over the limit (no Content-Length) gets 413', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${sys.baseUrl}/v1/topups`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.token}`,
          'idempotency-key': 'k-chunked',
          'transfer-encoding': 'chunked',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(1000));
      req.end();
    });
    assert.equal(status, 413);
  });

  test('[SPINE-TRANSPORT] an unknown route and a wrong method get typed 404s', async () => {
    const unknown = await sys.call('GET', '/v1/nope', { token: agent.token });
    assert.equal(unknown.status, 404);
    assert.ok(isTypedError(unknown.body, 'not_found'));
    const wrong = await sys.call('DELETE', '/v1/balance', { token: agent.token });
    assert.equal(wrong.status, 404);
    assert.ok(isTypedError(wrong.body, 'not_found'));
    assert.equal(wrong.headers.get('allow'), 'GET, HEAD');
  });
});
