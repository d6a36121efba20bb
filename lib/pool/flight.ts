/**
 * The async tasks in flight on one rank (PoolOptions `concurrency`). An engine's loop starts an async task and,
 * while fewer than `limit` are in flight, goes on to the next queued one instead of awaiting it; it waits
 * (`wait`) when the flight is full, or when its queue is empty while tasks are still in flight. A rank with
 * tasks in flight is busy: its engine neither parks nor reports idle until `size` is 0.
 *
 * A task that settles calls `done` (the engine counts it run) or, if it failed, `failed` with its TaskError; then
 * the loop's wait ends. `wake` also ends it: work arrived, the run ended.
 */
export class Flight {
  size = 0;
  private waiter: (() => void) | undefined;
  /** The flight has been full once (see `ramping`). */
  private filled = false;

  constructor(
    /** Most tasks in flight; 1 awaits each task, as a rank without concurrency does. */
    readonly limit: number,
    private readonly done: () => void,
    private readonly failed: (error: Error) => void,
  ) {}

  get full(): boolean {
    return this.size >= this.limit;
  }

  /**
   * The flight has room and has never been full: an engine then lets its event loop turn before it puts the next
   * task in flight, so that requests that came meanwhile take queued tasks first. (16 async tasks of 180 ms of CPU
   * each, awaiting now and then, put on rank 0 of 2: rank 0 took all 16 in flight in its first slice, before it
   * read rank 1's request, and ran them in 2.5 s while rank 1 idled.)
   */
  get ramping(): boolean {
    return !this.filled;
  }

  /** Starts tracking an async task the executor started. */
  add(task: Promise<void>): void {
    this.size++;
    if (this.size >= this.limit) this.filled = true;
    task.then(
      () => {
        this.size--;
        this.done();
        this.wake();
      },
      (e: Error) => {
        this.size--;
        this.failed(e);
        this.wake();
      },
    );
  }

  /** Resolves at the next `wake`: a task settled, work arrived, or the run ended. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiter = resolve;
    });
  }

  wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
