import type { TaskQueue } from "./queue.ts";

/** A batch is sent once it holds this many tasks (else when its sender's slice ends or it goes idle). */
export const FLUSH_TASKS = 512;

/**
 * Tasks, with their priorities, waiting to leave this rank in one message: pinned tasks bound for one rank
 * (distributed), puts and releases bound for the coordinator (centralized), a share of the queue given to
 * another rank. On the wire a batch is `t` (the tasks) and, only when some priority is not 0, `q` (the
 * priorities, index by index), so the common all-zero case costs nothing.
 *
 * (The transport coalesces small messages too, but into byte frames that leave when the frame before them
 * has been handed to ZeroMQ: a different policy, on bytes, kept in transport.ts.)
 */
export class TaskBatch<T> {
  private tasks: T[] = [];
  private prios: number[] = [];
  private nonZero = false;

  get size(): number {
    return this.tasks.length;
  }

  /** Adds one task; true once the batch is full (FLUSH_TASKS) and should be sent. */
  add(task: T, priority: number): boolean {
    this.tasks.push(task);
    this.prios.push(priority);
    if (priority !== 0) this.nonZero = true;
    return this.tasks.length >= FLUSH_TASKS;
  }

  /** Moves up to `n` tasks from `queue`, the ones it gives away first (TaskQueue.give); returns how many. */
  takeFrom(queue: TaskQueue<T>, n: number): number {
    const before = this.tasks.length;
    queue.give(n, this.tasks, this.prios);
    const moved = this.tasks.length - before;
    if (!this.nonZero) for (let i = before; i < this.tasks.length; i++) if (this.prios[i] !== 0) this.nonZero = true;
    return moved;
  }

  /** Writes the batch into a message body (`t`, and `q` when needed) and empties it; returns the tasks. */
  drainInto(body: { t?: unknown; q?: unknown }): T[] {
    const tasks = this.tasks;
    body.t = tasks;
    if (this.nonZero) body.q = this.prios;
    this.tasks = [];
    this.prios = [];
    this.nonZero = false;
    return tasks;
  }
}
