// NATS names and the messages that cross the bus. Every stream, bucket and subject starts with the deployment's
// namespace, so several deployments (or test runs) can share one NATS server without seeing each other.
import type { ErrorCode } from './errors.ts';

export const namespacePattern = /^[a-z][a-z0-9_]{0,31}$/;

/** Actor kinds and their fixed shard counts. Changing a count re-homes every actor: it needs a migration. */
export const actorKinds = {
  principal: { shardCount: 64 },
  listing: { shardCount: 64 },
} as const;
export type ActorKind = keyof typeof actorKinds;

export type ServiceName =
  | 'sandbox'
  | 'auth'
  | 'ledger'
  | 'catalog'
  | 'delivery'
  | 'oauth'
  | 'skills'
  | 'webhooks'
  | 'payments'
  | 'x402';

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
      ledger: { name: `${upper}_LEDGER`, subjects: [`${ns}.ledger.>`], workQueue: false },
      listings: { name: `${upper}_LISTINGS`, subjects: [`${ns}.listing.>`], workQueue: false },
      /** Editions waiting for verification: a work queue, each message removed once a verifier acknowledges it. */
      verify: { name: `${upper}_VERIFY`, subjects: [`${ns}.verify.>`], workQueue: true },
    },
    ledgerSubject(principalId: string): string {
      return `${ns}.ledger.${principalId}`;
    },
    listingSubject(listingId: string): string {
      return `${ns}.listing.${listingId}`;
    },
    verifySubject: `${ns}.verify.edition`,
    /**
     * Core-NATS notices (not stored) that what a purchase quote says may have changed: the artifact's current
     * edition or its report, or the set of open judge errata. Caches drop the entry; a lost notice is bounded by
     * the cache's time to live.
     */
    notices: {
      artifact: (artifactId: string) => `${ns}.notice.artifact.${artifactId}`,
      anyArtifact: `${ns}.notice.artifact.*`,
      errata: `${ns}.notice.errata`,
      /**
       * The events projection committed new events for these principals (docs/mcp.md, Events as a resource): one
       * message per committed batch, its payload the principals' ids (`eventsNoticeBodies`). Gateways holding an MCP
       * event stream subscribed to `assay://events` listen. A lost notice delays nothing a poll sees.
       */
      events: `${ns}.notice.events`,
      /** An MCP session's resource subscriptions changed (payload: its KV revision and URIs); every gateway listens. */
      mcpSession: (principalId: string, sessionId: string) => `${ns}.notice.mcp_session.${principalId}.${sessionId}`,
      anyMcpSession: `${ns}.notice.mcp_session.*.*`,
    },

    buckets: {
      leases: `${ns}_leases`,
      snapshots: `${ns}_snapshots`,
      /** MCP sessions, key `<principalId>.<sessionId>`: any gateway serves any session (docs/mcp.md). */
      mcpSessions: `${ns}_mcp_sessions`,
      /** Operational alerts (contracts/health.ts), watched by every gateway for /healthz. */
      health: `${ns}_health`,
      /** Revoked OAuth grants and access tokens (keys: revokedKeys in oauth.ts), watched by every gateway. */
      revoked: `${ns}_revoked`,
    },
    consumers: {
      verifier: 'verifier',
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
  /** An HTTP HEAD: answer as for GET, but nothing is delivered (a delivery records no receipt). */
  head?: boolean;
  /** The If-None-Match header: a download it matches is answered 304 and delivers nothing new. */
  ifNoneMatch?: string;
}

/** If-None-Match: `*`, or a list of entity tags; weak comparison, as RFC 9110 prescribes for this header. */
export function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return header.split(',').some((t) => strip(t) === strip(etag));
}

/**
 * A reply. `B` is what an ok reply's body holds: an internal operation's handler answers the body its row's `reply`
 * schema declares (contracts/handlers.ts types it), and its caller reads it as that (contracts/ask.ts).
 */
export type BusReply<B = unknown> =
  | {
      ok: true;
      status: number;
      /** JSON-able, or the raw bytes when `mediaType` is set. */
      body: B;
      /** The stored result of an earlier call with this key. */
      replayed?: boolean;
      /** A strong entity tag of the body; the gateway answers 304 to a matching If-None-Match. */
      etag?: string;
      /** Set for a raw-bytes reply (a download): `body` is a Uint8Array sent to the client as it is. */
      mediaType?: string;
      /** Response headers of a raw-bytes reply beyond the content type and ETag (Content-Digest, say). */
      headers?: Record<string, string>;
    }
  | { ok: false; error: { code: ErrorCode; message: string; retryAfterS?: number; approvalId?: string } };

/**
 * An actor host of the same process, answering a request in place of the round trip through nats-server: the same
 * mailbox and the same decisions, without the request and the reply going through JSON in between. The request is
 * handed over as it is (its caller is frozen, since the gateway caches it, and nothing reads it after dispatch); the
 * reply's body is serialised when the actor answers, as on the bus (`replyInProcess`), so it shows the state of that
 * moment. Null when no host here serves the subject's shard (the request then goes over NATS); rejects with
 * `InProcessTimeout` when no answer came in `timeoutMs`.
 */
export type InProcessActors = (
  subject: string,
  req: BusRequest,
  timeoutMs: number,
  /** The request's headers (its span's traceparent, tracing on), as a NATS message would carry them. */
  headers?: { get(k: string): string },
) => Promise<ReceivedReply> | null;

/** A reply as the gateway receives it: `rawBody` is the body's JSON as the service wrote it (bytes or text). */
export interface ReceivedReply {
  reply: BusReply;
  rawBody: Uint8Array | string | null;
}

