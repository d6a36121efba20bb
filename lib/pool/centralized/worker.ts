import { Executor, now } from "../executor.ts";
import { failFromMessage, failureBody, sendFail } from "../failure.ts";
import type { Engine, PendingPut, PoolRuntime } from "../runtime.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { type Fail, type Status, TAG } from "./protocol.ts";

/** Largest number of tasks a worker asks to hold. */
const MAX_CAPACITY = 8192;
/** Tasks put by handlers are sent once this many are waiting, or after FLUSH_MS. */
const FLUSH_TASKS = 512;
const FLUSH_MS = 1;

/**
 * A centralized-pool worker: runs granted tasks one at a time and never waits a round trip for work while
 * work exists. It asks for more when its buffer falls to half of its capacity, the number of tasks it wants
 * to hold: enough to cover two round trips at its measured task rate (seed 001: grain from run-time rates).
 * Tasks its handlers put travel to the coordinator in batches, with the status messages.
 */
export class CentralWorker<T> implements Engine<T> {
  readonly done: Promise<void>;
  private resolve!: () => void;
  private reject!: (e: Error) => void;
  private readonly buffer: T[] = [];
  private head = 0;
  private readonly exec: Executor<T>;
  private finished = false;
  private wake: (() => void) | undefined;
  private seq = 0;
  private executed = 0;
  private reportedDone = 0;
  private putsSent = 0;
  private putTasks: T[] = [];
  private putPrios: number[] = [];
  private putsNonZero = false;
  private firstPutAt = 0;
  private requestSentAt = -1;
  private capacity: number;
  /** Tasks the coordinator asked this worker to hold (0: none asked), when it answers late (protocol.ts). */
  private hold = 0;
  private rttMs = 0;

  constructor(
    private readonly rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.exec = new Executor(handler, ctx, rt.stats, rt.trace);
    this.capacity = rt.config.chunk > 0 ? Math.max(2, rt.config.chunk) : 4;
    for (const p of initial) this.queuePut(p.task, p.priority);
  }

  queued(): number {
    return this.buffered;
  }

  start(): void {
    void this.loop().catch((e: Error) => this.fail(e));
  }

  put(task: T, priority: number): void {
    this.queuePut(task, priority);
  }

  private queuePut(task: T, priority: number): void {
    if (this.putTasks.length === 0) this.firstPutAt = now();
    this.putTasks.push(task);
    this.putPrios.push(priority);
    if (priority !== 0) this.putsNonZero = true;
  }

  private sendStatus(request: boolean): void {
    const t = this.putTasks;
    const body: Status = {
      s: this.seq++,
      d: this.executed,
      n: this.putsSent + t.length,
      t,
      c: this.capacity,
      m: this.executed > 0 ? this.rt.stats.busyMs / this.executed : 0,
    };
    if (this.putsNonZero) body.q = this.putPrios;
    if (this.rt.trace && t.length > 0) body.f = this.rt.trace.flowOut(`put ${t.length} to coordinator`);
    this.putsSent += t.length;
    this.putTasks = [];
    this.putPrios = [];
    this.putsNonZero = false;
    this.reportedDone = this.executed;
    if (request) this.requestSentAt = now();
    this.rt.count("statusesSent");
    this.rt.send(this.rt.config.coordinator, TAG.status, body as unknown as Record<string, unknown>);
  }

  /** Capacity from rates: tasks to cover two round trips, plus the one running. */
  private updateCapacity(): void {
    if (this.rt.config.chunk > 0 || this.executed === 0 || this.rttMs <= 0) return;
    const meanMs = this.rt.stats.busyMs / this.executed;
    const want = Math.ceil((2 * this.rttMs) / Math.max(meanMs, 1e-4)) + 1;
    this.capacity = Math.min(MAX_CAPACITY, Math.max(2, want));
  }

  private get buffered(): number {
    return this.buffer.length - this.head;
  }

  private async loop(): Promise<void> {
    this.exec.resume();
    this.sendStatus(true);
    while (!this.finished) {
      while (this.head < this.buffer.length && !this.finished) {
        const task = this.buffer[this.head] as T;
        this.buffer[this.head++] = undefined as T;
        const running = this.exec.execute(task);
        if (running) await running;
        this.executed++;
        if (this.finished) return;
        const pending = this.putTasks.length;
        const low = this.requestSentAt < 0 && this.buffered * 2 <= Math.max(this.capacity, this.hold);
        if (low || pending >= FLUSH_TASKS || (pending > 0 && now() - this.firstPutAt > FLUSH_MS)) {
          this.sendStatus(low);
        }
        if (this.exec.sliceOver()) await this.exec.yield();
      }
      if (this.finished) return;
      this.buffer.length = 0;
      this.head = 0;
      // Idle: report what was done and put, so the coordinator can see termination.
      if (this.executed > this.reportedDone || this.putTasks.length > 0 || this.requestSentAt < 0) {
        this.sendStatus(this.requestSentAt < 0);
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.exec.resume();
    }
  }

  onMessage(_source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    if (tag === TAG.grant) {
      const tasks = body.t as T[];
      for (const t of tasks) this.buffer.push(t);
      this.hold = (body.h as number | undefined) ?? 0;
      if (body.f !== undefined) this.rt.trace?.flowIn(`${tasks.length} tasks from coordinator`, body.f as string);
      this.rt.count("grantsReceived");
      if (this.requestSentAt >= 0) {
        const raw = now() - this.requestSentAt;
        // A request parked while the queue was empty is no round trip: clip such samples.
        const sample = this.rttMs > 0 ? Math.min(raw, 4 * this.rttMs) : raw;
        this.rttMs = this.rttMs === 0 ? sample : sample < this.rttMs ? sample : this.rttMs * 0.9 + sample * 0.1;
        this.requestSentAt = -1;
        this.updateCapacity();
      }
    } else if (tag === TAG.done) {
      this.finished = true;
      this.rt.stats.counters.capacity = this.capacity;
      this.rt.stats.counters.rttUs = Math.round(this.rttMs * 1000);
      this.resolve();
    } else if (tag === TAG.fail) {
      this.finished = true;
      this.reject(failFromMessage(body as unknown as Fail));
    }
    this.wakeUp();
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    sendFail(this.rt, [this.rt.config.coordinator], TAG.fail, failureBody(this.rt.rank, error));
    this.reject(error);
    this.wakeUp();
  }
}
