import { deferred } from "../../deferred.ts";
import { failFromMessage, failureBody, sendFail } from "../failure.ts";
import { TaskQueue } from "../queue.ts";
import { type WireResult, withResult } from "../results.ts";
import type { Engine, PendingPut, PoolRuntime } from "../runtime.ts";
import { type Fail, type Status, TAG } from "./protocol.ts";

/** Expected Card Distribution defers a grant only when the faster worker is expected to finish this much sooner. */
const ECD_MIN_GAIN_MS = 1;
/**
 * With `coordinatorWorks`, this rank's own worker waits for every other worker to join, but no longer than
 * this: a rank that starts its run late must not keep this one idle.
 */
const SELF_WAIT_MS = 10;
/**
 * Expected Card Distribution trusts a worker's mean task time as its speed only once it has run this many
 * tasks: the mean of a few uneven tasks (0.2-3 s, issue 29) says which tasks it drew, not how fast it is, and
 * deferring to a "faster" worker then left tasks waiting for one busy in a long task.
 */
const ECD_MIN_TASKS = 8;
/** Most extra tasks dealt to a remote worker to cover the coordinator's own task (see `cover`). */
const MAX_COVER = 4096;

interface WorkerState {
  readonly rank: number;
  joined: boolean;
  /** Sequence number of its latest status, and how many of its statuses arrived in all. */
  seq: number;
  statuses: number;
  /** Tasks granted to this worker. */
  granted: number;
  /** From its latest status: tasks run, kept, given back and sent in all (protocol.ts). */
  done: number;
  kept: number;
  given: number;
  putsExpected: number;
  /** Tasks it sent that arrived here. */
  putsReceived: number;
  /** Tasks it wants to hold (running plus queued), from its measured rates. */
  capacity: number;
  /** Its mean task time in ms (0 = not measured yet). */
  meanMs: number;
  /** It is waiting for a grant (its latest status asked for work). */
  wants: boolean;
  /** A RELEASE was sent to it and not yet answered. */
  asked: boolean;
  /** Its pending request found tasks in the queue: the grant that answers it measures a real turnaround. */
  stocked: boolean;
}

/** Tasks a worker holds (queued or running), as of its latest status plus what was granted since. */
const holding = (w: WorkerState): number => w.granted + w.kept - w.done - w.given;

/**
 * The coordinator: holds the queue and deals tasks to workers, event-driven (no polling: it acts only when a
 * message arrives). Dealing is credit-based: each worker states how many tasks it wants to hold, computed
 * from its own task time and round-trip time; the coordinator grants up to that deficit, in chunks that
 * shrink as the queue drains (factoring: remaining / (2 x workers)), so the run ends level.
 *
 * Near the end (queue no larger than what the workers would hold), it applies the Expected Card Distribution
 * idea of seed 004: a worker whose expected finish time with one more chunk is later than another worker's
 * is not dealt to; the task waits for the faster worker, so a slow worker never holds up the finish.
 *
 * Workers keep the tasks their handlers put (option `keep`) and run them themselves. When a worker waits for
 * work and the queue is empty, the coordinator asks workers that hold tasks to release some (RELEASE): each
 * sends about half of its queue, oldest first, which is then dealt like any other task.
 *
 * Termination: every worker has joined, the queue is empty, every worker holds no task as of its latest
 * status (granted + kept = run + given back), every task a worker reported sending has arrived, and so has
 * every status before its latest (with the partial results it carries).
 */
export class Coordinator<T> implements Engine<T> {
  private readonly settled = deferred();
  readonly done = this.settled.promise;
  /** Dealt oldest first: what workers give back are the roots of their biggest subtrees. */
  private readonly queue = new TaskQueue<T>("fifo");
  private readonly workers: WorkerState[] = [];
  private readonly byRank = new Map<number, WorkerState>();
  private finished = false;
  private cursor = 0;
  /** This rank's own worker, with `coordinatorWorks`. */
  private readonly self: WorkerState | undefined;
  /** Set once every worker has joined or SELF_WAIT_MS have passed: this rank's own worker may be dealt to. */
  private selfMayStart = false;

