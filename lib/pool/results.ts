import { type ReduceFn, type ReduceOp, resolveOp } from "../comm/ops.ts";

/** A partial result on the wire: absent when no task returned a value, else a one-element array. */
export type WireResult = [unknown] | undefined;

/**
 * The values handlers returned on this rank, combined with the run's reducer as they arrive, plus the partial
 * results other ranks passed here. Engines move partial results towards the rank that detects termination
 * (workers to the coordinator with their status messages; distributed ranks along the termination detector's
 * own messages), which sends the total to every rank with its "done" message. So a value travels with the
 * completion of the work that produced it, and reducing costs no extra message. Values are combined in no
 * particular order: the reducer must be associative and commutative.
 */
export class Results {
  private value: unknown;
  private has = false;
  /** Set on every rank once the run has terminated: the reduction of every task's value. */
  final: WireResult;

  constructor(private readonly combine: ReduceFn<unknown>) {}

  static of(op: ReduceOp<unknown> | undefined): Results {
    return new Results(resolveOp(op ?? "sum", "run: option `reduce`") as ReduceFn<unknown>);
  }

  /** A handler returned `v` (undefined means no value). */
  add(v: unknown): void {
    if (v === undefined) return;
    this.value = this.has ? this.combine(this.value, v) : v;
    this.has = true;
  }

  /** Adds a partial result received from another rank. */
  merge(w: WireResult): void {
    if (w !== undefined) this.add(w[0]);
  }

  /** Takes what was added since the last take, for a message (undefined when nothing was). */
  take(): WireResult {
    if (!this.has) return undefined;
    const out: WireResult = [this.value];
    this.value = undefined;
    this.has = false;
    return out;
  }
}
