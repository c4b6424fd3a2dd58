// The GET /mcp event streams this gateway process holds open, bounded by ASSAY_MCP_SSE_STREAMS_MAX. One stream per
// session per process: a second GET for the same session replaces the first (a client that lost its connection
// without noticing reconnects, and the half-dead stream must not hold a slot).
export interface OpenStream {
  principalId: string;
  sessionId: string;
  end: () => void;
}

export class EventStreams {
  private readonly open = new Map<string, OpenStream>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.open.size;
  }

  /** Register a stream; false when the process is at its limit (a replaced stream frees its slot first). */
  add(stream: OpenStream): boolean {
    const k = streamKey(stream.principalId, stream.sessionId);
    const previous = this.open.get(k);
    if (!previous && this.open.size >= this.max) return false;
    this.open.set(k, stream);
    previous?.end();
    return true;
  }

  /** Whether `add` would take this stream now (for HEAD, which answers as GET would without opening one). */
  hasRoom(stream: OpenStream): boolean {
    return this.open.size < this.max || this.open.has(streamKey(stream.principalId, stream.sessionId));
  }

  /** Forget a stream that ended (only if it is still the registered one for its session). */
  remove(stream: OpenStream): void {
    const k = streamKey(stream.principalId, stream.sessionId);
    if (this.open.get(k) === stream) this.open.delete(k);
  }

  endSession(principalId: string, sessionId: string): void {
    this.open.get(streamKey(principalId, sessionId))?.end();
  }

  endAll(): void {
    for (const s of [...this.open.values()]) s.end();
  }

  all(): OpenStream[] {
    return [...this.open.values()];
  }
}

function streamKey(principalId: string, sessionId: string): string {
  return `${principalId}.${sessionId}`;
}
