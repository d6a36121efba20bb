/**
 * The wire format in this process (lib/comm/codec.ts): the header's fields at their extremes, every type the
 * codec promises to keep (typed arrays, Maps, Sets, Dates, Errors, BigInts, nested objects; plain Uint8Array
 * as raw bytes), several messages in one frame at odd offsets, split messages, bodies whose length uses every
 * byte of the u32, self-contained bodies (decodable by a fresh decoder in any order), EncodeError naming the
 * path for what cannot be sent faithfully (functions, symbols, cycles), and clear errors for corrupt frames.
 */
import test, { type ExecutionContext } from "ava";
import { Packr } from "msgpackr";
import {
  decodeFrame,
  decodeSplit,
  encodeMessage,
  HEADER_BYTES,
  pack,
  unpack,
  type ValueName,
} from "../../lib/comm/codec.ts";
import { EncodeError } from "../../lib/errors.ts";
import { fixture, startNode } from "../helpers/run.ts";

interface Decoded {
  readonly source: number;
  readonly context: number;
  readonly tag: number;
  readonly data: unknown;
}

function frame(buffer: Buffer): Decoded[] {
  const out: Decoded[] = [];
  decodeFrame(buffer, (source, context, tag, data) => out.push({ source, context, tag, data }));
  return out;
}

function split(message: Buffer): Decoded {
  const out: Decoded[] = [];
  // As ZeroMQ hands them over: the header and the body each a buffer of its own.
  const header = Buffer.from(message.subarray(0, HEADER_BYTES));
  const body = Buffer.from(message.subarray(HEADER_BYTES));
  decodeSplit(header, body, (source, context, tag, data) => out.push({ source, context, tag, data }));
  return out[0] as Decoded;
}

/** `value` through both paths: alone in a frame, and split. */
function roundTrips(value: unknown): [unknown, unknown] {
  const message = encodeMessage(1, 2, 3, value, "send");
  const decoded = frame(message);
  if (decoded.length !== 1) throw new Error(`${decoded.length} messages decoded`);
  return [decoded[0]?.data, split(message).data];
}

test("header fields survive at their extremes (the largest u32 is close's own context)", (t) => {
  const max = 2 ** 32 - 1;
  for (const [source, context, tag] of [
    [0, 0, 0],
    [1023, 2, 2 ** 31 - 1],
    [max, max, max],
    [0x01020304, 0x80000000, 0xff00ff00],
  ] as const) {
    const message = encodeMessage(source, context, tag, "x", "send");
    t.deepEqual(frame(message), [{ source, context, tag, data: "x" }]);
    t.deepEqual(split(message), { source, context, tag, data: "x" });
  }
});

const SAME_VALUES: [string, unknown][] = [
  ["undefined", undefined],
  ["null", null],
  ["true", true],
  ["false", false],
  ["zero", 0],
  ["a negative int", -123456],
  ["a float", 0.1],
  ["NaN", Number.NaN],
  ["Infinity", Number.POSITIVE_INFINITY],
  ["-Infinity", Number.NEGATIVE_INFINITY],
  ["the largest safe integer", Number.MAX_SAFE_INTEGER],
  ["a number past 2^53", 2 ** 60],
  ["a u32 past 2^31", 2 ** 31 + 5],
  ["an empty string", ""],
  ["a unicode string", "grüße, 世界 🎉"],
  ["a long string", "ab".repeat(40_000)],
  ["an empty array", []],
  ["an empty object", {}],
  ["a sparse array (holes become undefined)", [1, undefined, 3]],
  ["nested objects and arrays", { a: [1, { b: [2, { c: "deep" }] }], d: { e: null } }],
];

for (const [what, value] of SAME_VALUES) {
  test(`round trip: ${what}`, (t) => {
    for (const got of roundTrips(value)) t.deepEqual(got, value);
  });
}

test("round trip: BigInts of every size, positive and negative", (t) => {
  for (const value of [
    0n,
    5n,
    -1n,
    2n ** 63n - 1n,
    -(2n ** 63n),
    2n ** 64n - 1n,
    2n ** 64n,
    2n ** 200n,
    -(2n ** 130n),
  ]) {
    for (const got of roundTrips(value)) {
      t.is(typeof got, "bigint", `${value}`);
      t.is(got, value);
    }
  }
});

