import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import type * as Msgpackr from "msgpackr";
import { EncodeError } from "../errors.ts";
import { findUnsendable, type Step, where } from "./unsendable.ts";

/**
 * The wire format of point-to-point messages. Each message is a fixed 17-byte header followed by its body:
 *
 *   offset 0   u32 LE  body length in bytes
 *   offset 4   u32 LE  source rank
 *   offset 8   u32 LE  context
 *   offset 12  u32 LE  tag
 *   offset 16  u8      body kind: MSGPACK (msgpackr encoding of `data`) or BYTES (`data` is a plain
 *                      Uint8Array, its bytes as they are)
 *
 * A frame is one or more messages back to back (how the transport coalesces small ones); a large message may
 * instead travel split, its header and its body as two parts of one ZeroMQ message (see `decodeSplit`); under
 * CURVE a body over 1 MiB comes in pieces that the transport puts back together first (transport.ts).
 *
 * The header is written and read with plain byte arithmetic, so routing a message costs no msgpack work, and
 * a Uint8Array payload (the common case for bulk data) never goes through msgpackr at all. Every other value
 * is encoded by msgpackr with `moreTypes`, which keeps typed arrays, Maps, Sets, Dates, Errors and BigInts
 * their own types across the wire; each body carries its own record definitions, so messages decode in any
 * order on any rank.
 *
 * What would arrive changed without a word is refused: a function or a symbol anywhere in `data` (a field, an
 * element, a Map key or value, a Set member, an Error's cause), or a circular structure, throws EncodeError
 * naming the call and the path to it (`send: data.handlers[2] is a function, which cannot be sent`). The check
 * costs nothing when sending succeeds: msgpackr throws on a function (our `writeFunction` hook) as it does on a
 * symbol, and the path is found by walking the value only then (unsendable.ts). What is kept as documented
 * rather than refused: a class instance arrives as a plain object of its own enumerable fields (its methods
 * live on the prototype, which does not travel, as with structuredClone), symbol-keyed fields are left out
 * (as with JSON), and the number -0 arrives as 0 (inside a Float64Array it stays -0). (test/comm/codec.test.ts
 * checks each of these.)
 *
 * A large typed array in a message that travelled split arrives as a view of the received body rather than a
 * copy of it (see `typedArray`): a collecting rank then holds each result once, not its copy beside the body it
 * came in until the next GC (`npm run bench -- map`, 64 results of 1 MiB on rank 0 of 3: peak RSS growth over
 * the results' bytes 1.06x, 1.59x when each was copied; test/comm/memory.slow.test.ts, a 256 MiB Float64Array
 * received: 1.25x, 2.12x).
 */
export const HEADER_BYTES = 17;

/**
 * msgpackr, with its native string decoding (msgpackr-extract, about 3.5x faster on messages of many strings).
 * That addon's loader (node-gyp-build-optional-packages) asks detect-libc which C library this is, and detect-libc
 * loads node's child_process to find out: 3.6 ms of every rank's start, for a fact this process's memory map
 * already holds. So the loader is told (LIBC, its documented override) while msgpackr loads, and the variable is
 * left as it was; where the map does not say, or LIBC is set, the loader asks as before.
 */
function loadMsgpackr(): typeof Msgpackr {
  const require = createRequire(import.meta.url);
  const libc = process.env.LIBC === undefined ? loadedLibc() : undefined;
  if (libc === undefined) return require("msgpackr") as typeof Msgpackr;
  process.env.LIBC = libc;
  try {
    return require("msgpackr") as typeof Msgpackr;
  } finally {
    delete process.env.LIBC;
  }
}

/** The C library mapped into this process (Linux), as node-gyp-build names it; undefined where it cannot tell. */
function loadedLibc(): "glibc" | "musl" | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const maps = readFileSync("/proc/self/maps", "latin1");
    if (/\/ld-musl-[^/\n]*$/m.test(maps)) return "musl";
    if (/\/libc\.so\.6$/m.test(maps)) return "glibc";
  } catch {
    /* no /proc: the loader asks */
  }
  return undefined;
}
const MSGPACK = 0;
const BYTES = 1;
/** The body length must fit the header's u32. */
const MAX_BODY_BYTES = 2 ** 32 - 1;

/** Thrown by msgpackr's `writeFunction` hook; `encodeMessage` turns it into an EncodeError with the path. */
const FUNCTION_FOUND = new Error("a function cannot be sent");

/** msgpackr's flag that makes `pack` leave room at the start of its output (msgpackr's RESERVE_START_SPACE). */
let reserveStart = 0;
let loadedPackr: Msgpackr.Packr | undefined;

/**
 * The encoder and decoder of every message, made on first use. msgpackr is loaded with `require`: its CommonJS
 * build is one file, where its ES module build is five that Node's loader reads, resolves and links one by one
 * (a rank's loading of workpool took 45.5 ms of CPU against 48.3, median of 60 each, node 20 on a 2-core EPYC).
 * It is loaded on the first message rather than with this module: with its native string decoding it takes about
 * 9 ms, which a world of one that sends nothing (`launch -n 1`, `node app.js`) need not pay. Only this module
 * uses msgpackr, so no other copy of it meets these messages (and the typed-array decoder below is registered
 * with this copy, whose extension table is the one these messages are decoded with).
 */
