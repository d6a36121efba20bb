import type { DistributedHost } from "../distributed/host.ts";
import type { Partner } from "../partner/partner.ts";

/**
 * Load balancing of a distributed pool: decides when this rank asks for work or gives it away, and answers
 * the balancing messages of other ranks. One file per initiation strategy, named in `registry.ts`.
 *
 * The engine calls `check` whenever its queue holds fewer than `low` or more than `high` tasks (after each
 * task, when it goes idle), so `check` must be cheap when it has nothing to do.
 */
export interface Balancer {
  /** `check` is called while the local queue holds fewer tasks than this (read before every call). */
  readonly low: number;
  /** `check` is called while the local queue holds more tasks than this (read before every call). */
  readonly high: number;
  /** Looks at the local load and acts: asks for work, or pushes some. */
  check(): void;
  /** A balancing control message (REQUEST, REFUSE, NOTIFY, PUSH_ACK). */
  onMessage(source: number, tag: number, body: Record<string, unknown>): void;
  /** A task message of `tag` from `source` brought `count` tasks; `loadBefore` was the queue just before. */
  received(source: number, tag: number, count: number, loadBefore: number): void;
  /** The run is over: cancels timers; later calls do nothing. */
  stop(): void;
}

export type BalancerFactory = (host: DistributedHost, partner: Partner) => Balancer;

/** Back-off when every partner refused (or a push landed on a loaded rank): doubles from MIN to MAX. */
export const MIN_BACKOFF_MS = 1;
export const MAX_BACKOFF_MS = 20;

/**
 * A timer that waits a growing delay before retrying: 1, 2, 4, ... 20 ms (Node timers have 1 ms resolution),
 * back to the start on `reset` (work arrived).
 */
export class Backoff {
  private delay = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly retry: () => void) {}

  get waiting(): boolean {
    return this.timer !== undefined;
  }

  /** Waits the next, longer delay, then calls `retry`. */
  wait(): void {
    if (this.timer !== undefined) return;
    this.delay = this.delay === 0 ? MIN_BACKOFF_MS : Math.min(this.delay * 2, MAX_BACKOFF_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.retry();
    }, this.delay);
  }

  /** Back to the shortest delay; a pending wait is cancelled (the caller retries at once). */
  reset(): void {
    this.delay = 0;
    this.cancel();
  }

  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
