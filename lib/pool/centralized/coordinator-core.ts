import { deferred } from "../../deferred.ts";
import { failFromMessage, failureBody, sendFail } from "../failure.ts";
import { TaskQueue } from "../queue.ts";
import { type WireResult, withResult } from "../results.ts";
import type { TaskKey } from "../keys.ts";
import type { Engine, PoolRuntime } from "../runtime.ts";
import { type Fail, TAG } from "./plain-protocol.ts";

/** What a coordinator knows of one worker, in both protocols. */
export interface WorkerSlot {
  readonly rank: number;
  /** False once the launcher said it died (only the resilient coordinator survives that). */
  alive: boolean;
  /** Its first report arrived. */
  joined: boolean;
  /** It is waiting for a grant (its latest report asked for work). */
  wants: boolean;
  /** A RELEASE was sent to it and not yet answered. */
  asked: boolean;
  /** Tasks it wants to hold (running plus queued), from its measured rates. */
  capacity: number;
  /** Its mean task time in ms (0 = not measured yet). */
  meanMs: number;
  /** Tasks granted to it in all. */
  granted: number;
}

/**
 * What the two centralized coordinators share (coordinator.ts, and resilient-coordinator.ts which survives
 * worker deaths): one queue, dealt event-driven (it acts only when a message or a put arrives); credit-based
 * dealing, each waiting worker granted up to its deficit in chunks that shrink as the queue drains (factoring:
 * remaining / (2 x workers)), so the run ends level; RELEASE when workers wait and the queue is empty; and the
 * end of the run (DONE, STOPPED, FAIL) told to every worker alive.
 *
 * Each coordinator keeps what its reports mean: how much a worker lacks (`deficit`), how a grant is made
 * (`deal`), how much it holds that it could release (`holds`) and when it is idle (`idle`). `Q` is what the
 * queue holds (the task itself, or the resilient coordinator's record of it); `W` what it knows of a worker.
 */
export abstract class CoordinatorCore<T, Q, W extends WorkerSlot> implements Engine<T> {
  protected readonly settled = deferred();
  readonly done = this.settled.promise;
  /** Dealt oldest first: what workers give back are the roots of their biggest subtrees. */
  protected readonly queue = new TaskQueue<Q>("dealing");
  protected readonly workers: W[] = [];
  protected readonly byRank = new Map<number, W>();
  protected finished = false;
  /** The worker dealt to first next time, so that no worker is always served last. */
  private cursor = 0;

  constructor(
    protected readonly rt: PoolRuntime,
    slot: (rank: number) => W,
  ) {
    for (let r = 0; r < rt.size; r++) {
      // With `coordinatorWorks`, this rank's own worker is dealt to like any other (WorkingCoordinator).
      if (r === rt.config.coordinator && !rt.config.coordinatorWorks) continue;
      const w = slot(r);
      this.workers.push(w);
      this.byRank.set(r, w);
    }
  }

  abstract put(task: T, priority: number, to: number | undefined, fromTask?: boolean, key?: TaskKey): void;
  /** A message other than FAIL and STOP, while the run is on. */
  protected abstract receive(source: number, tag: number, body: Record<string, unknown>): void;
  /** Tasks `w` lacks to reach its capacity (<= 0: none), as its latest report and the grants since tell. */
  protected abstract deficit(w: W): number;
  /** Grants `w` up to `chunk` tasks from the queue (or defers, as the coordinator's policy says). */
  protected abstract deal(w: W, chunk: number): void;
  /** Tasks `w` holds that a RELEASE could give back. */
  protected abstract holds(w: W): number;
  /** `w` holds nothing and everything it reported has been applied: the run may end as far as it goes. */
  protected abstract idle(w: W): boolean;
  /**
   * True when the dealing policy would keep the next task from `w` even if one were queued (the plain
   * coordinator's Expected Card Distribution, near the end); such a worker is not dealt to, nor sought work for.
   */
  protected defers(_w: W): boolean {
    return false;
  }
  /** The run ended here (done, stopped or failed): undo what waits on time. */
  protected onEnd(): void {}

  queued(): number {
    return this.queue.size;
  }

  start(): void {
    this.dispatch();
    this.checkTermination();
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    if (tag === TAG.fail) this.abort(body as unknown as Fail, source);
    else if (tag === TAG.stop) this.stop(body.r as WireResult);
    else this.receive(source, tag, body);
  }

