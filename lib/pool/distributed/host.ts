import type { PoolRuntime } from "../runtime.ts";

/**
 * What the balancing and termination strategies see of the per-rank engine (lib/pool/distributed/engine.ts).
 * Everything runs on the rank's one thread: a strategy's calls happen between tasks, never during one.
 */
export interface DistributedHost {
  readonly rt: PoolRuntime;
  /** Tasks queued on this rank, movable and pinned (not counting the one running). */
  readonly load: number;
  /** Tasks queued on this rank that balancing may move elsewhere. */
  readonly movable: number;
  /**
   * True while this rank is passive: no task queued or running, and no task waiting to be sent. Only a task
   * message can make a passive rank active again (or, outside the model, a put from the app).
   */
  readonly passive: boolean;
  /** When this rank last finished a task, or started the run if it ran none (epoch ms). */
  readonly lastActivityAt: number;
  /** Moves up to `n` movable tasks to `dest` as one task message with `tag`; returns how many it moved. */
  sendMovable(dest: number, tag: number, n: number): number;
  /** Root only: the pool has terminated; tells every rank. `lastActivityAt` is the latest on any rank. */
  terminate(lastActivityAt: number): void;
}
