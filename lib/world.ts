import type { JobEnv } from "./comm/env.ts";
import { joinJob } from "./comm/join.ts";
import { Communicator } from "./comm/world.ts";
import { doacross, type DoacrossBody, type DoacrossOptions, type DoacrossResult } from "./loop/doacross.ts";
import { loopPoolOptions, parallelFor } from "./loop/doall.ts";
import { type MapHandler, type MapOptions, mapOn } from "./loop/map.ts";
import type { LoopBody, LoopOptions, LoopResult, StoppableLoopResult } from "./loop/options.ts";
import type { PoolOptions } from "./pool/options.ts";
import { createPool, type Pool } from "./pool/pool.ts";

/**
 * The app's handle on the job: a communicator (lib/comm/world.ts: rank, size, point-to-point messages,
 * collectives, `split`, `close`; its class comment has the concurrency rules) with the pools and the loops
 * over its ranks. `connect()` gives the world; `split` gives a World of a group of its ranks.
 */
export class World extends Communicator {
  /** The pool of this world's `parallelFor` and `map`, made on the first loop (every rank makes it at the same point). */
  private loopPool: Pool<unknown> | undefined;

  /**
   * Creates a workpool. Options given here override the launcher's `--pool SPEC`; with neither, the pool is
   * distributed (receiver-initiated random stealing, README: Which pool), unless an option that only the
   * centralized pool has is given (`retries`, `keep`, `coordinatorWorks`). Every rank must create its pools in
   * the same order. Throws ConfigError on bad options.
   */
  pool<T = unknown>(options?: PoolOptions): Pool<T> {
    return createPool<T>(this, options);
  }

  /**
   * Collective, on every rank: runs `body(i)` once for every i in `start` up to `end` (exclusive), spread
   * over the ranks in ranges whose size is chosen from measured iteration times (docs/loops.md), and
   * resolves on every rank with `result`, every value `body` returned combined with `options.reduce` (sum
   * by default). The loops of one world share one pool, made on the first loop from the launcher's
   * `--pool SPEC`, where a centralized pool's coordinator works too unless the spec sets `coordinatorWorks`;
   * for other pool options, make a pool and call its `forEach`. A loop whose body may `ctx.stop(value)`
   * with a value of another type than it returns names that type as the second type argument
   * (`parallelFor<number, Found>(...)`), as for `pool.run`.
   */
  parallelFor<R = number>(
    start: number,
    end: number,
    body: LoopBody<R>,
    options?: LoopOptions<R>,
  ): Promise<LoopResult<R>>;
  parallelFor<R, S>(
    start: number,
    end: number,
    body: LoopBody<R, S>,
    options?: LoopOptions<R>,
  ): Promise<StoppableLoopResult<R, S>>;
  // One implementation for both declarations (the second only types the stop value).
  parallelFor<R>(start: number, end: number, body: LoopBody<R>, options?: LoopOptions<R>): Promise<LoopResult<R>> {
    return parallelFor(() => this.loopPoolOf(), this, start, end, body, options);
  }

  /**
   * Collective, on every rank: runs `handler(items[i], i, ctx)` once for every item, spread over the ranks
   * as `parallelFor` spreads a loop (on the same pool), and resolves on `options.root` (default 0) to every
   * item's result in item order, and to undefined on the other ranks. Every rank gives the same items (SPMD:
   * compute them, or read them, on every rank). Results travel straight from the rank that ran an item to the
   * root. Rejects with TaskError if a handler threw, its `task` the item's index and its message naming it.
   */
  map<I, R>(items: readonly I[], handler: MapHandler<I, R>, options?: MapOptions): Promise<R[] | undefined> {
    try {
      return mapOn(this.loopPoolOf(), this, items, handler, options);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Collective, on every rank: a DOACROSS loop of `m` rows over `n` columns, pipelined over the ranks with
   * the block size chosen at run time (docs/loops.md). Rank p owns a contiguous block of the columns and
   * calls `body` on blocks of rows of them, in row order, each once the previous rank has sent what the
   * block's first columns need. Resolves on each rank when its last block is done, with its figures.
   * Rejects with InvalidArgumentError on bad arguments, naming them.
   */
  doacross<B>(m: number, n: number, body: DoacrossBody<B>, options?: DoacrossOptions): Promise<DoacrossResult> {
    return doacross(this, m, n, body, options);
  }

  private loopPoolOf(): Pool<unknown> {
    this.loopPool ??= this.pool(loopPoolOptions(this.env.pool));
    return this.loopPool;
  }
}

let joined: Promise<World> | undefined;

/**
 * Joins the job this process was started in: by `workpool launch` (on this host or several), or directly by
 * Open MPI's `mpirun` or Slurm's `srun` (lib/comm/foreign.ts reads their variables; docs/hosts.md). Run without
 * a launcher, it returns a world of size 1. Calling it again returns the same world.
 */
export function connect(): Promise<World> {
  joined ??= joinJob((env: JobEnv) => new World(env));
  return joined;
}
