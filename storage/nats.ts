// JetStream streams and KV buckets, created idempotently at start. Every name comes from contracts' names(ns).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type JetStreamManager, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { type NatsConnection, nanos } from '@nats-io/nats-core';
import { RequestOne } from '@nats-io/nats-core/internal';
import { connect } from '@nats-io/transport-node';
import { type Names, natsFailure } from '../contracts/index.ts';

export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    timeout: 2000,
    // Reconnect forever: an actor host or gateway outlives a NATS restart and serves again once it is back.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: 5000,
    // An Error with a stack per request costs more than the rest of the request; our errors carry the subject.
    noAsyncTraces: true,
  });
  installRequestCancelPatch();
  flushOncePerTurn(nc);
  return nc;
}

// Two patches of nats.js, for speed only (docs/architecture.md, Performance notes). They reach into the client's
// internals, so they are fenced: each checks the version it was written against (`natsPatchedVersion`) and the
// shapes it relies on, and if either differs it leaves the client as it is and warns once (a process warning:
// the test suite fails on it). A test pins the version and that both patches are in place.

/** The @nats-io/nats-core version the patches were written against. */
export const natsPatchedVersion = '3.4.0';

/** What each patch did: `patched`, or why it was left out. */
export const natsPatches = { requestCancel: 'not installed yet', flushOncePerTurn: 'no connection yet' };

function natsCoreVersion(): string {
  const main = createRequire(import.meta.url).resolve('@nats-io/nats-core');
  return (JSON.parse(readFileSync(join(dirname(main), '..', 'package.json'), 'utf8')) as { version: string }).version;
}

function skipped(patch: keyof typeof natsPatches, why: string): void {
  if (natsPatches[patch] === why) return;
  natsPatches[patch] = why;
  process.emitWarning(`nats.js patch ${patch} not installed: ${why}; running the client unpatched (slower)`);
}

/**
 * nats.js 3.4 ends every request, answered or not, with `cancel()`, which builds a fresh Error (stack capture
 * included) only to reject a promise that is usually settled already: about 8% of a busy gateway's CPU. Reject with
 * one shared error instead; an unanswered request still gets its own TimeoutError or NoRespondersError.
 */
function installRequestCancelPatch(): void {
  if (natsPatches.requestCancel === 'patched') return;
  const version = natsCoreVersion();
  if (version !== natsPatchedVersion) {
    skipped('requestCancel', `@nats-io/nats-core is ${version}`);
    return;
  }
  const proto = RequestOne?.prototype as unknown as { cancel?: unknown } | undefined;
  if (typeof proto?.cancel !== 'function' || proto.cancel.length !== 1) {
    skipped('requestCancel', 'RequestOne.prototype.cancel(err) is not there');
    return;
  }
  const cancelled = Object.freeze(new Error('request cancelled'));
  proto.cancel = function cancel(
    this: { timer?: { cancel(): void }; mux: { cancel(r: unknown): void }; deferred: { reject(e: unknown): void } },
    err?: Error,
  ) {
    this.timer?.cancel();
    this.mux.cancel(this);
    this.deferred.reject(err ?? cancelled);
  };
  natsPatches.requestCancel = 'patched';
}

/**
 * nats.js flushes its outbound buffer in a microtask, i.e. once per callback: under load every request and every
 * JetStream publish becomes its own socket write, and nats-server's CPU per message more than doubles. Deferring
 * the flush to setImmediate coalesces everything queued during one event-loop turn into one write.
 */
function flushOncePerTurn(nc: NatsConnection): void {
  const version = natsCoreVersion();
  if (version !== natsPatchedVersion) {
    skipped('flushOncePerTurn', `@nats-io/nats-core is ${version}`);
    return;
  }
  const proto = (nc as unknown as { protocol?: Record<string, any> }).protocol;
  if (
    !proto ||
    typeof proto.flushPending !== 'function' ||
    typeof proto.sendCommand !== 'function' ||
    typeof proto.outbound?.fill !== 'function' ||
    typeof proto.outbound?.size !== 'function' ||
    typeof proto.pendingLimit !== 'number'
  ) {
    skipped('flushOncePerTurn', 'the connection protocol handler has another shape');
    return;
  }
  const encoder = new TextEncoder();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    proto.flushPending();
  };
  proto.sendCommand = (cmd: string | Uint8Array, ...payloads: Uint8Array[]) => {
    proto.outbound.fill(typeof cmd === 'string' ? encoder.encode(cmd) : cmd, ...payloads);
    if (proto.outbound.size() >= proto.pendingLimit) proto.flushPending();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  natsPatches.flushOncePerTurn = 'patched';
}

