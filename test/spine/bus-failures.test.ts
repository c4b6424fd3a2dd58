// A call nobody can answer over NATS: the client gets 503 unavailable with a stable message, over REST and MCP,
// and the details (what the NATS library said, the subject) go to the log with the request id.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { isTypedError } from '../support/http.ts';
import { openRawSession, rawToolCall } from '../support/mcp.ts';
import { startSystem, type TestSystem } from '../support/system.ts';
import { mintToken } from '../support/tokens.ts';

let sys: TestSystem;
let token: string;
const principalId = '7f0e4a52-4c1b-4b8e-9d3a-0c5d2a9b6e11';
const logged: Record<string, unknown>[] = [];

before(async () => {
  const lines = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
      done();
    },
  });
  // No actor host: every call for a principal actor finds no responder.
  sys = await startSystem({}, ['gateway', 'workers'], pino({ level: 'warn' }, lines));
  // Registration needs an actor too; a token signed with the service's key is enough for the gateway.
  token = await mintToken(sys.config, { principalId });
});
after(async () => {
  await sys.stop();
});

test('[SPINE-NO-INTERNALS] with no actor serving, REST and MCP get a stable 503 text; the subject and cause are logged with the request id', async () => {
  const rest = await sys.call('POST', '/v1/topups', {
    token: token,
    body: { credits: 1 },
    key: 'no-actor',
    headers: { 'x-request-id': 'req-no-actor-rest' },
  });
  assert.equal(rest.status, 503);
  assert.ok(isTypedError(rest.body, 'unavailable'));
  const stable = 'no process serves this request right now (shards may be moving); retry shortly';
  assert.equal(rest.body.message, stable);

  const sessionId = await openRawSession(sys.baseUrl, token);
  const mcp = await rawToolCall(sys.baseUrl, {
    token: token,
    sessionId,
    name: 'top_up',
    args: { credits: 1, idempotency_key: 'no-actor-mcp' },
  });
  const structured = mcp.body.result.structuredContent;
  assert.equal(mcp.body.result.isError, true);
  assert.ok(isTypedError(structured, 'unavailable'));
  assert.equal(structured.message, stable);

  const subject = sys.names.actorSubject('principal', principalId);
  for (const text of [rest.body.message, structured.message]) {
    assert.ok(!text.includes(sys.config.namespace), 'no subject in what the client sees');
  }
  const line = logged.find((l) => l.requestId === 'req-no-actor-rest' && l.msg === 'bus request failed');
  assert.ok(line, `a log line for the REST request: ${JSON.stringify(logged)}`);
  assert.equal(line.subject, subject);
  assert.equal(line.failure, 'no_responders');
  assert.ok(line.err, 'the library error is logged');
  assert.ok(
    logged.some((l) => l.msg === 'bus request failed' && l.subject === subject && l.requestId !== 'req-no-actor-rest'),
    'and one for the MCP call',
  );
});
