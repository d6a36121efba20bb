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
 */
import { type ReduceFn, resolveOp } from "../comm/ops.ts";
import type { Communicator } from "../comm/world.ts";
import { describe, InvalidArgumentError } from "../errors.ts";
import { DEFAULT_MODE } from "../pool/config.ts";
import { ROOT as DISTRIBUTED_ROOT } from "../pool/distributed/protocol.ts";
import { impliedMode, parsePoolSpec, type PoolConfig, type PoolOptions } from "../pool/options.ts";
import type { PutOptions, RunOptions, RunResult, TaskContext, TaskHandler } from "../pool/types.ts";
import { DEFAULT_RANGE_COST_MS, doallGrain, PROBE_MS, TimeFilter } from "./grain.ts";
import {
  type LoopBody,
  type LoopContext,
  type LoopOptions,
  type LoopResult,
  type LoopStats,
  resolveLoop,
} from "./options.ts";

/**
 * A task of a loop: iterations `lo` up to `hi` (exclusive), and `plan`: BLOCK for a rank's block (probe it, then
 * cut it), FIXED for a range of a fixed grain, else the time in ms the range was planned to take.
 */
type Piece = [lo: number, hi: number, plan: number];
/** What a loop's task returns: its values combined, the iterations it ran, and the loop's start and end. */
type Tally = [value: unknown, iterations: number, start: number, end: number];
const BLOCK = 0;
const FIXED = -1;

/** A probe whose iterations are this many times PROBE_MS long may end after one round that counts. */
const LONG_PROBE = 20;
/** A range that has run this many times its planned time puts the rest of itself back, cut to plan. */
const SPLIT_AFTER = 4;
/** Most ranges the rest of a range that ran long is cut into. */
const SPLIT_PIECES = 4;
/** How many times a range reads the clock while it runs, to notice that it runs long. */
const CHECKS = 4;
/** A range that has run this long since the event loop last had a turn gives it one at its next check, ms. */
const YIELD_MS = 1;
/** Most gaps between ranges a rank keeps to measure the per-range cost from. */
const MAX_GAPS = 1024;
/** Ranges a loop must have run on a rank before their measured cost refines the pool's estimate. */
const MIN_RANGES_MEASURED = 16;
/** Bounds of a measured per-range cost, ms (a loaded machine can make one run's figure absurd). */
const MIN_RANGE_COST_MS = 0.0002;
const MAX_RANGE_COST_MS = 0.05;

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

/** 2^31: indices below it in magnitude are run as int32s (span). */
const INT32 = 2 ** 31;

/** Each pool's measured cost of a range beyond its iterations, ms, refined by every automatic loop on it. */
const rangeCosts = new WeakMap<object, number>();

/**
 * The values a rank's iterations returned, combined as they come. The running total is this object's own (a
 * copy of the first object value), so a reducer may update it in place. `sum`, `min` and `max` of numbers
 * take a fast path.
 */
class Accumulator {
  value: unknown = undefined;
  has = false;
  constructor(
    private readonly combine: ReduceFn<unknown>,
    private readonly op: unknown,
  ) {}

  add(v: unknown): void {
    if (v === undefined) return;
    if (!this.has) {
      this.value = typeof v === "object" && v !== null ? structuredClone(v) : v;
      this.has = true;
      return;
    }
    const a = this.value;
    if (typeof a === "number" && typeof v === "number") {
      if (this.op === "sum") {
        this.value = a + v;
        return;
      }
      if (this.op === "max") {
        if (v > a) this.value = v;
        return;
      }
      if (this.op === "min") {
        if (v < a) this.value = v;
        return;
      }
    }
    this.value = this.combine(a, v);
  }

