import type { Cancel, DistributedHost } from "../strategy.ts";

/** Shortest time between two load reports of one rank (ms): fine-grained tasks change loads constantly. */
export const REPORT_PERIOD_MS = 1;

/**
 * Runs `fire` at most once per period: a call within the period after the last run is remembered and runs
 * when the period ends (once, however many calls came). `fire` reads the current state when it runs, so a
 * delayed report carries the latest load. `urgent` runs at once whatever the period (a rank that just ran
 * dry tells its neighbours now). Timers come from the host, so simulations control them.
 */
export class Throttle {
  private cooling: Cancel | undefined;
  private pending = false;

  constructor(
    private readonly host: DistributedHost,
    private readonly fire: () => void,
    private readonly periodMs = REPORT_PERIOD_MS,
  ) {}

  request(): void {
    if (this.cooling) this.pending = true;
    else this.run();
  }

  urgent(): void {
    this.cancel();
    this.run();
  }

  cancel(): void {
    this.cooling?.();
    this.cooling = undefined;
    this.pending = false;
  }

  private run(): void {
    this.pending = false;
    this.fire();
    this.cooling = this.host.after(this.periodMs, () => {
      this.cooling = undefined;
      if (this.pending) this.run();
    });
  }
}
