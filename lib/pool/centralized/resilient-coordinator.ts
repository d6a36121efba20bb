import { describe, RankFailedError, TaskError } from "../../errors.ts";
import type { Cancel } from "../strategy.ts";
import { EVENT_LOOP_TIMERS, type Timers } from "../timers.ts";
import type { PendingPut, PoolRuntime } from "../runtime.ts";
import { CoordinatorCore, type WorkerSlot } from "./coordinator-core.ts";
import { type Commit, type Grant, TAG } from "./resilient-protocol.ts";

/** A task the coordinator holds or has dealt. */
interface Held<T> {
  readonly task: T;
  readonly priority: number;
  /** Ranks that died while it was known to be running there. */
  readonly killed: number[];
  /** It was held by a worker that died: each run of it is announced and committed on its own. */
  watched: boolean;
  /** Ledger entries that name it: more than one while a copy of it runs elsewhere (`speculate`). */
  holders: number;
  /** With `speculate`: one copy completed (the others are rescinded), and where its copies are. */
  done?: boolean;
  copies?: { readonly rank: number; readonly id: number }[];
}

const held = <T>(task: T, priority: number, watched = false): Held<T> => ({
  task,
  priority,
  killed: [],
  watched,
  holders: 0,
});

interface WorkerView<T> extends WorkerSlot {
  /** The sequence number of the next commit to apply, and commits that arrived ahead of it. */
  next: number;
  readonly early: Map<number, Commit>;
  /** What it holds as of the latest commit applied, plus what was granted since: ledger id -> task. */
  readonly ledger: Map<number, Held<T>>;
  /** Tasks received by it in all, as of its latest commit. */
  received: number;
  /** Tasks queued there, as of its latest commit. */
  queued: number;
  /** The watched task it announced and has not committed yet. */
  running: number | undefined;
  /** Ledger ids of copies that lost (`speculate`): what descends from them in its commits is dropped. */
  readonly discard: Set<number>;
}

const newView = <T>(rank: number): WorkerView<T> => ({
  rank,
  alive: true,
  joined: false,
  next: 0,
  early: new Map(),
  ledger: new Map(),
  granted: 0,
  received: 0,
  capacity: 0,
  queued: 0,
  wants: false,
  asked: false,
  running: undefined,
  meanMs: 0,
  discard: new Set(),
});

/** A straggler's task is copied once it has been out this many times the idle worker's mean task time. */
const STRAGGLER_FACTOR = 2;

/**
 * The coordinator of a centralized pool that survives worker deaths (`retries` > 0; resilient-protocol.ts).
 * It deals like the plain coordinator (coordinator-core.ts: credit from each worker's measured capacity, chunks
 * that shrink as the queue drains, RELEASE when workers run dry), and keeps a ledger per worker of every task it
 * holds, which each commit moves from one exact state to the next. When a worker dies, every task in its ledger
 * goes back to the queue and is dealt again, and nothing it did after its latest commit counts: so every
 * task's value and puts are counted exactly once, and the run's result is that of a run without the death.
 *
 * Poison tasks: tasks re-dealt after a death are watched (each run announced before it starts and committed
 * right after), so a later death is pinned on the task that was running. A task that was running on
 * `retries` workers that died fails the run, naming it. The death that first made it a suspect cannot be
 * pinned on it (knowing what runs at every moment would cost a message per task), so it runs `retries + 1`
 * times, give or take a death told before the announcement that would pin it arrived. A suspect is never
 * copied for speculation. A death between a watched task's announcement and its start, or between its end
 * and its commit's arrival, is pinned on it though it may not be its doing.
 */
export class ResilientCoordinator<T> extends CoordinatorCore<T, Held<T>, WorkerView<T>> {
  private nextId = 1;
  /** With `speculate`: when each ledger id was dealt, and the timer that looks for stragglers again. */
  private readonly dealtAt = new Map<number, number>();
  private recheck: Cancel | undefined;

  constructor(
    rt: PoolRuntime,
    initial: readonly PendingPut<T>[],
    /** The event loop's; a simulation's scheduler in tests. */
    private readonly timers: Timers = EVENT_LOOP_TIMERS,
  ) {
    super(rt, (r) => newView<T>(r));
    for (const p of initial) this.put(p.task, p.priority);
  }

  put(task: T, priority: number): void {
    if (this.finished) return;
    this.queue.push(held(task, priority), priority);
    this.dispatch();
  }

  protected receive(source: number, tag: number, body: Record<string, unknown>): void {
    if (tag === TAG.put) {
      if (!this.byRank.get(source)?.alive) return;
      const tasks = body.t as T[];
      const prios = body.q as number[] | undefined;
      for (let k = 0; k < tasks.length; k++) this.put(tasks[k] as T, prios ? (prios[k] as number) : 0);
      return;
    }
    if (tag !== TAG.status) return;
    const w = this.byRank.get(source);
    if (!w?.alive) return;
    const c = body as unknown as Commit;
    // Commits change the ledger step by step: they apply in the order sent, whatever order they arrive in.
    w.early.set(c.s, c);
    for (let next = w.early.get(w.next); next; next = w.early.get(w.next)) {
      w.early.delete(w.next);
      w.next++;
      this.apply(w, next);
    }
    this.dispatch();
    this.checkTermination();
  }

