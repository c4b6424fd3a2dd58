// The body read timeout (ASSAY_BODY_READ_TIMEOUT_MS) for every request of one listener: one coarse timer sweeps the
// bodies still arriving, instead of a timer per request (a body that arrives with its headers, the common case,
// costs a set insert and delete). A read is cut between 1 and 1.25 times the timeout after it started.

/** A body being read: when it started, in ticks, and what to do when it takes too long. */
export interface BodyRead {
  readStartTick: number;
  readTimedOut(): void;
}

/** Ticks per timeout: a read is cut at the first sweep at least this many whole ticks after its start. */
const ticksPerTimeout = 4;

export class BodyDeadlines {
  private readonly reading = new Set<BodyRead>();
  private tick = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(readonly timeoutMs: number) {
    const tickMs = Math.max(5, Math.ceil(timeoutMs / ticksPerTimeout));
    this.timer = setInterval(() => this.sweep(), tickMs).unref();
  }

  start(read: BodyRead): void {
    read.readStartTick = this.tick;
    this.reading.add(read);
  }

  stop(read: BodyRead): void {
    this.reading.delete(read);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private sweep(): void {
    this.tick++;
    // A read that started during tick t has run at least (now - t - 1) whole ticks.
    for (const read of this.reading) {
      if (this.tick - read.readStartTick > ticksPerTimeout) {
        this.reading.delete(read);
        read.readTimedOut();
      }
    }
  }
}