test("round trip: Dates (an invalid one too), Maps with any keys, Sets, RegExps", (t) => {
  for (const got of roundTrips(new Date(Date.UTC(2024, 1, 29, 12, 0, 0, 123)))) {
    t.true(got instanceof Date);
    t.is((got as Date).toISOString(), "2024-02-29T12:00:00.123Z");
  }
  for (const got of roundTrips(new Date(Number.NaN))) {
    t.true(got instanceof Date);
    t.true(Number.isNaN((got as Date).getTime()));
  }
  const map = new Map<unknown, unknown>([
    [1, "one"],
    ["k", { nested: new Set([1, 2]) }],
    [2n, [3]],
  ]);
  for (const got of roundTrips(map)) {
    t.true(got instanceof Map);
    t.deepEqual(got, map);
  }
  for (const got of roundTrips(new Set(["a", 1, null]))) {
    t.true(got instanceof Set);
    t.deepEqual([...(got as Set<unknown>)], ["a", 1, null]);
  }
  for (const got of roundTrips(/a+b/gi)) t.deepEqual(got, /a+b/gi);
});

test("round trip: Errors keep their class name and message", (t) => {
  for (const error of [new Error("plain"), new RangeError("out of range"), new TypeError("wrong type")]) {
    for (const got of roundTrips(error)) {
      t.true(got instanceof Error);
      t.is((got as Error).name, error.name);
      t.is((got as Error).message, error.message);
    }
  }
});

const TYPED: [string, ArrayBufferView][] = [
  ["Float64Array", new Float64Array([1.5, -0, Number.NaN, Number.MAX_VALUE])],
  ["Float32Array", new Float32Array([1.5, -2.25])],
  ["Int8Array", new Int8Array([-128, 127])],
  ["Int16Array", new Int16Array([-32768, 32767])],
  ["Int32Array", new Int32Array([-(2 ** 31), 2 ** 31 - 1])],
  ["Uint16Array", new Uint16Array([0, 65535])],
  ["Uint32Array", new Uint32Array([0, 2 ** 32 - 1])],
  ["Uint8ClampedArray", new Uint8ClampedArray([0, 255])],
  ["BigInt64Array", new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n])],
  ["BigUint64Array", new BigUint64Array([0n, 2n ** 64n - 1n])],
];

for (const [name, value] of TYPED) {
  test(`round trip: ${name} keeps its type and elements (-0 and NaN too), alone and nested`, (t) => {
    const nested = roundTrips({ inside: [value] }).map((v) => (v as { inside: unknown[] }).inside[0]);
    for (const got of [...roundTrips(value), ...nested]) {
      t.is(got?.constructor?.name, name);
      t.deepEqual([...(got as unknown as Iterable<unknown>)], [...(value as unknown as Iterable<unknown>)]);
      if (name === "Float64Array") t.true(Object.is((got as Float64Array)[1], -0));
    }
  });
}

test("a typed array viewing part of a larger buffer sends its elements only", (t) => {
  const backing = new ArrayBuffer(64);
  new Float64Array(backing).set([9, 1, 2, 3, 9, 9, 9, 9]);
  const view = new Float64Array(backing, 8, 3);
  for (const got of roundTrips(view)) t.deepEqual([...(got as Float64Array)], [1, 2, 3]);
  const bytes = new Uint8Array(backing, 8, 8);
  for (const got of roundTrips(bytes)) {
    t.is((got as Uint8Array).length, 8);
    t.deepEqual(got, new Uint8Array(new Float64Array([1]).buffer));
  }
});

test("a plain Uint8Array travels as raw bytes and arrives as a Uint8Array owning its buffer", (t) => {
  for (const length of [0, 1, 64, 65, 1000]) {
    const value = Uint8Array.from({ length }, (_, i) => (i * 7) & 0xff);
    const message = encodeMessage(0, 0, 0, value, "send");
    t.is(message.length, HEADER_BYTES + length, "no msgpack framing around raw bytes");
    for (const got of roundTrips(value)) {
      t.is((got as object).constructor, Uint8Array);
      t.deepEqual(got, value);
      // Its own buffer: keeping it does not keep the frame it came in alive.
      t.is((got as Uint8Array).byteOffset, 0);
      t.is((got as Uint8Array).buffer.byteLength, length);
    }
  }
});

