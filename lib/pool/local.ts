import { Executor } from "./executor.ts";
import { TaskQueue } from "./queue.ts";
import type { Engine, PendingPut, PoolRuntime } from "./runtime.ts";
import type { TaskContext, TaskHandler } from "./types.ts";

/** A one-rank pool (`-n 1`, or a bare `node app.js`): the rank is coordinator and worker at once. */
export class LocalEngine<T> implements Engine<T> {
  done!: Promise<void>;
  private readonly queue = new TaskQueue<T>();
  private failed: Error | undefined;

  constructor(rt: PoolRuntime, handler: TaskHandler<T>, ctx: TaskContext<T>, initial: readonly PendingPut<T>[]) {
    for (const p of initial) this.queue.push(p.task, p.priority);
    this.exec = new Executor(handler, ctx, rt.stats, rt.trace);
  }

  private readonly exec: Executor<T>;

  start(): void {
    const exec = this.exec;
    exec.resume();
    this.done = (async () => {
      for (let t = this.queue.pop(); t !== undefined; t = this.queue.pop()) {
        if (this.failed) throw this.failed;
        const pending = exec.execute(t);
        if (pending) await pending;
        if (exec.sliceOver()) await exec.yield();
      }
      if (this.failed) throw this.failed;
    })();
  }

  put(task: T, priority: number): void {
    this.queue.push(task, priority);
  }

  onMessage(): void {}

  queued(): number {
    return this.queue.size;
  }

  fail(error: Error): void {
    this.failed ??= error;
  }
}
