// Input that matches a route's shape but cannot name anything real is refused with 422 validation_failed before it
// reaches a store (each of these answered a retryable 503 once: clients would retry them for ever), and changes
// nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerSeller } from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { type Agent, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let agent: Agent;
before(async () => {
  sys = await startSystem();
  agent = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

const cursor = (text: string) => Buffer.from(text).toString('base64url');
const refused = async (method: string, path: string, body?: object) => {
  const r = await sys.call(method, path, { token: agent.token, body, key: body ? `k-${path}` : undefined });
  assert.equal(r.status, 422, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.ok(isTypedError(r.body, 'validation_failed'), `${method} ${path}`);
  assert.equal(r.body.retryable, false);
  return r;
};

test('[SPINE-BAD-INPUT] numbers beyond any price, and trust subjects that are not UUIDs, are 422', async () => {
  await refused('GET', '/v1/search?max_price=100000000000000000000000000000');
  await refused('GET', '/v1/search?max_price=9223372036854775808');
  await refused('POST', '/v1/orders', {
    listing_id: '00000000-0000-4000-8000-000000000000',
    formats: ['md'],
    max_price_cents: 1e30,
  });
  for (const subject of [
    'agent:000000000000000000000000000000000000',
    'artifact:------------------------------------',
    'principal:0000000-00000-4000-8000-000000000000',
  ]) {
    await refused('GET', `/v1/trust/${subject}`);
  }
  const balance = await sys.call('GET', '/v1/balance', { token: agent.token });
  assert.equal(balance.body.balance_cents, agent.balanceCents, 'nothing was bought');
});

test('[SPINE-BAD-INPUT] a cursor a list did not hand out is 422 on every list, whatever it decodes to', async () => {
  const lists = ['ledger', 'orders', 'payouts', 'events', 'search', 'errata', 'listings', 'mandates'];
  for (const kind of lists) {
    const forged = [
      'bm9wZQ',
      cursor(`${kind}:99999999999999999999`),
      cursor(`${kind}:-1`),
      cursor(`${kind}:1700000000000/zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz`),
      cursor(`${kind}:999999999999999/00000000-0000-4000-8000-000000000000`),
      cursor(`${kind === 'ledger' ? 'orders' : 'ledger'}:5`),
    ];
    for (const c of forged) await refused('GET', `/v1/${kind === 'search' ? 'search' : kind}?cursor=${c}`);
  }
});

test('[SPINE-BAD-INPUT] GET /v1/mandates pages with its own cursor and refuses another list’s', async () => {
  const manager = await sys.call('POST', '/sandbox/agents', {
    body: { scopes: ['read:artifact', 'read:trust', 'purchase', 'manage:mandate'] },
  });
  const token = manager.body.token as string;
  for (let i = 0; i < 3; i++) {
    const r = await sys.call('POST', '/v1/mandates', { token, body: { per_item_cap_cents: 100 + i }, key: `m-${i}` });
    assert.equal(r.status, 201);
  }
  const seen: any[] = [];
  let next: string | null = null;
  do {
    const r: any = await sys.call('GET', `/v1/mandates?limit=2${next ? `&cursor=${next}` : ''}`, { token });
    assert.equal(r.status, 200);
    seen.push(...r.body.items);
    next = r.body.next_cursor;
  } while (next);
  assert.deepEqual(
    seen.map((m) => [m.perItemCapCents, m.current]),
    [
      [102, true],
      [101, false],
      [100, false],
      [50_000, false],
    ],
  );
  const ledgerCursor = cursor('ledger:5');
  const r = await sys.call('GET', `/v1/mandates?cursor=${ledgerCursor}`, { token });
  assert.equal(r.status, 422);
});