test("a Buffer arrives as a Buffer, alone or nested", (t) => {
  for (const got of roundTrips(Buffer.from("hello"))) {
    t.true(Buffer.isBuffer(got));
    t.is((got as Buffer).toString(), "hello");
  }
  for (const got of roundTrips({ b: Buffer.from("nested") })) {
    t.true(Buffer.isBuffer((got as { b: unknown }).b));
    t.is((got as { b: Buffer }).b.toString(), "nested");
  }
});

test("what msgpack cannot tell apart, documented: -0 as a number becomes 0; class instances lose their prototype", (t) => {
  for (const got of roundTrips(-0)) t.true(Object.is(got, 0));
  // Class instances arrive as plain objects with their own fields (methods live on the prototype).
  class Point {
    constructor(
      readonly x: number,
      readonly y: number,
    ) {}
    norm() {
      return Math.hypot(this.x, this.y);
    }
  }
  for (const got of roundTrips(new Point(3, 4))) {
    t.is(Object.getPrototypeOf(got), Object.prototype);
    t.deepEqual(got, { x: 3, y: 4 });
  }
  // Symbol-keyed fields are left out, as with JSON.
  for (const got of roundTrips({ [Symbol("k")]: 1, x: 2 })) t.deepEqual(got, { x: 2 });
});

test("several messages in one frame decode in order, each at an odd offset (the header is 17 bytes)", (t) => {
  const values: unknown[] = [
    new Float64Array([1, 2, 3]),
    "a",
    Uint8Array.from([1, 2, 3]),
    new BigInt64Array([7n]),
    { m: new Map([[1, new Int32Array([-5])]]) },
    new Uint8Array(0),
    null,
  ];
  const messages = values.map((v, i) => encodeMessage(i, 10 + i, 20 + i, v, "send"));
  const decoded = frame(Buffer.concat(messages));
  t.is(decoded.length, values.length);
  for (const [i, d] of decoded.entries()) {
    t.like(d, { source: i, context: 10 + i, tag: 20 + i });
    t.deepEqual(d.data, values[i]);
  }
});

test("bodies are self-contained: a fresh decoder reads same-shaped records in any order", (t) => {
  const messages = [0, 1, 2, 3].map((i) =>
    encodeMessage(
      0,
      0,
      0,
      [
        { a: i, b: "x" },
        { a: i + 1, b: "y", c: [{ a: 1, b: "z" }] },
      ],
      "send",
    ),
  );
  for (const message of messages.reverse()) {
    const fresh = new Packr({ moreTypes: true });
    const i = (fresh.unpack(message.subarray(HEADER_BYTES)) as { a: number }[])[0]?.a as number;
    t.deepEqual(fresh.unpack(message.subarray(HEADER_BYTES)), [
      { a: i, b: "x" },
      { a: i + 1, b: "y", c: [{ a: 1, b: "z" }] },
    ]);
  }
  t.deepEqual(
    frame(Buffer.concat(messages)).map((d) => (d.data as { a: number }[])[0]?.a),
    [3, 2, 1, 0],
  );
});

test("an encoded message stays as it was while later ones are encoded (it may wait in a queue)", (t) => {
  const values = Array.from({ length: 2000 }, (_, i) => (i % 2 ? { i, s: "x".repeat(i % 97) } : new Float64Array([i])));
  const messages = values.map((v, i) => encodeMessage(i, 0, i, v, "send"));
  for (const [i, message] of messages.entries())
    t.deepEqual(frame(message), [{ source: i, context: 0, tag: i, data: values[i] }]);
});

test("body lengths that use each byte of the u32 length field", (t) => {
  for (const length of [255, 256, 65_535, 65_536, 2 ** 24 + 1]) {
    const value = new Uint8Array(length);
    value[0] = 1;
    value[length - 1] = 2;
    const message = encodeMessage(5, 6, 7, value, "send");
    t.is(message.readUInt32LE(0), length);
    // A second message right after it: the length must say exactly where the first ends.
    const decoded = frame(Buffer.concat([message, encodeMessage(5, 6, 8, "next", "send")]));
    t.is(decoded.length, 2);
    const got = decoded[0]?.data as Uint8Array;
    t.is(got.length, length);
    t.is(got[0], 1);
    t.is(got[length - 1], 2);
    t.deepEqual(decoded[1], { source: 5, context: 6, tag: 8, data: "next" });
    const whole = split(message).data as Uint8Array;
    t.is(whole.length, length);
    t.is(whole[length - 1], 2);
  }
});