  /** The total so far, for the pool (undefined when nothing was returned); starts over. */
  take(): unknown {
    const v = this.has ? this.value : undefined;
    this.value = undefined;
    this.has = false;
    return v;
  }
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}

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
  // A grain of the loop's own, else the pool's `grain` option (`--pool ...,grain=64`), else WORKPOOL_LOOP_GRAIN.
  const fixed = options?.grain === undefined && pool.config.grain > 0 ? pool.config.grain : spec.grain;
  const rangeCostMs = rangeCosts.get(pool) ?? DEFAULT_RANGE_COST_MS;
  const order = pool.config.order;
  const stats = { grain: 0, iterations: 0, ranges: 0, splits: 0, bodyMs: 0 };
  const filter = new TimeFilter();
  let loopCtx: LoopContext | undefined;
  let stopped = false;

  /** Puts [lo, hi) as ranges of `grain`, so that this rank runs them from lo up (the pool's order). */
  const putRanges = (ctx: TaskContext<Piece>, lo: number, hi: number, grain: number, plan: number): void => {
    const count = Math.ceil((hi - lo) / grain);
    for (let k = 0; k < count; k++) {
      const j = order === "lifo" ? count - 1 - k : k;
      const a = lo + j * grain;
      ctx.put([a, Math.min(hi, a + grain), plan]);
    }
  };

  const contextOf = (ctx: TaskContext<Piece>): LoopContext =>
    (loopCtx ??= {
      rank: ctx.rank,
      signal: ctx.signal,
      stop: (result?: unknown) => {
        stopped = true;
        ctx.stop(result);
      },
    });

  /** Runs iterations [i, hi) into `acc` from iteration i on, once the body has returned a promise. */
  const finishAsync = async (first: Promise<unknown>, i: number, hi: number, acc: Accumulator, c: LoopContext) => {
    acc.add(await first);
    for (let k = i; k < hi && !stopped; k++) {
      const v = body(k, c);
      acc.add(isPromise(v) ? await v : v);
    }
  };

  /**
   * Runs [lo, hi) into `acc`; undefined when it finished synchronously, else a promise of its end. Numbers
   * summed (the default) add up in a local first: the body's call is then nearly all an iteration costs. Ends
   * that fit in an int32 are made int32s: a range's ends are computed in floating point and may arrive as heap
   * numbers, and V8 then compiles the loop with a floating-point index, which made a body of one Math.sqrt
   * 2.4x slower an iteration (6.6 ns against 2.7 ns, as a plain loop) in most loops of a run.
   */
  const span = (from: number, to: number, acc: Accumulator, c: LoopContext): Promise<void> | undefined => {
    const small = from >= -INT32 && to < INT32;
    const lo = small ? from | 0 : from;
    const hi = small ? to | 0 : to;
    if (op === "sum") {
      let sum = 0;
      let any = false;
      for (let i = lo; i < hi; i++) {
        const v = body(i, c);
        if (typeof v === "number") {
          sum += v;
          any = true;
        } else if (v !== undefined) {
          if (isPromise(v)) {
            if (any) acc.add(sum);
            return finishAsync(v, i + 1, hi, acc, c);
          }
          acc.add(v);
        }
        if (stopped) break;
      }
      if (any) acc.add(sum);
      return undefined;
    }
    for (let i = lo; i < hi; i++) {
      const v = body(i, c);
      if (isPromise(v)) return finishAsync(v, i + 1, hi, acc, c);
      if (v !== undefined) acc.add(v);
      if (stopped) return undefined;
    }
    return undefined;
  };

  /** When this rank's last range ended, and the gaps from a range's end to the next one's start (a sample). */
  let lastEnd = 0;
  const gaps: number[] = [];
  const started = (): number => {
    const t = performance.now();
    if (lastEnd > 0 && gaps.length < MAX_GAPS) gaps.push(t - lastEnd);
    return t;
  };

  const record = (iterations: number, ms: number) => {
    lastEnd = performance.now();
    stats.iterations += iterations;
    stats.ranges++;
    stats.bodyMs += ms;
    if (iterations > 0) filter.add(ms / iterations);
  };

  /** A rank's block: probe its first iterations, then cut the rest into ranges of the grain they call for. */
  const block = async (piece: Piece, ctx: TaskContext<Piece>): Promise<unknown> => {
    const [lo, hi] = piece;
    const c = contextOf(ctx);
    const acc = new Accumulator(combine, op);
    if (fixed !== undefined) {
      stats.grain = fixed;
      putRanges(ctx, lo, hi, fixed, FIXED);
      return undefined;
    }
    let done = lo;
    let count = 1;
    let spent = 0;
    let perIteration = Number.POSITIVE_INFINITY;
    let last = Number.POSITIVE_INFINITY;
    let counted = 0;
    // Until two rounds counted (one can have lost the core: 16 ranks starting on 2 cores), or, for iterations
    // so long that one round is plenty, PROBE_MS x LONG_PROBE in all.
    while (done < hi && (spent < PROBE_MS || (counted < 2 && spent < PROBE_MS * LONG_PROBE)) && !stopped) {
      const upTo = Math.min(hi, done + count);
      const t0 = done === lo ? started() : performance.now();
      const pending = span(done, upTo, acc, c);
      if (pending) await pending;
      const dt = performance.now() - t0;
      spent += dt;
      last = dt / (upTo - done);
      // The fastest long round: the first ones run before the body is compiled (seed §4.2.4 also takes the
      // smallest), and a short one can miss a cost that comes in bursts (an allocation's collection, a cache
      // refill, a body that does real work every k-th index), so rounds under PROBE_MS / 4 do not count.
      if (dt >= PROBE_MS / 4) {
        perIteration = Math.min(perIteration, last);
        counted++;
      }
      done = upTo;
      count *= 2;
    }
    if (!Number.isFinite(perIteration)) perIteration = last;
    record(done - lo, spent);
    if (done < hi && !stopped) {
      const g = doallGrain({ iterations: hi - done, iterationMs: perIteration, rangeCostMs, overhead: spec.overhead });
      stats.grain = g.grain;
      putRanges(ctx, done, hi, g.grain, Math.max(g.rangeMs, 1e-6));
    } else stats.grain = done - lo;
    return tally(acc, done - lo);
  };

  /**
   * A range; one planned to take `plan` ms that has taken SPLIT_AFTER times that puts the rest of itself back.
   * It runs in pieces (CHECKS or more, each about YIELD_MS at the measured rate), reading the clock between them, and between pieces gives the event loop a turn
   * once YIELD_MS have passed since the last: a rank answers a steal request, or passes a token, only between
   * tasks or while one waits, so without the turns a thief waits out the victim's whole range, and near the end
   * of a loop it may ask several busy ranks in turn before it finds one with ranges to spare.
   */
  const range = (piece: Piece, ctx: TaskContext<Piece>): unknown => {
    const [lo, hi, plan] = piece;
    const c = contextOf(ctx);
    const acc = new Accumulator(combine, op);
    const t0 = started();
    let turned = t0;
    // Pieces of about YIELD_MS at the rate measured so far, and at least CHECKS of them.
    let stride = Math.max(1, Math.ceil((hi - lo) / CHECKS));
    if (filter.measured && filter.ms > 0) stride = Math.max(1, Math.min(stride, Math.round(YIELD_MS / filter.ms)));
    const limit = plan === FIXED ? Number.POSITIVE_INFINITY : SPLIT_AFTER * plan;
    const resume = (from: number) => {
      turned = performance.now();
      return go(from);
    };
    const go = (from: number): unknown => {
      for (let i = from; i < hi;) {
        // Stopped, or the loop is over (failed elsewhere) while this range waited for its turn.
        if (stopped) return finishRange(acc, i - lo, t0);
        const j = Math.min(hi, i + stride);
        const pending = span(i, j, acc, c);
        if (pending) return pending.then(() => resume(j));
        i = j;
        if (stopped) return finishRange(acc, i - lo, t0);
        if (i >= hi) break;
        const now = performance.now();
        if (now - t0 > limit) {
          const perIteration = (now - t0) / (i - lo);
          stats.splits++;
          // One reading cannot shatter the rest: a rank that lost its core for a few ms (more ranks than
          // cores) reads a rate many times too slow, and cut to it the rest of a range became hundreds.
          const grain = Math.max(Math.round(plan / perIteration), Math.ceil((hi - i) / SPLIT_PIECES));
          putRanges(ctx, i, hi, grain, plan);
          return finishRange(acc, i - lo, t0);
        }
        if (now - turned >= YIELD_MS) {
          const at = i;
          return new Promise<void>((resolve) => setImmediate(resolve)).then(() => resume(at));
        }
      }
      return finishRange(acc, hi - lo, t0);
    };
    return go(lo);
  };

  const finishRange = (acc: Accumulator, iterations: number, t0: number): unknown => {
    record(iterations, performance.now() - t0);
    return tally(acc, iterations);
  };

  /** What a task returns: its values, how many iterations it ran, and this rank's idea of the loop's range. */
  // `taskEnded` (map's): the task's iterations are done, before the task returns.
  const tally = (acc: Accumulator, iterations: number): Tally => {
    taskEnded?.();
    return [acc.take(), iterations, spec.start, spec.end];
  };

  const handler = (piece: Piece, ctx: TaskContext<Piece>): unknown => {
    if (!Array.isArray(piece) || piece.length !== 3) {
      throw new InvalidArgumentError(
        `${call}: ${pool.name} ran a task that is not one of the loop's (${describe(piece)}): put no tasks on a pool while a loop runs on it`,
      );
    }
    if (stopped) return undefined;
    return piece[2] === BLOCK ? block(piece, ctx) : range(piece, ctx);
  };

  const working = workingRanks(pool, world.size, world.deadRanks);
  const w = working.indexOf(world.rank);
  const c = pool.config;
  const keeper = ledgerKeeper(c, world.size);
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
  // The values combine as the app asked, and beside them the iterations run and the widest range any rank
  // named: every rank then checks that the loop it called is the one the ranks ran (one that called it with
  // another start or end would otherwise leave some indices unrun, or run them twice, and no one would know).
  const reduce: ReduceFn<Tally> = (a, b) => [
    a[0] === undefined ? b[0] : b[0] === undefined ? a[0] : combine(a[0], b[0]),
    a[1] + b[1],
    Math.min(a[2], b[2]),
    Math.max(a[3], b[3]),
  ];
  // One range at a time per rank: a range's iterations are timed to choose the grain, and an async body's run
  // one after another (docs/loops.md), whatever the pool's `concurrency`.
  const runOptions = options?.signal ? { reduce, signal: options.signal, concurrency: 1 } : { reduce, concurrency: 1 };
  let result: RunResult<unknown>;
  pool.nextLoop = { total: end - start, done: () => stats.iterations };
  try {
    result = await pool.run(handler as TaskHandler<Piece, unknown>, runOptions as RunOptions<unknown>);
  } finally {
    // A loop that failed (or was stopped) runs no more iterations: a range this rank was in the middle of ends
    // at its next piece, instead of running the app's body after the app was told the loop is over.
    stopped = true;
  }
  if (fixed === undefined && gaps.length >= MIN_RANGES_MEASURED) {
    gaps.sort((a, b) => a - b);
    const measured = gaps[gaps.length >> 1] as number;
    const bounded = Math.min(MAX_RANGE_COST_MS, Math.max(MIN_RANGE_COST_MS, measured));
    rangeCosts.set(pool, (rangeCostMs + bounded) / 2);
  }
  const loop: LoopStats = {
    grain: stats.grain,
    iterations: stats.iterations,
    ranges: stats.ranges,
    splits: stats.splits,
    iterationUs: filter.ms * 1000,
    rangeCostUs: rangeCostMs * 1000,
  };
  if (result.stopped) return { ...(result as LoopResult<R>), loop };
  const [value, ran = 0, from = spec.start, to = spec.end] = (result.result as Tally | undefined) ?? [];
  if (ran !== spec.end - spec.start || from !== spec.start || to !== spec.end) {
    throw new InvalidArgumentError(
      `${call}: the ranks ran ${ran} iterations between ${Math.min(from, spec.start)} and ${Math.max(to, spec.end)}, ` +
        `and this rank called it for ${spec.start} up to ${spec.end}: every rank must give it the same start and end`,
    );
  }
  return { ...(result as LoopResult<R>), result: value as R | undefined, loop };
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