  /** Deals to every waiting worker with a deficit, from the cursor on; asks for releases when the queue is dry. */
  protected dispatch(): void {
    const n = this.workers.length;
    if (n === 0 || this.finished) return;
    const chunkCap = this.rt.config.chunk > 0 ? this.rt.config.chunk : Number.POSITIVE_INFINITY;
    let unmet = 0;
    for (let k = 0; k < n; k++) {
      const w = this.workers[(this.cursor + k) % n] as W;
      if (!w.alive || !w.joined || !w.wants) continue;
      const deficit = this.deficit(w);
      if (deficit <= 0) continue;
      if (this.queue.size === 0) {
        // A worker the policy would not deal to now (`defers`) lacks nothing it could get: asking others to
        // release work for it would only bring tasks here to wait for the worker they are kept for, which
        // asks for them back (a loop that, between a working coordinator and its own worker, never yielded).
        if (!this.defers(w)) unmet += deficit;
        continue;
      }
      this.deal(w, Math.max(1, Math.min(deficit, Math.ceil(this.queue.size / (2 * n)), chunkCap)));
    }
    this.cursor = (this.cursor + 1) % n;
    if (unmet > 0) this.seekWork();
  }

  /**
   * A grant of `n` tasks to `w` is on its way: it answers the worker's request (the worker asks again when it
   * runs low); until it does, it is not waiting, and may be asked to release work for others.
   */
  protected granted(w: W, n: number): void {
    w.granted += n;
    w.wants = false;
    this.rt.count("grants");
    // Tasks kept by this rank's own worker (coordinatorWorks) never leave it: they are not "granted".
    this.rt.count(w.rank === this.rt.rank ? "tasksKept" : "tasksGranted", n);
  }

  /** Records the queue's high-water mark (stats `maxQueue`). */
  protected noteQueueSize(): void {
    const size = this.queue.size;
    if (size > (this.rt.stats.counters.maxQueue ?? 0)) this.rt.stats.counters.maxQueue = size;
  }

  /**
   * Workers wait for work and the queue is empty: asks workers that hold tasks to release some, one per
   * waiting worker, plus one. Workers that are not waiting themselves come first, the most loaded (as last
   * seen) first; but a waiting worker that holds a task is asked too: its own puts may have refilled its queue
   * since it asked (in a narrow tree, the one worker on the spine is always "nearly out" and yet holds the
   * only work there is). A release is a standing request: it answers as soon as it has a task queued.
   */
  private seekWork(): void {
    let waiting = 0;
    let hungry = 0;
    let victims: W[] = [];
    const starving = (w: W) => w.wants && this.holds(w) < w.capacity && !this.defers(w);
    for (const w of this.workers) {
      if (!w.alive) continue;
      if (starving(w)) hungry++;
      if (w.asked) waiting--;
      else if (this.holds(w) > 0) victims.push(w);
    }
    waiting += hungry;
    // A waiting worker is never asked to release work for itself alone (with one worker, for nobody).
    if (hungry < 2) victims = victims.filter((w) => !starving(w));
    if (waiting <= 0 || victims.length === 0) return;
    const load = (w: W) => (w.wants ? 0 : 2 ** 40) + this.holds(w);
    victims.sort((a, b) => load(b) - load(a));
    for (const w of victims.slice(0, waiting + 1)) {
      w.asked = true;
      this.rt.count("releasesSent");
      this.rt.send(w.rank, TAG.release, {});
    }
  }

  /** Ends the run with its result once the queue is empty and every worker alive is idle. */
  protected checkTermination(): void {
    if (this.finished || this.queue.size > 0) return;
    for (const w of this.workers) if (w.alive && !this.idle(w)) return;
    this.finished = true;
    this.onEnd();
    const result = this.rt.results.take();
    this.rt.results.final = result;
    for (const r of this.alive()) this.rt.send(r, TAG.done, withResult({}, result));
    this.settled.resolve();
  }

  /** The ranks of the workers alive, but `except`. */
  protected alive(except?: number): number[] {
    return this.workers.filter((w) => w.alive && w.rank !== except).map((w) => w.rank);
  }

  private abort(f: Fail, source: number): void {
    this.finished = true;
    this.onEnd();
    sendFail(this.rt, this.alive(source), TAG.fail, f);
    this.settled.reject(failFromMessage(f));
  }

  /** Ends the run on purpose: the first stop to arrive here wins; every worker is told. */
  stop(result: WireResult): void {
    if (this.finished) return;
    this.finished = true;
    this.onEnd();
    this.rt.endStopped(result);
    for (const r of this.alive()) this.rt.send(r, TAG.stopped, withResult({}, result));
    this.settled.resolve();
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.onEnd();
    sendFail(this.rt, this.alive(), TAG.fail, failureBody(this.rt.rank, error));
    this.settled.reject(error);
  }
}
