/**
 * The tasks of one DOALL loop on one rank (doall.ts puts the blocks and runs the pool with `handler`):
 * - a block (BLOCK) is probed: its first iterations run, doubling in number, until they took PROBE_MS, which
 *   measures the time of one iteration (`probe`); the rest is cut into ranges of the grain that time calls for
 *   (grain.ts `doallGrain`, `cut`), or of the fixed grain, unprobed;
 * - a range runs in pieces (`range`), reading the clock between them to give the event loop turns and to
 *   notice that it runs long, in which case it puts the rest of itself back, cut to plan.
 * Every iteration runs in `span`, the loop's inner loop: one call of the body per index and nothing else (its
 * cost per iteration is benchmarked). The object keeps what the rank measures for the loop's figures (`stats`,
 * the filtered iteration time) and the gaps between ranges from which the pool's per-range cost is refined.
 * Once `stopped` (ctx.stop, or the run is over) no more iterations start.
 */
import type { ReduceFn } from "../comm/ops.ts";
import { describe, InvalidArgumentError } from "../errors.ts";
import type { TaskOrder } from "../pool/queue.ts";
import type { TaskContext } from "../pool/types.ts";
import { doallGrain, PROBE_MS, TimeFilter } from "./grain.ts";
import type { LoopBody, LoopContext, ResolvedLoop } from "./options.ts";
import { Accumulator, type Tally } from "./tally.ts";

/**
 * A task of a loop: iterations `lo` up to `hi` (exclusive), and `plan`: BLOCK for a rank's block (probe it, then
 * cut it), FIXED for a range of a fixed grain, else the time in ms the range was planned to take.
 */
export type Piece = [lo: number, hi: number, plan: number];
export const BLOCK = 0;
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

/** 2^31: indices below it in magnitude are run as int32s (span). */
const INT32 = 2 ** 31;

/** What a loop's tasks are made of: its body and reduction, and how its ranges are planned. */
export interface DoallPlan {
  readonly body: LoopBody<unknown>;
  /** The reduce option (`sum` by default) and the function it names. */
  readonly op: unknown;
  readonly combine: ReduceFn<unknown>;
  readonly spec: ResolvedLoop;
  /** The grain of every range, or undefined to choose it from the probe. */
  readonly fixed: number | undefined;
  /** The pool's per-range cost (doall.ts `rangeCosts`), ms. */
  readonly rangeCostMs: number;
  /** The pool's order: a rank runs the ranges it cuts from lo up. */
  readonly order: TaskOrder;
  /** `call: pool`, for the error about a task not of the loop. */
  readonly who: string;
  /** `map`'s: the task's iterations are done, before the task returns. */
  readonly taskEnded: (() => void) | undefined;
}

/** What a probe ran: iterations up to `done`, in `spent` ms, and the time of one iteration it measured. */
interface Probe {
  readonly done: number;
  readonly spent: number;
  readonly perIteration: number;
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}

export class DoallTasks {
  /** Set by ctx.stop, and by doall.ts once the run is over: no more iterations start. */
  stopped = false;
  readonly stats = { grain: 0, iterations: 0, ranges: 0, splits: 0, bodyMs: 0 };
  /** This rank's filtered time of one iteration. */
  readonly filter = new TimeFilter();
  /** The gaps from a range's end to the next one's start (a sample), and when this rank's last range ended. */
  readonly gaps: number[] = [];
  private lastEnd = 0;
  private loopCtx: LoopContext | undefined;
  private readonly body: LoopBody<unknown>;
  private readonly op: unknown;
  private readonly combine: ReduceFn<unknown>;
  private readonly spec: ResolvedLoop;
  private readonly fixed: number | undefined;
  private readonly rangeCostMs: number;
  private readonly order: TaskOrder;
  private readonly who: string;
  private readonly taskEnded: (() => void) | undefined;

  constructor(plan: DoallPlan) {
    this.body = plan.body;
    this.op = plan.op;
    this.combine = plan.combine;
    this.spec = plan.spec;
    this.fixed = plan.fixed;
    this.rangeCostMs = plan.rangeCostMs;
    this.order = plan.order;
    this.who = plan.who;
    this.taskEnded = plan.taskEnded;
  }

