import type { ReduceOp } from "../comm/ops.ts";
import { ENV } from "../comm/env.ts";
import { describe, InvalidArgumentError } from "../errors.ts";
import type { RunResult, StoppableRunResult } from "../pool/types.ts";
import { DEFAULT_OVERHEAD } from "./grain.ts";

/** What a loop body gets besides its index. */
/** `S` is the type of the value `stop` takes: unknown unless the loop is given it as its second type argument. */
export interface LoopContext<S = unknown> {
  /** The rank running the iteration. */
  readonly rank: number;
  /**
   * Aborts when the loop ends before every iteration ran (`stop`, a body's throw, an abort, on any rank), as a
   * run's `ctx.signal` does: the loop does not wait for a body that ignores it, and what such a body returns
   * afterwards counts nowhere.
   */
  readonly signal: AbortSignal;
  /**
   * Ends the loop early, on every rank (a search that found what it wanted): iterations not started are
   * skipped, and the loop resolves with `stopped: true` and `result` set to `result`.
   */
  stop(result?: S): void;
}

/**
 * One iteration. It may return a value (or a promise of one): the loop combines every iteration's value with
 * `reduce`. Returning nothing (undefined) adds nothing. An async body's iterations on one rank run one after
 * another, as a sequential loop's would.
 */
export type LoopBody<R, S = unknown> = (i: number, ctx: LoopContext<S>) => R | void | Promise<R | void>;

/** Options of `pool.forEach` and `world.parallelFor`. */
export interface LoopOptions<R = unknown> {
  /**
   * How the values iterations return are combined into `result`, as for `pool.run`: an op name (`sum`, `min`,
   * `max`, ...; element-wise on arrays) or an associative and commutative function. @default "sum"
   */
  readonly reduce?: ReduceOp<R>;
  /**
   * Iterations per range task, fixed: for comparisons, or a body whose cost the probe cannot see. Unset: chosen
   * on each rank from its measured iteration time (docs/loops.md); the environment variable
   * `WORKPOOL_LOOP_GRAIN` (`WORKPOOL_LOOP_GRAIN=64 workpool launch ...`: ranks inherit it) sets it for every loop that does not
   * set it in code. A positive integer. @default chosen at run time
   */
  readonly grain?: number;
  /**
   * The overhead the automatic grain aims to stay under, as a fraction of the work: no range is shorter than
   * its measured cost divided by this. Between 0 and 1, exclusive. @default 0.02
   */
  readonly overhead?: number;
  /** Aborting makes the loop reject with AbortError here and PeerAbortedError on the other ranks. */
  readonly signal?: AbortSignal;
}

/** What a loop resolves to: the pool run's statistics and result, plus this rank's loop figures. */
export interface LoopResult<R = unknown> extends RunResult<R> {
  readonly loop: LoopStats;
}

/**
 * What a loop given the stop value's type `S` (`world.parallelFor<number, Found>(...)`) resolves to: `stopped`
 * tells the reduction of the body's values (an `R`) from the value given `ctx.stop` (an `S`), as
 * StoppableRunResult does for `run`.
 */
export type StoppableLoopResult<R, S> = StoppableRunResult<R, S> & { readonly loop: LoopStats };

/** This rank's part of one loop. */
export interface LoopStats {
  /** The grain this rank chose for its block (or the fixed one); 0 if it had no block. */
  readonly grain: number;
  /** Iterations and range tasks this rank ran (the probe counts as one range). */
  readonly iterations: number;
  readonly ranges: number;
  /** Ranges that ran much longer than planned and put the rest of themselves back, cut smaller. */
  readonly splits: number;
  /** This rank's filtered iteration time, in microseconds (0 if it ran none). */
  readonly iterationUs: number;
  /** The per-range cost assumed when this loop chose its grains, in microseconds. */
  readonly rangeCostUs: number;
}

export interface ResolvedLoop {
  readonly start: number;
  readonly end: number;
  readonly grain: number | undefined;
  readonly overhead: number;
}

/** Validates a loop's arguments up front; the messages name the call, the argument and what was received. */
export function resolveLoop(
  call: string,
  start: unknown,
  end: unknown,
  body: unknown,
  options: LoopOptions<unknown> | undefined,
): ResolvedLoop {
  if (!Number.isSafeInteger(start)) {
    throw new InvalidArgumentError(`${call}: \`start\` must be a safe integer; got ${describe(start)}`);
  }
  if (!Number.isSafeInteger(end)) {
    throw new InvalidArgumentError(`${call}: \`end\` must be a safe integer; got ${describe(end)}`);
  }
  if ((start as number) > (end as number)) {
    throw new InvalidArgumentError(`${call}: \`start\` (${String(start)}) must not exceed \`end\` (${String(end)})`);
  }
  if (typeof body !== "function") {
    throw new InvalidArgumentError(`${call}: \`body\` must be a function; got ${describe(body)}`);
  }
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new InvalidArgumentError(`${call}: options must be an object; got ${describe(options)}`);
  }
  const o = options ?? {};
  for (const key of Object.keys(o)) {
    if (!["reduce", "grain", "overhead", "signal"].includes(key)) {
      throw new InvalidArgumentError(`${call}: unknown option \`${key}\` (known: reduce, grain, overhead, signal)`);
    }
  }
  let grain: number | undefined = o.grain;
  if (grain !== undefined) checkGrain(`${call}: option \`grain\``, grain);
  else {
    const fromEnv = process.env[ENV.loopGrain];
    if (fromEnv !== undefined && fromEnv !== "") {
      grain = Number(fromEnv);
      checkGrain(`${call}: environment variable ${ENV.loopGrain}`, grain, fromEnv);
    }
  }
  const overhead = o.overhead ?? DEFAULT_OVERHEAD;
  if (typeof overhead !== "number" || !(overhead > 0 && overhead < 1)) {
    throw new InvalidArgumentError(
      `${call}: option \`overhead\` must be a number between 0 and 1 (exclusive); got ${describe(overhead)}`,
    );
  }
  return { start: start as number, end: end as number, grain, overhead };
}

function checkGrain(what: string, grain: unknown, raw: unknown = grain): void {
  if (typeof grain !== "number" || !Number.isSafeInteger(grain) || grain <= 0) {
    throw new InvalidArgumentError(`${what} must be a positive integer; got ${describe(raw)}`);
  }
}
