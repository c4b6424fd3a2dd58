// The gateway's side of the bus: NATS requests with a deadline, and a fast refusal while NATS is unreachable so
// callers get 503 at once instead of waiting for the timeout.
import type { NatsConnection } from '@nats-io/nats-core';
import type { BusReply, BusRequest } from '../contracts/index.ts';
import { decodeReply, errorReply } from '../contracts/index.ts';

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
    return (await this.requestWire(subject, req)).reply;
  }

  /** The reply with its body's raw bytes, so they can go to the client without being parsed and re-serialised. */
  async requestWire(subject: string, req: BusRequest): Promise<{ reply: BusReply; bodyBytes: Uint8Array | null }> {
    if (!this.isConnected()) return refused('the message bus is unreachable; retry shortly');
    try {
      const msg = await this.nc.request(subject, encoder.encode(JSON.stringify(req)), { timeout: this.timeoutMs });
      return decodeReply(msg.data);
    } catch (err) {
      const text = `${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? ''}`;
      if (/no ?responders/i.test(text)) {
        return refused('no process serves this request right now (shards may be moving); retry shortly');
      }
      if (/timeout/i.test(text)) {
        return refused(`no answer within ${this.timeoutMs} ms; a retry with the same Idempotency-Key is safe`);
      }
      return refused('the message bus is unreachable; retry shortly');
    }
  }
}

const refused = (message: string) => ({ reply: errorReply('unavailable', message, 1), bodyBytes: null });
