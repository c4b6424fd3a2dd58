import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Config, Names } from '../../contracts/index.ts';
import { metrics } from '../runtime/telemetry.ts';
import {
  type AttemptResult,
  claimDueDeliveries,
  type DueDelivery,
  recordAttempts,
  type Sql,
  startDisabling,
  stopDisabling,
} from '../../storage/index.ts';
import type { Clock } from '../runtime/clock.ts';
import { askInternal } from '../runtime/service.ts';
import { type OutboundOptions, outboundOptionsOf, postJson } from '../shared/outbound-fetch.ts';
import { signatureHeaders } from './signing.ts';

/** Retries after the first attempt (the spec's "up to 5"). */
export const webhookRetriesMax = 5;
const responseBytesMax = 4096;

export interface DeliveryDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Instead of the configured sender options (tests of the resolver). */
  sender?: Partial<OutboundOptions>;
}

/** The outbound rule every fetch shares (actors/shared/outbound-fetch.ts), with a delivery's response cap. */
export function senderOptionsOf(config: Config): OutboundOptions {
  return outboundOptionsOf(config, responseBytesMax);
}

/** The wait before retry `n` (1-based): base, 2 base, 4 base, ... each within ±20%. */
export function retryDelayMs(baseMs: number, n: number, random = Math.random): number {
  return Math.round(baseMs * 2 ** (n - 1) * (0.8 + 0.4 * random()));
}

export async function runWebhookDelivery(d: DeliveryDeps, signal: AbortSignal): Promise<void> {
  const c = d.config;
  const sender = { ...senderOptionsOf(c), ...d.sender };
  // Long enough for the attempt and its record; a claim older than this died with its worker.
  const leaseMs = c.webhookTimeoutMs + 10_000;
  const inFlight = new Set<Promise<void>>();
  const recorder = new AttemptRecorder(d.sql);
  let wake: (() => void) | null = null;
  // Claims come in batches: one query per freed slot would cost more than the deliveries it starts.
  const batchMin = Math.max(1, Math.floor(c.webhookConcurrency / 4));
  while (!signal.aborted) {
    const free = c.webhookConcurrency - inFlight.size;
    let claimed: DueDelivery[] = [];
    if (free >= batchMin || inFlight.size === 0) {
      try {
        claimed = await claimDueDeliveries(d.sql, { limit: free, perWebhookMax: c.webhookPerEndpointMax, leaseMs });
      } catch (err) {
        if (!signal.aborted) d.log.warn({ err }, 'claiming webhook deliveries failed');
      }
    }
    for (const due of claimed) {
      const p: Promise<void> = deliver(d, sender, recorder, due)
        .catch((err) => d.log.error({ err, webhook: due.webhook_id, event: due.event_id }, 'webhook delivery failed'))
        .finally(() => {
          inFlight.delete(p);
          wake?.();
        });
      inFlight.add(p);
    }
    // A full claim may mean more are due: look again at once; otherwise wait for the poll or a finished attempt.
    if (claimed.length > 0 && claimed.length === free) continue;
    await Promise.race([
      sleep(c.webhookPollMs, undefined, { signal }).catch(() => undefined),
      new Promise<void>((resolve) => {
        wake = resolve;
      }),
    ]);
    wake = null;
  }
  await Promise.allSettled(inFlight);
}

async function deliver(
  d: DeliveryDeps,
  sender: OutboundOptions,
  recorder: AttemptRecorder,
  due: DueDelivery,
): Promise<void> {
  const c = d.config;
  const now = d.clock.nowMs();
  const timestampS = Math.floor(now / 1000);
  // The body carries the attempt's time (the second webhook-timestamp names), so the spec's X-Webhook-Signature, an
  // HMAC of the body alone, covers it too: a receiver that checks only that header can refuse a captured delivery
  // replayed later (docs/webhooks.md, Replays). Each attempt is signed afresh; the event id stays the same.
  const body = JSON.stringify({
    id: due.event_id,
    type: due.event_type,
    created_at: due.event_created_at.toISOString(),
    sent_at: new Date(timestampS * 1000).toISOString(),
    data: due.event_data,
  });
  const previous =
    due.previous_secret && due.previous_secret_until && due.previous_secret_until.getTime() > now
      ? due.previous_secret
      : null;
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Assay-Webhooks/1',
    ...signatureHeaders(due.event_id, timestampS, body, { secret: due.secret, previous }),
  };
  const at = new Date(now).toISOString();
  const attempt = await postJson(due.url, body, headers, sender);
  const outcome = attempt.ok ? 'delivered' : due.attempts > webhookRetriesMax ? 'failed' : 'retrying';
  metrics.webhookAttempts.inc({ outcome });
  const retryAt =
    outcome === 'retrying'
      ? new Date(d.clock.nowMs() + retryDelayMs(c.webhookRetryBaseMs, due.attempts)).toISOString()
      : null;
  const failedEvents = await recorder.record({
    webhookId: due.webhook_id,
    eventId: due.event_id,
    attempt: due.attempts,
    at,
    status: attempt.status,
    durationMs: attempt.durationMs,
    error: attempt.error,
    outcome,
    retryAt,
  });
  if (outcome === 'failed' && failedEvents >= c.webhookDisableAfterEvents) await disable(d, due, failedEvents);
}

/**
 * Attempts are recorded in batches: those that finish within a few milliseconds of each other share one
 * transaction, so a busy worker pays one commit (one WAL flush) per batch instead of one per delivery. Each caller
 * gets its webhook's count of consecutive failed events once its batch is durable.
 */
class AttemptRecorder {
  private queue: { attempt: AttemptResult; done: (failedEvents: number) => void; fail: (err: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly batchMax = 64,
    private readonly waitMs = 5,
  ) {}

  record(attempt: AttemptResult): Promise<number> {
    return new Promise((done, fail) => {
      this.queue.push({ attempt, done, fail });
      if (this.queue.length >= this.batchMax) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.waitMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    recordAttempts(
      this.sql,
      batch.map((b) => b.attempt),
    ).then(
      (counts) => {
        for (const b of batch) b.done(counts.get(b.attempt.webhookId) ?? 0);
      },
      // The claims lapse and the deliveries are attempted again (receivers deduplicate by event id).
      (err: unknown) => {
        for (const b of batch) b.fail(err);
      },
    );
  }
}

/** Disable the webhook through its owner's actor (the fact tells the owner); one worker asks, once. */
async function disable(d: DeliveryDeps, due: DueDelivery, failedEvents: number): Promise<void> {
  if (!(await startDisabling(d.sql, due.webhook_id))) return;
  const reason = `the last ${failedEvents} events failed every attempt (last: ${due.event_id})`;
  const r = await askInternal(
    d.nc,
    d.names.actorSubject('principal', due.principal_id),
    {
      op: 'webhook.disable',
      requestId: `webhook-disable-${due.webhook_id}`,
      caller: { principalId: due.principal_id, agentId: due.principal_id, scopes: [], sandbox: false },
      params: {},
      query: {},
      body: { id: due.webhook_id, reason },
    },
    d.config.requestTimeoutMs,
    d.log,
  );
  if (!r.ok) {
    d.log.warn(
      { webhook: due.webhook_id, reply: r.reply },
      'could not disable a failing webhook; the next failure tries again',
    );
    await stopDisabling(d.sql, due.webhook_id);
  }
}
