import { dealsAt, fewPerRank } from "../dealing.ts";
import { LONG_TASK_MS } from "../executor.ts";
import type { PendingPut, PoolRuntime } from "../runtime.ts";
import { CoordinatorCore, type WorkerSlot } from "./coordinator-core.ts";
import { type Status, TAG } from "./plain-protocol.ts";

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
/** Tasks a worker has run before its mean task time says the tasks are short (`standsBy`). */
const KNOWN_AFTER_TASKS = 4;
/** Most extra tasks dealt to a remote worker to cover the coordinator's own task (see `cover`). */
const MAX_COVER = 4096;

interface WorkerState extends WorkerSlot {
  /** Sequence number of its latest status, and how many of its statuses arrived in all. */
  seq: number;
  statuses: number;
  /** From its latest status: tasks run, kept, given back and sent in all (plain-protocol.ts). */
  done: number;
  kept: number;
  given: number;
  putsExpected: number;
  /** Tasks it sent that arrived here. */
  putsReceived: number;
  /** Its pending request found tasks in the queue: the grant that answers it measures a real turnaround. */
  stocked: boolean;
  /** Async tasks it runs at once (its latest status's `x`; 1 for a worker whose handlers are sync). */
  width: number;
}

/** Tasks a worker holds (queued or running), as of its latest status plus what was granted since. */
const holding = (w: WorkerState): number => w.granted + w.kept - w.done - w.given;

const newState = (rank: number): WorkerState => ({
  rank,
  alive: true,
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
  width: 1,
});

/**
 * The coordinator: holds the queue and deals tasks to workers, event-driven (no polling: it acts only when a
 * message arrives; what it shares with the resilient coordinator is in coordinator-core.ts). Dealing is
 * credit-based: each worker states how many tasks it wants to hold, computed
 * from its own task time and round-trip time; the coordinator grants up to that deficit, in chunks that
 * shrink as the queue drains (factoring: remaining / (2 x workers)), so the run ends level.
 *
 * Near the end (queue no larger than what the workers would hold), it applies the Expected Card Distribution
 * idea of seed 004: a worker whose expected finish time with one more chunk is later than another worker's
 * is not dealt to; the task waits for the faster worker, so a slow worker never holds up the finish.
 *
 * Workers keep the tasks their handlers put (option `keep`) and run them themselves. When a worker waits for
 * work and the queue is empty, the coordinator asks workers that hold tasks to release some (RELEASE): each
 * sends about half of its queue, from the oldest end, which is then dealt like any other task.
 *
 * Termination: every worker has joined, the queue is empty, every worker holds no task as of its latest
 * status (granted + kept = run + given back), every task a worker reported sending has arrived, and so has
 * every status before its latest (with the partial results it carries).
 */
export class Coordinator<T> extends CoordinatorCore<T, T, WorkerState> {
  /** This rank's own worker, with `coordinatorWorks`. */
  private readonly self: WorkerState | undefined;
  /**
   * Workers whose latest mean task time is over LONG_TASK_MS, and that have run KNOWN_AFTER_TASKS (`standsBy`,
   * read for every worker at every dispatch: kept as counts, not recounted).
   */
  private longWorkers = 0;
  private knownWorkers = 0;
  /** Set once every worker has joined or SELF_WAIT_MS have passed: this rank's own worker may be dealt to. */
  private selfMayStart = false;

  constructor(rt: PoolRuntime, initial: readonly PendingPut<T>[]) {
    super(rt, newState);
    this.self = this.byRank.get(rt.rank);
    for (const p of initial) this.queue.push(p.task, p.priority);
  }

  override start(): void {
    if (this.self) {
      // Not unref'd: the deadlock check (lib/comm/stall.ts) must see that something other than a message can
      // still wake this run.
      setTimeout(() => {
        this.selfMayStart = true;
        if (!this.finished) this.dispatch();
      }, SELF_WAIT_MS);
    }
    super.start();
  }

  put(task: T, priority: number): void {
    if (this.finished) return;
    this.queue.push(task, priority);
    this.dispatch();
  }

  protected receive(source: number, tag: number, body: Record<string, unknown>): void {
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
      if (w.meanMs > LONG_TASK_MS) this.longWorkers--;
      if (st.m > LONG_TASK_MS) this.longWorkers++;
      if (w.done < KNOWN_AFTER_TASKS && st.d >= KNOWN_AFTER_TASKS) this.knownWorkers++;
      w.meanMs = st.m;
      w.width = st.x ?? 1;
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
    this.noteQueueSize();
    this.dispatch();
    this.checkTermination();
  }