  /** The run's handler: a block or a range. */
  readonly handler = (piece: Piece, ctx: TaskContext<Piece>): unknown => {
    if (!Array.isArray(piece) || piece.length !== 3) {
      throw new InvalidArgumentError(
        `${this.who} ran a task that is not one of the loop's (${describe(piece)}): put no tasks on a pool while a loop runs on it`,
      );
    }
    if (this.stopped) return undefined;
    return piece[2] === BLOCK ? this.block(piece, ctx) : this.range(piece, ctx);
  };

  /** Puts [lo, hi) as ranges of `grain`, so that this rank runs them from lo up (the pool's order). */
  private cut(ctx: TaskContext<Piece>, lo: number, hi: number, grain: number, plan: number): void {
    const count = Math.ceil((hi - lo) / grain);
    for (let k = 0; k < count; k++) {
      const j = this.order === "lifo" ? count - 1 - k : k;
      const a = lo + j * grain;
      ctx.put([a, Math.min(hi, a + grain), plan]);
    }
  }

  private contextOf(ctx: TaskContext<Piece>): LoopContext {
    return (this.loopCtx ??= {
      rank: ctx.rank,
      signal: ctx.signal,
      stop: (result?: unknown) => {
        this.stopped = true;
        ctx.stop(result);
      },
    });
  }

  /** Runs iterations [i, hi) into `acc` from iteration i on, once the body has returned a promise. */
  private async finishAsync(first: Promise<unknown>, i: number, hi: number, acc: Accumulator, c: LoopContext) {
    const body = this.body;
    acc.add(await first);
    for (let k = i; k < hi && !this.stopped; k++) {
      const v = body(k, c);
      acc.add(isPromise(v) ? await v : v);
    }
  }

