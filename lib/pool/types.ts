import type { ReduceOp } from "../comm/ops.ts";
import type { TaskKey } from "./keys.ts";
import type { PoolConfig } from "./options.ts";

export type { TaskKey } from "./keys.ts";

export interface PutOptions {
  /** Higher runs first; FIFO among equal priorities. Any finite number. @default 0 */
  readonly priority?: number;
  /**
   * Distributed pools only: send the task to this rank and pin it there (it is never moved again).
   * Apps that partition data by owner use it.
   */
  readonly to?: number;
  /**
   * A locality key, a string or a number (not NaN): tasks with the same key use the same data (in block
   * matching, the frame pair a strip is matched on), so a rank that ran one has that data at hand. When a
   * distributed pool moves tasks to balance load it moves whole groups of one key rather than a mix, prefers
   * keys the receiving rank ran recently (receiver-initiated balancing sends them with its request), and keeps
   * the keys this rank ran recently (docs/distributed.md, "Task selection"). Keys travel with the tasks that
   * move; a run where no task has a key pays nothing for them. A hint only: every task still runs exactly
   * once, and pinned tasks (`to`) never move whatever their key. Centralized and one-rank pools ignore it.
   */
  readonly key?: TaskKey;
}

/**
 * What a handler gets besides its task. `S` is the type of the value `stop` takes: unknown unless `run` is given
 * it as its second type argument (`pool.run<number, Found>(...)`).
 */
export interface TaskContext<T, S = unknown> {
  /** The rank running the task. */
  readonly rank: number;
  /**
   * Aborts when the run ends before every task ran: a task stopped it (`ctx.stop`; the reason is a
   * StoppedError), a handler threw or a rank failed (the reason is the error `run` rejects with here: a
   * TaskError, RankFailedError, ...), or a `run` signal aborted, on any rank (an AbortError here, a
   * PeerAbortedError elsewhere). It aborts on every rank as soon as that rank learns that the run ended, just
   * before `run` settles there. Give it to `fetch`, streams and timers, or check `signal.aborted` in a long loop
   * that awaits now and then (a synchronous stretch sees nothing until it yields), so that the task ends
   * promptly.
   *
   * `run` does not wait for handlers still running when it ends: JavaScript cannot stop a function from outside,
   * so one that ignores the signal runs on after `run` settled. What it does then counts nowhere: its puts are
   * dropped, its returned value and its throw are ignored (not in `result`, not in `tasksExecuted`).
   */
  readonly signal: AbortSignal;
  /** Adds a task to the pool (tasks may create tasks). */
  put(task: T, options?: PutOptions): void;
  /**
   * Ends the run early, on purpose (a search that found what it wanted): tasks still queued or in transit are
   * dropped, and `run` resolves on every rank with `stopped: true` and `result` set to `result` (not the
   * reduction). If several tasks stop the run at once, the first stop to reach the rank that decides (the
   * coordinator, or rank 0 of a distributed pool) wins, the same on every rank. Tasks already running on any
   * rank see `signal` abort; `run` does not wait for them.
   */
  stop(result?: S): void;
  /**
   * Hands `value` back under `key`, in a run given the option `gather`: `run` resolves on the gathering rank
   * with `gathered`, a Map of every key given to its value (README, "Results per item"). For task trees,
   * whose tasks are not listed up front (`map` is for lists): a task may give any number of values. The value
   * travels to the gathering rank as it is (plain data: numbers, strings, arrays, objects, typed arrays, Maps,
   * Sets, Dates, BigInts), straight from this rank, in batches. Give each key once: a key given twice keeps its
   * first value (under `retries`, a task run again after a death gives its keys again, and the copy is
   * dropped). A give after the run ended (a handler that ignored `signal`) counts nowhere. Throws
   * InvalidArgumentError in a run without `gather` or for a key that is not a string or a finite number, and
   * EncodeError for a value that cannot travel, naming its path, on any number of ranks.
   */
  give(key: GatherKey, value: unknown): void;
}

/** A key of `ctx.give`. */
export type GatherKey = string | number;

/** The run option `gather` as an object. */
export interface GatherOptions {
  /**
   * The rank that gathers: `gathered` is a Map there and undefined on the other ranks. In a pool with `retries`,
   * the rank that keeps the ledger (so that a dead worker's values count once): the coordinator of a centralized
   * pool, rank 0 of a distributed one. @default 0, or the coordinator of a centralized pool with `retries`
   */
  readonly root?: number;
}

/**
 * Runs one task. It may return a value (or a promise of one): `run` combines every task's value with the
 * run's `reduce` and gives the total to every rank as `result`. Returning nothing (undefined) adds nothing.
 * `S` is the type of the value its `ctx.stop` takes.
 */