export class InProcessTimeout extends Error {}

/**
 * Wire form of a reply: one line of metadata JSON, a newline, then the body's JSON (or, for a raw-bytes reply, the
 * bytes). JSON text never contains a raw newline, so the first one ends the metadata; a gateway can then pass the
 * body's bytes to the client untouched instead of parsing and re-serialising them.
 */
export function encodeReply(reply: BusReply): Uint8Array {
  if (!reply.ok) return textEncoder.encode(`${JSON.stringify(reply)}\n`);
  if (reply.mediaType !== undefined) {
    const { status, etag, mediaType, headers } = reply;
    const head = textEncoder.encode(`${JSON.stringify({ ok: true, status, etag, mediaType, headers })}\n`);
    return Buffer.concat([head, reply.body as Uint8Array]);
  }
  // Named fields rather than a rest pattern, which copies the object the slow way; JSON drops undefined ones.
  const meta = { ok: true, status: reply.status, replayed: reply.replayed, etag: reply.etag };
  return textEncoder.encode(`${JSON.stringify(meta)}\n${bodyText(reply.body)}`);
}

/**
 * A reply body that is JSON text already (a search page assembled from stored fragments): sent as it is instead of
 * being serialised again. The text must be one JSON value without a raw newline, as JSON.stringify would give.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * Replies that may not fit one NATS message (delivered content). A request carrying this header (value `parts`)
 * is answered with the encoded reply cut into pieces of at most the server's max_payload, then an empty message;
 * the requester (nc.requestMany with the sentinel strategy) joins them. Every answer to such a request, refusals
 * included, ends with the empty message.
 */
export const replyPartsHeader = 'Assay-Reply';

/** The encoded reply cut into pieces of at most `partBytesMax` bytes (views, not copies), then the empty sentinel. */
export function replyParts(encoded: Uint8Array, partBytesMax: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < encoded.length; at += partBytesMax) parts.push(encoded.subarray(at, at + partBytesMax));
  parts.push(new Uint8Array(0));
  return parts;
}

/** A successful reply whose body is parsed from its raw JSON (bytes or text) only if someone reads it. */
class WireReply {
  readonly ok = true as const;
  readonly status: number;
  readonly replayed?: boolean;
  readonly etag?: string;
  private parsed: unknown;
  private done = false;

  constructor(
    meta: { status: number; replayed?: boolean; etag?: string },
    private readonly raw: Uint8Array | string,
  ) {
    this.status = meta.status;
    if (meta.replayed !== undefined) this.replayed = meta.replayed;
    if (meta.etag !== undefined) this.etag = meta.etag;
  }

  get body(): unknown {
    if (!this.done) {
      this.parsed = JSON.parse(typeof this.raw === 'string' ? this.raw : textDecoder.decode(this.raw));
      this.done = true;
    }
    return this.parsed;
  }
}

/** The reply and its body's raw JSON bytes; `reply.body` is parsed from them on first access. */
export function decodeReply(bytes: Uint8Array): ReceivedReply {
  const nl = bytes.indexOf(10);
  const meta = JSON.parse(textDecoder.decode(nl < 0 ? bytes : bytes.subarray(0, nl))) as BusReply;
  if (!meta.ok || nl < 0) return { reply: meta, rawBody: null };
  const bodyBytes = bytes.subarray(nl + 1);
  if (meta.mediaType !== undefined) return { reply: { ...meta, body: bodyBytes }, rawBody: bodyBytes };
  return { reply: new WireReply(meta, bodyBytes), rawBody: bodyBytes };
}

/**
 * A reply handed to a gateway of the same process (InProcessActors): what `decodeReply(encodeReply(reply))` gives,
 * with the body serialised now, once, and no metadata line to write and read back.
 */
export function replyInProcess(reply: BusReply): ReceivedReply {
  if (!reply.ok) return { reply, rawBody: null };
  if (reply.mediaType !== undefined) return { reply, rawBody: reply.body as Uint8Array };
  const text = bodyText(reply.body);
  return { reply: new WireReply(reply, text), rawBody: text };
}

/** A successful reply's body as JSON text: stored JSON as it is, anything else serialised. */
function bodyText(body: unknown): string {
  return body === undefined ? 'null' : body instanceof JsonText ? body.text : JSON.stringify(body);
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

export function okReply<B>(status: number, body: B): BusReply<B> {
  return { ok: true, status, body };
}

export function errorReply(code: ErrorCode, message: string, retryAfterS?: number): BusReply<never> {
  return retryAfterS === undefined
    ? { ok: false, error: { code, message } }
    : { ok: false, error: { code, message, retryAfterS } };
}

/** A purchase that waits for the principal: pending_approval, naming the approval request to watch. */
export function pendingApprovalReply(approvalId: string, message: string): BusReply<never> {
  return { ok: false, error: { code: 'pending_approval', message, approvalId } };
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

/**
 * The ids per events notice: 37 bytes each (an id and its newline), so a message stays far under NATS's 1 MiB
 * whatever the batch.
 */
const eventsNoticeIdsMax = 10_000;

/** The payloads announcing one batch's principals with new events: their ids, one per line, in as few messages as fit. */
export function eventsNoticeBodies(principalIds: readonly string[]): string[] {
  const bodies: string[] = [];
  for (let at = 0; at < principalIds.length; at += eventsNoticeIdsMax)
    bodies.push(principalIds.slice(at, at + eventsNoticeIdsMax).join('\n'));
  return bodies;
}

/** The principals an events notice names. */
export function eventsNoticePrincipals(body: string): string[] {
  return body === '' ? [] : body.split('\n');
}