  /**
   * Runs [lo, hi) into `acc`; undefined when it finished synchronously, else a promise of its end. Numbers
   * summed (the default) add up in a local first: the body's call is then nearly all an iteration costs. Ends
   * that fit in an int32 are made int32s: a range's ends are computed in floating point and may arrive as heap
   * numbers, and V8 then compiles the loop with a floating-point index, which made a body of one Math.sqrt
   * 2.4x slower an iteration (6.6 ns against 2.7 ns, as a plain loop) in most loops of a run.
   */
  private span(from: number, to: number, acc: Accumulator, c: LoopContext): Promise<void> | undefined {
    const body = this.body;
    const small = from >= -INT32 && to < INT32;
    const lo = small ? from | 0 : from;
    const hi = small ? to | 0 : to;
    if (this.op === "sum") {
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
            return this.finishAsync(v, i + 1, hi, acc, c);
          }
          acc.add(v);
        }
        if (this.stopped) break;
      }
      if (any) acc.add(sum);
      return undefined;
    }
    for (let i = lo; i < hi; i++) {
      const v = body(i, c);
      if (isPromise(v)) return this.finishAsync(v, i + 1, hi, acc, c);
      if (v !== undefined) acc.add(v);
      if (this.stopped) return undefined;
    }
    return undefined;
  }

  /** A range starts: the gap since the last one ended is a sample of the per-range cost. */
  private started(): number {
    const t = performance.now();
    if (this.lastEnd > 0 && this.gaps.length < MAX_GAPS) this.gaps.push(t - this.lastEnd);
    return t;
  }

  private record(iterations: number, ms: number): void {
    this.lastEnd = performance.now();
    const stats = this.stats;
    stats.iterations += iterations;
    stats.ranges++;
    stats.bodyMs += ms;
    if (iterations > 0) this.filter.add(ms / iterations);
  }

  /** A rank's block: probe its first iterations, then cut the rest into ranges of the grain they call for. */
  private async block(piece: Piece, ctx: TaskContext<Piece>): Promise<unknown> {
    const [lo, hi] = piece;
    const c = this.contextOf(ctx);
    const acc = new Accumulator(this.combine, this.op);
    if (this.fixed !== undefined) {
      this.stats.grain = this.fixed;
      this.cut(ctx, lo, hi, this.fixed, FIXED);
      return undefined;
    }
    const { done, spent, perIteration } = await this.probe(lo, hi, acc, c);
    this.record(done - lo, spent);
    if (done < hi && !this.stopped) {
      const g = doallGrain({
        iterations: hi - done,
        iterationMs: perIteration,
        rangeCostMs: this.rangeCostMs,
        overhead: this.spec.overhead,
      });
      this.stats.grain = g.grain;
      this.cut(ctx, done, hi, g.grain, Math.max(g.rangeMs, 1e-6));
    } else this.stats.grain = done - lo;
    return this.tally(acc, done - lo);
  }

  /**
   * Runs the block [lo, hi)'s first iterations into `acc`, in rounds doubling in number, until they took
   * PROBE_MS; keeps the fastest time per iteration of the rounds that took a quarter of that or more.
   */
  private async probe(lo: number, hi: number, acc: Accumulator, c: LoopContext): Promise<Probe> {
    let done = lo;
    let count = 1;
    let spent = 0;
    let perIteration = Number.POSITIVE_INFINITY;
    let last = Number.POSITIVE_INFINITY;
    let counted = 0;
    // Until two rounds counted (one can have lost the core: 16 ranks starting on 2 cores), or, for iterations
    // so long that one round is plenty, PROBE_MS x LONG_PROBE in all.
    while (done < hi && (spent < PROBE_MS || (counted < 2 && spent < PROBE_MS * LONG_PROBE)) && !this.stopped) {
      const upTo = Math.min(hi, done + count);
      const t0 = done === lo ? this.started() : performance.now();
      const pending = this.span(done, upTo, acc, c);
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
    return { done, spent, perIteration: Number.isFinite(perIteration) ? perIteration : last };
  }

  /**
   * A range; one planned to take `plan` ms that has taken SPLIT_AFTER times that puts the rest of itself back.
   * It runs in pieces (CHECKS or more, each about YIELD_MS at the measured rate), reading the clock between them, and between pieces gives the event loop a turn
   * once YIELD_MS have passed since the last: a rank answers a steal request, or passes a token, only between
   * tasks or while one waits, so without the turns a thief waits out the victim's whole range, and near the end
   * of a loop it may ask several busy ranks in turn before it finds one with ranges to spare.
   */
  private range(piece: Piece, ctx: TaskContext<Piece>): unknown {
    const [lo, hi, plan] = piece;
    const c = this.contextOf(ctx);
    const acc = new Accumulator(this.combine, this.op);
    const t0 = this.started();
    let turned = t0;
    // Pieces of about YIELD_MS at the rate measured so far, and at least CHECKS of them.
    let stride = Math.max(1, Math.ceil((hi - lo) / CHECKS));
    const filter = this.filter;
    if (filter.measured && filter.ms > 0) stride = Math.max(1, Math.min(stride, Math.round(YIELD_MS / filter.ms)));
    const limit = plan === FIXED ? Number.POSITIVE_INFINITY : SPLIT_AFTER * plan;
    const resume = (from: number) => {
      turned = performance.now();
      return go(from);
    };
    const go = (from: number): unknown => {
      for (let i = from; i < hi;) {
        // Stopped, or the loop is over (failed elsewhere) while this range waited for its turn.
        if (this.stopped) return this.finishRange(acc, i - lo, t0);
        const j = Math.min(hi, i + stride);
        const pending = this.span(i, j, acc, c);
        if (pending) return pending.then(() => resume(j));
        i = j;
        if (this.stopped) return this.finishRange(acc, i - lo, t0);
        if (i >= hi) break;
        const now = performance.now();
        if (now - t0 > limit) {
          const perIteration = (now - t0) / (i - lo);
          this.stats.splits++;
          // One reading cannot shatter the rest: a rank that lost its core for a few ms (more ranks than
          // cores) reads a rate many times too slow, and cut to it the rest of a range became hundreds.
          const grain = Math.max(Math.round(plan / perIteration), Math.ceil((hi - i) / SPLIT_PIECES));
          this.cut(ctx, i, hi, grain, plan);
          return this.finishRange(acc, i - lo, t0);
        }
        if (now - turned >= YIELD_MS) {
          const at = i;
          return new Promise<void>((resolve) => setImmediate(resolve)).then(() => resume(at));
        }
      }
      return this.finishRange(acc, hi - lo, t0);
    };
    return go(lo);
  }

  private finishRange(acc: Accumulator, iterations: number, t0: number): unknown {
    this.record(iterations, performance.now() - t0);
    return this.tally(acc, iterations);
  }

  /** What a task returns: its values, how many iterations it ran, and this rank's idea of the loop's range. */
  private tally(acc: Accumulator, iterations: number): Tally {
    this.taskEnded?.();
    return [acc.take(), iterations, this.spec.start, this.spec.end];
  }
}