test("a split body that owns its buffer becomes the data without a copy; one that does not is copied", (t) => {
  const message = encodeMessage(0, 0, 0, Uint8Array.from([1, 2, 3]), "send");
  const header = message.subarray(0, HEADER_BYTES);
  const own = Buffer.alloc(3); // not from Node's shared pool: it owns its whole buffer, as ZeroMQ's parts do
  own.set([1, 2, 3]);
  let got: unknown;
  decodeSplit(header, own, (_s, _c, _t, data) => (got = data));
  t.is((got as Uint8Array).buffer, own.buffer);
  t.is((got as object).constructor, Uint8Array);
  const shared = Buffer.from([9, 1, 2, 3]).subarray(1); // a view into a larger buffer
  decodeSplit(header, shared, (_s, _c, _t, data) => (got = data));
  t.not((got as Uint8Array).buffer, shared.buffer);
  t.deepEqual(got, Uint8Array.from([1, 2, 3]));
});

/** The body of `message`, as ZeroMQ hands a split message's body over: a buffer of its own. */
function ownBody(message: Buffer): Buffer {
  const body = Buffer.allocUnsafeSlow(message.length - HEADER_BYTES);
  message.copy(body, 0, HEADER_BYTES);
  return body;
}

/** What `decodeSplit` gives for `message`, its body handed over as `body`. */
function splitData(message: Buffer, body: Buffer): unknown {
  let got: unknown;
  decodeSplit(message.subarray(0, HEADER_BYTES), body, (_s, _c, _t, data) => (got = data));
  return got;
}

const LARGE_KINDS = [Uint8ClampedArray, Int16Array, Uint32Array, Float32Array, Float64Array, BigInt64Array] as const;

test("a large typed array that is most of a split body arrives as a view of it, right at every offset", (t) => {
  for (const Kind of LARGE_KINDS) {
    // Data before the array shifts it to each offset modulo 8 within the body.
    for (let pad = 0; pad < 8; pad++) {
      const n = (128 * 1024) / Kind.BYTES_PER_ELEMENT + pad;
      const sent = new Kind(n);
      for (let i = 0; i < n; i++) sent[i] = (Kind === BigInt64Array ? BigInt(i * 3 - n) : (i * 7 + pad) % 251) as never;
      const message = encodeMessage(1, 2, 3, { m: 7, lo: "x".repeat(pad), v: [sent] }, "send");
      const body = ownBody(message);
      const got = (splitData(message, body) as { lo: string; v: [InstanceType<typeof Kind>] }).v[0];
      t.is(got.constructor, Kind);
      t.is<unknown, unknown>(got.buffer, body.buffer, `${Kind.name}, pad ${pad}: a view of the body`);
      t.is(got.byteOffset % Kind.BYTES_PER_ELEMENT, 0);
      t.true(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(sent.buffer)));
    }
  }
});

test("a typed array decoded as a view stays as it was while later bodies arrive and are decoded", (t) => {
  const first = new Float64Array(16 * 1024).map((_, i) => i + 0.5);
  const message = encodeMessage(0, 0, 0, [first], "send");
  const got = (splitData(message, ownBody(message)) as [Float64Array])[0];
  for (let k = 0; k < 3; k++) {
    const later = encodeMessage(0, 0, 0, [new Float64Array(16 * 1024).fill(-k)], "send");
    const body = ownBody(later);
    t.deepEqual((splitData(later, body) as [Float64Array])[0][5], -k);
    body.fill(0xff);
  }
  t.true(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(first.buffer)));
});

test("a typed array is copied where a view would keep more than itself, or its buffer is not the body's", (t) => {
  const array = new Float64Array(16 * 1024).fill(2.5);
  const cases: [string, unknown, (m: Buffer) => Buffer][] = [
    ["a small one", { a: new Float64Array(1000).fill(2.5), s: "y".repeat(70_000) }, ownBody],
    ["one beside as much else", { a: array, s: "y".repeat(70_000) }, ownBody],
    ["one in a body that is a view of a larger buffer", { a: array }, (m) => Buffer.from(m).subarray(HEADER_BYTES)],
  ];
  for (const [what, value, bodyOf] of cases) {
    const message = encodeMessage(0, 0, 0, value, "send");
    const body = bodyOf(message);
    const got = (splitData(message, body) as { a: Float64Array }).a;
    t.not(got.buffer, body.buffer, what);
    t.is(got.buffer.byteLength, got.byteLength, what);
    t.is(got[got.length - 1], 2.5, what);
  }
  // In a frame, and in msgpackr used directly, a typed array is a copy, as msgpackr makes it.
  const message = encodeMessage(0, 0, 0, [array], "send");
  t.is((frame(message)[0]?.data as [Float64Array])[0].buffer.byteLength, array.byteLength);
  const packr = new Packr({ moreTypes: true });
  const packed = packr.pack([array]);
  t.not((packr.unpack(packed) as [Float64Array])[0].buffer, packed.buffer);
});

