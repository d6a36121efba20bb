import { type ReduceFn, type ReduceOp, resolveOp } from "../comm/ops.ts";
import { findUnsendable, where } from "../comm/unsendable.ts";
import { EncodeError } from "../errors.ts";

/** A partial result on the wire: absent when no task returned a value, else a one-element array. */
export type WireResult = [unknown] | undefined;

/** `body` with the partial result `r` as field `r`, or without the field when there is none. */
export function withResult(body: Record<string, unknown>, r: WireResult): Record<string, unknown> {
  if (r !== undefined) body.r = r;
  return body;
}

/**
 * The first value a handler returned, as the running total's own copy: an object is cloned, since a reducer may
 * update the total in place. A value that cannot travel between ranks (a function, a symbol, or an object holding
 * one), which the totals do, fails its task here, naming where it is (`value.f is a function`), not later in a
 * message's envelope or as a DataCloneError.
 */
export function firstValue(v: unknown): unknown {
  if (typeof v === "function" || typeof v === "symbol") throw unsendableValue(v);
  if (typeof v !== "object" || v === null) return v;
  try {
    return structuredClone(v);
  } catch {
    throw unsendableValue(v);
  }
}

/**
 * `combine(acc, v)` for a later value a handler returned, with the same check as `firstValue`: a function or a
 * symbol is refused at once, and when the reducer refuses `v`, a `v` that could not travel is named as the
 * cause (a handler that returned a function after others returned numbers was told that `reduce`'s op needs
 * numbers: the user looked for the fault in the option).
 */
export function laterValue(combine: ReduceFn<unknown>, acc: unknown, v: unknown): unknown {
  if (typeof v === "function" || typeof v === "symbol") throw unsendableValue(v);
  try {
    return combine(acc, v);
  } catch (e) {
    if (typeof v === "object" && v !== null && findUnsendable(v)) throw unsendableValue(v);
    throw e;
  }
}

function unsendableValue(v: unknown): EncodeError {
  const found = findUnsendable(v);
  const what = found ? `${where("value", found.path)} ${found.what}` : "the value cannot be copied";
  return new EncodeError(
    `the value it returned cannot travel between ranks: ${what}; return plain data (values are combined across ranks)`,
  );
}

/**
 * The values handlers returned on this rank, combined with the run's reducer as they arrive, plus the partial
 * results other ranks passed here. Engines move partial results towards the rank that detects termination
 * (workers to the coordinator with their status messages; distributed ranks along the termination detector's
 * own messages), which sends the total to every rank with its "done" message. So a value travels with the
 * completion of the work that produced it, and reducing costs no extra message. Values are combined in no
 * particular order: the reducer must be associative and commutative.
 *
 * The accumulated value is this object's own (a copy of the first value a handler returned, or a decoded
 * message), never a value a handler returned: a function reducer may update its first argument in place and
 * return it, so combining allocates nothing (as Spark's `aggregate` allows); it must not change the second.
 */
export class Results {
  private value: unknown;
  private has = false;
  /** Set on every rank once the run has terminated: the reduction of every task's value. */
  final: WireResult;
  /** Set when a task ended the run with `ctx.stop` (`final` is then its value). */
  stopped = false;

  constructor(private readonly combine: ReduceFn<unknown>) {}

  /** An empty Results that combines as this one does (a part of the values, kept apart). */
  fork(): Results {
    return new Results(this.combine);
  }

  static of(op: ReduceOp<unknown> | undefined): Results {
    // Without `reduce`, a handler that returns something other than numbers learns what combined its values.
    const label =
      op === undefined
        ? "run: the default reduce, sum, combines the values handlers return (give run's `reduce`, an op or a function, for other values, or return nothing)"
        : "run: option `reduce`";
    return new Results(resolveOp(op ?? "sum", label) as ReduceFn<unknown>);
  }

  /** A handler returned `v` (undefined means no value). */
  add(v: unknown): void {
    if (v === undefined) return;
    if (this.has) this.value = laterValue(this.combine, this.value, v);
    else {
      this.value = firstValue(v);
      this.has = true;
    }
  }

  /** Adds a partial result received from another rank (decoded from a message: this object may keep it). */
  merge(w: WireResult): void {
    if (w === undefined || w[0] === undefined) return;
    if (this.has) this.value = this.combine(this.value, w[0]);
    else {
      this.value = w[0];
      this.has = true;
    }
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
