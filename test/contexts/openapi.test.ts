// The context-file API's OpenAPI documents, served on each base form without a credential: they list every route
// the API answers, and each describes its own base form's list envelope, which is what the lists really answer.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, discover } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let key: string;

before(async () => {
  sys = await startSystem();
  const as = await discover(sys.baseUrl);
  key = await issueApiKey(sys.config.webUrl, (await accountWithClient(as, sys.baseUrl, 'docs@example.com')).jar);
});
after(async () => {
  await sys?.stop();
});

test('[CONTEXT-OPENAPI] each base form serves its own OpenAPI 3.1 document, listing every route, with the list envelope its lists answer', async () => {
  const bases = { web: `${sys.config.webUrl}/api/v1`, api: `${sys.config.apiUrl}/v1` };
  const docs: Record<string, any> = {};
  for (const [form, base] of Object.entries(bases)) {
    const res = await fetch(`${base}/openapi.json`);
    assert.equal(res.status, 200, `${form}: served without a credential`);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const doc = await res.json();
    docs[form] = doc;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.servers[0].url, base);
    for (const [path, methods] of Object.entries<Record<string, any>>(doc.paths)) {
      // Device sync's routes (web form only) name their own server; test/sync/server.test.ts checks them.
      if (methods.servers) continue;
      for (const [method, op] of Object.entries<any>(methods)) {
        assert.ok(op.responses['400'] && op.responses['401'] && op.responses['429'], `${method} ${path} errors`);
        // A documented route is a route: with no credential it is 401, not 404.
        const r = await contextCall(
          sys.config.webUrl,
          `${base}${path.replace('{id}', crypto.randomUUID())}`,
          method.toUpperCase(),
        );
        assert.equal(r.status, 401, `${form} ${method} ${path}`);
        assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
      }
    }
  }
  assert.deepEqual(
    Object.keys(docs.web.paths).filter((p) => !docs.web.paths[p].servers),
    Object.keys(docs.api.paths),
    'the same routes on both forms',
  );
  assert.ok(docs.api.paths['/skills/{id}/execute'].post.requestBody);

  // Each form's list envelope is the one its lists answer, paged by its own parameter.
  for (const [form, base] of Object.entries(bases)) {
    const listDoc = docs[form].paths['/contexts'].get;
    const envelope = listDoc.responses['200'].content['application/json'].schema;
    const real = await contextCall(sys.config.webUrl, `${base}/contexts`, 'GET', { bearer: key });
    assert.equal(real.status, 200);
    assert.deepEqual(Object.keys(real.body).sort(), [...envelope.required].sort(), `${form} envelope`);
    const paging = listDoc.parameters.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(paging, form === 'web' ? ['limit', 'page'] : ['limit', 'offset']);
  }
});
