// A least-recently-used cache bounded by the bytes of what it holds, for immutable values (an edition's Markdown
// or PDF). A Map keeps insertion order, so re-inserting on a hit makes the first key the least recently used.
export class ByteBudgetCache<V> {
  private readonly entries = new Map<string, { value: V; bytes: number }>();
  private held = 0;

  constructor(private readonly budgetBytes: number) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  /** Values larger than the whole budget are not kept. */
  set(key: string, value: V, bytes: number): void {
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.held -= old.bytes;
    }
    if (bytes > this.budgetBytes) return;
    this.entries.set(key, { value, bytes });
    this.held += bytes;
    for (const [k, e] of this.entries) {
      if (this.held <= this.budgetBytes) break;
      this.entries.delete(k);
      this.held -= e.bytes;
    }
  }

  get bytes(): number {
    return this.held;
  }
}