test("a large typed array whose byte count does not fit its elements is a decode error, as before", (t) => {
  const message = encodeMessage(0, 0, 0, [new Float64Array(16 * 1024)], "send");
  const body = ownBody(message);
  // The ext32 header (0xc9, a u32 length, 0x74, the type code) right after the array header (0x91).
  t.is(body[1], 0xc9);
  t.is(body[6], 0x74);
  body[7] = 4; // Uint16Array (msgpackr's type codes): 128 KiB fits its elements
  const got = (splitData(message, body) as [Uint16Array])[0];
  t.is(got.constructor, Uint16Array);
  t.is(got.length, 64 * 1024);
  const bad = ownBody(message);
  bad[7] = 8; // Float64Array
  bad.writeUInt32BE(128 * 1024 - 3 + 1, 2); // 128 KiB - 3 bytes: not a multiple of 8, and within the body
  t.throws(() => splitData(message, bad), { instanceOf: RangeError });
  const unknown = ownBody(message);
  unknown[7] = 99;
  t.throws(() => splitData(message, unknown), { message: "Could not find typed array for code 99" });
});

/** The EncodeError `encodeMessage` throws for `value`, sent by `call` (optionally naming the value). */
function refused(t: ExecutionContext, value: unknown, call = "send", name?: ValueName): EncodeError {
  const e = t.throws(() => encodeMessage(0, 0, 0, value, call, name), { instanceOf: EncodeError }) as EncodeError;
  t.is(e.code, "WP_ENCODE");
  t.is(e.name, "EncodeError");
  return e;
}

test("a function or a symbol anywhere in the data is an EncodeError naming the call and the path to it", (t) => {
  const named = function onClick() {};
  const cases: [unknown, string][] = [
    [() => 1, "send: data is a function, which cannot be sent"],
    [{ handlers: [1, {}, named] }, "send: data.handlers[2] is a function, which cannot be sent"],
    [{ deep: [1, { s: Symbol("deeper") }] }, "send: data.deep[1].s is a symbol (Symbol(deeper)), which cannot be sent"],
    [Symbol("top"), "send: data is a symbol (Symbol(top)), which cannot be sent"],
    [{ "odd key": { f: named } }, 'send: data["odd key"].f is a function, which cannot be sent'],
    [new Map([["k", { f: named }]]), 'send: data.get("k").f is a function, which cannot be sent'],
    [
      new Map<unknown, unknown>([
        [1, 1],
        [named, 2],
      ]),
      "send: data.keys()[1] is a function, which cannot be sent",
    ],
    [new Map([[7, [named]]]), "send: data.get(7)[0] is a function, which cannot be sent"],
    [
      { s: new Set([1, Symbol.iterator]) },
      "send: data.s.values()[1] is a symbol (Symbol(Symbol.iterator)), which cannot be sent",
    ],
    [new Error("e", { cause: { retry: named } }), "send: data.cause.retry is a function, which cannot be sent"],
    [
      [new Float64Array(2), new Date(0), /x/, { ok: [null, undefined, 1n] }, { later: named }],
      "send: data[4].later is a function, which cannot be sent",
    ],
  ];
  for (const [value, message] of cases) {
    const e = refused(t, value);
    t.is(e.message, message);
  }
  // A class instance whose own field holds a function (a bound method, an arrow-function field).
  class Widget {
    readonly id = 3;
    readonly onTick = () => this.id;
  }
  t.is(refused(t, { w: new Widget() }).message, "send: data.w.onTick is a function, which cannot be sent");
  // A class instance with toJSON is sent as what toJSON returns (as msgpackr encodes it).
  class Custom {
    toJSON() {
      return { f: named };
    }
  }
  t.is(refused(t, [new Custom()]).message, "send: data[0].toJSON().f is a function, which cannot be sent");
  // The call is the one named, and the encoder is still usable afterwards.
  t.is(
    refused(t, { f: named }, "allgather", "value").message,
    "allgather: value.f is a function, which cannot be sent",
  );
  t.deepEqual(frame(encodeMessage(0, 0, 0, { ok: true }, "send"))[0]?.data, { ok: true });
});

