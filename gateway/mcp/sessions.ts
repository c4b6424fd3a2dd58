// MCP sessions in a NATS KV bucket, so any gateway process serves any session. Key `<principalId>.<sessionId>`: a
// session is looked up with the principal of the request's token, so another principal's token cannot find it
// (binding by construction). Idle expiry is a timestamp check here; the bucket's max age discards what is left.
import type { KV } from '@nats-io/kv';
import { mcpSessionTouchEveryMs, natsFailure } from '../../contracts/index.ts';

export interface McpSession {
  id: string;
  principalId: string;
  agentId: string;
  /** The protocol revision negotiated at initialize; later requests must not claim another. */
  protocolVersion: string;
  createdAtMs: number;
  lastSeenMs: number;
  /**
   * Resource URIs the session subscribed to (resources/subscribe), kept with the session so that whichever gateway
   * holds its event stream sends the notifications.
   */
  subscriptions: string[];
  /** KV revision read, for compare-and-set: a touch never resurrects a session ended meanwhile. */
  revision: number;
}

interface StoredSession {
  agent_id: string;
  protocol_version: string;
  created_at_ms: number;
  last_seen_ms: number;
  /** Absent: none (and in records written before sessions had subscriptions). */
  resource_subscriptions?: string[];
}

/** How often a subscription change is retried when the record changed under it (a touch, as a rule). */
const subscribeAttemptsMax = 5;

export interface McpSessionsOptions {
  idleMs: number;
  perPrincipalMax: number;
  nowMs: () => number;
  /** Session ids must be unguessable: a cryptographically random UUID. */
  newId: () => string;
  onError: (err: unknown, what: string) => void;
}

const sessionIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The sessions bucket, twice: read through any replica (direct get, the fast per-request path) and through the
 * stream leader (which has every acknowledged write, for confirming a miss).
 */
export interface McpSessionsBucket {
  anyReplica: KV;
  leader: KV;
}

export class McpSessions {
  private readonly touchEveryMs: number;
  private readonly kv: KV;

  constructor(
    private readonly bucket: McpSessionsBucket,
    private readonly o: McpSessionsOptions,
  ) {
    this.touchEveryMs = mcpSessionTouchEveryMs(o.idleMs);
    this.kv = bucket.anyReplica;
  }

  /** Open a session for the caller, or 'limit' when the principal already holds the most it may. */
  async open(caller: { principalId: string; agentId: string }, protocolVersion: string): Promise<McpSession | 'limit'> {
    if ((await this.countLive(caller.principalId)) >= this.o.perPrincipalMax) return 'limit';
    const now = this.o.nowMs();
    const session: McpSession = {
      id: this.o.newId(),
      principalId: caller.principalId,
      agentId: caller.agentId,
      protocolVersion,
      createdAtMs: now,
      lastSeenMs: now,
      subscriptions: [],
      revision: 0,
    };
    session.revision = await this.kv.create(key(session.principalId, session.id), encode(session));
    return session;
  }

  /** The live session with this id of this principal, or null (unknown, ended, expired, or another's). */
  async find(principalId: string, sessionId: string, fromLeader = false): Promise<McpSession | null> {
    if (!sessionIdPattern.test(sessionId)) return null;
    let entry = await (fromLeader ? this.bucket.leader : this.bucket.anyReplica).get(key(principalId, sessionId));
    // A replica may lag the write that opened the session (through another gateway, a moment ago): ask the leader
    // before answering 404. Misses are rare (ended or unknown sessions), so this costs the common path nothing.
    if (entry?.operation !== 'PUT' && !fromLeader) entry = await this.bucket.leader.get(key(principalId, sessionId));
    if (entry?.operation !== 'PUT') return null;
    const stored = entry.json<StoredSession>();
    const session: McpSession = {
      id: sessionId,
      principalId,
      agentId: stored.agent_id,
      protocolVersion: stored.protocol_version,
      createdAtMs: stored.created_at_ms,
      lastSeenMs: stored.last_seen_ms,
      subscriptions: stored.resource_subscriptions ?? [],
      revision: entry.revision,
    };
    if (this.expired(session)) {
      this.kv.delete(key(principalId, sessionId), { previousSeq: entry.revision }).catch(() => {});
      return null;
    }
    return session;
  }