function packr(): Msgpackr.Packr {
  if (loadedPackr !== undefined) return loadedPackr;
  const { addExtension, Packr, RESERVE_START_SPACE } = loadMsgpackr();
  addExtension({ type: TYPED_ARRAY_EXT, unpack: typedArray });
  reserveStart = RESERVE_START_SPACE;
  loadedPackr = new Packr({
    moreTypes: true,
    writeFunction: () => {
      throw FUNCTION_FOUND;
    },
  });
  return loadedPackr;
}

/**
 * The body `decodeSplit` is decoding, while it decodes one that owns its whole buffer and is large enough to hold
 * a typed array worth a view (see `typedArray`); undefined the rest of the time.
 */
let ownedBody: Uint8Array | undefined;
/** A typed array smaller than this is copied out of its body (as msgpackr does): a copy of it costs little. */
const VIEW_BYTES = 64 * 1024;
/** msgpackr's typed array extension, whose type codes index this list (msgpackr's `typedArrays`). */
const TYPED_ARRAY_EXT = 0x74;
const TYPED_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;

/**
 * Decodes msgpackr's typed array extension: `data` is its type code and then the array's bytes, a view of the
 * body being decoded. msgpackr's own decoder copies the bytes into a new ArrayBuffer, because they may lie at
 * any offset and a typed array must start at a multiple of its element size. Here, while `decodeSplit` decodes a
 * body that owns its buffer (ZeroMQ's received part, or the buffer the transport put pieces together in, which
 * nothing else holds), a typed array of VIEW_BYTES or more that is most of that body becomes a view of it: its
 * bytes are first moved back to the nearest aligned offset, at most 7 bytes, over the extension's own header
 * (ext32: 6 bytes and the type code), which msgpackr has read and does not read again; nothing after the array
 * is touched. A view keeps its whole buffer alive, so only an array that is at least 8/9 of the body becomes
 * one (the rest of the body then costs at most an eighth more); any other is copied as msgpackr does. Outside
 * `decodeSplit` this is msgpackr's decoder, unchanged (the extension table is msgpackr's, shared by the
 * process). What a hostile peer could send is checked as before: msgpackr has checked that the extension lies
 * within the body, and a byte count that is not a multiple of the element size throws RangeError, as it did.
 */
function typedArray(data: Uint8Array): unknown {
  const code = data[0] as number;
  const Kind = TYPED_ARRAYS[code];
  const bytes = data.length - 1;
  const body = ownedBody;
  if (
    Kind !== undefined &&
    body !== undefined &&
    data.buffer === body.buffer &&
    bytes >= VIEW_BYTES &&
    (body.length - bytes) * 8 <= bytes &&
    bytes % Kind.BYTES_PER_ELEMENT === 0
  ) {
    const at = data.byteOffset + 1;
    const to = at - (at % Kind.BYTES_PER_ELEMENT);
    if (to !== at) new Uint8Array(body.buffer).copyWithin(to, at, at + bytes);
    return new Kind(body.buffer as ArrayBuffer, to, bytes / Kind.BYTES_PER_ELEMENT);
  }
  const buffer = Uint8Array.prototype.slice.call(data, 1).buffer;
  if (Kind !== undefined) return new Kind(buffer);
  if (code === 16) return buffer;
  if (code === 17) return new DataView(buffer);
  throw new Error(`Could not find typed array for code ${code}`);
}

/**
 * How an EncodeError names the value: the root's name (`data`, `value`), or a function of the path to the bad
 * part, for a value that is a piece of what the caller gave (a collective sending some of `values`).
 */
export type ValueName = string | ((path: readonly Step[]) => string);

function writeHeader(b: Uint8Array, length: number, source: number, context: number, tag: number, kind: number) {
  b[0] = length;
  b[1] = length >>> 8;
  b[2] = length >>> 16;
  b[3] = length >>> 24;
  b[4] = source;
  b[5] = source >>> 8;
  b[6] = source >>> 16;
  b[7] = source >>> 24;
  b[8] = context;
  b[9] = context >>> 8;
  b[10] = context >>> 16;
  b[11] = context >>> 24;
  b[12] = tag;
  b[13] = tag >>> 8;
  b[14] = tag >>> 16;
  b[15] = tag >>> 24;
  b[16] = kind;
}

function u32(b: Uint8Array, at: number): number {
  return (
    ((b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16)) + (b[at + 3] as number) * 2 ** 24
  );
}

/**
 * Encodes one message. Throws EncodeError naming `call` and the path to the bad part (its root named `name`)
 * when `data` cannot be sent faithfully (see the file comment).
 */
