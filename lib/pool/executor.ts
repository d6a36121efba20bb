import { describe, TaskError } from "../errors.ts";
import type { Results } from "./results.ts";
import type { TraceRecorder } from "./trace.ts";
import type { PoolStats, TaskContext, TaskHandler } from "./types.ts";

/** Handlers run back to back for at most about this long before the event loop gets a turn (messages arrive). */
const SLICE_MS = 2;
/**
 * The clock is read about this often while tasks run back to back, not around every task: a clock read costs
 * from 20 ns to over 1 us depending on the machine, as much as a fine-grained task itself.
 */
const CLOCK_EVERY_MS = 0.1;
/** Most sync tasks run between two clock reads, so a sudden run of long tasks is noticed soon enough. */
const MAX_STRIDE = 64;
/**
 * A sync task is long when it takes more than this (ms): far longer than a steal or a grant's round trip, so a
 * task queued behind it is better run elsewhere (issue 29; `longTasks`).
 */
export const LONG_TASK_MS = 5;

export const now = (): number => performance.now();
/** One turn of the event loop (`Executor.yield`, between slices). */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs tasks on this rank. A sync handler runs without any await around it (`execute` returns undefined); an
 * async one's promise is returned for the caller to await, or to keep in flight while it starts others (the
 * engines' Flight, PoolOptions `concurrency`): the promise is how an async handler is told from a sync one. A handler's returned value goes to
 * `results`; a throwing handler becomes a TaskError naming rank and task. An async handler that settles after
 * its run ended (`ctx.signal` aborted) counts nowhere: its value and its error are dropped.
 *
 * Timing: busy time is measured over stretches of back-to-back tasks, with the clock read every `stride`
 * tasks (adapted so that reads come about every CLOCK_EVERY_MS) and when the stretch ends (`pause`, `yield`);
 * the engine's own work between tasks of a stretch counts as busy. Async tasks read the clock around each
 * task, and the time while any is in flight counts as busy once, however many are. A trace gets the sync tasks
 * a stride at a time, as one span from one clock read to the next: tracing reads the clock no more often (it read
 * it after every sync task, which cost a no-op pool 11-13% of its rate; the trace coalesced those spans anyway).
 */
/**
 * Async tasks started and not settled in this process, every pool's. While any is, a pool run is not waiting on
 * messages alone: the task may await work Node lists nowhere (a crypto or zlib job on libuv's threads, a worker
 * thread), so the deadlock check counts it as activity (run-setup.ts, lib/comm/stall.ts).
 */
let asyncInFlight = 0;

/** See `asyncInFlight`. */
export function asyncTasksInFlight(): number {
  return asyncInFlight;
}

export class Executor<T> {
  /** Start of the current busy stretch, or of the time since the last clock read within it. */
  private mark = now();
  private sliceStart = this.mark;
  /** Tasks since the last clock read, and how many to run before the next. */
  private sinceRead = 0;
  private stride = 1;
  /** Mean time of the sync tasks between the last two clock reads (ms; 0 before any). */
  private recentMs = 0;
  private running = false;
  /** Async tasks started and not settled (PoolOptions `concurrency`), and when the first of them began. */
  private inFlight = 0;
  private flightStart = 0;

  constructor(
    private readonly handler: TaskHandler<T>,
    private readonly ctx: TaskContext<T>,
    private readonly stats: PoolStats,
    private readonly results: Results,
    private readonly trace?: TraceRecorder,
  ) {
    // Tasks still in flight when the run ends (a stop, a failure) count as busy up to then; what they do after
    // counts nowhere, as their values and puts do not. (Their span was counted only when the last one landed,
    // which after an end it no longer does: a rank with 16 tasks in flight at a stop showed 5 ms busy of 1.96 s.)
    ctx.signal?.addEventListener(
      "abort",
      () => {
        if (this.inFlight === 0) return;
        const t = now();
        this.stats.busyMs += t - this.flightStart;
        this.flightStart = t;
      },
      { once: true },
    );
  }

  /**
   * Runs one task. Returns undefined when it finished synchronously, or a promise for an async handler.
   * Throws (or the promise rejects with) a TaskError when the handler fails.
   */
  execute(task: T): Promise<void> | undefined {
    let r: unknown;
    let promise = false;
    // Called as a plain function: the handler's `this` is undefined, not this executor, and a stack trace shows
    // the app's function as itself, not `... [as handler]`.
    const handler = this.handler;
    try {
      r = handler(task, this.ctx);
      if (r !== undefined) {
        // (null is a value, as an async handler's null is: `null.then` failed the task.)
        if (r !== null && typeof (r as Promise<unknown>).then === "function") promise = true;
        else this.results.add(r);
      }
    } catch (cause) {
      throw this.failure(task, cause);
    }
    // (The async case in a method of its own: this one stays small enough for V8 to inline into the loops.)
    if (promise) return this.started(task, r as Promise<unknown>);
    this.stats.tasksExecuted++;
    this.sinceRead++;
    return undefined;
  }

  /** An async handler returned `r` for `task`: its promise, which settles once its value is counted. */
  private started(task: T, r: Promise<unknown>): Promise<void> {
    // Async: the time while any async task is in flight counts as busy, once however many are (concurrency).
    this.pause();
    let start: number;
    if (this.inFlight++ === 0) start = this.flightStart = this.mark;
    else start = now();
    asyncInFlight++;
    const signal = this.ctx.signal;
    return r.then(
      (v) => {
        if (signal.aborted) {
          this.inFlight--;
          asyncInFlight--;
          return;
        }
        try {
          this.results.add(v);
        } catch (cause) {
          this.landed(now());
          throw this.failure(task, cause);
        }
        const t1 = now();
        this.stats.tasksExecuted++;
        this.stats.lastTaskAt = performance.timeOrigin + t1;
        this.trace?.task(start, t1);
        this.landed(t1);
      },
      (cause: unknown) => {
        if (signal.aborted) {
          this.inFlight--;
          asyncInFlight--;
          return;
        }
        this.landed(now());
        throw this.failure(task, cause);
      },
    );
  }

