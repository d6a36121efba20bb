import type { Cancel, DistributedHost } from "../strategy.ts";

/** Back-off when every partner refused (or a push landed on a loaded rank): doubles from MIN to MAX. */
export const MIN_BACKOFF_MS = 1;
export const MAX_BACKOFF_MS = 20;

/**
 * A timer that waits a growing delay before retrying: 1, 2, 4, ... 20 ms (Node timers have 1 ms resolution),
 * back to the start on `reset` (work arrived). Timers come from the host, so a simulation can fire them.
 */
export class Backoff {
  private delay = 0;
  private cancelTimer: Cancel | undefined;

  constructor(
    private readonly host: DistributedHost,
    private readonly retry: () => void,
  ) {}

  get waiting(): boolean {
    return this.cancelTimer !== undefined;
  }

  /** Waits the next, longer delay, then calls `retry`. */
  wait(): void {
    if (this.cancelTimer !== undefined) return;
    this.delay = this.delay === 0 ? MIN_BACKOFF_MS : Math.min(this.delay * 2, MAX_BACKOFF_MS);
    this.cancelTimer = this.host.after(this.delay, () => {
      this.cancelTimer = undefined;
      this.retry();
    });
  }

  /** Back to the shortest delay; a pending wait is cancelled (the caller retries at once). */
  reset(): void {
    this.delay = 0;
    this.cancel();
  }

  cancel(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }
}