export function encodeMessage(
  source: number,
  context: number,
  tag: number,
  data: unknown,
  call: string,
  name: ValueName = "data",
): Buffer {
  if (data instanceof Uint8Array && data.constructor === Uint8Array) {
    checkLength(data.length, call);
    const b = Buffer.allocUnsafe(HEADER_BYTES + data.length);
    writeHeader(b, data.length, source, context, tag, BYTES);
    b.set(data, HEADER_BYTES);
    return b;
  }
  let b: Buffer;
  try {
    // msgpackr leaves the first HEADER_BYTES of its output for us, so the message is built without a copy.
    b = packr().pack(data, reserveStart | HEADER_BYTES);
  } catch (cause) {
    throw encodeError(data, call, name, cause);
  }
  checkLength(b.length - HEADER_BYTES, call);
  writeHeader(b, b.length - HEADER_BYTES, source, context, tag, MSGPACK);
  return b;
}

/** The EncodeError for `data`, which msgpackr refused with `cause`. Runs only once sending has failed. */
function encodeError(data: unknown, call: string, name: ValueName, cause: unknown): EncodeError {
  const found = findUnsendable(data);
  if (found) {
    const at = typeof name === "string" ? where(name, found.path) : name(found.path);
    const message = `${call}: ${at} ${found.what}, which cannot be sent`;
    return new EncodeError(message, cause === FUNCTION_FOUND ? undefined : { cause });
  }
  const why = cause instanceof Error ? cause.message : String(cause);
  const root = typeof name === "string" ? name : name([]);
  return new EncodeError(`${call}: ${root} cannot be encoded by msgpackr (${why})`, { cause });
}

function checkLength(length: number, call: string): void {
  if (length > MAX_BODY_BYTES) {
    throw new EncodeError(`${call}: data is ${length} bytes encoded; a message holds at most ${MAX_BODY_BYTES}`);
  }
}

/**
 * Calls `each` for every message in a frame, in the order they were packed. A BYTES body arrives as a plain
 * Uint8Array with a buffer of its own (copied out of the frame, so keeping it does not keep the frame).
 */
export function decodeFrame(
  frame: Buffer,
  each: (source: number, context: number, tag: number, data: unknown) => void,
): void {
  const end = frame.length;
  let at = 0;
  while (at < end) {
    if (at + HEADER_BYTES > end) throw new Error(`corrupt frame: ${end - at} bytes left, less than a header`);
    const body = at + HEADER_BYTES;
    const next = body + u32(frame, at);
    if (next > end) throw new Error(`corrupt frame: a message of ${next - body} bytes overruns the frame`);
    const source = u32(frame, at + 4);
    const context = u32(frame, at + 8);
    const tag = u32(frame, at + 12);
    const kind = frame[at + 16];
    let data: unknown;
    if (kind === BYTES) data = copyOut(frame, body, next);
    // msgpackr reads the frame itself: a Buffer inside `data` then arrives as a Buffer, as it was sent.
    else if (kind === MSGPACK) data = packr().unpack(frame, { start: body, end: next });
    else throw new Error(`corrupt frame from rank ${source}: unknown body kind ${kind}`);
    at = next;
    each(source, context, tag, data);
  }
}

/** Copies `frame[start, end)` into a plain Uint8Array of its own, whatever the frame's class. */
function copyOut(frame: Uint8Array, start: number, end: number): Uint8Array {
  const out = new Uint8Array(end - start);
  if (end - start <= 64) for (let i = start; i < end; i++) out[i - start] = frame[i] as number;
  else out.set(new Uint8Array(frame.buffer, frame.byteOffset + start, end - start));
  return out;
}

/**
 * Decodes one message that travelled split: `header` is exactly its header, `body` its body (a ZeroMQ part of
 * its own), which the decoder takes over: it may move bytes within it (see `typedArray`) and hand it on as the
 * data. A BYTES body becomes the data without a copy when it owns its whole buffer, which ZeroMQ's received
 * parts do, so the result is the same as `decodeFrame` gives: a Uint8Array with a buffer of its own. In a
 * MSGPACK body that owns its buffer, a large typed array becomes a view of it (`typedArray`).
 */
export function decodeSplit(
  header: Uint8Array,
  body: Buffer,
  each: (source: number, context: number, tag: number, data: unknown) => void,
): void {
  if (header.length !== HEADER_BYTES) throw new Error(`corrupt message: a header of ${header.length} bytes`);
  if (u32(header, 0) !== body.length) {
    throw new Error(`corrupt message: header says ${u32(header, 0)} bytes, body has ${body.length}`);
  }
  const kind = header[16];
  const owns = body.byteOffset === 0 && body.buffer.byteLength === body.length;
  let data: unknown;
  if (kind === BYTES) data = owns ? new Uint8Array(body.buffer, 0, body.length) : new Uint8Array(body);
  else if (kind === MSGPACK) {
    ownedBody = owns && body.length >= VIEW_BYTES ? body : undefined;
    try {
      data = packr().unpack(body);
    } finally {
      ownedBody = undefined;
    }
  } else throw new Error(`corrupt message: unknown body kind ${kind}`);
  each(u32(header, 4), u32(header, 8), u32(header, 12), data);
}

/** Plain encode/decode of a single value (bootstrap messages, files). */
export function pack(value: unknown): Buffer {
  return packr().pack(value);
}

export function unpack(buffer: Uint8Array): unknown {
  return packr().unpack(buffer as Buffer);
}