  private apply(w: WorkerView<T>, c: Commit): void {
    this.rt.count("commitsReceived");
    w.joined = true;
    // A copy that lost (`speculate`): it is off the ledger already, and all that descends from it is dropped.
    const lost = (root: number | undefined) => root !== undefined && w.discard.has(root);
    for (const id of c.x ?? []) {
      if (w.running === id) w.running = undefined;
      const h = w.ledger.get(id);
      if (!h) continue;
      w.ledger.delete(id);
      this.dealtAt.delete(id);
      h.holders--;
      if (h.copies) this.won(h, w.rank);
    }
    for (const id of c.g ?? []) {
      const h = w.ledger.get(id);
      if (!h) continue;
      w.ledger.delete(id);
      this.dealtAt.delete(id);
      // Given back while a copy runs elsewhere: that copy will do.
      if (--h.holders === 0 && !h.done) this.queue.push(h, h.priority);
    }
    const ids = c.hi ?? [];
    const heldWatched = new Set(c.hw);
    const dropped: number[] = [];
    for (let k = 0; k < ids.length; k++) {
      if (lost(c.hr?.[k])) {
        // Put by a copy that lost: it is lost too, and so is all it puts (the worker may have started it).
        w.discard.add(ids[k] as number);
        dropped.push(ids[k] as number);
        continue;
      }
      const h = held(c.ht?.[k] as T, c.hq ? (c.hq[k] as number) : 0, heldWatched.has(k));
      h.holders = 1;
      w.ledger.set(ids[k] as number, h);
    }
    const tasks = c.t ?? [];
    const sentWatched = new Set(c.tw);
    for (let k = 0; k < tasks.length; k++) {
      if (lost(c.tr?.[k])) continue;
      const priority = c.q ? (c.q[k] as number) : 0;
      this.queue.push(held(tasks[k] as T, priority, sentWatched.has(k)), priority);
    }
    if (dropped.length > 0 && w.alive) this.rt.send(w.rank, TAG.rescind, { i: dropped });
    if (c.a !== undefined) {
      w.running = c.a;
      this.rt.send(w.rank, TAG.watching, { a: c.a });
    }
    if (c.rr) {
      for (let k = 0; k < c.rr.length; k++) if (!lost(c.rr[k])) this.rt.results.merge(c.rv?.[k]);
    } else this.rt.results.merge(c.r);
    w.meanMs = c.m;
    w.capacity = c.c;
    w.queued = c.l;
    w.received = c.u;
    w.wants = c.w === 1;
    if (c.o !== 1) w.asked = false;
    this.noteQueueSize();
  }

  protected deficit(w: WorkerView<T>): number {
    return w.capacity - w.queued - (w.granted - w.received);
  }

  protected holds(w: WorkerView<T>): number {
    return w.queued;
  }

  /** Grants `chunk` tasks to `w`, each entered in its ledger under a new id. */
  protected deal(w: WorkerView<T>, chunk: number): void {
    const held: Held<T>[] = [];
    const prios: number[] = [];
    this.queue.give(chunk, held, prios);
    const grant: Grant = { t: [], i: [] };
    const watched: number[] = [];
    for (let i = 0; i < held.length; i++) {
      const h = held[i] as Held<T>;
      const id = this.nextId++;
      w.ledger.set(id, h);
      h.holders++;
      if (this.rt.config.speculate) this.dealtAt.set(id, performance.now());
      grant.t.push(h.task);
      grant.i.push(id);
      if (h.watched) watched.push(i);
    }
    if (prios.some((p) => p !== 0)) grant.q = prios;
    if (watched.length > 0) grant.a = watched;
    this.granted(w, held.length);
    this.rt.send(w.rank, TAG.grant, grant as unknown as Record<string, unknown>);
  }

  protected override dispatch(): void {
    if (this.workers.length === 0 || this.finished) return;
    super.dispatch();
    if (this.rt.config.speculate && this.queue.size === 0) this.rescue();
  }

