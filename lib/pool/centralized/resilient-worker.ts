import { now } from "../executor.ts";
import { type Results, withResult } from "../results.ts";
import type { PendingPut, PoolRuntime } from "../runtime.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { type Commit, type Grant, TAG } from "./resilient-protocol.ts";
import { MAX_CAPACITY, WorkerCore } from "./worker-core.ts";

/** Puts sent to the coordinator once this many wait (else with the next commit). */
const FLUSH_TASKS = 512;
/**
 * A worker commits at least this often while it works: what it did since its last commit is what its death
 * would cost (done again elsewhere). Each commit carries the tasks put since the last one that are still held.
 */
export const COMMIT_MS = 100;
/**
 * How long the tasks put by a watched task are watched too, from when the re-dealt task starts: a worker that
 * died had run at most about COMMIT_MS of work since its last commit, so the task that killed it, if it was
 * put by a task in its ledger, is reached again within about that much work from it.
 */
const WATCH_MS = 2 * COMMIT_MS;

/** A task this worker holds: its ledger id (0: put here since the last commit, not in the ledger yet). */
interface Entry<T> {
  readonly task: T;
  readonly priority: number;
  id: number;
  /** Still queued here (not started, not given back). */
  queued: boolean;
  /**
   * It may have killed a worker: announced before it runs, committed right after. 0: not watched; -1: watched
   * from when it starts; else the time until which it and the tasks it puts are watched (WATCH_MS).
   */
  watch: number;
  /** With `speculate`: the ledger task it descends from (0: put by the app), whose copy may be rescinded. */
  readonly root: number;
  /** With `speculate`: another copy of it completed first; it is skipped. */
  cancelled: boolean;
}

/** Whether `e` is watched still (or will be from its start): a watched task's puts keep its watch a while. */
const isWatched = (e: Entry<unknown>): boolean => e.watch === -1 || (e.watch > 0 && now() < e.watch);

/**
 * A worker of a centralized pool that survives worker deaths (resilient-protocol.ts). It runs tasks like the
 * plain worker (worker.ts: its own puts newest first, what was dealt in the order dealt, capacity from measured
 * rates; what the two share is in worker-core.ts), and reports to the coordinator only in commits, each of which moves the coordinator's ledger of what
 * this worker holds from one exact state to the next: the ledger tasks finished, the ones given back, the
 * tasks put since the last commit that are still held here (which now enter the ledger), the tasks sent to
 * the coordinator's queue, and the values returned by every task finished since. Tasks put and finished
 * between two commits never travel. A commit is sent only between tasks, never while one runs, so each
 * finished task's value and puts are in the same commit.
 */
export class ResilientWorker<T> extends WorkerCore<T, Entry<T>> {
  /** Since the last commit: ledger ids finished and given back, entries put here, tasks for the coordinator. */
  private finishedIds: number[] = [];
  private givenIds: number[] = [];
  private fresh: Entry<T>[] = [];
  private outTasks: T[] = [];
  private outPrios: number[] = [];
  /** Indices in outTasks of watched tasks; with `speculate`, the root of each. */
  private outWatched: number[] = [];
  private outRoots: number[] = [];
  private nextOwnId = -1;
  private received = 0;
  private executed = 0;
  private committedExecuted = 0;
  private lastCommit = now();
  /** The run has started (puts before it are the initial tasks, reported held by the first commit). */
  private started = false;
  /** The app's puts waiting for the end of this turn to go to the coordinator (PUT). */
  private appTasks: T[] = [];
  private appPrios: number[] = [];
  /** Tasks queued here as the latest commit said (rescinded ones may have gone since, unseen). */
  private reportedQueued = 0;
  /** An async task ended COMMIT_MS or more after the last commit: commit before the next. */
  private due = false;
  /** The task running now (its puts inherit its watch). */
  private current: Entry<T> | undefined;
  /** Resolves when the coordinator has seen the announcement of the watched task about to start. */
  private seen: (() => void) | undefined;
  /**
   * With `speculate`, values are kept apart by the ledger task they descend from, so that the coordinator can
   * drop a rescinded copy's (resilient-protocol.ts `rr`/`rv`): the current root, and the values of earlier ones
   * since the last commit. Queued ledger tasks by id, for RESCIND.
   */
  private readonly speculate: boolean;
  private root = 0;
  private readonly rootValues = new Map<number, Results>();
  private readonly byId = new Map<number, Entry<T>>();