/**
 * Duplicate window of the streams: a publish retried within it with the same msgID is stored once. Actor appends
 * carry no msgID (their expected last sequence makes them exactly-once); the outbox relay and the corpus loader do,
 * and what they publish is idempotent downstream as well. The server keeps every id of the window in memory, so it
 * is short.
 */

export const duplicateWindowMs = 30_000;

export async function ensureStreams(nc: NatsConnection, n: Names, replicas: number): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  for (const def of Object.values(n.streams)) {
    const config = {
      name: def.name,
      subjects: def.subjects,
      storage: StorageType.File,
      retention: def.workQueue ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
      duplicate_window: nanos(duplicateWindowMs),
      allow_direct: true,
      num_replicas: replicas,
    };
    try {
      await jsm.streams.info(def.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await jsm.streams.add(config);
      } catch (addErr) {
        // Another process created it between our info and add: that is the outcome we wanted.
        if (natsFailure(addErr) !== 'exists') throw addErr;
      }
    }
  }
  return jsm;
}

export async function openBuckets(
  nc: NatsConnection,
  n: Names,
  replicas: number,
  o: { mcpSessionMaxAgeMs: number; revokedMaxAgeMs: number },
) {
  const kvm = new Kvm(nc);
  const leases = await kvm.create(n.buckets.leases, { history: 1, replicas, storage: StorageType.File });
  const snapshots = await kvm.create(n.buckets.snapshots, { history: 1, replicas, storage: StorageType.File });
  const anyReplica = await kvm.create(n.buckets.mcpSessions, {
    history: 1,
    replicas,
    storage: StorageType.File,
    // The server drops sessions idle past this (a bucket-wide max age works on nats-server 2.9; per-key TTL does
    // not); the gateway's own timestamp check is the exact one.
    ttl: o.mcpSessionMaxAgeMs,
    // Direct gets (answered by any replica, without the JetStream API) are the per-request read.
    allow_direct: true,
  });
  await keepMaxAge(nc, `KV_${n.buckets.mcpSessions}`, o.mcpSessionMaxAgeMs);
  const health = await openHealthBucket(nc, n, replicas);
  // A revocation must outlive every token it stops; an access token lives at most its configured lifetime.
  const revoked = await kvm.create(n.buckets.revoked, {
    history: 1,
    replicas,
    storage: StorageType.File,
    ttl: o.revokedMaxAgeMs,
  });
  await keepMaxAge(nc, `KV_${n.buckets.revoked}`, o.revokedMaxAgeMs);
  // The same bucket read through the stream leader: a replica may not have a session created a moment ago through
  // another gateway yet, so a miss is confirmed here before it becomes a 404.
  const leader = await kvm.open(n.buckets.mcpSessions, { allow_direct: false });
  return { leases, snapshots, health, revoked, mcpSessions: { anyReplica, leader } };
}

/** The operational alerts bucket (contracts/health.ts). */
export function openHealthBucket(nc: NatsConnection, n: Names, replicas: number) {
  return new Kvm(nc).create(n.buckets.health, { history: 1, replicas, storage: StorageType.File });
}

/** Creating a bucket leaves an existing one as it was; follow a changed idle time of the configuration. */
async function keepMaxAge(nc: NatsConnection, stream: string, maxAgeMs: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  if (info.config.max_age === nanos(maxAgeMs)) return;
  await jsm.streams.update(stream, { ...info.config, max_age: nanos(maxAgeMs) });
}

/** Remove everything of a namespace (streams and buckets). Used by tests to clean up their private namespace. */
export async function dropNamespace(nc: NatsConnection, n: Names): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const all = [...Object.values(n.streams).map((s) => s.name), ...Object.values(n.buckets).map((b) => `KV_${b}`)];
  for (const name of all) {
    try {
      await jsm.streams.delete(name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

export function isNotFound(err: unknown): boolean {
  return natsFailure(err) === 'not_found';
}
