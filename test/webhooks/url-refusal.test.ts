// A refused webhook URL says only that its address is not public. The service resolves the host with its own
// resolver, so a refusal that named the answer (or its range) would let anyone with an account read the service's
// internal DNS. This system runs with the production URL rule (loopback refused); the only name resolved is
// `localhost` (from the hosts file), and nothing is connected to.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, discover } from '../support/oauth.ts';
import { startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let key: string;

before(async () => {
  sys = await startSystem();
  const as = await discover(sys.baseUrl);
  const { jar } = await accountWithClient(as, sys.baseUrl, 'url-refusal@example.com');
  key = await issueApiKey(sys.config.webUrl, jar);
});
after(async () => {
  await sys?.stop();
});

/** What a refusal must not hold: any IP address (`localhost` resolves to 127.0.0.1 and ::1), or a range's name. */
const leaks = /\d+\.\d+\.\d+\.\d+|::|loopback|private|link-local|metadata|RFC 1918|unique-local|reserved|mapped/i;

test('[SEC-WEBHOOK-URL-OPAQUE] registering https://localhost is refused with "not public" and nothing about what localhost resolves to, on both base forms', async () => {
  const bases = [`${sys.config.apiUrl}/v1`, `${sys.config.webUrl}/api/v1`];
  for (const base of bases) {
    for (const url of ['https://localhost/hook', 'https://LocalHost:8443/hook?x=1']) {
      const o: ContextRequest = { bearer: key, body: { name: 'n', url, events: ['context.created'] } };
      const r = await contextCall(sys.config.webUrl, `${base}/webhooks`, 'POST', o);
      assert.equal(r.status, 400, `${base} ${url}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.message, /not public/, r.body.message);
      assert.doesNotMatch(r.body.message, leaks, r.body.message);
    }
  }
  // An address typed into the URL is refused in the same words, whatever its range.
  for (const url of ['https://127.0.0.1/hook', 'https://10.1.2.3/hook', 'https://[::ffff:169.254.169.254]/hook']) {
    const o: ContextRequest = { bearer: key, body: { name: 'n', url, events: ['context.created'] } };
    const r = await contextCall(sys.config.webUrl, `${bases[0]}/webhooks`, 'POST', o);
    assert.equal(r.status, 400, url);
    assert.match(r.body.message, /not public/, r.body.message);
    assert.doesNotMatch(r.body.message, leaks, r.body.message);
  }
  const listed = await contextCall(sys.config.webUrl, `${bases[0]}/webhooks`, 'GET', { bearer: key });
  assert.equal(listed.body.pagination.total, 0, 'nothing was registered');
});