  constructor(rt: PoolRuntime, handler: TaskHandler<T>, ctx: TaskContext<T>, initial: readonly PendingPut<T>[]) {
    super(rt, handler, ctx);
    this.speculate = rt.config.speculate;
    this.putInitial(initial);
  }

  override start(): void {
    this.started = true;
    super.start();
  }

  put(task: T, priority: number, _to?: number, fromTask = false): void {
    if (this.finished) return;
    if (!fromTask && this.started) {
      this.putForApp(task, priority);
      return;
    }
    // A task's puts descend from it (its watch, its root); the app's own, even while a task awaits, from none.
    const parent = fromTask ? this.current : undefined;
    const watch = parent !== undefined && parent.watch > 0 && now() < parent.watch ? parent.watch : 0;
    if (this.own.size < this.keep) {
      const e: Entry<T> = { task, priority, id: 0, queued: true, watch, root: this.rootOf(parent), cancelled: false };
      this.own.push(e, priority);
      this.fresh.push(e);
    } else {
      if (watch !== 0) this.outWatched.push(this.outTasks.length);
      if (this.speculate) this.outRoots.push(this.rootOf(parent));
      this.outTasks.push(task);
      this.outPrios.push(priority);
    }
    // Never a commit from here: a put comes from a running task, whose puts must travel with its completion.
    if (this.parked) this.wakeUp();
  }

  /**
   * The app's own put during the run (not a task's): it goes to the coordinator's queue at once (PUT), so it
   * is part of no task's commit (a task's commit may be lost with this worker, or dropped with a copy that
   * lost) and the coordinator never ends the run while it sits unreported here.
   */
  private putForApp(task: T, priority: number): void {
    if (this.appTasks.length === 0) {
      queueMicrotask(() => {
        const body: Record<string, unknown> = { t: this.appTasks };
        if (this.appPrios.some((p) => p !== 0)) body.q = this.appPrios;
        this.appTasks = [];
        this.appPrios = [];
        if (!this.finished) this.rt.send(this.rt.config.coordinator, TAG.put, body);
      });
    }
    this.appTasks.push(task);
    this.appPrios.push(priority);
  }

  /** The ledger task that tasks put by `e` descend from (0 for the app's own puts). */
  private rootOf(e: Entry<T> | undefined): number {
    if (e === undefined) return 0;
    return e.id !== 0 ? e.id : e.root;
  }

  /**
   * Moves up to `n` queued tasks to the coordinator: dealt ones first (not started here), then own ones from the oldest
   * end.
   */
  protected giveBack(n: number): number {
    const taken: Entry<T>[] = [];
    const prios: number[] = [];
    this.dealt.give(n, taken, prios);
    if (taken.length < n) this.own.give(n - taken.length, taken, prios);
    for (const e of taken) {
      e.queued = false;
      if (e.id !== 0) {
        this.givenIds.push(e.id);
        this.byId.delete(e.id);
      } else {
        if (isWatched(e)) this.outWatched.push(this.outTasks.length);
        if (this.speculate) this.outRoots.push(e.root);
        this.outTasks.push(e.task);
        this.outPrios.push(e.priority);
      }
    }
    return taken.length;
  }

  protected report(request: boolean): void {
    this.commit(request);
  }

