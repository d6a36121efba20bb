/**
 * DOALL loops on a pool: `pool.forEach(start, end, body)` and `world.parallelFor(start, end, body)`.
 *
 * Why ranges in a pool, and not the seed's periodic redistribution. Seed 001 keeps each rank's iterations in
 * a block, measures every rank's rate at load balancing hooks every `period_target`, and moves work so that
 * blocks are proportional to filtered rates. A workpool already moves work when, and only when, a rank runs
 * dry (a steal, or a coordinator's grant), so the loop hands it ranges and lets it do that: no periodic
 * interaction costs anything while the load is level, and no rate has to be measured over the 5-10 scheduler
 * quanta the seed needs before it can trust one (§5.2.3), because what moves work is a rank having finished.
 * What the seed's measurements still decide is the one parameter the pool cannot: how many iterations a range
 * holds (grain.ts `doallGrain`, docs/loops.md).
 *
 * How a loop runs, on each working rank (every rank, but a centralized pool's coordinator unless it works):
 * 1. The rank puts its block of the index range as one task (pinned to it in a distributed pool, kept by its
 *    own worker in a centralized one).
 * 2. That task probes: it runs the block's first iterations, doubling their number, until they took PROBE_MS,
 *    and keeps the fastest time per iteration of the rounds that took a quarter of that or more (seed §4.2.4
 *    measures `t_iteration` at start-up on real iterations and takes the smallest of several). Those
 *    iterations are done, not thrown away.
 * 3. It cuts the rest of the block into ranges of the grain chosen from that time and from the per-range cost
 *    this pool measured in earlier loops, and puts them. The pool runs them and moves them between ranks.
 * 4. A range that runs SPLIT_AFTER times longer than planned (its iterations cost more than the probe's, or
 *    its rank was slowed) puts the rest of itself back, cut to the plan at the time now measured (into at most
 *    SPLIT_PIECES ranges), so the rest can still move. A fixed grain never splits.
 * Every index is in exactly one block, probe or range, and the pool runs every task exactly once.
 *
 * This file checks the loop, puts the blocks (step 1), runs the pool and checks what the ranks ran against the
 * loop called here; steps 2-4 are the tasks' (doall-tasks.ts), their values add up as tally.ts says, and the
 * grain and the pool's per-range cost come from grain.ts.
 */
import { type ReduceFn, resolveOp } from "../comm/ops.ts";
import type { Communicator } from "../comm/world.ts";
import { InvalidArgumentError } from "../errors.ts";
import { DEFAULT_MODE } from "../pool/config.ts";
import { ROOT as DISTRIBUTED_ROOT } from "../pool/distributed/protocol.ts";
import { impliedMode, parsePoolSpec, type PoolConfig, type PoolOptions } from "../pool/options.ts";
import type { PutOptions, RunOptions, RunResult, TaskHandler } from "../pool/types.ts";
import { BLOCK, DoallTasks, type Piece } from "./doall-tasks.ts";
import { DEFAULT_RANGE_COST_MS, refinedRangeCost } from "./grain.ts";
import {
  type LoopBody,
  type LoopOptions,
  type LoopResult,
  type LoopStats,
  type ResolvedLoop,
  resolveLoop,
} from "./options.ts";
import { tallied, tallyReduce } from "./tally.ts";

/** What a loop needs of its pool (pool.ts imports this file, so it names no Pool). */
interface LoopPool {
  readonly config: PoolConfig;
  readonly name: string;
  readonly waiting: number;
  readonly running: boolean;
  put(task: Piece, options?: PutOptions): void;
  run(handler: TaskHandler<Piece, unknown>, options: RunOptions<unknown>): Promise<RunResult<unknown>>;
  /** The loop's size and progress here, for the live view (lib/control/live.ts), taken by the next run. */
  nextLoop: { readonly total: number; readonly done: () => number } | undefined;
}

/** Each pool's measured cost of a range beyond its iterations, ms, refined by every automatic loop on it. */
const rangeCosts = new WeakMap<object, number>();

/** The ranks that run a pool's tasks: all, but a centralized pool's coordinator unless it works (or is alone). */
export function workingRanks(pool: { readonly config: PoolConfig }, size: number, dead: readonly number[]): number[] {
  const c = pool.config;
  // A rank known dead (a pool with `retries` survived it) gets no block: its iterations would never run.
  const all = Array.from({ length: size }, (_, r) => r).filter((r) => !dead.includes(r));
  if (size === 1 || c.mode !== "centralized" || c.coordinatorWorks) return all;
  return all.filter((r) => r !== c.coordinator);
}

/**
 * The rank whose death ends the job in a pool with `retries` (the centralized coordinator, the distributed root),
 * which puts a loop's first tasks so that they are in its ledger from the start; undefined otherwise.
 */
export function ledgerKeeper(c: PoolConfig, size: number): number | undefined {
  if (size === 1 || c.retries === 0) return undefined;
  return c.mode === "centralized" ? c.coordinator : DISTRIBUTED_ROOT;
}

/** The `w`-th of `parts` contiguous blocks of [start, end), sizes differing by at most one. */
export function blockOf(start: number, end: number, w: number, parts: number): [number, number] {
  const n = end - start;
  const base = Math.floor(n / parts);
  const extra = n % parts;
  const lo = start + w * base + Math.min(w, extra);
  return [lo, lo + base + (w < extra ? 1 : 0)];
}

/** Loops on a pool run one at a time, and on a pool that holds no tasks of its own. */
function checkIdle(call: string, pool: LoopPool): void {
  if (pool.running) {
    throw new InvalidArgumentError(
      `${call}: ${pool.name} is running a loop or a run already; await it before the next (loops on a pool run one at a time)`,
    );
  }
  if (pool.waiting > 0) {
    throw new InvalidArgumentError(
      `${call}: ${pool.name} holds ${pool.waiting} task(s) put and not run; run them first, or loop on another pool`,
    );
  }
}

