// A stateless service: a queue-group subscription on the service's subject, dispatching each request to the handler
// its operation registered. Every request gets exactly one reply, error or success. Services scale by starting more
// processes; NATS spreads requests across the group.
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  assertHandlers,
  type BusReply,
  type BusRequest,
  decodeReply,
  encodeReply,
  errorReply,
  type Answer,
  answerOf,
  type InternalOpId,
  type Names,
  natsFailure,
  replyParts,
  replyPartsHeader,
  requiresCaller,
  type ServiceHandlers,
  type ServiceName,
} from '../../contracts/index.ts';
import { extractTrace, inSpan, injectTrace, SpanKind, tracingOn } from './telemetry.ts';
import { headers as natsHeaders } from '@nats-io/nats-core';

const encoder = new TextEncoder();

type AnyServiceHandler = (req: BusRequest) => Promise<BusReply>;

export function serveService<S extends ServiceName>(
  nc: NatsConnection,
  names: Names,
  service: S,
  handlers: ServiceHandlers<S>,
  log: Logger,
  inflightMax = 1000,
): Subscription {
  assertHandlers({ to: 'service', service }, handlers, `the ${service} service`);
  const byOp = handlers as unknown as Record<string, AnyServiceHandler | undefined>;
  const subject = names.serviceSubject(service);
  let inflight = 0;
  return nc.subscribe(subject, {
    queue: subject,
    callback: (err, msg) => {
      if (err) {
        log.error({ err, subject }, 'service subscription error');
        return;
      }
      const inParts = msg.headers?.get(replyPartsHeader) === 'parts';
      const send = (r: BusReply) => {
        if (!msg.reply) return;
        if (!inParts) {
          msg.respond(encodeReply(r));
          return;
        }
        // Headroom under max_payload for the message's own framing.
        const partBytesMax = Math.max(4096, (nc.info?.max_payload ?? 1_048_576) - 4096);
        for (const part of replyParts(encodeReply(r), partBytesMax)) msg.respond(part);
      };
      const reply = (r: BusReply) => {
        try {
          send(r);
        } catch (err) {
          // A reply over max_payload to a request that did not ask for parts: the requester gets a refusal now
          // instead of its deadline.
          log.error({ err, service }, 'reply not sent');
          send(errorReply('unavailable', 'the reply could not be sent; retry shortly'));
        }
      };
      if (inflight >= inflightMax) {
        reply(errorReply('unavailable', 'the service is at capacity; retry shortly', 1));
        return;
      }
      let req: BusRequest;
      try {
        req = msg.json<BusRequest>();
      } catch {
        reply(errorReply('validation_failed', 'the bus message is not JSON'));
        return;
      }
      // The boot check makes a missing handler a message from an incompatible process, not a client error.
      const handler = byOp[req.op];
      if (!handler) {
        log.error({ service, op: req.op, requestId: req.requestId }, 'no handler for this operation');
        reply(errorReply('unavailable', 'this request is not served by this version; retry shortly'));
        return;
      }
      if (requiresCaller(req.op) && !req.caller) {
        reply(errorReply('unauthorized', 'this operation needs a caller'));
        return;
      }
      inflight++;
      inSpan(
        `${service} ${req.op}`,
        SpanKind.SERVER,
        { 'messaging.system': 'nats', 'assay.service': service, 'assay.operation': req.op },
        () => handler(req),
        tracingOn() ? extractTrace(msg.headers) : undefined,
      )
        .catch((e: unknown) => {
          log.error({ err: e, service, op: req.op, requestId: req.requestId }, 'service handler failed');
          return errorReply('unavailable', 'the service could not complete the request');
        })
        .then(reply)
        .finally(() => {
          inflight--;
        });
    },
  });
}

/**
 * Send a request over the bus and decode the reply. Transport failures become `unavailable` with a stable message;
 * what actually happened (subject, library error) goes to the log with the request id.
 */
export async function busRequest(
  nc: NatsConnection,
  subject: string,
  req: BusRequest,
  timeoutMs: number,
  log?: Logger,
): Promise<BusReply> {
  try {
    // The active span's traceparent travels in the headers (tracing on only).
    const headers = tracingOn() ? natsHeaders() : undefined;
    if (headers) injectTrace(headers);
    const msg = await nc.request(subject, encoder.encode(JSON.stringify(req)), {
      timeout: timeoutMs,
      ...(headers ? { headers } : {}),
    });
    return decodeReply(msg.data).reply;
  } catch (err) {
    const failure = natsFailure(err);
    log?.warn({ err, subject, op: req.op, requestId: req.requestId, failure }, 'bus request failed');
    return errorReply(
      'unavailable',
      failure === 'timeout'
        ? 'a part of the service did not answer in time; retry with the same Idempotency-Key'
        : 'a part of the service is not reachable right now; retry shortly',
      1,
    );
  }
}

/** The reply body of an internal query, typed from its row; refusals are returned as they are. */
export async function askInternal<Id extends InternalOpId>(
  nc: NatsConnection,
  subject: string,
  request: BusRequest & { op: Id },
  timeoutMs: number,
  log?: Logger,
): Promise<Answer<Id>> {
  return answerOf(request.op, await busRequest(nc, subject, request, timeoutMs, log));
}