  /**
   * Sends one commit: everything since the last one (see the class comment). `watching`: a watched task about
   * to start (still marked queued, so that one put here since the last commit enters the ledger now).
   */
  private commit(request: boolean, watching?: Entry<T>): void {
    this.reportedQueued = this.queued();
    const body: Commit = {
      s: this.seq++,
      c: this.capacity,
      m: this.exec.meanTaskMs(),
      l: this.reportedQueued,
      u: this.received,
      w: 0,
      o: this.owed ? 1 : 0,
    };
    if (this.finishedIds.length > 0) body.x = this.finishedIds;
    if (this.givenIds.length > 0) body.g = this.givenIds;
    const heldIds: number[] = [];
    const heldTasks: T[] = [];
    const heldPrios: number[] = [];
    const heldWatched: number[] = [];
    const heldRoots: number[] = [];
    for (const e of this.fresh) {
      if (!e.queued) continue;
      e.id = this.nextOwnId--;
      if (isWatched(e)) heldWatched.push(heldIds.length);
      if (this.speculate) {
        heldRoots.push(e.root);
        this.byId.set(e.id, e);
      }
      heldIds.push(e.id);
      heldTasks.push(e.task);
      heldPrios.push(e.priority);
    }
    if (heldIds.length > 0) {
      body.hi = heldIds;
      body.ht = heldTasks;
      if (heldPrios.some((p) => p !== 0)) body.hq = heldPrios;
      if (heldWatched.length > 0) body.hw = heldWatched;
      if (this.speculate) body.hr = heldRoots;
    }
    if (this.outTasks.length > 0) {
      body.t = this.outTasks;
      if (this.outPrios.some((p) => p !== 0)) body.q = this.outPrios;
      if (this.outWatched.length > 0) body.tw = this.outWatched;
      if (this.speculate) body.tr = this.outRoots;
    }
    if (watching !== undefined) body.a = watching.id;
    if (this.speculate) this.valuesByRoot(body);
    else withResult(body as unknown as Record<string, unknown>, this.rt.results.take());
    this.finishedIds = [];
    this.givenIds = [];
    this.fresh = [];
    this.outTasks = [];
    this.outPrios = [];
    this.outWatched = [];
    this.outRoots = [];
    this.committedExecuted = this.executed;
    this.lastCommit = now();
    this.due = false;
    if (request) this.requestSentAt = this.lastCommit;
    body.w = this.requestSentAt >= 0 ? 1 : 0;
    this.rt.count("commits");
    this.rt.send(this.rt.config.coordinator, TAG.status, body as unknown as Record<string, unknown>);
  }

  /** The values returned since the last commit, by root (`rr`, `rv`). */
  private valuesByRoot(body: Commit): void {
    this.switchRoot(this.root);
    if (this.rootValues.size === 0) return;
    body.rr = [...this.rootValues.keys()];
    body.rv = [...this.rootValues.values()].map((r) => r.take());
    this.rootValues.clear();
  }

  /** With `speculate`: tasks of root `root` run next; the values of the ones before are set apart. */
  private switchRoot(root: number): void {
    const values = this.rt.results.take();
    if (values !== undefined) {
      let kept = this.rootValues.get(this.root);
      if (!kept) this.rootValues.set(this.root, (kept = this.rt.results.fork()));
      kept.merge(values);
    }
    this.root = root;
  }

  /** Capacity from rates, as the plain worker's (worker.ts): two grant turnarounds of tasks, plus one. */
  private updateCapacity(): void {
    if (this.rt.config.chunk > 0 || this.executed === 0 || this.rttMs <= 0) return;
    const netMs = this.rt.stats.busyMs / Math.max(1, this.executed);
    const want = Math.ceil((2 * this.rttMs) / Math.max(netMs, 1e-4)) + 1;
    this.capacity = Math.min(MAX_CAPACITY, Math.max(2, want));
  }

