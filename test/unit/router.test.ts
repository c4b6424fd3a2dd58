// The router alone, without servers: exact and parameterised routes, trailing slashes, HEAD as GET, the Allow list of
// a path served with other methods, and percent-decoding of path parameters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { operations } from '../../contracts/index.ts';
import { compileRouter } from '../../gateway/index.ts';

const routes = [
  { id: 'list', method: 'GET', path: '/v1/things' },
  { id: 'create', method: 'POST', path: '/v1/things' },
  { id: 'one', method: 'GET', path: '/v1/things/{thing_id}' },
  { id: 'cancel', method: 'POST', path: '/v1/things/{thing_id}/cancel' },
  { id: 'pair', method: 'DELETE', path: '/v1/pairs/{left}/{right}' },
  { id: 'root', method: 'POST', path: '/' },
];
const match = compileRouter(routes);

const found = (method: string, path: string) => {
  const m = match(method, path);
  assert.equal(m.kind, 'found', `${method} ${path}`);
  return m as Extract<typeof m, { kind: 'found' }>;
};

test('[SPINE-HTTP-ROUTER] exact and parameterised paths find their route, with or without a trailing slash', () => {
  assert.equal(found('GET', '/v1/things').route.id, 'list');
  assert.equal(found('POST', '/v1/things').route.id, 'create');
  assert.equal(found('GET', '/v1/things/').route.id, 'list');
  const one = found('GET', '/v1/things/abc');
  assert.equal(one.route.id, 'one');
  assert.deepEqual(one.params, { thing_id: 'abc' });
  assert.equal(one.problem, null);
  assert.deepEqual(found('POST', '/v1/things/abc/cancel/').params, { thing_id: 'abc' });
  assert.deepEqual(found('DELETE', '/v1/pairs/a/b').params, { left: 'a', right: 'b' });
  assert.equal(found('POST', '/').route.id, 'root');
  for (const path of ['/v1/thing', '/v1/things/a/b', '/v1/things//cancel', '/v1/pairs/a', '/v2/things', '']) {
    assert.equal(match('GET', path).kind, 'none', path);
  }
});

test('[SPINE-HTTP-ROUTER] HEAD is served as the GET route; a path served with other methods lists them in Allow', () => {
  assert.equal(found('HEAD', '/v1/things').route.id, 'list');
  assert.equal(found('HEAD', '/v1/things/x').route.id, 'one');
  assert.deepEqual(match('PUT', '/v1/things'), { kind: 'wrong_method', allow: 'GET, HEAD, POST' });
  assert.deepEqual(match('OPTIONS', '/v1/things/x'), { kind: 'wrong_method', allow: 'GET, HEAD' });
  assert.deepEqual(match('HEAD', '/v1/things/x/cancel'), { kind: 'wrong_method', allow: 'POST' });
  assert.deepEqual(match('GET', '/'), { kind: 'wrong_method', allow: 'POST' });
  // Methods are matched as given: the listener hands them over in upper case.
  assert.equal(match('get', '/v1/things').kind, 'wrong_method');
});

test('[SPINE-HTTP-ROUTER] path parameters are percent-decoded as UTF-8; malformed ones are flagged, not guessed', () => {
  assert.deepEqual(found('GET', '/v1/things/a%2Fb%20c').params, { thing_id: 'a/b c' });
  assert.deepEqual(found('GET', '/v1/things/caf%C3%A9').params, { thing_id: 'café' });
  // NUL decodes (the pipeline refuses it with the other text problems).
  assert.deepEqual(found('GET', '/v1/things/%00').params, { thing_id: '\u0000' });
  for (const raw of ['%E0%A4%A', '%ZZ', '%ED%A0%80', '%C3', '%FF']) {
    const m = found('GET', `/v1/things/${raw}`);
    assert.equal(m.params.thing_id, raw, 'the raw text is kept');
    assert.equal(m.problem, 'path parameter thing_id is not valid percent-encoded UTF-8', raw);
  }
  const pair = found('DELETE', '/v1/pairs/ok/%ZZ');
  assert.match(pair.problem ?? '', /^path parameter right /);
});

test('[SPINE-HTTP-ROUTER] every route of the operation table is found by its own method and path', () => {
  const table = compileRouter(operations);
  for (const op of operations) {
    const path = op.path.replace(/\{[a-z_]+\}/g, 'x');
    const m = table(op.method, path);
    assert.equal(m.kind, 'found', `${op.method} ${op.path}`);
    assert.equal((m as { route: unknown }).route, op);
    if (op.method === 'GET') assert.equal((table('HEAD', path) as { route: unknown }).route, op);
  }
});
