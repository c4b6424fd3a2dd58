// A durable JetStream consumer processed `concurrency` messages at a time, restarted if it fails, until `signal`
// aborts. Each message is handled once per delivery: `handle` acks it or naks it; a throw naks it for redelivery.
import type { Consumer, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';

export async function consumeConcurrently(
  consumer: Consumer,
  concurrency: number,
  handle: (m: JsMsg) => Promise<void>,
  signal: AbortSignal,
  log: Logger,
  what: string,
): Promise<void> {
  while (!signal.aborted) {
    // Pulls expire after 5 s (heartbeats at half that): when the consumer's leader moves to another NATS node, the
    // client notices the missed heartbeats and pulls again within seconds (with the default 30 s, after 30-45 s).
    const messages = await consumer.consume({ max_messages: concurrency * 2, expires: 5000 });
    const onAbort = () => void messages.close();
    signal.addEventListener('abort', onAbort);
    const running = new Set<Promise<void>>();
    try {
      for await (const m of messages) {
        const task = handle(m).catch((err) => {
          log.warn({ err, what }, 'message failed; redelivering');
          m.nak(1000);
        });
        running.add(task);
        void task.finally(() => running.delete(task));
        if (running.size >= concurrency) await Promise.race(running);
      }
    } catch (err) {
      if (!signal.aborted) log.error({ err, what }, 'consumer failed; restarting');
    } finally {
      signal.removeEventListener('abort', onAbort);
      await Promise.all(running);
    }
  }
}