  protected async loop(): Promise<void> {
    const exec = this.exec;
    exec.resume();
    this.commit(true);
    while (!this.finished) {
      for (let e = this.next(); e !== undefined; e = this.next()) {
        if (e.cancelled) continue;
        if (this.speculate) {
          const root = this.rootOf(e);
          if (root !== this.root) this.switchRoot(root);
          if (e.id !== 0) this.byId.delete(e.id);
        }
        let watched = false;
        if (e.watch !== 0) {
          const t = now();
          if (e.watch === -1) e.watch = t + WATCH_MS;
          watched = e.watch > t;
        }
        if (watched) {
          this.commit(false, e);
          this.byId.delete(e.id);
          await new Promise<void>((resolve) => {
            this.seen = resolve;
          });
          if (this.finished || this.stopping) return;
        }
        e.queued = false;
        this.current = e;
        const running = exec.execute(e.task);
        // An async task ends no slice (the executor counts sync ones): the commit schedule is checked here.
        if (running) {
          await running;
          if (now() - this.lastCommit >= COMMIT_MS) this.due = true;
        }
        this.current = undefined;
        this.executed++;
        if (e.id !== 0) this.finishedIds.push(e.id);
        if (this.finished || this.stopping) return;
        // A watched task is committed at once: a death from here on is not its doing.
        if (watched || this.due || this.outTasks.length >= FLUSH_TASKS) this.commit(false);
        const size = this.queued();
        if (this.owed && size > 0) this.release();
        if (this.requestSentAt < 0) {
          if (size * 2 <= this.capacity) {
            this.updateCapacity();
            this.commit(true);
          }
        } else if (size >= 2 * this.capacity && this.fresh.length > 0) {
          // Its own puts refilled the queue: no longer hungry, so the coordinator asks it to give work back.
          this.requestSentAt = -1;
          this.commit(false);
        }
        if (exec.sliceOver()) {
          if (this.outTasks.length > 0 || now() - this.lastCommit >= COMMIT_MS) this.commit(false);
          await exec.yield();
          if (this.finished || this.stopping) return;
        }
      }
      if (this.finished) return;
      exec.pause();
      // Idle: commit what was done (the coordinator sees termination from commits), and ask unless asked.
      this.owed = false;
      if (
        this.executed > this.committedExecuted ||
        this.finishedIds.length > 0 ||
        this.givenIds.length > 0 ||
        this.outTasks.length > 0 ||
        this.reportedQueued > 0 ||
        this.requestSentAt < 0
      ) {
        this.commit(this.requestSentAt < 0);
      }
      if (this.queued() > 0) continue;
      this.parked = true;
      await this.woken();
      this.parked = false;
      exec.resume();
    }
  }

  onMessage(_source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    if (tag === TAG.grant) {
      const g = body as unknown as Grant;
      const watched = new Set(g.a ?? []);
      for (let k = 0; k < g.t.length; k++) {
        const priority = g.q ? (g.q[k] as number) : 0;
        const id = g.i[k] as number;
        const e: Entry<T> = {
          task: g.t[k] as T,
          priority,
          id,
          queued: true,
          watch: watched.has(k) ? -1 : 0,
          root: id,
          cancelled: false,
        };
        this.dealt.push(e, priority);
        if (this.speculate) this.byId.set(id, e);
      }
      this.received += g.t.length;
      this.rt.count("grantsReceived");
      this.rt.count("tasksReceived", g.t.length);
      // A RELEASE that reached this worker parked was sent before its idle commit arrived: stale, or it would
      // give back half of this grant (its next commit tells the coordinator it is no longer owed).
      if (this.parked) this.owed = false;
      if (this.requestSentAt >= 0) {
        this.measureTurnaround();
        this.updateCapacity();
        this.requestSentAt = -1;
      }
      this.wakeUp();
    } else if (tag === TAG.watching) {
      const seen = this.seen;
      this.seen = undefined;
      seen?.();
    } else if (tag === TAG.rescind) {
      // A copy of these tasks completed first elsewhere (or they were put by one that lost): not started here
      // yet, they are skipped (they are off this worker's ledger); running, their values and puts are dropped.
      for (const id of body.i as number[]) {
        const e = this.byId.get(id);
        this.byId.delete(id);
        if (e?.queued) e.cancelled = true;
      }
    } else if (tag === TAG.release) {
      this.rt.count("releasesAsked");
      // Answered between tasks (a commit never goes out while a task runs), or by the next idle commit. Not at
      // once while parked: the latest commit said this worker holds nothing, and a grant on its way wakes it.
      this.owed = true;
    } else this.ended(tag, body);
  }

  /** Another rank died: only the coordinator's death matters here, and it ends the run (nobody holds a ledger). */
  onPeerDead(rank: number, error: Error): undefined {
    if (rank === this.rt.config.coordinator) this.fail(error);
    return undefined;
  }

  protected override wakeUp(): void {
    super.wakeUp();
    // A run that ends while a watched task waits for WATCHING ends that wait too.
    if (this.finished) {
      const seen = this.seen;
      this.seen = undefined;
      seen?.();
    }
  }
}
