// Creating the ordered consumer a projector reads its stream through, so that a create placed on a dead node does
// not hold the projection up. An ordered consumer has one replica, and nats-server 2.9 places it on a random peer of
// its stream, a dead one included: 2.9.10 does not look at whether a peer is online (2.9.14 and later do), and a
// peer killed without a goodbye counts as online until its statistics have been missing for 150 s. Such a create is
// never answered (measured here: 3 of 12 creates on a 3-node cluster with one node killed, each failing after the
// request timeout, 5 s). So a create not answered within `hedgeAfterMs` is joined by another, and so on up to
// `createsMax`; the first answered is used, and every other one is deleted, answered or not (the meta leader drops
// the assignment, so the dead node does not create it when it comes back).
import { randomUUID } from 'node:crypto';
import { type Consumer, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

/** How long a create may go unanswered before another is sent beside it (a live node answers in milliseconds). */
const hedgeAfterMs = 1000;
/**
 * Creates per call at most, one more each `hedgeAfterMs` while none has answered: with one dead peer of three, all of
 * them land on it 1 time in 59,000 (three would fail 1 time in 27). A call that fails anyway (no meta leader: nothing
 * can be created) rejects, and the projector tries again.
 */
const createsMax = 10;

export class ConsumerCreateAborted extends Error {}

/**
 * An ordered consumer of `stream` from `startSeq`. Rejects with the last create's error if every create failed, or
 * with `ConsumerCreateAborted` when `signal` aborts first (what is created after that is deleted).
 */
export function createOrderedConsumer(
  nc: NatsConnection,
  stream: string,
  startSeq: number,
  signal: AbortSignal,
): Promise<Consumer> {
  const js = jetstream(nc);
  const discard = (name: string) => {
    void jetstreamManager(nc, { checkAPI: false })
      .then((jsm) => jsm.consumers.delete(stream, name))
      .catch(() => {});
  };
  return new Promise<Consumer>((resolve, reject) => {
    let settled = false;
    let launched = 0;
    let failed = 0;
    let hedge: NodeJS.Timeout | null = null;
    const settle = () => {
      settled = true;
      if (hedge) clearTimeout(hedge);
      signal.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      if (settled) return;
      settle();
      reject(new ConsumerCreateAborted(`creating a consumer of ${stream} was given up`));
    };
    const launch = () => {
      if (hedge) clearTimeout(hedge);
      hedge = null;
      if (settled || launched >= createsMax) return;
      launched++;
      // Named by us, so that a create that failed can be deleted by name.
      const prefix = `proj_${randomUUID().replaceAll('-', '')}`;
      js.consumers.get(stream, { name_prefix: prefix, opt_start_seq: startSeq }).then(
        (consumer) => {
          if (settled) {
            consumer.delete().catch(() => {});
            return;
          }
          settle();
          resolve(consumer);
        },
        (err: unknown) => {
          // Never answered (placed on a dead node) or refused: if the meta leader assigned it, drop the assignment.
          discard(`${prefix}_1`);
          failed++;
          if (settled || failed < launched) return;
          // Every create so far failed: another at once, or give up with the error.
          if (launched < createsMax) launch();
          else {
            settle();
            reject(err);
          }
        },
      );
      if (launched < createsMax) hedge = setTimeout(launch, hedgeAfterMs);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort);
    launch();
  });
}
