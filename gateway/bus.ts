// The gateway's side of the bus: NATS requests with a deadline, and a fast refusal while NATS is unreachable so
// callers get 503 at once instead of waiting for the timeout. A failure reaches the client as one of a few stable
// texts; what the library said, and the subject, go to the log with the request id.
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type {
  Answer,
  BusReply,
  BusRequest,
  Caller,
  InProcessActors,
  InternalOpId,
  Names,
  ReceivedReply,
  RequestOf,
} from '../contracts/index.ts';
import {
  answerOf,
  decodeReply,
  errorReply,
  InProcessTimeout,
  internalRequest,
  natsFailure,
  replyPartsHeader,
  subjectOf,
} from '../contracts/index.ts';
import { injectTrace, timeNatsRequest, tracingOn } from './telemetry.ts';

const encoder = new TextEncoder();

const unreachable = 'the message bus is unreachable; retry shortly';
const noResponders = 'no process serves this request right now (shards may be moving); retry shortly';

export class GatewayBus {
  private connected = true;
  private readonly timedOut: string;

  constructor(
    readonly nc: NatsConnection,
    private readonly timeoutMs: number,
    private readonly log: Logger,
    /** The actor host of this process, when it runs one: its shards' requests skip the round trip to nats-server. */
    private readonly inProcess: InProcessActors | null = null,
    /** The deployment's subjects, for `ask`. */
    private readonly names: Names | null = null,
  ) {
    this.timedOut = `no answer within ${timeoutMs} ms; a retry with the same Idempotency-Key is safe`;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') this.connected = false;
        else if (s.type === 'reconnect') this.connected = true;
      }
    })();
  }

  isConnected(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  /**
   * One internal operation, its body and its answer typed from its row (contracts/ask.ts): sent to its service, or
   * to the actor `actorId` of its kind. `caller`: who it acts for (a principal acting as itself, see `ownCaller`).
   */
  async ask<Id extends InternalOpId>(
    op: Id,
    body: RequestOf<Id>['body'],
    o: { requestId: string; caller?: Caller | null; actorId?: string; inParts?: boolean; timeoutMs?: number },
  ): Promise<Answer<Id>> {
    if (!this.names) throw new Error('this bus was made without the deployment names it needs to ask');
    const subject = subjectOf(this.names, op, o.actorId);
    const request = internalRequest(op, body, { requestId: o.requestId, caller: o.caller ?? null });
    const { reply } = await this.requestWire(subject, request, o.inParts ?? false, o.timeoutMs ?? this.timeoutMs);
    return answerOf(op, reply);
  }

  async request(subject: string, req: BusRequest): Promise<BusReply> {
    return (await this.requestWire(subject, req)).reply;
  }

  /**
   * The reply with its body's raw JSON, so it can go to the client without being parsed and re-serialised.
   * `inParts`: the reply may exceed one NATS message, so it is asked for in parts (contracts/bus.ts).
   * `timeoutMs`: a longer wait than the configured one, for work that takes its own time (a skill's model call).
   */
  async requestWire(
    subject: string,
    req: BusRequest,
    inParts = false,
    timeoutMs = this.timeoutMs,
  ): Promise<ReceivedReply> {
    if (!this.isConnected()) return refused(unreachable);
    const family = subjectFamily(subject);
    const started = performance.now();
    const took = (outcome: string) => timeNatsRequest(family, outcome, started);
    try {
      // The request span's traceparent travels in the message's headers (tracing on only).
      const traced = tracingOn() ? natsHeaders() : undefined;
      if (traced) injectTrace(traced);
      const here = inParts ? null : this.inProcess?.(subject, req, timeoutMs, traced);
      if (here) {
        const answer = await here;
        took('ok');
        return answer;
      }
      const data = encoder.encode(JSON.stringify(req));
      if (inParts) {
        const joined = await this.requestParts(subject, data, timeoutMs, traced);
        took(joined === null ? 'timeout' : 'ok');
        return joined === null ? refused(this.timedOut) : decodeReply(joined);
      }
      const msg = await this.nc.request(subject, data, { timeout: timeoutMs, ...(traced ? { headers: traced } : {}) });
      took('ok');
      return decodeReply(msg.data);
    } catch (err) {
      const failure = err instanceof InProcessTimeout ? 'timeout' : natsFailure(err);
      took(failure);
      this.log.warn({ err, failure, subject, requestId: req.requestId, op: req.op }, 'bus request failed');
      if (failure === 'no_responders') return refused(noResponders);
      if (failure === 'timeout') return refused(this.timedOut);
      return refused(unreachable);
    }
  }

  /** The parts of a reply joined, or null when the deadline passed before the empty message that ends them. */
  private async requestParts(
    subject: string,
    data: Uint8Array,
    timeoutMs: number,
    traced?: ReturnType<typeof natsHeaders>,
  ): Promise<Uint8Array | null> {
    const headers = traced ?? natsHeaders();
    headers.set(replyPartsHeader, 'parts');
    const replies = await this.nc.requestMany(subject, data, {
      strategy: 'sentinel',
      maxWait: timeoutMs,
      headers,
    });
    const parts: Uint8Array[] = [];
    for await (const msg of replies) {
      if (msg.data.length === 0) return Buffer.concat(parts);
      parts.push(msg.data);
    }
    return null;
  }
}

/** `<ns>.actor.<kind>.<shard>.<id>` is `actor.<kind>`, `<ns>.svc.<name>` is `svc.<name>`: a bounded label. */
export function subjectFamily(subject: string): string {
  // Cut by index: it runs on every request, where splitting the subject into an array showed in profiles.
  const first = subject.indexOf('.');
  const second = first < 0 ? -1 : subject.indexOf('.', first + 1);
  if (second < 0) return 'other';
  const third = subject.indexOf('.', second + 1);
  return subject.slice(first + 1, third < 0 ? undefined : third);
}

const refused = (message: string): ReceivedReply => ({ reply: errorReply('unavailable', message, 1), rawBody: null });

/**
 * A principal acting as itself (the account page, the context-file API, device sync): no agent of its own, so its
 * agent id is its principal id, and the scopes are the face's to decide (the operation runs as the owner).
 */
export function ownCaller(principalId: string): Caller {
  return { principalId, agentId: principalId, scopes: [], sandbox: false };
}
