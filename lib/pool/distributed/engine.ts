import { deferred } from "../../deferred.ts";
import { INITIATION_STRATEGIES } from "../balance/registry.ts";
import { TaskBatch } from "../batch.ts";
import { Executor } from "../executor.ts";
import { Flight } from "../flight.ts";
import { type FailBody, failFromMessage, failureBody, sendFail } from "../failure.ts";
import { RecentKeys, type TaskKey } from "../keys.ts";
import { PARTNER_POLICIES } from "../partner/registry.ts";
import { TaskQueue } from "../queue.ts";
import { type WireResult, withResult } from "../results.ts";
import type { Engine, PendingPut, PoolRuntime } from "../runtime.ts";
import type { Balancer, Cancel, DetectionStrategy, Detector, DistributedHost } from "../strategy.ts";
import { TERMINATION_DETECTORS } from "../termination/registry.ts";
import { spanningTree } from "../topology.ts";
import { EVENT_LOOP_TIMERS, type Timers } from "../timers.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { Outbox } from "./outbox.ts";
import { type EngineMessage, type Protocol, protocolFor, ROOT } from "./protocol.ts";

const epochNow = (): number => performance.timeOrigin + performance.now();
/** Up to this many ranks the root sends DONE to every rank itself; beyond, DONE travels down a tree. */
export const FLAT_DONE_RANKS = 64;
const NO_KEYS: readonly TaskKey[] = Object.freeze([]);

/** Why `runSync` returned: the queues ran dry, an async task started, the run ended, a slice is up, stand by. */
type Stop = "empty" | "async" | "over" | "slice" | "standBy";

/**
 * One rank of a distributed pool. The rank keeps its own queues, runs its tasks, and talks to the others
 * only through its balancer (who gets work) and its detector (when everything is done):
 *
 * - `movable`: tasks put here without `to`, or moved here by balancing; balancing may move them again.
 * - `pinned`: tasks put with `to: thisRank`; they run here. Pinned tasks for other ranks wait in an outbox
 *   and leave in batches (PINNED messages) at the end of each slice of tasks, at the next event-loop turn
 *   (a handler that awaits), or when the rank goes idle.
 *
 * The run loop takes the higher-priority head of the two queues (pinned first on a tie, so movable work
 * stays available to others), runs it, and asks the balancer to act when the queue is below its low or above
 * its high mark. When both queues are empty and the outbox is flushed, the rank is passive: it tells the
 * detector and parks until a task message (or a put) wakes it. The root's detector ends the run with DONE.
 *
 * The loop is a thin async driver over synchronous steps (`next`, `execute`, `afterTask`, `settle`, `park`),
 * which the in-process simulation drives in orders of its own choosing.
 */
export class DistributedEngine<T> implements Engine<T>, DistributedHost {
  private readonly settled = deferred();
  readonly done = this.settled.promise;
  readonly root = ROOT;
  /** Set by whoever waits for a parked rank to have work again (the loop, or the simulation). */
  wakeup: (() => void) | undefined;
  private readonly movableQueue: TaskQueue<T>;
  private readonly pinnedQueue: TaskQueue<T>;
  private readonly exec: Executor<T>;
  /** Async tasks in flight (PoolOptions `concurrency`): while any is, the rank is busy. */
  readonly flight: Flight;
  private readonly balancer: Balancer;
  private readonly detector: Detector;
  private readonly protocol: Protocol;
  private readonly pinnedTag: number;
  /** The locality keys of the tasks this rank ran last (both queues note them as they pop). */
  private readonly recent = new RecentKeys();
  /** Pinned tasks waiting to leave for other ranks. */
  private readonly outbox: Outbox<T>;
  private finished = false;
  /** A task here called ctx.stop; the root's STOPPED will end the run. */
  private stopping = false;
  private parked = false;
  /** From taking a task (`next`) to the step after it (`afterTask`): a task is running here. */
  private inTask = false;
  /** The promise of the async task `runSync` started, for the loop to await or keep in flight. */
  private pending: Promise<void> | undefined;
  /** Before its first task, waiting on the balancer's offers (`open`), or standing by (`standBy`). */
  private gated = false;
  /** The balancer may hold this rank back between tasks now (DistributedHost `dealing`). */
  dealing = false;
  /** The last slice ended for held sends (`heldSends`): the next one starts without asking again. */
  private heldYield = false;