  constructor(
    private readonly rt: PoolRuntime,
    initial: readonly PendingPut<T>[],
  ) {
    for (let r = 0; r < rt.size; r++) {
      // With `coordinatorWorks`, this rank's own worker is dealt to like any other (WorkingCoordinator).
      if (r === rt.config.coordinator && !rt.config.coordinatorWorks) continue;
      const w: WorkerState = {
        rank: r,
        joined: false,
        seq: -1,
        statuses: 0,
        granted: 0,
        done: 0,
        kept: 0,
        given: 0,
        putsExpected: 0,
        putsReceived: 0,
        capacity: 0,
        meanMs: 0,
        wants: false,
        asked: false,
        stocked: false,
      };
      this.workers.push(w);
      this.byRank.set(r, w);
    }
    this.self = this.byRank.get(rt.rank);
    for (const p of initial) this.queue.push(p.task, p.priority);
  }

  queued(): number {
    return this.queue.size;
  }

  start(): void {
    if (this.self) {
      setTimeout(() => {
        this.selfMayStart = true;
        if (!this.finished) this.dispatch();
      }, SELF_WAIT_MS).unref();
    }
    this.dispatch();
    this.checkTermination();
  }

  put(task: T, priority: number): void {
    if (this.finished) return;
    this.queue.push(task, priority);
    this.dispatch();
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    if (tag === TAG.fail) {
      this.abort(body as unknown as Fail, source);
      return;
    }
    if (tag === TAG.stop) {
      this.stop(body.r as WireResult);
      return;
    }
    if (tag !== TAG.status) return;
    const w = this.byRank.get(source);
    if (!w) return;
    const st = body as unknown as Status;
    this.rt.count("statusesReceived");
    w.joined = true;
    w.statuses++;
    if (st.s > w.seq) {
      w.seq = st.s;
      w.capacity = st.c;
      w.meanMs = st.m;
      w.done = st.d;
      w.kept = st.k;
      w.given = st.v;
      w.putsExpected = st.n;
      if (st.w === 1 && !w.wants) w.stocked = this.queue.size > 0;
      w.wants = st.w === 1;
      // Answered (a status sent before the RELEASE arrived clears it too: asking again does no harm).
      if (st.o !== 1) w.asked = false;
    }
    this.rt.results.merge(st.r);
    const tasks = st.t;
    if (st.f !== undefined) this.rt.trace?.flowIn(`${tasks.length} tasks from ${source}`, st.f);
    if (tasks.length > 0) {
      const prios = st.q;
      for (let i = 0; i < tasks.length; i++) this.queue.push(tasks[i] as T, prios ? (prios[i] as number) : 0);
      w.putsReceived += tasks.length;
    }
    const size = this.queue.size;
    if (size > (this.rt.stats.counters.maxQueue ?? 0)) this.rt.stats.counters.maxQueue = size;
    this.dispatch();
    this.checkTermination();
  }

  private dispatch(): void {
    const n = this.workers.length;
    if (n === 0) return;
    const chunkCap = this.rt.config.chunk > 0 ? this.rt.config.chunk : Number.POSITIVE_INFINITY;
    let unmet = 0;
    for (let k = 0; k < n; k++) {
      const w = this.workers[(this.cursor + k) % n] as WorkerState;
      if (!w.joined || !w.wants) continue;
      const cover = this.cover(w);
      const deficit = w.capacity + cover - holding(w);
      if (deficit <= 0) continue;
      if (this.queue.size === 0) {
        unmet += deficit;
        continue;
      }
      // This rank's own worker starts once every other has joined (or SELF_WAIT_MS have passed): a task it
      // began first would keep their first requests waiting for its whole length.
      if (w === this.self && !this.selfMayStart) {
        if (!this.workers.every((v) => v.joined)) continue;
        this.selfMayStart = true;
      }
      const factoring = Math.ceil(this.queue.size / (2 * n));
      const chunk = Math.max(1, Math.min(deficit, factoring, chunkCap));
      if (this.deferToFaster(w, chunk)) {
        this.rt.count("ecdDeferrals");
        continue;
      }
      const tasks: T[] = [];
      const prios: number[] = [];
      this.queue.give(chunk, tasks, prios);
      w.granted += tasks.length;
      // A grant answers the worker's request (the worker asks again when it runs low): until it does, it is
      // not waiting, and may be asked to release work for others.
      w.wants = false;
      this.rt.count("grants");
      // Tasks kept by this rank's own worker (coordinatorWorks) never leave it: they are not "granted".
      this.rt.count(w === this.self ? "tasksKept" : "tasksGranted", tasks.length);
      const body: Record<string, unknown> = { t: tasks };
      if (prios.some((p) => p !== 0)) body.q = prios;
      if (cover > 0) body.h = w.capacity + cover;
      if (w.stocked) body.z = 1;
      if (this.rt.trace) body.f = this.rt.trace.flowOut(`grant ${tasks.length} to ${w.rank}`, { tasks: tasks.length });
      this.rt.send(w.rank, TAG.grant, body);
    }
    this.cursor = (this.cursor + 1) % n;
    if (unmet > 0) this.seekWork();
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
    const victims: WorkerState[] = [];
    for (const w of this.workers) {
      if (w.wants && holding(w) < w.capacity) hungry++;
      if (w.asked) waiting--;
      else if (holding(w) > 0) victims.push(w);
    }
    waiting += hungry;
    // A waiting worker is never asked to release work for itself alone (with one worker, for nobody).
    if (hungry < 2) {
      const others = victims.filter((w) => !(w.wants && holding(w) < w.capacity));
      victims.splice(0, victims.length, ...others);
    }
    if (waiting <= 0 || victims.length === 0) return;
    const rank = (w: WorkerState) => (w.wants ? 0 : 2 ** 40) + holding(w);
    victims.sort((a, b) => rank(b) - rank(a));
    for (const w of victims.slice(0, waiting + 1)) {
      w.asked = true;
      this.rt.count("releasesSent");
      this.rt.send(w.rank, TAG.release, {});
    }
  }

