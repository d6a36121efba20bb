import { describe, InvalidArgumentError } from "../errors.ts";
import { ANY } from "./matcher.ts";

/**
 * The checks of a communicator's point-to-point arguments (world.ts), made on every call before anything is
 * sent or posted: a bad rank or tag is InvalidArgumentError naming the call, the argument and the value.
 */

/** The largest tag an app may give (a non-negative int). */
const MAX_TAG = 2 ** 31 - 1;

/** Throws unless `r` is a rank of a communicator of `size` ranks (or, with `allowAny`, ANY). */
export function checkRank(call: string, what: string, r: unknown, allowAny: boolean, size: number): void {
  if (allowAny && r === ANY) return;
  if (typeof r !== "number" || !Number.isInteger(r) || r < 0 || r >= size) {
    throw new InvalidArgumentError(
      `${call}: ${what} must be an integer rank in 0..${size - 1}${allowAny ? " or ANY" : ""}; got ${describe(r)}`,
    );
  }
}

/** Throws unless `t` is a tag an app may use (or, with `allowAny`, ANY). */
export function checkTag(call: string, what: string, t: unknown, allowAny: boolean): void {
  if (allowAny && t === ANY) return;
  if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TAG) {
    throw new InvalidArgumentError(
      `${call}: ${what} must be an integer in 0..${MAX_TAG}${allowAny ? " or ANY" : ""}; got ${describe(t)}`,
    );
  }
}