export type TaskHandler<T, R = unknown, S = unknown> = (
  task: T,
  ctx: TaskContext<T, S>,
) => R | void | Promise<R | void>;

export interface RunOptions<R = unknown> {
  /**
   * Most async tasks in flight on this rank during this run (PoolOptions `concurrency`, which it overrides for
   * this run only; ranks may differ). A positive integer, 1 with a pool that has `retries`. @default the pool's
   */
  readonly concurrency?: number;
  /** Aborting makes `run` reject with AbortError on this rank and PeerAbortedError (an AbortError) on the others. */
  readonly signal?: AbortSignal;
  /**
   * How the values handlers return are combined into `result`: an op name (`sum`, `min`, `max`, ... as for
   * `allreduce`; element-wise on arrays) or a function. Values are combined in no particular order, so a
   * function must be associative and commutative. A function may update its first argument (the running
   * total, never a value a handler returned) in place and return it, so that combining allocates nothing; it
   * must not change its second. @default "sum"
   */
  readonly reduce?: ReduceOp<R>;
  /**
   * Lets tasks hand values back by key with `ctx.give(key, value)`; `run` resolves on the gathering rank with
   * `gathered`. `true` gathers on rank 0 (the coordinator of a pool with `retries`). Give every rank the same
   * option. @default false
   */
  readonly gather?: boolean | GatherOptions;
}

/** What `run` resolves to: this rank's statistics, and the combined result of every task on every rank. */
export interface RunResult<R = unknown> extends PoolStats {
  /**
   * Every task's returned value, combined with `reduce`; undefined when no task returned one. Same on every
   * rank. After `ctx.stop(value)`: that value, whatever its type (typed as `R` here: give `run` the stop
   * value's type as its second type argument to have both typed, StoppableRunResult).
   */
  readonly result: R | undefined;
  /** True when a task ended the run early with `ctx.stop`. */
  readonly stopped: boolean;
  /**
   * In a run with the option `gather`, on the gathering rank: every key a task gave (`ctx.give`) with its value
   * (after a stop, the values given before it). Undefined on the other ranks and without `gather`.
   */
  readonly gathered?: Map<GatherKey, unknown>;
}

/**
 * What `pool.run<R, S>` resolves to when given the stop value's type `S`: `stopped` tells which `result` it is,
 * the reduction of the values handlers returned (an `R`) or the value a task gave `ctx.stop` (an `S`), so
 * neither needs a cast:
 *
 * ```ts
 * const r = await pool.run<number, Found>((t, ctx) => (t.hit ? ctx.stop({ at: t.id }) : 1));
 * if (r.stopped) use(r.result?.at); // Found | undefined (undefined after a bare ctx.stop())
 * else count(r.result); // number | undefined (undefined when no task returned a value)
 * ```
 */
export type StoppableRunResult<R, S> = PoolStats &
  (
    | { readonly stopped: false; readonly result: R | undefined }
    | { readonly stopped: true; readonly result: S | undefined }
  ) & { readonly gathered?: Map<GatherKey, unknown> };

/** Per-rank statistics of one `run`. Times in milliseconds. */
export interface PoolStats {
  readonly rank: number;
  readonly mode: PoolConfig["mode"];
  /**
   * Tasks this rank's handler ran to their end while the run lasted (a handler still running when a stop ended the
   * run, the stopping task's own included, is not counted).
   */
  tasksExecuted: number;
  /** Tasks `put` on this rank (before or during the run). */
  tasksPut: number;
  /** Pool protocol messages this rank sent, and their encoded bytes. */
  messagesSent: number;
  bytesSent: number;
  /** Time inside handlers. */
  busyMs: number;
  /** Time in `run` not inside handlers. */
  idleMs: number;
  /** Time from `run` called to `run` resolved. */
  wallMs: number;
  /** Epoch ms when `run` started and when the last task on this rank finished (for timelines). */
  startedAt: number;
  lastTaskAt: number;
  /** Mode-specific counters (see the README): e.g. grants, requests, tasksMovedIn, tokenRounds. */
  readonly counters: Record<string, number>;
}

export function emptyStats(rank: number, mode: PoolConfig["mode"]): PoolStats {
  return {
    rank,
    mode,
    tasksExecuted: 0,
    tasksPut: 0,
    messagesSent: 0,
    bytesSent: 0,
    busyMs: 0,
    idleMs: 0,
    wallMs: 0,
    startedAt: 0,
    lastTaskAt: 0,
    counters: {},
  };
}
