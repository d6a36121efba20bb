import { writeFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import {
  encodePgm,
  encodeYuv,
  type Frame,
  parsePgm,
  parseSize,
  readPgm,
  readYuv,
  writePgm,
  writeYuv,
  yuvFrameBytes,
  yuvFrameCount,
} from "../../apps/block-matching/frames.ts";
import { generateSequence } from "../../apps/block-matching/generate.ts";
import { InputError } from "../../apps/common/errors.ts";
import { tempDir, tempFile } from "./temp.ts";

const seq = generateSequence("48x32:4", 5);

test("parseSize", (t) => {
  t.deepEqual(parseSize("176x144"), { width: 176, height: 144 });
  for (const bad of ["176", "176x", "0x5", "5x0", "1.5x2", "x3", "176*144", "99999x2"]) {
    t.throws(() => parseSize(bad), { instanceOf: InputError, message: /--size must be WxH/ });
  }
});

test("I420 frame size", (t) => {
  t.is(yuvFrameBytes(176, 144), 38016);
  t.is(yuvFrameBytes(5, 3), 15 + 2 * 3 * 2);
});

test("YUV: round trip of generated frames, luma only, and a selection", async (t) => {
  const path = join(tempDir(t), "v.yuv");
  await writeYuv(path, seq.frames);
  t.is(await yuvFrameCount(path, 48, 32), 4);
  const frames = await readYuv(path, 48, 32);
  t.deepEqual(frames, seq.frames);
  const some = await readYuv(path, 48, 32, { first: 1, count: 2 });
  t.deepEqual(some, seq.frames.slice(1, 3));
  t.deepEqual(await readYuv(path, 48, 32, { first: 3 }), seq.frames.slice(3));
  await t.throwsAsync(readYuv(path, 48, 32, { first: 3, count: 2 }), { instanceOf: InputError, message: /has 4/ });
});

test("YUV: odd sizes round chroma up", async (t) => {
  const f: Frame = { width: 5, height: 3, luma: Uint8Array.from({ length: 15 }, (_, i) => i * 10) };
  const bytes = encodeYuv([f, f]);
  t.is(bytes.length, 2 * 27);
  const path = tempFile(t, "odd.yuv", bytes);
  t.deepEqual(await readYuv(path, 5, 3), [f, f]);
});

test("YUV: a size that is not a whole number of frames names file, size and frame size", async (t) => {
  const path = tempFile(t, "bad.yuv", new Uint8Array(38016 * 2 + 5));
  const err = await t.throwsAsync(readYuv(path, 176, 144), { instanceOf: InputError });
  t.is(err?.file, path);
  t.true(err?.message.startsWith(`${path}: size 76037 bytes`), err?.message);
  t.regex(err?.message ?? "", /176x144 I420 frames \(38016 bytes each\)/);
  await t.throwsAsync(yuvFrameCount(path, 176, 144), { instanceOf: InputError });
  const empty = tempFile(t, "empty.yuv", new Uint8Array(0));
  await t.throwsAsync(readYuv(empty, 176, 144), { instanceOf: InputError, message: /size 0 bytes/ });
  await t.throwsAsync(readYuv("/nonexistent.yuv", 176, 144), { code: "ENOENT" });
  await t.throwsAsync(readYuv(path, 0, 144), { instanceOf: InputError, message: /--size: size must be positive/ });
});

test("PGM: one multi-image file, several files, header comments", async (t) => {
  const dir = tempDir(t);
  const multi = join(dir, "all.pgm");
  await writePgm(multi, seq.frames);
  t.deepEqual(await readPgm(multi), seq.frames);
  const paths = seq.frames.map((f, i) => {
    const p = join(dir, `f${i}.pgm`);
    writeFileSync(p, encodePgm(f, `frame ${i}`));
    return p;
  });
  t.deepEqual(await readPgm(paths), seq.frames);
  const header = Buffer.from("P5 # a comment\n# another\n 3 #w\n2\n# maxval next\n200\n");
  const frames = parsePgm(Buffer.concat([header, Buffer.from([1, 2, 3, 4, 5, 200]), Buffer.from("\n\n")]));
  t.deepEqual(frames, [{ width: 3, height: 2, luma: Uint8Array.from([1, 2, 3, 4, 5, 200]) }]);
});

test("PGM errors", async (t) => {
  const dir = tempDir(t);
  const a = join(dir, "a.pgm");
  const b = join(dir, "b.pgm");
  writeFileSync(a, encodePgm({ width: 4, height: 4, luma: new Uint8Array(16) }));
  writeFileSync(b, encodePgm({ width: 4, height: 5, luma: new Uint8Array(20) }));
  const err = await t.throwsAsync(readPgm([a, b]), { instanceOf: InputError });
  t.true(err?.message.startsWith(`${b}: frame 1 is 4x5, the first frame is 4x4`), err?.message);
  const both = join(dir, "both.pgm");
  writeFileSync(
    both,
    Buffer.concat([
      encodePgm({ width: 4, height: 4, luma: new Uint8Array(16) }),
      encodePgm({ width: 2, height: 2, luma: new Uint8Array(4) }),
    ]),
  );
  await t.throwsAsync(readPgm(both), {
    instanceOf: InputError,
    message: /image 1 .*size 2x2 differs from the first frame's 4x4/,
  });
  const cases: [string, Buffer, RegExp][] = [
    ["p6", Buffer.from("P6\n1 1\n255\nabc"), /not a binary PGM \(P5\)/],
    ["ascii", Buffer.from("P2\n1 1\n255\n7\n"), /not a binary PGM/],
    ["16-bit", Buffer.concat([Buffer.from("P5\n1 1\n65535\n"), Buffer.from([0, 1])]), /maxval 65535 not supported/],
    [
      "truncated",
      Buffer.concat([Buffer.from("P5\n4 4\n255\n"), Buffer.alloc(10)]),
      /truncated: 4x4 needs 16 bytes, 10 left/,
    ],
    ["bad width", Buffer.from("P5\nx 4\n255\n"), /bad width/],
    ["empty", Buffer.alloc(0), /no image/],
    [
      "junk after",
      Buffer.concat([encodePgm({ width: 1, height: 1, luma: new Uint8Array(1) }), Buffer.from("junk")]),
      /image 1 .*not a binary PGM/,
    ],
  ];
  for (const [name, bytes, what] of cases) {
    const path = join(dir, `${name}.pgm`);
    writeFileSync(path, bytes);
    const e = await t.throwsAsync(readPgm(path), { instanceOf: InputError }, name);
    t.regex(e?.message ?? "", what, name);
    t.true(e?.message.startsWith(`${path}: `), name);
  }
});
