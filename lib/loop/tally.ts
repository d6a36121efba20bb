/**
 * How a DOALL loop's values add up (doall.ts). On a rank, an Accumulator combines what the body returns as it
 * returns it; each task hands the pool a Tally (its values, the iterations it ran, the loop's start and end as
 * its rank was called with), and the run's reduction combines the tallies of every rank. At the end every rank
 * checks the total against the loop it called (`tallied`): the iterations run must be the loop's, which is how
 * a loop called with other bounds on some rank is caught instead of leaving indices unrun or run twice.
 */
import type { ReduceFn } from "../comm/ops.ts";
import { InvalidArgumentError } from "../errors.ts";
import { firstValue, laterValue } from "../pool/results.ts";
import type { RunResult } from "../pool/types.ts";
import type { ResolvedLoop } from "./options.ts";

/** What a loop's task returns: its values combined, the iterations it ran, and the loop's start and end. */
export type Tally = [value: unknown, iterations: number, start: number, end: number];

/**
 * The values a rank's iterations returned, combined as they come. The running total is this object's own (a
 * copy of the first object value), so a reducer may update it in place. `sum`, `min` and `max` of numbers
 * take a fast path.
 */
export class Accumulator {
  value: unknown = undefined;
  has = false;
  constructor(
    private readonly combine: ReduceFn<unknown>,
    private readonly op: unknown,
  ) {}

  add(v: unknown): void {
    if (v === undefined) return;
    if (!this.has) {
      this.value = firstValue(v);
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
    this.value = laterValue(this.combine, a, v);
  }

  /** The total so far, for the pool (undefined when nothing was returned); starts over. */
  take(): unknown {
    const v = this.has ? this.value : undefined;
    this.value = undefined;
    this.has = false;
    return v;
  }
}

/**
 * The run's reduction of tallies. The values combine as the app asked, and beside them the iterations run and
 * the widest range any rank named: every rank then checks that the loop it called is the one the ranks ran
 * (one that called it with another start or end would otherwise leave some indices unrun, or run them twice,
 * and no one would know).
 */
export function tallyReduce(combine: ReduceFn<unknown>): ReduceFn<Tally> {
  return (a, b) => [
    a[0] === undefined ? b[0] : b[0] === undefined ? a[0] : combine(a[0], b[0]),
    a[1] + b[1],
    Math.min(a[2], b[2]),
    Math.max(a[3], b[3]),
  ];
}

/**
 * The loop's value from the run's reduced tally, once checked against the loop this rank called: throws
 * InvalidArgumentError when the ranks ran another number of iterations, or between other bounds.
 */
export function tallied(call: string, spec: ResolvedLoop, result: RunResult<unknown>): unknown {
  const [value, ran = 0, from = spec.start, to = spec.end] = (result.result as Tally | undefined) ?? [];
  if (ran !== spec.end - spec.start || from !== spec.start || to !== spec.end) {
    throw new InvalidArgumentError(
      `${call}: the ranks ran ${ran} iterations between ${Math.min(from, spec.start)} and ${Math.max(to, spec.end)}, ` +
        `and this rank called it for ${spec.start} up to ${spec.end}: every rank must give it the same start and end`,
    );
  }
  return value;
}