  /**
   * With `coordinatorWorks`, a remote worker's request waits while this rank runs a task of its own, which its
   * capacity (from round trips measured while this rank happened to be free) does not cover: it is told to
   * hold, and is dealt, as many more tasks as it runs in two of this rank's, so that it asks while it still
   * has one of this rank's tasks' worth of work in hand.
   */
  private cover(w: WorkerState): number {
    const self = this.self;
    if (self === undefined || w === self || self.meanMs <= 0) return 0;
    return w.meanMs > 0 ? Math.min(MAX_COVER, Math.ceil((2 * self.meanMs) / w.meanMs)) : 2;
  }

  /** Expected Card Distribution: near the end, keep tasks from a worker that would finish them last. */
  private deferToFaster(w: WorkerState, chunk: number): boolean {
    if (w.meanMs <= 0 || w.done < ECD_MIN_TASKS) return false;
    let held = 0;
    for (const v of this.workers) held += Math.max(v.capacity, 1);
    if (this.queue.size > held) return false;
    const finishW = (holding(w) + chunk) * w.meanMs;
    for (const v of this.workers) {
      if (v === w || v.meanMs <= 0 || !v.joined || v.done < ECD_MIN_TASKS) continue;
      // A worker that keeps tasks it put may hold far more than its last status said, and asks for work
      // only when that is done: its finish cannot be foreseen, and waiting for it could last the whole run.
      if (v.kept > 0) continue;
      // Only a clearly faster worker is worth waiting for; equals share the end normally.
      if (v.meanMs * 1.5 > w.meanMs) continue;
      const finishV = (holding(v) + chunk) * v.meanMs;
      // Waiting must buy a real gain; for microsecond tasks the dealing itself costs more.
      if (finishV + ECD_MIN_GAIN_MS < finishW) return true;
    }
    return false;
  }

  private checkTermination(): void {
    if (this.finished || this.queue.size > 0) return;
    for (const w of this.workers) {
      // Every status up to its latest has arrived: an earlier one that the latest overtook may still carry a
      // partial result (its tasks are counted by putsExpected, its result by nothing else).
      if (!w.joined || holding(w) !== 0 || w.putsReceived !== w.putsExpected || w.statuses !== w.seq + 1) return;
    }
    this.finished = true;
    const result = this.rt.results.take();
    this.rt.results.final = result;
    for (const w of this.workers) this.rt.send(w.rank, TAG.done, withResult({}, result));
    this.settled.resolve();
  }

  private abort(f: Fail, source: number): void {
    this.finished = true;
    sendFail(
      this.rt,
      this.workers.filter((w) => w.rank !== source).map((w) => w.rank),
      TAG.fail,
      f,
    );
    this.settled.reject(failFromMessage(f));
  }

  /** Ends the run on purpose: the first stop to arrive here wins; every worker is told. */
  stop(result: WireResult): void {
    if (this.finished) return;
    this.finished = true;
    this.rt.endStopped(result);
    for (const w of this.workers) this.rt.send(w.rank, TAG.stopped, withResult({}, result));
    this.settled.resolve();
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    sendFail(
      this.rt,
      this.workers.map((w) => w.rank),
      TAG.fail,
      failureBody(this.rt.rank, error),
    );
    this.settled.reject(error);
  }
}
