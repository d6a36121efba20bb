/**
 * How a parallel loop picks its grain (iterations per range task) and its DOACROSS block size from run-time
 * measurements, after Siegell and Steenkiste, "Automatic selection of load balancing parameters using
 * compile-time and run-time information" (seed 001). Pure functions of measured times, so they are tested
 * alone; docs/loops.md derives them.
 */

/** Overhead a loop aims to stay under, as a fraction of its work (seed 001 §5.2.1 `f_interact`). */
export const DEFAULT_OVERHEAD = 0.02;
/**
 * What a range task costs beyond its iterations before any was measured on a pool, in ms: putting and taking
 * it, its clock reads, its share of the messages that move it. Refined after each loop from what the pool
 * measured (`rangeCostMs`).
 */
export const DEFAULT_RANGE_COST_MS = 0.002;
/**
 * The scheduler's time slice, ms: a rank that shares its core with other processes loses the core for about
 * this long at a time, so a range shorter than it measures the other process as much as the loop (seed 001
 * §5.2.3 puts `t_quantum x quantumscale` under the load balancing period; §4.3.2 finds larger grains better
 * under competing loads). Linux's CFS gives a few ms on a machine of few cores.
 */
export const QUANTUM_MS = 4;
/** A probe runs a rank's first iterations, doubling their number, until they took this long (ms). */
export const PROBE_MS = 1;
/** Ranges a loop must have run on a rank before their measured cost refines the pool's estimate. */
const MIN_RANGES_MEASURED = 16;
/** Bounds of a measured per-range cost, ms (a loaded machine can make one run's figure absurd). */
const MIN_RANGE_COST_MS = 0.0002;
const MAX_RANGE_COST_MS = 0.05;

export interface GrainInput {
  /** Iterations the rank is to run (its block). */
  readonly iterations: number;
  /** Measured time of one iteration, ms. */
  readonly iterationMs: number;
  /** Measured cost of one range task beyond its iterations, ms. */
  readonly rangeCostMs: number;
  /** Overhead to stay under, a fraction of the work. */
  readonly overhead: number;
}

export interface Grain {
  /** Iterations per range. */
  readonly grain: number;
  /** The time one range should take, ms. */
  readonly rangeMs: number;
  /** What the model predicts ranges cost, as a fraction of the block's work. */
  readonly predictedOverhead: number;
}

/**
 * The grain of a DOALL block. A block of `n` iterations of time `t` cut into ranges of `g` iterations costs
 * `(n / g) c` in range overhead and leaves up to one range, `g t`, of skew at the end (ranks that run dry take
 * work from the others, so what remains unbalanced is the range each is in when the work runs out). The total
 * `n t + (n / g) c + g t` is least where its derivative in `g` is zero, at `g t = sqrt(n t c)`: the seed's way
 * of choosing a pipeline's block size (§4.2.4, the derivative of a time model set to zero), applied to the
 * DOALL time model. At that grain the overhead and the end skew are equal, both `sqrt(c / (n t))` of the work.
 *
 * The seed also puts a floor under the period between load balancing interactions, `t_interact / f_interact`
 * (§5.2.1): a range is the period between two points where a rank can hand work away, and costs `c`, so a
 * range never takes less than `c / overhead`. And it puts one under it from the scheduler (§5.2.3): a range is
 * at least QUANTUM_MS when the end skew that costs stays under `overhead` of the block (`overhead x n t`).
 * The grain is the largest of the three, and at most the block.
 */
export function doallGrain(input: GrainInput): Grain {
  const { iterations, iterationMs, rangeCostMs, overhead } = input;
  if (iterations <= 0) return { grain: 1, rangeMs: 0, predictedOverhead: 0 };
  const t = Math.max(iterationMs, 1e-7);
  const work = iterations * t;
  const rangeMs = Math.max(
    rangeCostMs / overhead,
    Math.sqrt(work * rangeCostMs),
    Math.min(QUANTUM_MS, overhead * work),
  );
  const grain = Math.max(1, Math.min(iterations, Math.round(rangeMs / t)));
  return { grain, rangeMs: grain * t, predictedOverhead: rangeCostMs / (grain * t) };
}

