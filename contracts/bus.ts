// NATS names and the messages that cross the bus. Every stream, bucket and subject starts with the deployment's
// namespace, so several deployments (or test runs) can share one NATS server without seeing each other.
import type { ErrorCode } from './errors.ts';

export const namespacePattern = /^[a-z][a-z0-9_]{0,31}$/;

/** Actor kinds and their fixed shard counts. Changing a count re-homes every actor: it needs a migration. */
export const actorKinds = {
  principal: { shardCount: 64 },
} as const;
export type ActorKind = keyof typeof actorKinds;

export type ServiceName = 'sandbox' | 'auth' | 'ledger';

/** FNV-1a over the id's UTF-16 code units: stable across processes, languages and restarts. */
export function shardOf(actorId: string, shardCount: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < actorId.length; i++) {
    hash ^= actorId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shardCount;
}

export function names(namespace: string) {
  const ns = namespace;
  const upper = ns.toUpperCase();
  return {
    namespace: ns,
    /** Request subject of one actor. Hosts subscribe to `<ns>.actor.<kind>.<shard>.*` for shards they lease. */
    actorSubject(kind: ActorKind, actorId: string): string {
      return `${ns}.actor.${kind}.${shardOf(actorId, actorKinds[kind].shardCount)}.${actorId}`;
    },
    actorShardWildcard(kind: ActorKind, shard: number): string {
      return `${ns}.actor.${kind}.${shard}.*`;
    },
    serviceSubject(service: ServiceName): string {
      return `${ns}.svc.${service}`;
    },
    streams: {
      ledger: { name: `${upper}_LEDGER`, subjects: [`${ns}.ledger.>`] },
    },
    ledgerSubject(principalId: string): string {
      return `${ns}.ledger.${principalId}`;
    },
    buckets: {
      leases: `${ns}_leases`,
      snapshots: `${ns}_snapshots`,
      /** MCP sessions, key `<principalId>.<sessionId>`: any gateway serves any session (docs/mcp.md). */
      mcpSessions: `${ns}_mcp_sessions`,
    },
    consumers: {
      ledgerProjector: 'ledger_projector',
    },
  };
}
export type Names = ReturnType<typeof names>;

/** Who is calling, as established by the gateway from a verified token. */
export interface Caller {
  principalId: string;
  agentId: string;
  scopes: string[];
  sandbox: boolean;
}

/** A request dispatched from the gateway (or a service) to an actor or a service. */
export interface BusRequest {
  /** Operation id from the operation table, or an internal command name. */
  op: string;
  requestId: string;
  caller: Caller | null;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  /** Present on mutating operations: the key and the sha256 of (op, params, canonical body). */
  idempotency?: { key: string; requestHash: string };
  clientAddress?: string;
}

export type BusReply =
  | {
      ok: true;
      status: number;
      body: unknown /** The stored result of an earlier call with this key. */;
      replayed?: boolean;
    }
  | { ok: false; error: { code: ErrorCode; message: string; retryAfterS?: number } };

export function okReply(status: number, body: unknown): BusReply {
  return { ok: true, status, body };
}

export function errorReply(code: ErrorCode, message: string, retryAfterS?: number): BusReply {
  return retryAfterS === undefined
    ? { ok: false, error: { code, message } }
    : { ok: false, error: { code, message, retryAfterS } };
}

/** Claims of an agent token (JWT, ES256). */
export interface AgentTokenClaims {
  sub: string;
  principal_id: string;
  agent_id: string;
  scope: string;
  sandbox: boolean;
  iss: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
}
