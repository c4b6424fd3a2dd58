// A stateless service: a queue-group subscription whose handler always replies exactly once, error or success.
// Services scale by starting more processes; NATS spreads requests across the group.
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { type BusReply, type BusRequest, decodeReply, encodeReply, errorReply } from '../../contracts/index.ts';

const encoder = new TextEncoder();

export function serveService(
  nc: NatsConnection,
  subject: string,
  handle: (req: BusRequest) => Promise<BusReply>,
  log: Logger,
  inflightMax = 1000,
): Subscription {
  let inflight = 0;
  return nc.subscribe(subject, {
    queue: subject,
    callback: (err, msg) => {
      if (err) {
        log.error({ err, subject }, 'service subscription error');
        return;
      }
      const reply = (r: BusReply) => {
        if (msg.reply) msg.respond(encodeReply(r));
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
      inflight++;
      handle(req)
        .catch((e: unknown) => {
          log.error({ err: e, subject, op: req.op }, 'service handler failed');
          return errorReply('unavailable', 'the service could not complete the request');
        })
        .then(reply)
        .finally(() => {
          inflight--;
        });
    },
  });
}

/** Send a request over the bus and decode the reply; transport failures become `unavailable`. */
export async function busRequest(
  nc: NatsConnection,
  subject: string,
  req: BusRequest,
  timeoutMs: number,
): Promise<BusReply> {
  try {
    const msg = await nc.request(subject, encoder.encode(JSON.stringify(req)), { timeout: timeoutMs });
    return decodeReply(msg.data).reply;
  } catch (err) {
    return errorReply(
      'unavailable',
      `no answer from ${subject.split('.').slice(1, 3).join('.')}: ${(err as Error).message}`,
    );
  }
}
