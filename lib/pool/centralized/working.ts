import type { RankFailedError } from "../../errors.ts";
import { dealsAt, fewPerRank } from "../dealing.ts";
import type { WireResult } from "../results.ts";
import type { Engine, PendingPut } from "../runtime.ts";
import { PoolRuntime } from "../runtime.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { Coordinator } from "./coordinator.ts";
import { ResilientCoordinator } from "./resilient-coordinator.ts";
import { ResilientWorker } from "./resilient-worker.ts";
import { CentralWorker } from "./worker.ts";

/** The coordinator and worker engines of one protocol: the plain one, or the one that survives deaths. */
export interface CentralizedPair {
  /**
   * This rank's own puts go to its worker even with keep 0 (the resilient worker sends them with its next
   * commit, where they are told apart from a lost copy's); the plain pair puts them straight into the queue.
   */
  readonly putsThroughWorker: boolean;
  coordinator<T>(rt: PoolRuntime, initial: readonly PendingPut<T>[]): Engine<T>;
  worker<T>(
    rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
  ): Engine<T>;
}

export const PLAIN: CentralizedPair = {
  putsThroughWorker: false,
  coordinator: (rt, initial) => new Coordinator(rt, initial),
  worker: (rt, handler, ctx, initial) => new CentralWorker(rt, handler, ctx, initial),
};

export const RESILIENT: CentralizedPair = {
  putsThroughWorker: true,
  coordinator: (rt, initial) => new ResilientCoordinator(rt, initial),
  worker: (rt, handler, ctx, initial) => new ResilientWorker(rt, handler, ctx, initial),
};

/**
 * The coordinator rank of a pool with `coordinatorWorks`: the ordinary Coordinator and an ordinary
 * CentralWorker on one rank. They speak the same protocol as across ranks, but their messages to each other
 * stay in the process (a microtask each way, never encoded, not counted as pool messages), so the worker asks,
 * is dealt to, reports and is told the pool is done exactly as a remote one, and termination needs no special
 * case. Tasks this rank puts, before the run or from its handlers, stay with the local worker, as on any worker.
 *
 * The coordinator answers remote workers between this rank's tasks (the worker yields to the event loop after
 * each slice of SLICE_MS, executor.ts), so a remote worker may wait up to one local task for a grant; its
 * capacity, from measured round trips, covers that.
 */
export class WorkingCoordinator<T> implements Engine<T> {
  readonly done: Promise<void>;
  private readonly coordinator: Engine<T>;
  private readonly worker: Engine<T>;
  private readonly keep: number;
  private readonly putsThroughWorker: boolean;

  constructor(
    pair: CentralizedPair,
    rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
  ) {
    const me = rt.rank;
    this.keep = rt.config.keep;
    this.putsThroughWorker = pair.putsThroughWorker;
    // What the app on this rank put before the run is this rank's worker's, as on any worker (`keep`): it starts
    // on it at once, and the coordinator deals it to others only when they run dry and it is asked to release
    // some. (Put straight into the queue, it went to whichever worker asked first: a loop's block for this rank
    // could start on another, and this rank sit idle until that one had work to give back.)
    // But few tasks a rank (the coarse tasks an app put on one rank) go to the queue: while they may be long,
    // this rank only deals (Coordinator `standsBy`), and its worker would hold them behind its own first task.
    const few = dealsAt(rt.size) && fewPerRank(initial.length, rt.size);
    const kept = (this.keep > 0 && !few) || this.putsThroughWorker;
    this.coordinator = pair.coordinator<T>(
      new Loopback(rt, (tag, body) => this.worker.onMessage(me, tag, body)),
      kept ? [] : initial,
    );
    // The worker's values are its own until it sends them, like a remote worker's: the coordinator merges every
    // worker's into the run's, which the worker must not take back as its own (a copy that lost would drop them).
    this.worker = pair.worker<T>(
      new Loopback(rt, (tag, body) => this.coordinator.onMessage(me, tag, body), rt.results.fork()),
      handler,
      ctx,
      kept ? initial : [],
    );
    this.done = Promise.all([this.coordinator.done, this.worker.done]).then(() => undefined);
  }

  start(): void {
    this.coordinator.start();
    this.worker.start();
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    // Only workers send here (statuses, stops, failures), and all of it is the coordinator's: what this rank's
    // own worker gets (grants, releases, done) comes through the loopback.
    this.coordinator.onMessage(source, tag, body);
  }

  put(task: T, priority: number, _to?: number, fromTask = false): void {
    // Like any worker's, this rank's puts stay with its own worker (option `keep`); with keep 0 they go
    // straight into the queue, as a remote worker's would after a message.
    if (this.keep > 0 || this.putsThroughWorker) this.worker.put(task, priority, undefined, fromTask);
    else this.coordinator.put(task, priority, undefined);
  }

  queued(): number {
    return (this.coordinator.queued?.() ?? 0) + (this.worker.queued?.() ?? 0);
  }

  onPeerDead(rank: number, error: RankFailedError): number | undefined {
    // A remote worker's death is the coordinator's to handle; this rank's own worker outlives any other rank.
    return this.coordinator.onPeerDead?.(rank, error);
  }

  stop(result: WireResult): void {
    // The coordinator decides here; its own worker hears STOPPED through the loopback like any other.
    this.coordinator.stop(result);
  }

  fail(error: Error): void {
    // The coordinator tells every remote worker; the local worker stops and rejects with the same error.
    this.coordinator.fail(error);
    this.worker.fail(error);
  }
}

/**
 * Messages a loopback hands over in microtasks before the rest wait for the next turn of the event loop. A
 * message to another rank always waits for one; a run of messages between this rank's coordinator and worker
 * that answered each other for ever would starve the timers (heartbeats, async tasks' own timers) that end it.
 */
export const LOOPBACK_BURST = 256;

/**
 * The pool's runtime, except that a message to this rank is handed to `local` instead: in order, in a
 * microtask, or after the event loop has turned once LOOPBACK_BURST were handed over in this turn.
 */
class Loopback extends PoolRuntime {
  /** Messages not handed over yet; while it holds any, the hand-over of the first is scheduled. */
  private readonly inbox: [number, Record<string, unknown>][] = [];
  /** Messages handed over since the event loop last turned. */
  private burst = 0;
  private readonly drain = () => {
    const [tag, body] = this.inbox.shift() as [number, Record<string, unknown>];
    if (this.inbox.length > 0) this.schedule();
    this.local(tag, body);
  };

  constructor(
    private readonly base: PoolRuntime,
    private readonly local: (tag: number, body: Record<string, unknown>) => void,
    results = base.results,
  ) {
    super(base.link, base.config, base.epoch, base.stats, results, base.trace);
    this.concurrency = base.concurrency;
  }

  /** Messages to this rank wait for a microtask, or a turn of the event loop. */
  override get sendsHeld(): boolean {
    return this.inbox.length > 0 || super.sendsHeld;
  }

  override send(dest: number, tag: number, body: Record<string, unknown>): void {
    if (dest !== this.rank) {
      this.base.send(dest, tag, body);
      return;
    }
    this.inbox.push([tag, body]);
    if (this.inbox.length === 1) this.schedule();
  }

  /** Hands the next message over in a microtask, or after the event loop turned if this turn had its share. */
  private schedule(): void {
    if (this.burst === 0) setImmediate(() => (this.burst = 0));
    if (++this.burst > LOOPBACK_BURST) setImmediate(this.drain);
    else queueMicrotask(this.drain);
  }
}