  /**
   * Record activity, at most once per touch interval. The request path does not wait for it; the promise settles
   * when the write is done, lost or skipped.
   */
  async touch(session: McpSession): Promise<void> {
    const now = this.o.nowMs();
    if (now - session.lastSeenMs < this.touchEveryMs) return;
    const touched = { ...session, lastSeenMs: now };
    // Compare-and-set on the revision read: losing to another gateway's touch is fine, and an ended session
    // (deleted since) stays ended.
    await this.kv
      .update(key(session.principalId, session.id), encode(touched), session.revision)
      .catch((err: unknown) => {
        if (natsFailure(err) !== 'wrong_last_sequence') this.o.onError(err, 'touching an MCP session');
      });
  }

  /**
   * Add or remove a resource subscription, by compare-and-set on the revision: a write in between (a touch, or a
   * change through another gateway) is read again from the leader and the change applied over it. The write counts
   * as activity. Returns the session as stored, or null when it ended meanwhile.
   */
  async setSubscribed(session: McpSession, uri: string, subscribed: boolean): Promise<McpSession | null> {
    let current: McpSession | null = session;
    for (let attempt = 0; attempt < subscribeAttemptsMax; attempt++) {
      if (current.subscriptions.includes(uri) === subscribed) return current;
      const next: McpSession = {
        ...current,
        subscriptions: subscribed
          ? [...current.subscriptions, uri].sort()
          : current.subscriptions.filter((u) => u !== uri),
        lastSeenMs: Math.max(current.lastSeenMs, this.o.nowMs()),
      };
      try {
        next.revision = await this.kv.update(key(next.principalId, next.id), encode(next), current.revision);
        return next;
      } catch (err) {
        if (natsFailure(err) !== 'wrong_last_sequence') throw err;
      }
      current = await this.find(session.principalId, session.id, true);
      if (!current) return null;
    }
    throw new Error(`MCP session ${session.id} kept changing while its subscriptions were written`);
  }

  async end(session: McpSession): Promise<void> {
    await this.kv.delete(key(session.principalId, session.id));
  }

  expired(session: McpSession): boolean {
    return this.o.nowMs() - session.lastSeenMs > this.o.idleMs;
  }

  /**
   * Sessions the principal holds. Listing keys is cheap until the limit is reached; only then is each one read, and
   * expired ones are removed, so that stale sessions never lock a principal out.
   */
  private async countLive(principalId: string): Promise<number> {
    const ids: string[] = [];
    const prefix = key(principalId, '');
    for await (const k of await this.kv.keys(`${prefix}*`)) ids.push(k.slice(prefix.length));
    if (ids.length < this.o.perPrincipalMax) return ids.length;
    let live = 0;
    for (const id of ids) if (await this.find(principalId, id)) live++;
    return live;
  }
}

/** Principal ids come from tokens this service signed (UUIDs); anything else is a bug, not a client error. */
const principalIdPattern = /^[A-Za-z0-9_-]{1,100}$/;

function key(principalId: string, sessionId: string): string {
  if (!principalIdPattern.test(principalId)) throw new Error(`principal id ${principalId} cannot be a KV key token`);
  return `${principalId}.${sessionId}`;
}

function encode(s: McpSession): string {
  const stored: StoredSession = {
    agent_id: s.agentId,
    protocol_version: s.protocolVersion,
    created_at_ms: s.createdAtMs,
    last_seen_ms: s.lastSeenMs,
  };
  if (s.subscriptions.length > 0) stored.resource_subscriptions = s.subscriptions;
  return JSON.stringify(stored);
}