  /** An async task settled at `t1`: when it was the last in flight, the time since the first began was busy. */
  private landed(t1: number): void {
    asyncInFlight--;
    if (--this.inFlight > 0) return;
    this.stats.busyMs += t1 - this.flightStart;
    this.mark = t1;
    this.running = true;
  }

  private failure(task: T, cause: unknown): TaskError {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new TaskError(this.ctx.rank, task, `task ${describe(task)} failed on rank ${this.ctx.rank}: ${why}`, {
      cause,
    });
  }

  /** Call when tasks are about to run after a pause (an idle wait): a busy stretch starts now. */
  resume(): void {
    const t = now();
    // (Sync tasks run while paused, as between async ones, are traced as one span up to now.)
    if (this.sinceRead > 0) this.trace?.tasks(this.mark, t, this.sinceRead);
    this.mark = t;
    this.sliceStart = this.mark;
    this.sinceRead = 0;
    this.running = true;
  }

  /** Call when the run of tasks stops (before an idle wait): the stretch so far is busy time. */
  pause(): void {
    if (!this.running) return;
    this.running = false;
    this.read();
  }

  /** Reads the clock: the time since the last read was busy, and the stride adapts to the task time seen. */
  private read(): number {
    const t = now();
    const n = this.sinceRead;
    // While async tasks are in flight, their span counts (landed): sync work meanwhile is inside it.
    if (this.inFlight === 0) this.stats.busyMs += t - this.mark;
    if (n > 0) {
      // Tracing: the n sync tasks since the last read, as one span (the trace coalesces such runs anyway).
      this.trace?.tasks(this.mark, t, n);
      this.stats.lastTaskAt = performance.timeOrigin + t;
      const per = (t - this.mark) / n;
      this.recentMs = per;
      this.stride = per > 0 ? Math.max(1, Math.min(MAX_STRIDE, Math.floor(CLOCK_EVERY_MS / per))) : MAX_STRIDE;
    }
    this.mark = t;
    this.sinceRead = 0;
    return t;
  }

  /** Call after every task: true when the current slice of back-to-back tasks is used up and the caller should yield. */
  sliceOver(): boolean {
    if (this.sinceRead < this.stride) return false;
    if (!this.running) {
      this.resume();
      return false;
    }
    return this.read() - this.sliceStart > SLICE_MS;
  }

  /**
   * True while the sync tasks run lately are long (over LONG_TASK_MS each, as of the last clock read, which
   * comes after every such task): a rank then gives away what it holds beyond the task it runs next, since it
   * answers no steal and no coordinator while a task runs. Tiny tasks never pay for this: it is read by the
   * engines only where they already act after a slice or a balancing check.
   */
  longTasks(): boolean {
    if (this.recentMs > LONG_TASK_MS) return true;
    // Tasks run since the clock was last read are counted but not yet timed: a rank that read a message right
    // after its first task, of 2.2 s, took it for short, and asked a random partner inside a task of its own
    // rather than the rank that gave it work, which was dealing (400 ms idle; 16 emulated ranks, 40 tasks of
    // 0.2-3 s). Only a caller between tasks pays for the clock, and only while the tasks read as short.
    return (
      this.running && this.sinceRead > 0 && this.inFlight === 0 && (now() - this.mark) / this.sinceRead > LONG_TASK_MS
    );
  }

  /**
   * Mean time of the tasks run so far, in ms (0 before any ran). While async tasks are in flight the span so far
   * counts: it enters busyMs only when the last one lands, and a rank whose flight never empties would otherwise
   * look infinitely fast to the coordinator's Expected Card Distribution.
   */
  meanTaskMs(): number {
    const n = this.stats.tasksExecuted;
    if (n === 0) return 0;
    return (this.stats.busyMs + (this.inFlight > 0 ? now() - this.flightStart : 0)) / n;
  }

  /**
   * `meanTaskMs`, with the sync tasks run since the last clock read timed first: they are counted but not yet
   * timed (the clock is read after the balancer's check that asks this), and the first long task would read as
   * a fraction of a millisecond. For a caller between two tasks, seldom (a receiver's request).
   */
  meanTaskMsNow(): number {
    if (this.running && this.sinceRead > 0 && this.inFlight === 0) this.read();
    return this.meanTaskMs();
  }

  /**
   * Lets the event loop turn between slices: once, or twice after a slice that held the thread longer than a long
   * task (LONG_TASK_MS). An idle rank's steal request sent as a run started was read, with one turn, only after
   * the holder's second task of 286 and 275 ms: that rank sat idle 566 ms, and the run (2 ranks, 40 tasks of
   * 20-300 ms, their times as priorities) ended at 1.10 times the bound. With a second turn (a third changed
   * nothing) it is read after the first task: 292 ms idle, 1.06. Why zeromq.js needs the second turn there was not
   * pinned down. Slices of short tasks keep one turn.
   */
  async yield(): Promise<void> {
    this.pause();
    const held = this.mark - this.sliceStart;
    await yieldToEventLoop();
    if (held > LONG_TASK_MS) await yieldToEventLoop();
    this.resume();
  }
}
