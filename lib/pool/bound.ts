import { describe, InvalidArgumentError } from "../errors.ts";

/** Which values are better: smaller (`min`, a cost to minimize) or larger (`max`, a value to maximize). */
export type BoundSense = "min" | "max";

/**
 * A number every rank of a pool can read at no cost and improve, for branch and bound: the best solution
 * found so far anywhere. `improve(v)` keeps `v` here if it is better and sends it at once to every other
 * rank, which keeps it if it is better than what it has; so every rank learns of an improvement one message
 * after it was made (between two of its tasks), and all ranks agree once improvements stop. Reading `value`
 * never waits. Made with `pool.bound()`, in the same order on every rank.
 */
export class Bound {
  private best: number;
  private readonly better: (a: number, b: number) => boolean;

  /** @internal use `pool.bound()` */
  constructor(
    readonly sense: BoundSense,
    initial: number,
    private readonly spread: (value: number) => void,
  ) {
    this.best = initial;
    this.better = sense === "min" ? (a, b) => a < b : (a, b) => a > b;
  }

  /** The best value known on this rank. */
  get value(): number {
    return this.best;
  }

  /** Offers `v`: if it beats the best known here, it becomes the best, here and (one message later) everywhere. */
  improve(v: number): boolean {
    if (typeof v !== "number" || Number.isNaN(v)) {
      throw new InvalidArgumentError(`bound.improve: value must be a number; got ${describe(v)}`);
    }
    if (!this.better(v, this.best)) return false;
    this.best = v;
    this.spread(v);
    return true;
  }

  /** @internal a value another rank found. */
  receive(v: number): void {
    if (this.better(v, this.best)) this.best = v;
  }
}

/**
 * A pool's bounds by index, in the order they were made (the same on every rank), and the improvements that
 * arrived for bounds not made here yet, applied when they are.
 */
export class Bounds {
  private readonly made: Bound[] = [];
  private readonly early = new Map<number, number[]>();

  /** The index the next bound made gets. */
  get next(): number {
    return this.made.length;
  }

  add(b: Bound): void {
    const index = this.made.length;
    this.made.push(b);
    for (const v of this.early.get(index) ?? []) b.receive(v);
    this.early.delete(index);
  }

  /** Another rank improved bound `index` to `v`. */
  receive(index: number, v: number): void {
    const b = this.made[index];
    if (b) b.receive(v);
    else {
      const early = this.early.get(index) ?? [];
      early.push(v);
      this.early.set(index, early);
    }
  }
}
