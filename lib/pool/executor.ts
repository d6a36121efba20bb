import { describe, TaskError } from "../errors.ts";
import type { TraceRecorder } from "./trace.ts";
import type { PoolStats, TaskContext, TaskHandler } from "./types.ts";

/** Handlers run back to back for at most this long before the event loop gets a turn (messages arrive). */
const SLICE_MS = 2;
const SLICE_TASKS = 512;

export const now = (): number => performance.now();
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs tasks one at a time on this rank, sync handlers without an await between them, async ones awaited.
 * Accounts busy time and counts in `stats`. A throwing handler becomes a TaskError naming rank and task.
 */
export class Executor<T> {
  private sliceStart = 0;
  private sliceTasks = 0;

  constructor(
    private readonly handler: TaskHandler<T>,
    private readonly ctx: TaskContext<T>,
    private readonly stats: PoolStats,
    private readonly trace?: TraceRecorder,
  ) {}

  /** Runs one task; resolves to its duration in ms. */
  async execute(task: T): Promise<number> {
    const t0 = now();
    try {
      const r = this.handler(task, this.ctx);
      if (r !== undefined && typeof (r as Promise<void>).then === "function") await r;
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new TaskError(this.ctx.rank, task, `task ${describe(task)} failed on rank ${this.ctx.rank}: ${why}`, {
        cause,
      });
    }
    const t1 = now();
    const dt = t1 - t0;
    this.trace?.task(t0, t1);
    this.stats.busyMs += dt;
    this.stats.tasksExecuted++;
    this.stats.lastTaskAt = performance.timeOrigin + t1;
    return dt;
  }

  /** True when the current slice of back-to-back tasks is used up and the caller should yield. */
  sliceOver(): boolean {
    if (++this.sliceTasks >= SLICE_TASKS || now() - this.sliceStart > SLICE_MS) {
      this.sliceTasks = 0;
      return true;
    }
    return false;
  }

  async yield(): Promise<void> {
    await yieldToEventLoop();
    this.sliceStart = now();
    this.sliceTasks = 0;
  }
}