  protected deficit(w: WorkerState): number {
    const cover = this.cover(w);
    const want = w.capacity + cover - holding(w);
    // A worker whose tasks are long, or not known yet while the queue holds few tasks a rank, gets one at a time:
    // a second one held behind a long task waits its whole length while another worker may be free, and the
    // highest priority no longer starts first (16 emulated ranks, 40 tasks of 20-300 ms put with their times as
    // priorities: 1.44x the bound dealt two a worker, 1.11 to 1.15 one). What covers this rank's own task is
    // still dealt (`cover`). A worker whose async tasks in flight mostly wait (I/O, timers) gets one a place in
    // its flight: a task there waits for no other. (Dealt one at a time, a worker whose timer tasks took over 5
    // ms under load kept one in flight of its 16, its mean the length of one task, which kept it dealt so.)
    const long = w.meanMs > LONG_TASK_MS || (w.done < KNOWN_AFTER_TASKS && fewPerRank(this.queue.size, this.rt.size));
    return long ? Math.min(want, w.width + cover - holding(w)) : want;
  }

  protected holds(w: WorkerState): number {
    return holding(w);
  }

  protected deal(w: WorkerState, chunk: number): void {
    // This rank's own worker starts once every other has joined (or SELF_WAIT_MS have passed): a task it
    // began first would keep their first requests waiting for its whole length.
    if (w === this.self && !this.selfMayStart) {
      if (!this.workers.every((v) => v.joined)) return;
      this.selfMayStart = true;
    }
    if (w === this.self && this.standsBy()) {
      this.rt.count("coordinatorStandbys");
      return;
    }
    if (this.deferToFaster(w, chunk)) {
      this.rt.count("ecdDeferrals");
      return;
    }
    const tasks: T[] = [];
    const prios: number[] = [];
    this.queue.give(chunk, tasks, prios);
    this.granted(w, tasks.length);
    const body: Record<string, unknown> = { t: tasks };
    if (prios.some((p) => p !== 0)) body.q = prios;
    const cover = this.cover(w);
    if (cover > 0) body.h = w.capacity + cover;
    if (w.stocked) body.z = 1;
    if (this.rt.trace) body.f = this.rt.trace.flowOut(`grant ${tasks.length} to ${w.rank}`, { tasks: tasks.length });
    this.rt.send(w.rank, TAG.grant, body);
  }

  /**
   * With `coordinatorWorks`, a remote worker's request waits while this rank runs a task of its own, which its
   * capacity (from round trips measured while this rank happened to be free) does not cover: it is told to
   * hold, and is dealt, as many more tasks as it runs in two of this rank's, so that it asks while it still
   * has one of this rank's tasks' worth of work in hand.
   */
  private cover(w: WorkerState): number {
    const self = this.self;
    if (self === undefined || w === self || self.meanMs <= 0 || this.standsBy()) return 0;
    return w.meanMs > 0 ? Math.min(MAX_COVER, Math.ceil((2 * self.meanMs) / w.meanMs)) : 2;
  }

  /**
   * With `coordinatorWorks`, tasks that may be long and three or more other workers alive (MIN_DEALING_RANKS): this rank's own worker
   * is dealt nothing while the queue has tasks, and the rank only deals. Each of its own tasks would keep
   * every request that arrives meanwhile waiting, and a task dealt ahead to cover it (`cover`) waits behind a
   * worker's own long task: with W other workers each finishing a task about once a task's time, one task of
   * its own costs them about W/2 tasks' time idle, and gains one. (16 emulated ranks, 40 tasks of 20-300 ms:
   * 2.23x the bound working, 1.30x dealing only.) Tasks may be long when any worker's mean task time is over
   * LONG_TASK_MS, or, before any has run KNOWN_AFTER_TASKS, when the queue holds few tasks a rank (OPEN_MAX_PER_RANK).
   */
  private standsBy(): boolean {
    // (The plain coordinator's workers never die: the others are every worker but this rank's own.)
    if (this.self === undefined || !dealsAt(this.workers.length)) return false;
    // A mean over a task or two is not one yet: a status sent between two tasks may not count the last one's
    // time (the executor reads the clock every few tasks), and reads a tenth of it.
    const known = this.knownWorkers > 0;
    return this.longWorkers > 0 || (!known && fewPerRank(this.queue.size, this.rt.size));
  }

  protected override defers(w: WorkerState): boolean {
    return this.deferToFaster(w, 1);
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
      // This rank's own worker, standing by (`standsBy`), is dealt nothing while the queue has tasks: waiting for
      // it would leave them in the queue for good, every worker waiting.
      if (v === this.self && this.standsBy()) continue;
      // Only a clearly faster worker is worth waiting for; equals share the end normally.
      if (v.meanMs * 1.5 > w.meanMs) continue;
      const finishV = (holding(v) + chunk) * v.meanMs;
      // Waiting must buy a real gain; for microsecond tasks the dealing itself costs more.
      if (finishV + ECD_MIN_GAIN_MS < finishW) return true;
    }
    return false;
  }

  protected idle(w: WorkerState): boolean {
    // Every status up to its latest has arrived: an earlier one that the latest overtook may still carry a
    // partial result (its tasks are counted by putsExpected, its result by nothing else).
    return w.joined && holding(w) === 0 && w.putsReceived === w.putsExpected && w.statuses === w.seq + 1;
  }
}
