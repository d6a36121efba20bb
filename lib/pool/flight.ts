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

  constructor(
    /** Most tasks in flight; 1 awaits each task, as a rank without concurrency does. */
    readonly limit: number,
    private readonly done: () => void,
    private readonly failed: (error: Error) => void,
  ) {}

  get full(): boolean {
    return this.size >= this.limit;
  }

  /** Starts tracking an async task the executor started. */
  add(task: Promise<void>): void {
    this.size++;
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
