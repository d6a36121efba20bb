import { deferred } from "../../deferred.ts";
import { Executor, now } from "../executor.ts";
import { TaskQueue } from "../queue.ts";
import type { WireResult } from "../results.ts";
import type { TaskKey } from "../keys.ts";
import type { Engine, PendingPut, PoolRuntime } from "../runtime.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { askToStop, failToCoordinator, settleOnWord } from "./ending.ts";
import { TAG } from "./plain-protocol.ts";

/** Largest number of tasks a worker asks to hold. */
export const MAX_CAPACITY = 8192;
/** Most tasks sent back in one report (a status or a commit). */
export const MAX_RELEASE = 4096;

/**
 * What the two centralized workers share (worker.ts, and resilient-worker.ts which survives deaths): two
 * queues, this rank's own puts (run in the pool's `order`) and what the coordinator dealt (run in the order
 * dealt); a request for work when the queue runs low, with the turnaround it measures; RELEASE answered with
 * about half of the queue; parking while idle; and the end of the run as the coordinator words it (ending.ts).
 *
 * Each worker keeps its own run loop, put and report: the plain worker reports cumulative counts (STATUS), the
 * resilient one moves a ledger (COMMIT). `E` is what its queues hold: the task itself, or a ledger entry.
 */
export abstract class WorkerCore<T, E> implements Engine<T> {
  protected readonly settled = deferred();
  readonly done = this.settled.promise;
  /** Tasks put on this rank and kept, run in the pool's order; tasks granted, run in the order dealt. */
  protected readonly own: TaskQueue<E>;
  protected readonly dealt = new TaskQueue<E>("dealing");
  protected readonly exec: Executor<T>;
  protected readonly keep: number;
  protected finished = false;
  /** A task here called ctx.stop; the coordinator's STOPPED ends the run. */
  protected stopping = false;
  private wake: (() => void) | undefined;
  /** Sequence number of the next report. */
  protected seq = 0;
  /** A RELEASE not yet answered. */
  protected owed = false;
  /** When the pending request for work was sent (-1: none pending). */
  protected requestSentAt = -1;
  /** True while the loop is parked with nothing to run. */
  protected parked = false;
  /** Tasks this worker wants to hold (running plus queued), from its measured rates. */
  protected capacity: number;
  /** Moving average of the grant turnaround, in ms (0: not measured yet). */
  protected rttMs = 0;

  constructor(
    protected readonly rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
  ) {
    this.own = new TaskQueue<E>(rt.config.order);
    this.keep = rt.config.keep;
    this.exec = new Executor(handler, ctx, rt.stats, rt.results, rt.trace);
    this.capacity = rt.config.chunk > 0 ? Math.max(2, rt.config.chunk) : 4;
  }

  abstract put(task: T, priority: number, to: number | undefined, fromTask?: boolean, key?: TaskKey): void;
  abstract onMessage(source: number, tag: number, body: Record<string, unknown>): void;
  /** Runs tasks until the run ends, reporting to the coordinator as it goes. */
  protected abstract loop(): Promise<void>;
  /** Moves up to `n` queued tasks towards the coordinator: dealt ones first (not started here), then own. */
  protected abstract giveBack(n: number): number;
  /** Sends the coordinator what changed since the last report; `request`: it also asks for work. */
  protected abstract report(request: boolean): void;

  /** Puts the tasks put before the run (by the app); called by each worker once its own fields are set. */
  protected putInitial(initial: readonly PendingPut<T>[]): void {
    for (const p of initial) this.put(p.task, p.priority, undefined);
  }

  queued(): number {
    return this.own.size + this.dealt.size;
  }

  /**
   * The next task: the higher priority of the two queues' heads, this rank's own on a tie (work-first: it goes
   * on depth-first with what it created, and what was dealt stays available to be released).
   */
  protected next(): E | undefined {
    const own = this.own;
    const dealt = this.dealt;
    if (dealt.size === 0) return own.pop();
    if (own.size === 0) return dealt.pop();
    return (own.peekPriority() as number) >= (dealt.peekPriority() as number) ? own.pop() : dealt.pop();
  }

  start(): void {
    void this.loop().catch((e: Error) => this.fail(e));
  }

  /**
   * Answers a pending RELEASE with half of the local queue, rounded down, if that is any: the task this worker
   * runs next stays here (given away, it would start a round trip later elsewhere while this worker waits; and a
   * tree's task run here puts the children that can be released next). With one task queued the RELEASE stands
   * until more are queued, or this worker goes idle and answers it with nothing.
   */
  protected release(): void {
    const n = Math.min(MAX_RELEASE, this.queued() >> 1);
    if (n === 0) return;
    this.owed = false;
    this.rt.count("releases");
    this.rt.count("tasksReleased", this.giveBack(n));
    this.report(false);
  }

  /** Resolves at the next `wakeUp`: the loop awaits it while parked. */
  protected woken(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  protected wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** A grant answered the pending request: its turnaround enters the moving average. */
  protected measureTurnaround(): void {
    const sample = now() - this.requestSentAt;
    this.rttMs = this.rttMs === 0 ? sample : this.rttMs * 0.75 + sample * 0.25;
  }

  /** DONE, FAIL or STOPPED from the coordinator ends the run here; false for any other tag. */
  protected ended(tag: number, body: Record<string, unknown>): boolean {
    if (!settleOnWord(this.rt, this.settled, tag, body)) return false;
    this.finished = true;
    if (tag === TAG.done) this.rt.stats.counters.capacity = this.capacity;
    this.wakeUp();
    return true;
  }

  stop(result: WireResult): void {
    if (this.finished || this.stopping) return;
    this.stopping = true;
    askToStop(this.rt, result);
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    failToCoordinator(this.rt, this.settled, error);
    this.wakeUp();
  }
}