  /**
   * Rescission for time (seed 004; option `speculate`): a worker waits with nothing to do, the queue is empty,
   * and another worker has held a task for more than STRAGGLER_FACTOR times the idle one's mean task time
   * (running it slowly, or queued behind a slow one): the idle one is dealt a copy of the oldest such task. The
   * first copy to complete counts (`won`). Looked at again when the oldest task would cross that line.
   */
  private rescue(): void {
    this.stopRecheck();
    const t = performance.now();
    let wake = Number.POSITIVE_INFINITY;
    for (const v of this.workers) {
      if (!v.alive || !v.joined || !v.wants || v.ledger.size > 0 || v.meanMs <= 0) continue;
      const limit = STRAGGLER_FACTOR * v.meanMs;
      let best: { u: WorkerView<T>; id: number; h: Held<T>; age: number } | undefined;
      for (const u of this.workers) {
        if (u === v || !u.alive) continue;
        for (const [id, h] of u.ledger) {
          // Not a task already copied, nor one a worker put and kept (never dealt: its age is unknown), nor
          // a suspect of a death (a copy of it could kill a second worker before the first death is told).
          const at = this.dealtAt.get(id);
          if (h.holders > 1 || h.done || h.watched || at === undefined) continue;
          const age = t - at;
          if (age <= limit) wake = Math.min(wake, limit - age);
          else if (!best || age > best.age) best = { u, id, h, age };
        }
      }
      if (!best) continue;
      const { u, id, h } = best;
      const copy = this.nextId++;
      h.holders++;
      h.copies = [
        { rank: u.rank, id },
        { rank: v.rank, id: copy },
      ];
      v.ledger.set(copy, h);
      this.dealtAt.set(copy, t);
      v.granted++;
      v.wants = false;
      this.rt.count("speculated");
      const grant: Grant = { t: [h.task], i: [copy] };
      if (h.priority !== 0) grant.q = [h.priority];
      this.rt.send(v.rank, TAG.grant, grant as unknown as Record<string, unknown>);
    }
    if (Number.isFinite(wake)) {
      this.recheck = this.timers.after(Math.ceil(wake) + 1, () => {
        this.recheck = undefined;
        if (!this.finished) this.dispatch();
      });
    }
  }

  private stopRecheck(): void {
    this.recheck?.();
    this.recheck = undefined;
  }

  /** A copy of `h` completed on `rank` first: the others are taken off their workers' ledgers and rescinded. */
  private won(h: Held<T>, rank: number): void {
    h.done = true;
    for (const c of h.copies ?? []) {
      if (c.rank === rank) continue;
      const u = this.byRank.get(c.rank);
      if (!u?.ledger.delete(c.id)) continue;
      this.dealtAt.delete(c.id);
      h.holders--;
      u.discard.add(c.id);
      if (u.running === c.id) u.running = undefined;
      // Its latest commit had nothing queued and it held only this copy: it is as idle as it was then (it
      // may still be running the copy, whose outcome no longer counts), so the run need not wait for it.
      if (u.ledger.size === 0 && u.queued === 0) u.wants = true;
      this.rt.count("rescinded");
      if (u.alive) this.rt.send(u.rank, TAG.rescind, { i: [c.id] });
    }
  }

  /**
   * Worker `rank` died: everything in its ledger goes back to the queue, watched, and nothing it sends any more
   * counts. Returns how many tasks were re-dealt (undefined for a rank that was no worker of this run).
   */
  onPeerDead(rank: number, error: Error): number | undefined {
    const w = this.byRank.get(rank);
    if (this.finished || !w?.alive) return undefined;
    w.alive = false;
    w.early.clear();
    const running = w.running === undefined ? undefined : w.ledger.get(w.running);
    if (running) {
      running.killed.push(rank);
      if (running.killed.length >= this.rt.config.retries) {
        const ranks = running.killed.join(", ");
        this.fail(
          new TaskError(
            rank,
            running.task,
            `task ${describe(running.task)} was running on ${running.killed.length} worker` +
              `${running.killed.length === 1 ? "" : "s"} that died (rank${running.killed.length === 1 ? "" : "s"} ` +
              `${ranks}): it kills its worker; the pool's retries=${this.rt.config.retries} are used up`,
            { cause: error },
          ),
        );
        return undefined;
      }
    }
    let redealt = 0;
    for (const [id, h] of w.ledger) {
      this.dealtAt.delete(id);
      if (h.done) continue;
      h.watched = true;
      // A copy still running elsewhere (`speculate`) will do.
      if (--h.holders > 0) continue;
      this.queue.push(h, h.priority);
      redealt++;
    }
    w.ledger.clear();
    this.rt.count("workersLost");
    this.rt.count("tasksRedealt", redealt);
    if (!this.workers.some((v) => v.alive)) {
      const left = this.queue.size;
      this.fail(
        new RankFailedError(
          rank,
          `every worker of the pool died (the last: ${error.message}` +
            `${running ? `, while running task ${describe(running.task)}` : ""}); ${left} task${left === 1 ? "" : "s"} not run`,
          { cause: error },
        ),
      );
      return redealt;
    }
    this.dispatch();
    this.checkTermination();
    return redealt;
  }

  protected idle(w: WorkerView<T>): boolean {
    // It waits for work with nothing queued, as of its latest commit, and holds nothing since: what its tasks
    // put is in the ledger with their completion (one commit; never sent while a task runs), and what the app
    // put there is queued or running when it commits next.
    return w.joined && w.ledger.size === 0 && w.queued === 0 && w.wants && w.early.size === 0;
  }

  protected override onEnd(): void {
    this.stopRecheck();
  }
}
