import type { DistributedHost } from "../distributed/host.ts";

/**
 * Termination detection of a distributed pool: tells the root when no task is queued, running or in transit
 * anywhere, without a coordinator watching every task. One file per algorithm, named in `registry.ts`.
 *
 * The engine reports every task message (TRANSFER, PUSH, PINNED) it sends and receives, and every time the
 * rank becomes passive; the detector exchanges its own messages (TOKEN or ACK) and calls `host.terminate()`
 * on the root when it has proved termination. Detectors must not depend on message order.
 */
export interface Detector {
  /** A number every task message carries (field `s`), read when it is sent; 0 if the detector needs none. */
  readonly stamp: number;
  /** A task message to `dest` was just sent. */
  sent(dest: number): void;
  /** A task message from `source`, carrying `stamp`, just arrived (its tasks are queued; the rank is active). */
  received(source: number, stamp: number): void;
  /** The rank has just become passive. */
  idle(): void;
  /** A detector message (TOKEN, ACK). */
  onMessage(source: number, tag: number, body: Record<string, unknown>): void;
}

export type DetectorFactory = (host: DistributedHost) => Detector;
