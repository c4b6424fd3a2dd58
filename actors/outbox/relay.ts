// The outbox relay: publishes rows of the PostgreSQL outbox to JetStream (with their message id, so a publish
// repeated after a crash is stored once) and then deletes them. Woken by NOTIFY, with a poll as a safety net.
// One relay runs per deployment (a singleton lease), so messages leave in the order they were written.
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { deleteOutbox, outboxChannel, peekOutbox, type Sql } from '../../storage/index.ts';

const batchMax = 500;
const pollMs = 1000;

export async function runOutboxRelay(nc: NatsConnection, sql: Sql, log: Logger, signal: AbortSignal): Promise<void> {
  const js = jetstream(nc);
  // The wait between batches ends early on a NOTIFY or when the job stops: both abort it.
  let waiting: AbortController | null = null;
  const listener = await sql.listen(outboxChannel, () => waiting?.abort());
  const onAbort = () => waiting?.abort();
  signal.addEventListener('abort', onAbort);
  try {
    while (!signal.aborted) {
      let rows: Awaited<ReturnType<typeof peekOutbox>> = [];
      try {
        rows = await peekOutbox(sql, batchMax);
        await Promise.all(rows.map((r) => js.publish(r.subject, r.payload, { msgID: r.msg_id })));
        await deleteOutbox(
          sql,
          rows.map((r) => r.id),
        );
      } catch (err) {
        if (signal.aborted) break;
        log.error({ err }, 'outbox relay failed; retrying');
        rows = [];
      }
      if (rows.length < batchMax && !signal.aborted) {
        waiting = new AbortController();
        await sleep(pollMs, undefined, { signal: waiting.signal }).catch(() => {});
        waiting = null;
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    await listener.unlisten().catch(() => {});
  }
}
