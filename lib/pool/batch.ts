import type { TaskKey } from "./keys.ts";
import type { TaskQueue } from "./queue.ts";

/** A batch is sent once it holds this many tasks (else when its sender's slice ends or it goes idle). */
export const FLUSH_TASKS = 512;

/**
 * Tasks, with their priorities, waiting to leave this rank in one message: pinned tasks bound for one rank
 * (distributed), puts and releases bound for the coordinator (centralized), a share of the queue given to
 * another rank. On the wire a batch is `t` (the tasks) and, only when some priority is not 0, `q` (the
 * priorities, index by index), so the common all-zero case costs nothing; likewise `k` (the tasks' locality
 * keys, null for a task without one) only when some task has a key.
 *
 * (The transport coalesces small messages too, but into byte frames that leave when the frame before them
 * has been handed to ZeroMQ: a different policy, on bytes, kept in transport.ts.)
 */
export class TaskBatch<T> {
  private tasks: T[] = [];
  private prios: number[] = [];
  private nonZero = false;
  /** Keys, index by index; made when the first keyed task joins. */
  private keys: (TaskKey | null)[] | undefined;
  private hasKey = false;

  get size(): number {
    return this.tasks.length;
  }

  /** Adds one task (with its locality key, if any); true once the batch is full (FLUSH_TASKS) and should be sent. */
  add(task: T, priority: number, key?: TaskKey): boolean {
    this.tasks.push(task);
    this.prios.push(priority);
    if (priority !== 0) this.nonZero = true;
    if (key !== undefined || this.keys !== undefined) {
      (this.keys ??= new Array<TaskKey | null>(this.tasks.length - 1).fill(null)).push(key ?? null);
      if (key !== undefined) this.hasKey = true;
    }
    return this.tasks.length >= FLUSH_TASKS;
  }

  /**
   * Moves up to `n` tasks from `queue`, the ones it gives away first (TaskQueue.give, which prefers the keys in
   * `prefer`); returns how many.
   */
  takeFrom(queue: TaskQueue<T>, n: number, prefer?: readonly unknown[]): number {
    const before = this.tasks.length;
    if (queue.keyed) {
      const keys = (this.keys ??= new Array<TaskKey | null>(before).fill(null));
      queue.give(n, this.tasks, this.prios, keys, prefer);
      if (!this.hasKey) for (let i = before; i < keys.length; i++) if (keys[i] !== null) this.hasKey = true;
    } else {
      queue.give(n, this.tasks, this.prios);
      if (this.keys !== undefined) while (this.keys.length < this.tasks.length) this.keys.push(null);
    }
    const moved = this.tasks.length - before;
    if (!this.nonZero) for (let i = before; i < this.tasks.length; i++) if (this.prios[i] !== 0) this.nonZero = true;
    return moved;
  }

  /** Writes the batch into a message body (`t`, and `q`, `k` when needed) and empties it; returns the tasks. */
  drainInto(body: { t?: unknown; q?: unknown; k?: unknown }): T[] {
    const tasks = this.tasks;
    body.t = tasks;
    if (this.nonZero) body.q = this.prios;
    if (this.hasKey) body.k = this.keys;
    this.tasks = [];
    this.prios = [];
    this.nonZero = false;
    this.keys = undefined;
    this.hasKey = false;
    return tasks;
  }
}
