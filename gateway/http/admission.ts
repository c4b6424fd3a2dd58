// The in-flight limit and the draining state of one gateway process. A request that will be answered later takes a
// slot when it is admitted and gives it back exactly once, when its response ends or its client goes away (the
// Exchange does both); a graceful stop refuses new requests and waits until no slot is taken.
import { metrics } from '../telemetry.ts';

export class Admission {
  private inflight = 0;
  private draining = false;
  private idle: (() => void) | null = null;

  constructor(readonly inflightMax: number) {}

  /** Slots taken right now. */
  get count(): number {
    return this.inflight;
  }

  /** Take a slot; false when every slot is taken or the process is stopping. */
  enter(): boolean {
    if (this.draining || this.inflight >= this.inflightMax) {
      metrics.admissionRefusals.inc();
      return false;
    }
    this.inflight++;
    metrics.requestsInFlight.inc();
    return true;
  }

  /** Give a slot back. Called once per successful `enter`. */
  leave(): void {
    this.inflight--;
    metrics.requestsInFlight.dec();
    if (this.inflight === 0 && this.idle) this.idle();
  }

  /** Refuse every request from now on; resolves once no slot is taken, or after `graceMs` at the latest. */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.inflight === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => {
        this.idle = resolve;
      }),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
    this.idle = null;
  }
}
