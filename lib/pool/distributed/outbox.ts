import { TaskBatch } from "../batch.ts";
import type { TaskKey } from "../keys.ts";
import type { Timers } from "../timers.ts";

/**
 * A distributed rank's pinned tasks bound for other ranks (put with `to`), waiting to leave in batches: one
 * batch per destination, made on the first put for that rank (size x size batches up front would be a million
 * objects at 1024 ranks), and the ranks whose batch is not empty. A batch leaves when it is full (FLUSH_TASKS),
 * when the engine flushes (the end of each slice of tasks, or the rank going idle), and after the event-loop
 * turn in which it was put (`soon`: a handler that awaits puts between slices).
 */
export class Outbox<T> {
  private readonly batches: (TaskBatch<T> | undefined)[] = [];
  private readonly dests: number[] = [];
  private scheduled = false;

  constructor(
    private readonly timers: Timers,
    /** Sends one destination's batch as one task message. */
    private readonly send: (dest: number, batch: TaskBatch<T>) => void,
    /** Called after the turn of a put, while batches wait: the engine flushes, unless its run is over. */
    private readonly soon: () => void,
  ) {}

  /** Tasks waiting here, over every destination. */
  get waiting(): number {
    let n = 0;
    for (const d of this.dests) n += (this.batches[d] as TaskBatch<T>).size;
    return n;
  }

  add(to: number, task: T, priority: number, key: TaskKey | undefined): void {
    let batch = this.batches[to];
    if (batch === undefined) this.batches[to] = batch = new TaskBatch<T>();
    if (batch.size === 0) this.dests.push(to);
    if (!this.scheduled) {
      // Sync handlers flush at the end of their slice; this catches puts made during an await.
      this.scheduled = true;
      this.timers.soon(this.afterTurn);
    }
    if (batch.add(task, priority, key)) this.flushTo(to);
  }

  /** Sends every batch waiting. */
  flush(): void {
    const dests = this.dests;
    if (dests.length === 0) return;
    for (let i = 0; i < dests.length; i++) this.flushTo(dests[i] as number);
    dests.length = 0;
  }

  private readonly afterTurn = (): void => {
    this.scheduled = false;
    if (this.dests.length > 0) this.soon();
  };

  private flushTo(dest: number): void {
    const batch = this.batches[dest];
    if (batch === undefined || batch.size === 0) return;
    this.send(dest, batch);
  }
}