test("a circular structure is an EncodeError naming where it refers back; a deep but finite one is sent", (t) => {
  const circular: Record<string, unknown> = { a: [1, {}] };
  (circular.a as unknown[])[1] = { back: circular };
  const e = refused(t, { top: circular }, "bcast", "value");
  t.is(
    e.message,
    "bcast: value.top.a[1].back refers back to an object that contains it (a circular structure), which cannot be sent",
  );
  t.truthy(e.cause, "msgpackr's own error is the cause");
  // The same object twice, side by side, is not a cycle.
  const shared = { n: 1 };
  for (const got of roundTrips([shared, shared])) t.deepEqual(got, [{ n: 1 }, { n: 1 }]);
});

test("a collective names the part of `values` that cannot be sent by its index in the caller's array", (t) => {
  const name: ValueName = (path) => (typeof path[0] === "number" ? `values[${[4, 7][path[0]]}]` : "values");
  const e = refused(t, [1, { f: () => 1 }], "reduceScatter", name);
  t.is(e.message, "reduceScatter: values[7] is a function, which cannot be sent");
});

test("corrupt frames and split messages throw errors that say what is wrong", (t) => {
  const good = encodeMessage(1, 2, 3, "hello", "send");
  t.deepEqual(frame(Buffer.alloc(0)), [], "an empty frame holds no message");
  t.throws(() => frame(good.subarray(0, 10)), { message: "corrupt frame: 10 bytes left, less than a header" });
  t.throws(() => frame(good.subarray(0, good.length - 1)), {
    message: `corrupt frame: a message of ${good.length - HEADER_BYTES} bytes overruns the frame`,
  });
  const trailing = Buffer.concat([good, Buffer.from([1, 2])]);
  const seen: unknown[] = [];
  t.throws(() => decodeFrame(trailing, (_s, _c, _t, data) => seen.push(data)), {
    message: "corrupt frame: 2 bytes left, less than a header",
  });
  t.deepEqual(seen, ["hello"], "the messages before the damage were delivered");
  const badKind = Buffer.from(good);
  badKind[16] = 9;
  t.throws(() => frame(badKind), { message: "corrupt frame from rank 1: unknown body kind 9" });
  t.throws(() => decodeSplit(good.subarray(0, 16), good.subarray(HEADER_BYTES), () => {}), {
    message: "corrupt message: a header of 16 bytes",
  });
  t.throws(() => decodeSplit(good.subarray(0, HEADER_BYTES), good.subarray(HEADER_BYTES + 1), () => {}), {
    message: `corrupt message: header says ${good.length - HEADER_BYTES} bytes, body has ${good.length - HEADER_BYTES - 1}`,
  });
  t.throws(() => decodeSplit(badKind.subarray(0, HEADER_BYTES), good.subarray(HEADER_BYTES), () => {}), {
    message: "corrupt message: unknown body kind 9",
  });
});

test("pack and unpack round-trip a single value with the same types", (t) => {
  const value = { m: new Map([["k", 1n]]), d: new Date(0), f: new Float32Array([0.5]), s: new Set([1]) };
  t.deepEqual(unpack(pack(value)), value);
});

// Neither zeromq nor msgpackr is loaded with workpool, nor by a world of one (`node app.js`, `launch -n 1`), which
// sends nothing: about 15 ms of a start. msgpackr's native string decoding is loaded with the codec's first use,
// without node's child_process (which detect-libc would load to learn the C library: codec.ts `loadMsgpackr`
// tells msgpackr-extract's loader), and LIBC is left exactly as it was: unset stays unset, a value stays that
// value.
test("a world of one loads no zeromq or msgpackr; the codec loads msgpackr's native decoding without child_process, and leaves LIBC as it was", async (t) => {
  const probe = fixture("codec-load.mjs");
  const none = { zeromq: false, msgpackr: false };
  for (const libc of [undefined, "glibc"]) {
    const r = await startNode([probe], libc === undefined ? {} : { LIBC: libc }).result;
    t.is(r.code, 0, r.stderr);
    t.deepEqual(JSON.parse(r.stdout), {
      imported: none,
      worldOfOne: none,
      native: true,
      childProcess: false,
      libc: libc ?? null,
    });
  }
});
