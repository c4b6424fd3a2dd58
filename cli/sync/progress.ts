// Progress of a long `assay sync` or `restore`, on stderr: on a terminal, one line redrawn in place (a bar, files
// and bytes done, the rate and the time left); otherwise plain lines, at most one a second and one at the end, so a
// log stays readable. `--json` and `--quiet` turn it off.

export interface ProgressSink {
  isTTY: boolean;
  columns?: number;
  write(s: string): unknown;
}

export class Progress {
  private doneFiles = 0;
  private doneBytes = 0;
  private readonly startedMs = Date.now();
  private lastDrawMs = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly out: ProgressSink | null,
    private readonly verb: string,
    private readonly totalFiles: number,
    private readonly totalBytes: number,
  ) {
    if (out?.isTTY) this.timer = setInterval(() => this.draw(false), 200).unref();
  }

  bytes(n: number): void {
    this.doneBytes += n;
    this.maybeDraw();
  }

  file(): void {
    this.doneFiles++;
    this.maybeDraw();
  }

  end(): void {
    if (this.timer) clearInterval(this.timer);
    this.draw(true);
  }

  private maybeDraw(): void {
    if (!this.out) return;
    const now = Date.now();
    if (now - this.lastDrawMs >= (this.out.isTTY ? 100 : 1000)) this.draw(false);
  }

  private draw(final: boolean): void {
    if (!this.out) return;
    this.lastDrawMs = Date.now();
    const seconds = Math.max(0.001, (Date.now() - this.startedMs) / 1000);
    const rate = this.doneBytes / seconds;
    const left = rate > 0 ? (this.totalBytes - this.doneBytes) / rate : Number.NaN;
    const share =
      this.totalBytes > 0
        ? this.doneBytes / this.totalBytes
        : this.totalFiles > 0
          ? this.doneFiles / this.totalFiles
          : 1;
    const pct = Math.min(100, Math.floor(share * 100));
    const facts =
      `${this.doneFiles}/${this.totalFiles} files  ${mb(this.doneBytes)}/${mb(this.totalBytes)}  ` +
      `${mb(rate)}/s  ETA ${final ? '0s' : duration(left)}`;
    if (this.out.isTTY) {
      const width = Math.max(10, Math.min(30, (this.out.columns ?? 80) - facts.length - this.verb.length - 12));
      const filled = Math.round((pct / 100) * width);
      const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
      this.out.write(`\r\x1b[2K${this.verb} ${bar} ${String(pct).padStart(3)}%  ${facts}${final ? '\n' : ''}`);
    } else {
      this.out.write(`${this.verb}: ${pct}% ${facts}\n`);
    }
  }
}

export function mb(bytes: number): string {
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

function duration(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${Math.ceil(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.ceil(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