  constructor(
    readonly rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
    private readonly timers: Timers = EVENT_LOOP_TIMERS,
    /** The termination detector, when not the configured one (a pool that survives deaths: resilient.ts). */
    detection?: DetectionStrategy,
  ) {
    this.exec = new Executor(handler, ctx, rt.stats, rt.results, rt.trace);
    this.flight = new Flight(
      rt.concurrency,
      () => {},
      (e) => this.fail(e),
    );
    const { config } = rt;
    this.movableQueue = new TaskQueue<T>(config.order, this.recent);
    this.pinnedQueue = new TaskQueue<T>(config.order, this.recent);
    const initiation = INITIATION_STRATEGIES[config.initiation];
    detection ??= TERMINATION_DETECTORS[config.termination];
    this.protocol = protocolFor(initiation, detection);
    this.pinnedTag = this.tagOf("pinned");
    this.outbox = new Outbox<T>(timers, this.sendPinned, this.flushSoon);
    const partner = PARTNER_POLICIES[config.partner].create(rt.rank, rt.size, config.seed, config.topology);
    this.balancer = initiation.create(this, partner);
    this.detector = detection.create(this);
    for (const p of initial) this.enqueue(p.task, p.priority, p.to, p.key);
  }

  // ---- DistributedHost ----

  get load(): number {
    return this.movableQueue.size + this.pinnedQueue.size;
  }

  get movable(): number {
    return this.movableQueue.size;
  }

  get topPriority(): number {
    return this.movableQueue.peekPriority() ?? 0;
  }

  get running(): boolean {
    return this.inTask || this.flight.size > 0;
  }

  get longTasks(): boolean {
    return this.exec.longTasks();
  }

  get meanTaskMs(): number {
    return this.exec.meanTaskMsNow();
  }

  get passive(): boolean {
    return this.parked && !this.finished;
  }

  get lastActivityAt(): number {
    const s = this.rt.stats;
    return Math.max(s.lastTaskAt, s.startedAt);
  }

  send(dest: number, kind: string, body: Record<string, unknown>): void {
    this.rt.send(dest, this.tagOf(kind), body);
  }

  sendMovable(
    dest: number,
    kind: string,
    n: number,
    prefer?: readonly unknown[],
    extra?: Readonly<Record<string, unknown>>,
  ): number {
    const batch = new TaskBatch<T>();
    const moved = batch.takeFrom(this.movableQueue, n, prefer);
    if (moved === 0) return 0;
    this.sendTasks(dest, this.tagOf(kind), batch, extra);
    this.rt.count("tasksMovedOut", moved);
    return moved;
  }

  after(ms: number, fn: () => void): Cancel {
    return this.timers.after(ms, fn);
  }

  now(): number {
    return this.timers.now();
  }

  terminate(lastActivityAt: number): void {
    if (this.finished) return;
    this.rt.trace?.instant("termination detected");
    // Every rank's partial result has reached this one along the detector's messages (strategy.ts).
    const result = this.rt.results.take();
    this.announceDone(lastActivityAt, result);
    this.finish(lastActivityAt, result);
  }

  /**
   * Sends DONE on: from the root to every rank up to FLAT_DONE_RANKS ranks; beyond, along the binomial spanning
   * tree (topology.ts), each rank passing it to its children, biggest subtree first, before it finishes. At
   * 4,096 ranks the root alone would spend its CPU on 4,095 sends (about 20 ms at 5 us each, in the timed
   * simulation) where the tree takes 12 hops of a few sends each.
   */
  private announceDone(lastActivityAt: number, result: WireResult): void {
    const { rank, size } = this.rt;
    if (size <= FLAT_DONE_RANKS) {
      if (rank !== this.root) return;
      for (let r = 0; r < size; r++)
        if (r !== rank) this.sendEngine(r, "done", withResult({ m: lastActivityAt }, result));
      return;
    }
    const { children } = spanningTree(rank, size);
    for (let i = children.length - 1; i >= 0; i--)
      this.sendEngine(children[i] as number, "done", withResult({ m: lastActivityAt }, result));
  }

  release(): void {
    if (!this.gated) return;
    this.gated = false;
    const w = this.wakeup;
    this.wakeup = undefined;
    w?.();
  }

  // ---- Engine ----

  start(): void {
    void this.loop().catch((e: Error) => this.fail(e));
  }

  queued(): number {
    return this.load;
  }

  recentKeys(): readonly TaskKey[] {
    return this.recent.size === 0 ? NO_KEYS : this.recent.list();
  }

