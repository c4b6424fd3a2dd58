// The gateway's side of the bus: NATS requests with a deadline, and a fast refusal while NATS is unreachable so
// callers get 503 at once instead of waiting for the timeout.
import type { NatsConnection } from '@nats-io/nats-core';
import type { BusReply, BusRequest } from '../contracts/index.ts';
import { errorReply } from '../contracts/index.ts';

const encoder = new TextEncoder();

export class GatewayBus {
  private connected = true;

  constructor(
    readonly nc: NatsConnection,
    private readonly timeoutMs: number,
  ) {
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

  async request(subject: string, req: BusRequest): Promise<BusReply> {
    if (!this.isConnected()) return errorReply('unavailable', 'the message bus is unreachable; retry shortly', 1);
    try {
      const msg = await this.nc.request(subject, encoder.encode(JSON.stringify(req)), { timeout: this.timeoutMs });
      return msg.json<BusReply>();
    } catch (err) {
      const name = (err as Error)?.name ?? '';
      const text = `${name} ${(err as Error)?.message ?? ''}`;
      if (/no ?responders/i.test(text)) {
        return errorReply(
          'unavailable',
          'no process serves this request right now (shards may be moving); retry shortly',
          1,
        );
      }
      if (/timeout/i.test(text)) {
        return errorReply(
          'unavailable',
          `no answer within ${this.timeoutMs} ms; a retry with the same Idempotency-Key is safe`,
          1,
        );
      }
      return errorReply('unavailable', 'the message bus is unreachable; retry shortly', 1);
    }
  }
}
