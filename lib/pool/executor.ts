import { describe, TaskError } from "../errors.ts";
import type { TraceRecorder } from "./trace.ts";
import type { PoolStats, TaskContext, TaskHandler } from "./types.ts";

/** Handlers run back to back for at most this long before the event loop gets a turn (messages arrive). */
const SLICE_MS = 2;
const SLICE_TASKS = 512;

export const now = (): number => performance.now();
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs tasks one at a time on this rank. A sync handler runs without any await around it (`execute` returns
 * undefined); an async one's promise is returned for the caller to await. Busy time and counts go to `stats`;
 * a throwing handler becomes a TaskError naming rank and task. Two clock reads per task (its start and end);
 * the end also feeds the slice check.
 */
export class Executor<T> {
  private sliceStart = now();
  private sliceTasks = 0;
  private clock = now();

  constructor(
    private readonly handler: TaskHandler<T>,
    private readonly ctx: TaskContext<T>,
    private readonly stats: PoolStats,
    private readonly trace?: TraceRecorder,
  ) {}

  /**
   * Runs one task. Returns undefined when it finished synchronously, or a promise for an async handler.
   * Throws (or the promise rejects with) a TaskError when the handler fails.
   */
  execute(task: T): Promise<void> | undefined {
    const t0 = now();
    let r: void | Promise<void>;
    try {
      r = this.handler(task, this.ctx);
    } catch (cause) {
      throw this.failure(task, cause);
    }
    if (r !== undefined && typeof (r as Promise<void>).then === "function") {
      return (r as Promise<void>).then(
        () => this.done(t0),
        (cause: unknown) => {
          throw this.failure(task, cause);
        },
      );
    }
    this.done(t0);
    return undefined;
  }

  private done(t0: number): void {
    const t1 = now();
    this.clock = t1;
    this.trace?.task(t0, t1);
    this.stats.busyMs += t1 - t0;
    this.stats.tasksExecuted++;
    this.stats.lastTaskAt = performance.timeOrigin + t1;
  }

  private failure(task: T, cause: unknown): TaskError {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new TaskError(this.ctx.rank, task, `task ${describe(task)} failed on rank ${this.ctx.rank}: ${why}`, {
      cause,
    });
  }

  /** Call after a pause (an idle wait), so the slice check starts from now. */
  resume(): void {
    this.clock = now();
  }

  /** True when the current slice of back-to-back tasks is used up and the caller should yield. */
  sliceOver(): boolean {
    if (++this.sliceTasks >= SLICE_TASKS || this.clock - this.sliceStart > SLICE_MS) {
      this.sliceTasks = 0;
      return true;
    }
    return false;
  }

  async yield(): Promise<void> {
    await yieldToEventLoop();
    this.resume();
    this.sliceStart = this.clock;
    this.sliceTasks = 0;
  }
}
