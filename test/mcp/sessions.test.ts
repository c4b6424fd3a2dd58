// Session expiry with the clock passed in: a gateway whose clock the test moves, against the real sessions bucket.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { nanos } from '@nats-io/nats-core';
import pino from 'pino';
import { mcpSessionBucketMaxAgeMs, mcpSessionTouchEveryMs } from '../../contracts/index.ts';
import { wireGateway } from '../../cli/roles.ts';
import { type Gateway, McpSessions, type McpSessionsBucket } from '../../gateway/index.ts';
import { isTypedError } from '../support/http.ts';
import { openRawSession, rawToolCall } from '../support/mcp.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

const idleSeconds = 60;
let sys: TestSystem;
let kv: KV;
let bucket: McpSessionsBucket;
let gateway: Gateway;
let agent: Agent;
/** How far the gateway's clock runs ahead of the real one. */
let aheadMs = 0;

before(async () => {
  sys = await startSystem({ ASSAY_MCP_SESSION_IDLE_SECONDS: String(idleSeconds) }, ['actors', 'workers']);
  const kvm = new Kvm(sys.nc);
  kv = await kvm.open(sys.names.buckets.mcpSessions, { allow_direct: true });
  bucket = { anyReplica: kv, leader: await kvm.open(sys.names.buckets.mcpSessions, { allow_direct: false }) };
  gateway = wireGateway({
    config: sys.config,
    names: sys.names,
    nc: sys.nc,
    log: pino({ level: 'silent' }),
    buckets: {
      mcpSessions: bucket,
      health: await kvm.open(sys.names.buckets.health),
      revoked: await kvm.open(sys.names.buckets.revoked),
    },
    nowMs: () => Date.now() + aheadMs,
  });
  await gateway.listen();
  agent = await sys.register();
});
after(async () => {
  await gateway.close(0);
  await sys.stop();
});

const call = (sessionId: string) => rawToolCall(sys.baseUrl, { token: agent.token, sessionId, name: 'get_balance' });

test('[MCP-SESSION-EXPIRY] requests keep a session alive; idle past ASSAY_MCP_SESSION_IDLE_SECONDS it ends with 404', async () => {
  const sessionId = await openRawSession(sys.baseUrl, agent.token);
  // Two steps of 50 s each: more than the idle time in total, but never idle for that long.
  const key = `${agent.principalId}.${sessionId}`;
  for (const step of [50, 50]) {
    aheadMs += step * 1000;
    const r = await call(sessionId);
    assert.equal(r.status, 200, `alive after ${aheadMs / 1000} s`);
    // The touch is written after the answer: wait until it has landed before the clock moves again.
    const seenMs = Date.now() + aheadMs - 1000;
    await eventually('the touch lands', async () =>
      ((await kv.get(key))?.json<{ last_seen_ms: number }>().last_seen_ms ?? 0) >= seenMs ? true : undefined,
    );
  }
  aheadMs += (idleSeconds + 1) * 1000;
  const expired = await call(sessionId);
  assert.equal(expired.status, 404);
  assert.ok(isTypedError(expired.body, 'not_found'));
  const entry = await kv.get(`${agent.principalId}.${sessionId}`);
  assert.notEqual(entry?.operation, 'PUT', 'the expired session is removed from the bucket');
});

test('[MCP-SESSION-EXPIRY] the bucket discards what the gateway treats as ended (max age from the idle time)', async () => {
  const jsm = await jetstreamManager(sys.nc);
  const info = await jsm.streams.info(`KV_${sys.names.buckets.mcpSessions}`);
  assert.equal(info.config.max_age, nanos(mcpSessionBucketMaxAgeMs(idleSeconds * 1000)));
  assert.ok(mcpSessionBucketMaxAgeMs(idleSeconds * 1000) > idleSeconds * 1000);
  assert.equal(info.config.allow_direct, true, 'per-request reads are direct gets');
});

test('[MCP-SESSION-EXPIRY] a touch racing a DELETE never brings the session back', async () => {
  let nowMs = Date.now();
  const sessions = new McpSessions(bucket, {
    idleMs: idleSeconds * 1000,
    perPrincipalMax: 10,
    nowMs: () => nowMs,
    newId: randomUUID,
    onError: (err) => {
      throw err;
    },
  });
  const caller = { principalId: randomUUID(), agentId: randomUUID() };
  // Touch is due (a touch interval has passed since the read); end and touch race, in whatever order they land.
  for (let i = 0; i < 20; i++) {
    const opened = await sessions.open(caller, '2025-06-18');
    assert.notEqual(opened, 'limit');
    const seen = (await sessions.find(caller.principalId, (opened as { id: string }).id))!;
    nowMs += mcpSessionTouchEveryMs(idleSeconds * 1000) + 1;
    await Promise.all(
      i % 2 === 0 ? [sessions.end(seen), sessions.touch(seen)] : [sessions.touch(seen), sessions.end(seen)],
    );
    assert.equal(await sessions.find(caller.principalId, seen.id), null, `race ${i}`);
  }
});
