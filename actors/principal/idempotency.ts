// Idempotency records of a principal's mutating calls. Each fact a call appended carries its key and request hash
// (and its reply, unless the fact alone rebuilds it); the actor keeps the most recent records in memory, the
// idempotency index in PostgreSQL holds the rest. A key used before replays its stored reply; the same key with
// another request is a conflict.
import assert from 'node:assert/strict';
import {
  type BusReply,
  type BusRequest,
  decisionCall,
  errorReply,
  type IdempotencyRecord,
  type LedgerFact,
} from '../../contracts/index.ts';
import type { PrincipalDeps } from './deps.ts';
import { type HotRecord, own, type PrincipalState } from './state.ts';
import type { IdempotencyIndex, IndexedKey } from './idempotency-index.ts';
import { purchaseReply, type StoredReply } from './purchase-reply.ts';
import { approvalReplyOf } from './approval-reply.ts';

// A hot record keeps no reply: a replay reads the fact at `seq` (replays are rare).
const hotRecord = (seq: number, atMs: number, requestHash: string): HotRecord => `${seq} ${atMs} ${requestHash}`;
function unpackHot(r: HotRecord): IndexedKey & { atMs: number } {
  const a = r.indexOf(' ');
  const b = r.indexOf(' ', a + 1);
  return { seq: Number(r.slice(0, a)), atMs: Number(r.slice(a + 1, b)), requestHash: r.slice(b + 1) };
}

/** When a record may leave memory: too many or too old, and only once the index holds its fact. */
export interface HotKeyPolicy {
  hotKeysMax: number;
  retentionMs: number;
  index: Pick<IdempotencyIndex, 'indexedThroughSeq'>;
}

export const hotKeyPolicy = (d: PrincipalDeps): HotKeyPolicy => ({
  hotKeysMax: d.hotKeysMax,
  retentionMs: d.idempotencyRetentionMs,
  index: d.index,
});

/** Keep a fact's record in memory, and let the oldest go while there are too many or they are past retention. */
export function rememberKey(
  state: PrincipalState,
  record: IdempotencyRecord,
  seq: number,
  atMs: number,
  policy: HotKeyPolicy,
): void {
  state.idempotency.delete(record.key);
  own(state, 'idempotency').set(record.key, hotRecord(seq, atMs, record.requestHash));
  // The map is in fact order, so the oldest are first. Never let go of one the index does not hold yet: until
  // then memory is the only place it is known.
  const indexed = policy.index.indexedThroughSeq();
  for (const [key, rec] of state.idempotency) {
    const old = unpackHot(rec);
    const over = state.idempotency.size > policy.hotKeysMax || old.atMs < atMs - policy.retentionMs;
    if (!over || old.seq > indexed) break;
    state.idempotency.delete(key);
    if (old.seq > state.evictedThroughSeq) state.evictedThroughSeq = old.seq;
  }
}

/** The Idempotency-Key of a mutating call: the pipeline refuses one without it, so its absence here is a bug. */
export function keyOf(req: BusRequest): { key: string; requestHash: string } {
  assert(req.idempotency, `${req.op} arrives with its Idempotency-Key`);
  return req.idempotency;
}

/** The record a fact stores for the call that appended it, with the reply to replay. */
export function recordOf(req: BusRequest, agentId: string, reply: StoredReply): IdempotencyRecord {
  const { key, requestHash } = keyOf(req);
  return { key, requestHash, agentId, reply };
}

/**
 * The reply the call that used `key` gave, from a fact that recorded it: stored in the fact, or rebuilt from it (a
 * purchase, or a purchase waiting for approval). A decision on an approval records two calls: the purchase request
 * it decides and the principal's approve or decline call.
 */
function replyOf(fact: LedgerFact, key: string): BusReply | null {
  const stored = (reply: StoredReply): BusReply => ({
    ok: true,
    status: reply.status,
    body: reply.body,
    replayed: true,
  });
  const call = decisionCall(fact);
  if (call?.key === key) return call.reply ? stored(call.reply) : null;
  if (fact.idempotency?.key !== key) return null;
  if (fact.idempotency.reply) return stored(fact.idempotency.reply);
  if (fact.type === 'escrow_held') return stored(purchaseReply(fact.orderId, fact.priceCents, fact.formats));
  return approvalReplyOf(fact);
}

/**
 * The answer to a key used before: its stored reply replayed, or a conflict; null for a key never used. A key not
 * in memory is looked up in the index once any record has left memory. If the index cannot vouch for a miss (it
 * is behind the records that left, during a rebuild, or unreachable), the call is refused as retryable rather than
 * risk running twice.
 */
export async function replayOrConflict(
  d: PrincipalDeps,
  state: PrincipalState,
  key: string,
  requestHash: string,
): Promise<BusReply | null> {
  const hot = state.idempotency.get(key);
  let used: IndexedKey | null = hot === undefined ? null : unpackHot(hot);
  if (!used && state.evictedThroughSeq > 0) {
    const cold = await d.index.lookup(state.principalId, key);
    if (!cold || (!cold.found && cold.indexedThroughSeq < state.evictedThroughSeq)) {
      return errorReply('unavailable', 'the idempotency index is catching up; retry with the same key', 1);
    }
    used = cold.found;
  }
  if (!used) return null;
  if (used.requestHash !== requestHash) {
    return errorReply('idempotency_conflict', 'this Idempotency-Key was already used with a different request');
  }
  const fact = await d.loadFact(state.principalId, used.seq);
  const reply = fact ? replyOf(fact, key) : null;
  if (!reply) return errorReply('unavailable', 'the stored result could not be read; retry with the same key', 1);
  return reply;
}