  put(task: T, priority: number, to: number | undefined, _fromTask?: boolean, key?: TaskKey): void {
    if (this.finished) return;
    if (to === undefined && key === undefined) this.movableQueue.push(task, priority);
    else this.enqueue(task, priority, to, key);
    this.activate();
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    const route = this.protocol.kinds[tag];
    if (route === undefined || tag === 0) return;
    try {
      switch (route.owner) {
        case "tasks":
          this.receiveTasks(source, tag, route.kind, body);
          break;
        case "balancer":
          this.balancer.onMessage(source, route.kind, body);
          break;
        case "detector":
          this.detector.onMessage(source, route.kind, body);
          break;
        case "engine":
          this.onEngineMessage(route.kind as EngineMessage, body);
          break;
      }
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private onEngineMessage(kind: EngineMessage, body: Record<string, unknown>): void {
    switch (kind) {
      case "done":
        this.rt.trace?.instant("DONE received");
        this.announceDone(body.m as number, body.r as WireResult);
        this.finish(body.m as number, body.r as WireResult);
        break;
      case "fail":
        this.halt();
        this.settled.reject(failFromMessage(body as unknown as FailBody));
        break;
      case "stop":
        this.stop(body.r as WireResult);
        break;
      case "stopped":
        this.stopped(body.r as WireResult);
        break;
    }
  }

  /** Ends the run on purpose: the root decides (the first stop it gets wins) and tells every rank. */
  stop(result: WireResult): void {
    if (this.finished) return;
    const { rt } = this;
    if (rt.rank !== this.root) {
      // This rank runs nothing more; it takes part in no termination round either: the root's answer ends it.
      if (!this.stopping) this.sendEngine(this.root, "stop", withResult({}, result));
      this.stopping = true;
      return;
    }
    for (let r = 0; r < rt.size; r++) if (r !== rt.rank) this.sendEngine(r, "stopped", withResult({}, result));
    this.stopped(result);
  }

  private stopped(result: WireResult): void {
    if (this.finished) return;
    this.rt.endStopped(result);
    this.rt.trace?.instant("stopped by a task");
    this.halt();
    this.settled.resolve();
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.halt();
    const others: number[] = [];
    for (let r = 0; r < this.rt.size; r++) if (r !== this.rt.rank) others.push(r);
    sendFail(this.rt, others, this.tagOf("fail"), failureBody(this.rt.rank, error));
    this.settled.reject(error);
  }

  // ---- the steps the loop (or a simulation) drives ----

  /** True once this rank runs no more tasks: the run ended here, or a task here stopped it. */
  get over(): boolean {
    return this.finished || this.stopping;
  }

  /**
   * Before the first task: the balancer may first offer this rank's tasks to others (a rank that starts a run
   * holding many tasks answers no one while its first task runs, and that task may be long: balance/receiver.ts
   * `open`). True if the rank waits (then set `wakeup`: `release` calls it); false to start at once.
   */
  open(): boolean {
    this.gated = true;
    if (!(this.balancer.open?.() ?? false)) this.gated = false;
    return this.gated && !this.finished;
  }

  /**
   * Before a task (after `afterTask`): the balancer may hold the rank back to deal its tasks (balancer
   * `standBy`). True if the rank waits (then set `wakeup`: `release` calls it, and the rank resumes with
   * `afterTask` and asks again); false to take the next task.
   */
  standBy(): boolean {
    if (!this.dealing || this.finished || this.load === 0) return false;
    this.gated = true;
    if (!(this.balancer.standBy?.() ?? false)) this.gated = false;
    if (this.gated) this.flush();
    return this.gated && !this.finished;
  }

  /**
   * The loop's wait once `standBy` said to wait, and again as long as it does; true if the run ended meanwhile.
   * (Called only then: an await before every task would cost a tiny task many times its own time.)
   */
  private async stoodBy(): Promise<boolean> {
    do {
      // Not busy: waiting for asks.
      this.exec.pause();
      await new Promise<void>((resolve) => {
        this.wakeup = resolve;
      });
      this.exec.resume();
      if (this.over) return true;
      this.afterTask();
    } while (this.standBy());
    return this.over;
  }

  /** The next task to run: the higher-priority head of the pinned and movable queues (pinned on a tie). */
  next(): T | undefined {
    const pinned = this.pinnedQueue;
    const movable = this.movableQueue;
    let task: T | undefined;
    if (pinned.size === 0) task = movable.pop();
    else if (movable.size === 0) task = pinned.pop();
    else task = (pinned.peekPriority() as number) >= (movable.peekPriority() as number) ? pinned.pop() : movable.pop();
    this.inTask = task !== undefined;
    return task;
  }

  /** Runs one task; a promise when its handler is async (see Executor). */
  execute(task: T): Promise<void> | undefined {
    return this.exec.execute(task);
  }

  /** After a task (and when the loop resumes): the balancer acts if the queue is out of its band. */
  afterTask(): void {
    this.inTask = false;
    const load = this.movableQueue.size + this.pinnedQueue.size;
    const balancer = this.balancer;
    if (load < balancer.low || load > balancer.high) balancer.check();
  }

  /** Sends the pinned tasks waiting for other ranks (end of a slice). */
  flush(): void {
    this.outbox.flush();
  }

  /** The queues ran dry: flushes, lets the balancer act; true if there is work again. */
  settle(): boolean {
    this.flush();
    this.balancer.check();
    return this.load > 0;
  }

  /**
   * Makes the rank passive and tells the detector. True if it is still parked afterwards (then set `wakeup`:
   * `activate` calls it when work arrives); false if the run ended meanwhile.
   */
  park(): boolean {
    this.parked = true;
    this.detector.idle();
    return this.parked && !this.finished;
  }

  // ---- internals ----

  private tagOf(kind: string): number {
    const tag = this.protocol.tag.get(kind);
    if (tag === undefined) throw new Error(`internal error: message kind "${kind}" was not declared by a strategy`);
    return tag;
  }

  private sendEngine(dest: number, kind: EngineMessage, body: Record<string, unknown>): void {
    this.rt.send(dest, this.tagOf(kind), body);
  }

  private enqueue(task: T, priority: number, to: number | undefined, key: TaskKey | undefined): void {
    if (to === undefined) this.movableQueue.push(task, priority, key);
    else if (to === this.rt.rank) this.pinnedQueue.push(task, priority, key);
    else this.outbox.add(to, task, priority, key);
  }

  private readonly flushSoon = (): void => {
    if (this.finished) return;
    try {
      this.outbox.flush();
    } catch (e) {
      this.fail(e as Error);
    }
  };

  private readonly sendPinned = (dest: number, batch: TaskBatch<T>): void => {
    const n = batch.size;
    this.sendTasks(dest, this.pinnedTag, batch);
    this.rt.count("pinnedSent", n);
  };

  /** Sends one task message and tells the detector (after the send: a task that cannot be encoded throws). */
  private sendTasks(dest: number, tag: number, batch: TaskBatch<T>, extra?: Readonly<Record<string, unknown>>): void {
    const stamp = this.detector.stamp;
    const body: Record<string, unknown> = extra === undefined ? { s: stamp } : { ...extra, s: stamp };
    const tasks = batch.drainInto(body);
    const trace = this.rt.trace;
    if (trace) body.f = trace.flowOut(`${this.protocol.kinds[tag]?.kind} ${tasks.length} to ${dest}`);
    this.rt.send(dest, tag, body);
    this.detector.sent(dest);
  }

  private receiveTasks(source: number, tag: number, kind: string, body: Record<string, unknown>): void {
    const tasks = body.t as T[];
    const prios = body.q as number[] | undefined;
    const loadBefore = this.load;
    const pinned = tag === this.pinnedTag;
    const queue = pinned ? this.pinnedQueue : this.movableQueue;
    const keys = body.k as (TaskKey | null)[] | undefined;
    if (keys === undefined) {
      for (let i = 0; i < tasks.length; i++) queue.push(tasks[i] as T, prios ? (prios[i] as number) : 0);
    } else {
      for (let i = 0; i < tasks.length; i++) {
        queue.push(tasks[i] as T, prios ? (prios[i] as number) : 0, keys[i] ?? undefined);
      }
    }
    this.rt.count(pinned ? "pinnedReceived" : "tasksMovedIn", tasks.length);
    if (body.f !== undefined) this.rt.trace?.flowIn(`${kind} ${tasks.length} from ${source}`, body.f as string);
    this.activate();
    this.detector.received(source, body.s as number);
    this.balancer.received(source, kind, tasks.length, loadBefore, body);
  }

  /**
   * Makes a parked rank active (it has work, or tasks to send) and resumes its loop; a loop waiting on tasks in
   * flight looks at its queue again.
   */
  private activate(): void {
    if (!this.parked) {
      this.flight.wake();
      return;
    }
    this.parked = false;
    const w = this.wakeup;
    this.wakeup = undefined;
    w?.();
  }

  /**
   * Runs queued tasks back to back while their handlers are sync, acting after each as the loop does; returns
   * why it stopped (an async task's promise is left in `pending`). Kept small and synchronous: inside the async
   * `loop`, with all its rare cases, V8 inlined less of each task's steps, and a fine-grained tree's task cost
   * twice the one-rank engine's.
   */
  private runSync(): Stop {
    const { exec, balancer, movableQueue, pinnedQueue } = this;
    // (What the loop sent before this slice, as what the balancer sends within it, leaves before a task starts.)
    if (this.heldYield) this.heldYield = false;
    else if (this.heldSends()) return "slice";
    // The balancer's band, read again only after it acts: nothing else changes it while tasks run back to back
    // (its messages and timers wait for the event loop). The receiver's `low` also grows while this rank is
    // below it, where its check comes anyway.
    let low = balancer.low;
    let high = balancer.high;
    for (let task = this.next(); task !== undefined; task = this.next()) {
      const pending = exec.execute(task);
      if (pending !== undefined) {
        this.pending = pending;
        return "async";
      }
      if (this.over) return "over";
      // afterTask, with the band kept.
      this.inTask = false;
      const load = movableQueue.size + pinnedQueue.size;
      if (load < low || load > high) {
        balancer.check();
        low = balancer.low;
        high = balancer.high;
        if (this.heldSends()) return "slice";
      }
      if (exec.sliceOver()) return "slice";
      if (this.dealing && this.standBy()) return "standBy";
    }
    return "empty";
  }

  /**
   * What the balancer just sent waits behind a send in flight to the same rank (PoolRuntime `sendsHeld`): it
   * leaves only when the event loop turns, and the next task may be long (a GIVE to an idle rank waited out a
   * 20 s task). True to end the slice; the event loop turns once, and the next slice starts without asking.
   */
  private heldSends(): boolean {
    if (!this.rt.sendsHeld) return false;
    this.heldYield = true;
    return true;
  }

  private async loop(): Promise<void> {
    const exec = this.exec;
    if (this.open()) {
      await new Promise<void>((resolve) => {
        this.wakeup = resolve;
      });
      if (this.over) return;
    }
    exec.resume();
    while (!this.finished) {
      this.afterTask();
      if (this.dealing && this.standBy() && (await this.stoodBy())) return;
      const flight = this.flight;
      for (let stop = this.runSync(); stop !== "empty"; stop = this.runSync()) {
        if (stop === "over") return;
        if (stop === "async") {
          const pending = this.pending as Promise<void>;
          this.pending = undefined;
          if (flight.limit === 1) await pending;
          else {
            // In flight: the next task starts now, unless the flight is full.
            flight.add(pending);
            this.inTask = false;
            while (flight.full && !this.over) await flight.wait();
          }
          if (this.over) return;
          this.afterTask();
          // Until the flight first fills, one more task goes in flight per turn of the event loop (Flight `ramping`).
          if (flight.ramping || exec.sliceOver()) stop = "slice";
          else if (this.dealing && this.standBy()) stop = "standBy";
        }
        if (stop === "slice") {
          this.flush();
          await exec.yield();
          if (this.over) return;
          // What arrived during the slice (requests, above all) is acted on before the next task starts.
          this.afterTask();
          if (this.dealing && this.standBy()) stop = "standBy";
        }
        if (stop === "standBy" && (await this.stoodBy())) return;
      }
      if (this.settle()) continue;
      if (flight.size > 0) {
        // Not passive while tasks are in flight: they may put more, and their completion is the rank's.
        await flight.wait();
        if (this.over) return;
        continue;
      }
      exec.pause();
      if (!this.park()) continue;
      await new Promise<void>((resolve) => {
        this.wakeup = resolve;
      });
      exec.resume();
    }
  }

  private halt(): void {
    this.finished = true;
    this.balancer.stop();
    this.release();
    this.activate();
    this.flight.wake();
  }

  private finish(lastActivityAt: number, result: WireResult): void {
    this.rt.results.final = result;
    const left = this.load + this.outbox.waiting;
    // Nothing can wake a rank once the pool has terminated, so every rank is parked when DONE arrives.
    const active = !this.parked;
    const { counters } = this.rt.stats;
    // Time from the last task finishing anywhere to this rank learning that the pool terminated.
    counters.terminationLatencyMs = Math.max(0, Math.round((epochNow() - lastActivityAt) * 1000) / 1000);
    // The detector collected every rank's latest task end; a later one here means it declared too early.
    const unseen = this.lastActivityAt - lastActivityAt;
    if (unseen > 0) counters.lastTaskUnseenMs = unseen;
    if (this.rt.rank === this.root) counters.terminationDetected = 1;
    this.halt();
    if (left > 0 || active) {
      const state = active ? `still active, ${left} tasks queued` : `${left} tasks queued`;
      this.settled.reject(
        new Error(`internal error: pool declared terminated while rank ${this.rt.rank} was ${state}`),
      );
    } else this.settled.resolve();
  }
}
