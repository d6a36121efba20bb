import { Packr } from "msgpackr";
import { EncodeError } from "../errors.ts";

/**
 * One wire message is the msgpack array `[source, context, tag, data]`; a frame on the wire is one or more
 * of them back to back (msgpack is self-delimiting, so coalesced frames need no length prefixes).
 * `moreTypes` keeps typed arrays, Maps, Sets, Dates, Errors and BigInts their own types across the wire;
 * each packed message carries its own record definitions, so frames decode in any order on any rank.
 */
const packr = new Packr({ moreTypes: true });

export function encodeMessage(source: number, context: number, tag: number, data: unknown, call: string): Buffer {
  try {
    return packr.pack([source, context, tag, data]);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new EncodeError(`${call}: data cannot be encoded by msgpackr (${why})`, { cause });
  }
}

/** Calls `each` for every message in a frame, in the order they were packed. */
export function decodeFrame(
  frame: Uint8Array,
  each: (source: number, context: number, tag: number, data: unknown) => void,
): void {
  packr.unpackMultiple(frame as Buffer, (value: unknown) => {
    const m = value as [number, number, number, unknown];
    each(m[0], m[1], m[2], m[3]);
  });
}

/** Plain encode/decode of a single value (bootstrap messages, files). */
export function pack(value: unknown): Buffer {
  return packr.pack(value);
}

export function unpack(buffer: Uint8Array): unknown {
  return packr.unpack(buffer as Buffer);
}
