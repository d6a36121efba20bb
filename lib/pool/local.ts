import { deferred } from "../deferred.ts";
import { Executor } from "./executor.ts";
import { Flight } from "./flight.ts";
import { TaskQueue } from "./queue.ts";
import type { WireResult } from "./results.ts";
import type { Engine, PendingPut, PoolRuntime } from "./runtime.ts";
import type { TaskContext, TaskHandler } from "./types.ts";

/** A one-rank pool (`-n 1`, or a bare `node app.js`): the rank is coordinator and worker at once. */
export class LocalEngine<T> implements Engine<T> {
  done!: Promise<void>;
  private readonly queue: TaskQueue<T>;
  private readonly exec: Executor<T>;
  private failed: Error | undefined;
  private flight: Flight | undefined;
  /** Settles when the run ends before its loop does (a stop, a failure): `run` waits for no running handler. */
  private readonly ended = deferred();

  constructor(
    private readonly rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
  ) {
    this.queue = new TaskQueue<T>(rt.config.order);
    for (const p of initial) this.queue.push(p.task, p.priority);
    this.exec = new Executor(handler, ctx, rt.stats, rt.results, rt.trace);
  }

  start(): void {
    const exec = this.exec;
    const queue = this.queue;
    exec.resume();
    const flight = (this.flight = new Flight(
      this.rt.concurrency,
      () => {},
      (e) => this.fail(e),
    ));
    const loop = (async () => {
      for (;;) {
        for (let t = queue.pop(); t !== undefined && !this.rt.stopped; t = queue.pop()) {
          const pending = exec.execute(t);
          if (pending) {
            if (flight.limit === 1) await pending;
            else {
              flight.add(pending);
              while (flight.full && !this.over) await flight.wait();
            }
            if (this.failed) throw this.failed;
          }
          if (exec.sliceOver()) {
            await exec.yield();
            if (this.failed) throw this.failed;
          }
        }
        // Tasks in flight may still put more: the run goes on until they settle.
        if (flight.size === 0 || this.over) break;
        await flight.wait();
        if (this.failed) throw this.failed;
      }
      exec.pause();
      if (this.failed) throw this.failed;
      const results = this.rt.results;
      if (!this.rt.stopped) results.final = results.take();
    })();
    this.done = Promise.race([loop, this.ended.promise]);
  }

  put(task: T, priority: number): void {
    this.queue.push(task, priority);
    this.flight?.wake();
  }

  private get over(): boolean {
    return this.rt.stopped || this.failed !== undefined;
  }

  onMessage(): void {}

  queued(): number {
    return this.queue.size;
  }

  fail(error: Error): void {
    this.failed ??= error;
    this.ended.reject(error);
    this.flight?.wake();
  }

  stop(result: WireResult): void {
    if (this.rt.stopped || this.failed) return;
    this.rt.endStopped(result);
    this.ended.resolve();
    this.flight?.wake();
  }
}
