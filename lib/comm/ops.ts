import { describe, InvalidArgumentError } from "../errors.ts";

/** Built-in reduction operators. Numbers, bigints, and arrays or typed arrays (element-wise) are accepted. */
export type ReduceOpName = "sum" | "prod" | "min" | "max" | "land" | "lor" | "band" | "bor" | "bxor";
/**
 * A custom operator must be associative and must not change its arguments (return a new value). Values are
 * combined in rank order (lower ranks' values on the left), so it need not be commutative.
 */
export type ReduceFn<T> = (a: T, b: T) => T;
export type ReduceOp<T = unknown> = ReduceOpName | ReduceFn<T>;

type Scalar = number | bigint | boolean;
// Operands are cast to number for the type checker only: the same operators work on bigints at run time.
const scalarOps: Record<ReduceOpName, (a: Scalar, b: Scalar) => Scalar> = {
  sum: (a, b) => (a as number) + (b as number),
  prod: (a, b) => (a as number) * (b as number),
  min: (a, b) => (b < a ? b : a),
  max: (a, b) => (b > a ? b : a),
  land: (a, b) => Boolean(a) && Boolean(b),
  lor: (a, b) => Boolean(a) || Boolean(b),
  band: (a, b) => (a as number) & (b as number),
  bor: (a, b) => (a as number) | (b as number),
  bxor: (a, b) => (a as number) ^ (b as number),
};

export function resolveOp<T>(op: ReduceOp<T>, call: string): ReduceFn<T> {
  if (typeof op === "function") return op;
  const scalar = typeof op === "string" ? scalarOps[op as ReduceOpName] : undefined;
  if (!scalar) {
    throw new InvalidArgumentError(
      `${call}: op must be a function or one of ${Object.keys(scalarOps).join(", ")}; got ${describe(op)}`,
    );
  }
  const combine = (a: unknown, b: unknown): unknown => {
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length !== b.length) {
        throw new InvalidArgumentError(`${call}: arrays of different lengths (${a.length} and ${b.length})`);
      }
      return a.map((x, i) => combine(x, b[i]));
    }
    if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b) && !(a instanceof DataView)) {
      const x = a as unknown as { length: number; [i: number]: Scalar; slice(): unknown };
      const y = b as unknown as { length: number; [i: number]: Scalar };
      if (x.length !== y.length) {
        throw new InvalidArgumentError(`${call}: typed arrays of different lengths (${x.length} and ${y.length})`);
      }
      const out = x.slice() as { [i: number]: Scalar };
      for (let i = 0; i < x.length; i++) out[i] = scalar(x[i] as Scalar, y[i] as Scalar);
      return out;
    }
    const ta = typeof a;
    if ((ta === "number" || ta === "bigint" || ta === "boolean") && typeof b === ta) {
      return scalar(a as Scalar, b as Scalar);
    }
    throw new InvalidArgumentError(
      `${call}: op ${op} needs numbers, bigints, booleans or arrays of them; got ${describe(a)} and ${describe(b)}`,
    );
  };
  return combine as ReduceFn<T>;
}
