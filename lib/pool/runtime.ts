import type { Communicator } from "../comm/world.ts";
import { type Step, where } from "../comm/unsendable.ts";
import type { RankFailedError } from "../errors.ts";
import type { PoolConfig } from "./options.ts";
import type { TaskKey } from "./keys.ts";
import type { Results, WireResult } from "./results.ts";
import type { TraceRecorder } from "./trace.ts";
import type { PoolStats } from "./types.ts";

/** How a pool's messages leave this rank: over the world (`worldLink`), or a simulation's scheduler. */
export interface PoolLink {
  readonly rank: number;
  readonly size: number;
  /** Encodes and sends one message of the pool's context; returns the bytes sent. */
  send(dest: number, tag: number, body: Record<string, unknown>): number;
  /**
   * True when this rank's messages to one destination arrive in the order sent, and one arrives only if every
   * one sent before it to that destination did (a world's: one ZeroMQ socket per pair; not under the tests'
   * chaos, which delays each message on its own). A pool that survives deaths relies on it to skip a wait.
   */
  readonly fifo?: boolean;
  /** True when a message sent leaves only once the event loop turns (Communicator `sendsHeld`). */
  readonly held?: boolean;
}

/**
 * Test seams, not an API (tests reach them through lib/internal.ts). `chaosMs` > 0 delays every pool message
 * sent over a world by a random 0..chaosMs ms, so that messages overtake each other between real ranks. The
 * replayable way to test message orders is the in-process simulation (test/pool/simulation.test.ts).
 */
export const testSeams = { chaosMs: 0 };

/**
 * How a pool message's unsendable part is named: a task's by the app's own path (`task.f`, not the envelope's
 * `data.t[0].f`); anything else by its place in the message.
 */
function poolValueName(path: readonly Step[]): string {
  return path[0] === "t" && typeof path[1] === "number" ? where("task", path.slice(2)) : where("data", path);
}

/** The link of a pool over a world: messages in the pool's private context. */
export function worldLink(world: Communicator, context: number): PoolLink {
  return {
    rank: world.rank,
    size: world.size,
    send(dest, tag, body) {
      const bytes = world.encode(context, tag, body, poolValueName);
      const chaos = testSeams.chaosMs;
      if (chaos > 0) setTimeout(() => world.postEncoded(dest, bytes), Math.random() * chaos);
      else world.postEncoded(dest, bytes);
      return bytes.length;
    },
    get fifo() {
      return testSeams.chaosMs === 0;
    },
    get held() {
      return world.sendsHeld;
    },
  };
}

/**
 * What a pool engine needs from its pool: the link its messages leave by, the resolved configuration, this
 * run's epoch (every message carries it, so a second `run` never reads the first's traffic), and a counted
 * `send`. The engines are built not to depend on message order.
 */
export class PoolRuntime {
  readonly rank: number;
  readonly size: number;
  /** Most async tasks in flight on this rank in this run: the pool's `concurrency`, or the run's own. */
  concurrency: number;

  constructor(
    readonly link: PoolLink,
    readonly config: PoolConfig,
    readonly epoch: number,
    readonly stats: PoolStats,
    /** Values returned by handlers, combined; engines carry partial results to the rank that ends the run. */
    readonly results: Results,
    /** Set when the launcher asked for `--trace`. */
    readonly trace?: TraceRecorder,
  ) {
    this.rank = link.rank;
    this.size = link.size;
    this.concurrency = config.concurrency;
  }

  send(dest: number, tag: number, body: Record<string, unknown>): void {
    body.e = this.epoch;
    this.stats.messagesSent++;
    this.stats.bytesSent += this.link.send(dest, tag, body);
  }

  /**
   * True when the run ended through `ctx.stop` (results.final then holds the stop's value). Kept in `results`,
   * which every runtime of this run shares (a working coordinator's loopback runtimes too).
   */
  get stopped(): boolean {
    return this.results.stopped;
  }

  /** The run ends on purpose, with the value a task gave `ctx.stop`. */
  endStopped(result: WireResult): void {
    this.results.stopped = true;
    this.results.final = result;
  }

  /** True when a message this rank sent waits for the event loop to turn before it leaves (PoolLink `held`). */
  get sendsHeld(): boolean {
    return this.link.held === true;
  }

  count(name: string, by = 1): void {
    this.stats.counters[name] = (this.stats.counters[name] ?? 0) + by;
  }
}

/** An engine runs one `run` of one pool on this rank; the pool routes its context's messages to it. */
export interface Engine<T> {
  /** Begins work; called once the pool routes messages and puts to this engine. */
  start(): void;
  onMessage(source: number, tag: number, body: Record<string, unknown>): void;
  /**
   * Adds a task put on this rank while the run is active: by the running task (`fromTask`, through its
   * `ctx.put`), or by the app (between or beside tasks: an async task may be waiting meanwhile). `key` is the
   * task's locality key (PutOptions.key), which only the distributed engine uses.
   */
  put(task: T, priority: number, to: number | undefined, fromTask?: boolean, key?: TaskKey): void;
  /** Tasks waiting on this rank (for live progress). */
  queued?(): number;
  /** Resolves when the pool has terminated everywhere (as far as this rank can tell). */
  readonly done: Promise<void>;
  /** Stops this rank's part after a local failure; tells the others. */
  fail(error: Error): void;
  /** A task on this rank called `ctx.stop(result)`: end the run on every rank, on purpose (types.ts). */
  stop(result: WireResult): void;
  /**
   * Rank `rank` died during the run (the launcher said so; `error` names it and why). An engine that survives
   * it returns how many tasks it re-dealt (undefined: none of its business); one without this method cannot,
   * and its run fails with `error`.
   */
  onPeerDead?(rank: number, error: RankFailedError): number | undefined;
}

export interface PendingPut<T> {
  readonly task: T;
  readonly priority: number;
  readonly to: number | undefined;
  readonly key?: TaskKey;
}
