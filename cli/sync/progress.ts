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
      `${this.doneFiles}/${count(this.totalFiles, 'file')}  ${byteSize(this.doneBytes)}/${byteSize(this.totalBytes)}  ` +
      `${byteSize(rate)}/s  ETA ${final ? '0s' : duration(left)}`;
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

const byteUnits = ['kB', 'MB', 'GB', 'TB'] as const;

/**
 * A byte count as people read it, in decimal units: whole bytes below a kilobyte ("6 B"), then one decimal below 100
 * of a unit and none above ("1.5 kB", "12.3 MB", "512 MB"), moving to the next unit rather than showing "1000 kB".
 */
export function byteSize(bytes: number): string {
  if (bytes < 999.5) return `${Math.round(bytes)} B`;
  let value = bytes;
  for (const unit of byteUnits) {
    value /= 1000;
    const text = value.toFixed(value < 99.95 ? 1 : 0);
    if (Number(text) < 1000 || unit === 'TB') return `${text} ${unit}`;
  }
  throw new Error('unreachable: the last unit returns');
}

/** A count with its noun, singular or plural: "1 file", "2 files", "0 entries". */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

function duration(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${Math.ceil(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.ceil(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