/**
 * A pool's per-range cost after a loop in which this rank measured `gaps`, the times from a range's end to the
 * next one's start (sorted here): the mean of the estimate before and the gaps' median, bounded. Undefined when
 * fewer than MIN_RANGES_MEASURED gaps were measured, and the estimate stays.
 */
export function refinedRangeCost(rangeCostMs: number, gaps: number[]): number | undefined {
  if (gaps.length < MIN_RANGES_MEASURED) return undefined;
  gaps.sort((a, b) => a - b);
  const measured = gaps[gaps.length >> 1] as number;
  const bounded = Math.min(MAX_RANGE_COST_MS, Math.max(MIN_RANGE_COST_MS, measured));
  return (rangeCostMs + bounded) / 2;
}

export interface BlockInput {
  /** Ranks in the pipeline, P. */
  readonly ranks: number;
  /** Iterations of the pipelined (outer) loop, m. */
  readonly m: number;
  /** Time of one outer iteration's local part on the slowest rank, ms (`t_iteration`). */
  readonly iterationMs: number;
  /** Fixed cost of shifting a boundary message one rank on, ms (`t_fixed`). */
  readonly fixedMs: number;
  /** Cost per outer iteration's boundary data in a shifted message, ms (`t_incr` x elements per iteration). */
  readonly perIterationMs: number;
}

/**
 * The block size of a pipelined DOACROSS loop (seed 001 §4.2.4). With the outer loop's `m` iterations cut into
 * `M` blocks, the pipeline takes `(M + P - 1) t_block + (M + P - 2) t_shift`, where `t_block = t_seq / (P M)`
 * and `t_shift = t_fixed + t_incr (m / M)`; setting the derivative in `M` to zero gives
 * `M = sqrt((t_seq (1 - 1/P) + t_incr m (P - 2)) / t_fixed)` with `t_seq = P m t_iteration`. The block size is
 * `m / M`, at least 1 and at most `m`.
 */
export function doacrossBlock(input: BlockInput): number {
  const { ranks: P, m, iterationMs, fixedMs, perIterationMs } = input;
  if (m <= 1 || P <= 1) return Math.max(1, m);
  const tSeq = P * m * iterationMs;
  const numerator = tSeq * (1 - 1 / P) + perIterationMs * m * (P - 2);
  const M = Math.sqrt(Math.max(0, numerator) / Math.max(fixedMs, 1e-6));
  return Math.max(1, Math.min(m, Math.round(m / Math.max(1, M))));
}

/**
 * The seed's filter of measured rates (§6.1, eq. 16): `r' = (1 - h) r + h r_prev`, with the history fraction
 * `h` from a small state machine that trusts a fall in speed sooner than a rise (Table 1: a slowed rank holds
 * everyone up; a sped-up one only idles a little). Here it filters iteration times, so "slower" is "larger".
 */
export class TimeFilter {
  private value = 0;
  private has = false;
  /** Consecutive measurements on the same side of the filtered value: + slower, - faster. */
  private trend = 0;

  get ms(): number {
    return this.value;
  }

  get measured(): boolean {
    return this.has;
  }

  add(ms: number): number {
    if (!(ms >= 0) || !Number.isFinite(ms)) return this.value;
    if (!this.has) {
      this.value = ms;
      this.has = true;
      return ms;
    }
    const slower = ms > this.value;
    this.trend = slower ? Math.max(1, this.trend + 1) : Math.min(-1, this.trend - 1);
    // Slower: believed at once on the second sign in a row; faster: only after three.
    const h = slower ? (this.trend >= 2 ? 0 : 0.5) : this.trend <= -3 ? 0.25 : 0.75;
    this.value = (1 - h) * ms + h * this.value;
    return this.value;
  }
}
