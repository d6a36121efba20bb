/**
 * The live progress line on stderr (only when stderr is a terminal): tasks done, rate, tasks queued, elapsed.
 * Rank output is written through `around`, which clears the line first and draws it again after, so the
 * progress line never mixes with program output.
 */
export class ProgressLine {
  private readonly done = new Map<string, number>();
  private readonly queued = new Map<string, number>();
  private readonly started = performance.now();
  private shown = false;
  private timer: NodeJS.Timeout | undefined;
  private lastDone = 0;
  private lastAt = performance.now();
  private rate = 0;

  constructor(private readonly out: NodeJS.WriteStream) {
    this.timer = setInterval(() => this.draw(), 250);
    this.timer.unref();
  }

  update(rank: number, pool: string, done: number, queued: number): void {
    this.done.set(`${rank}/${pool}`, done);
    this.queued.set(`${rank}/${pool}`, queued);
  }

  private text(): string {
    let done = 0;
    let queued = 0;
    for (const v of this.done.values()) done += v;
    for (const v of this.queued.values()) queued += v;
    const now = performance.now();
    if (now - this.lastAt >= 500) {
      this.rate = ((done - this.lastDone) * 1000) / (now - this.lastAt);
      this.lastDone = done;
      this.lastAt = now;
    }
    const secs = ((now - this.started) / 1000).toFixed(1);
    const n = (x: number) => Math.round(x).toLocaleString("en-US");
    return `workpool: ${n(done)} tasks done, ${n(this.rate)}/s, ${n(queued)} queued, ${secs} s`;
  }

  draw(): void {
    if (this.done.size === 0) return;
    this.out.write(`\r\x1b[K${this.text()}`);
    this.shown = true;
  }

  clear(): void {
    if (this.shown) this.out.write("\r\x1b[K");
    this.shown = false;
  }

  /** A stream that clears the progress line before each write of program output. */
  around(target: NodeJS.WritableStream): NodeJS.WritableStream {
    return {
      write: (chunk: string) => {
        this.clear();
        return target.write(chunk);
      },
    } as unknown as NodeJS.WritableStream;
  }

  stop(): void {
    clearInterval(this.timer);
    this.clear();
  }
}