/** Step 1: puts this rank's block of the loop as one task (or, in a pool with `retries`, every rank's). */
function putBlocks(pool: LoopPool, world: Communicator, spec: ResolvedLoop): void {
  const working = workingRanks(pool, world.size, world.deadRanks);
  const w = working.indexOf(world.rank);
  const keeper = ledgerKeeper(pool.config, world.size);
  if (keeper !== undefined) {
    // A pool that survives its workers' deaths: the coordinator (the distributed root) puts every block, so each
    // is in its ledger from the start. A block a worker put itself was known to no other rank until that worker's
    // first commit, and a worker that died before it took its block's iterations with it (the loop then ran too
    // few, and said so).
    if (world.rank === keeper) {
      for (let k = 0; k < working.length; k++) {
        const [lo, hi] = blockOf(spec.start, spec.end, k, working.length);
        if (hi > lo) pool.put([lo, hi, BLOCK]);
      }
    }
  } else if (w >= 0) {
    const [lo, hi] = blockOf(spec.start, spec.end, w, working.length);
    if (hi > lo) {
      const pin = world.size > 1 && pool.config.mode === "distributed" ? { to: world.rank } : undefined;
      pool.put([lo, hi, BLOCK], pin);
    }
  }
}

/** @internal `pool.forEach`: see Pool.forEach. */
export async function forEach<R>(
  poolObject: object,
  world: Communicator,
  start: number,
  end: number,
  body: LoopBody<R>,
  options?: LoopOptions<R>,
  call = "forEach",
  taskEnded?: () => void,
): Promise<LoopResult<R>> {
  const pool = poolObject as LoopPool;
  const spec = resolveLoop(call, start, end, body, options as LoopOptions<unknown> | undefined);
  const op = options?.reduce ?? "sum";
  const label =
    options?.reduce === undefined
      ? `${call}: the default reduce, sum (give options.reduce to combine other values)`
      : `${call}: option \`reduce\``;
  const combine = resolveOp(op as never, label) as ReduceFn<unknown>;
  checkIdle(call, pool);
  // A grain of the loop's own, else the pool's `grain` option (`--pool ...,grain=64`), else WORKPOOL_LOOP_GRAIN.
  const fixed = options?.grain === undefined && pool.config.grain > 0 ? pool.config.grain : spec.grain;
  const rangeCostMs = rangeCosts.get(pool) ?? DEFAULT_RANGE_COST_MS;
  const tasks = new DoallTasks({
    body: body as LoopBody<unknown>,
    op,
    combine,
    spec,
    fixed,
    rangeCostMs,
    order: pool.config.order,
    who: `${call}: ${pool.name}`,
    taskEnded,
  });
  putBlocks(pool, world, spec);
  const reduce = tallyReduce(combine);
  // One range at a time per rank: a range's iterations are timed to choose the grain, and an async body's run
  // one after another (docs/loops.md), whatever the pool's `concurrency`.
  const runOptions = options?.signal ? { reduce, signal: options.signal, concurrency: 1 } : { reduce, concurrency: 1 };
  let result: RunResult<unknown>;
  const stats = tasks.stats;
  pool.nextLoop = { total: end - start, done: () => stats.iterations };
  try {
    result = await pool.run(tasks.handler as TaskHandler<Piece, unknown>, runOptions as RunOptions<unknown>);
  } finally {
    // A loop that failed (or was stopped) runs no more iterations: a range this rank was in the middle of ends
    // at its next piece, instead of running the app's body after the app was told the loop is over.
    tasks.stopped = true;
  }
  const refined = fixed === undefined ? refinedRangeCost(rangeCostMs, tasks.gaps) : undefined;
  if (refined !== undefined) rangeCosts.set(pool, refined);
  const loop: LoopStats = {
    grain: stats.grain,
    iterations: stats.iterations,
    ranges: stats.ranges,
    splits: stats.splits,
    iterationUs: tasks.filter.ms * 1000,
    rangeCostUs: rangeCostMs * 1000,
  };
  if (result.stopped) return { ...(result as LoopResult<R>), loop };
  return { ...(result as LoopResult<R>), result: tallied(call, spec, result) as R | undefined, loop };
}

/**
 * What `parallelFor`'s pool adds to the launcher's `--pool SPEC`: a centralized pool's coordinator works unless
 * the spec says otherwise. A loop's ranges are dealt once and rarely move, so a coordinator that only deals
 * would idle a core for the whole loop (`-n 2`: one worker); a pool made in code keeps its own options.
 */
export function loopPoolOptions(spec: string | undefined): PoolOptions | undefined {
  let fromSpec: PoolOptions = {};
  try {
    fromSpec = spec ? parsePoolSpec(spec) : {};
  } catch {
    return undefined; // world.pool() reports the bad spec, naming it
  }
  const centralized = (fromSpec.mode ?? impliedMode(fromSpec) ?? DEFAULT_MODE) === "centralized";
  return centralized && fromSpec.coordinatorWorks === undefined ? { coordinatorWorks: true } : undefined;
}

/**
 * The body of `world.parallelFor` (lib/world.ts): checks the arguments, then runs the loop on the world's loop
 * pool (`loopPool`, made on the first loop, after the checks).
 */
export async function parallelFor<R>(
  loopPool: () => object,
  world: Communicator,
  start: number,
  end: number,
  body: LoopBody<R>,
  options?: LoopOptions<R>,
): Promise<LoopResult<R>> {
  resolveLoop("parallelFor", start, end, body, options as LoopOptions<unknown> | undefined);
  return forEach(loopPool(), world, start, end, body, options, "parallelFor");
}
