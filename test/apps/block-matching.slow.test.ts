import { readFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import test from "ava";
import type { Frame } from "../../apps/block-matching/frames.ts";
import { expectedVectors, generateSequence, parseSequenceSpec } from "../../apps/block-matching/generate.ts";
import { formatMatchJson, matchSequence } from "../../apps/block-matching/output.ts";
import { crc32, encodePng } from "../../apps/block-matching/png.ts";
import {
  blockGrid,
  matchBlock,
  matchBlockExhaustive,
  matchFrame,
  matchRows,
  type Vector,
} from "../../apps/block-matching/search.ts";
import { renderSvg } from "../../apps/block-matching/svg.ts";
import { InputError } from "../../apps/common/errors.ts";
import { Random } from "../../apps/common/random.ts";
import { jsonLine, limitedLauncher, ok, rank0, type RunResult } from "../helpers/run.ts";
import { tempDir } from "./temp.ts";

function noise(width: number, height: number, seed: number, levels = 256): Frame {
  const rnd = new Random(seed);
  return { width, height, luma: Uint8Array.from({ length: width * height }, () => rnd.int(0, levels - 1)) };
}

function flat(width: number, height: number, value: number): Frame {
  return { width, height, luma: new Uint8Array(width * height).fill(value) };
}

test("parseSequenceSpec", (t) => {
  t.deepEqual(parseSequenceSpec("352x288:10"), { width: 352, height: 288, frames: 10 });
  for (const bad of ["352x288", "352x288:1", "0x5:3", "352:288:3", "axb:3", "99999x4:3"]) {
    t.throws(() => parseSequenceSpec(bad), { instanceOf: InputError, message: /--generate/ });
  }
});

test("generated sequences are deterministic from the seed", (t) => {
  const a = generateSequence("64x48:3", 9);
  t.deepEqual(a, generateSequence({ width: 64, height: 48, frames: 3 }, 9));
  t.notDeepEqual(a.frames, generateSequence("64x48:3", 10).frames);
  t.is(a.frames.length, 3);
  for (const f of a.frames) t.is(f.luma.length, 64 * 48);
});

test("ties go to the later candidate: on a flat frame every SAD is 0, the last candidate wins", (t) => {
  const cur = flat(64, 48, 100);
  const ref = flat(64, 48, 100);
  // Block (1, 1) at (16, 16), range 8: last candidate is (8, 8).
  t.deepEqual(matchBlock(cur, ref, 1, 1, 16, 8), { x: 16, y: 16, dx: 8, dy: 8, sad: 0 });
  // Block (0, 0): candidates limited to the frame, last is (8, 8) still; at the far corner (3, 2) it is (0, 0).
  t.deepEqual(matchBlock(cur, ref, 0, 0, 16, 8), { x: 0, y: 0, dx: 8, dy: 8, sad: 0 });
  t.deepEqual(matchBlock(cur, ref, 3, 2, 16, 8), { x: 48, y: 32, dx: 0, dy: 0, sad: 0 });
  t.deepEqual(matchBlockExhaustive(cur, ref, 1, 1, 16, 8), { x: 16, y: 16, dx: 8, dy: 8, sad: 0 });
});

test("a tie after an earlier exact match is taken (early exit stops only on partial > best)", (t) => {
  // Block (1, 0) (pixels x 8..15) holds pattern P; the reference holds P at x 4..11 (dx -4) and x 12..19 (dx +4).
  const width = 24;
  const cur = flat(width, 8, 0);
  const ref = flat(width, 8, 0);
  const rnd = new Random(3);
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      const v = rnd.int(1, 255);
      cur.luma[y * width + 8 + x] = v;
      ref.luma[y * width + 4 + x] = v;
      ref.luma[y * width + 12 + x] = v;
    }
  }
  t.deepEqual(matchBlock(cur, ref, 1, 0, 8, 8), { x: 8, y: 0, dx: 4, dy: 0, sad: 0 });
  t.deepEqual(matchBlockExhaustive(cur, ref, 1, 0, 8, 8), { x: 8, y: 0, dx: 4, dy: 0, sad: 0 });
  // With range 3 neither copy is a candidate.
  t.not(matchBlock(cur, ref, 1, 0, 8, 3).sad, 0);
});

test("early exit == no early exit == plain reference, on noise and odd sizes", (t) => {
  const cases: [number, number, number, number, number][] = [
    [40, 30, 8, 4, 1],
    [37, 29, 8, 7, 2],
    [33, 33, 16, 20, 3],
    [16, 16, 16, 3, 4],
    [50, 20, 5, 6, 5],
  ];
  for (const [w, h, block, range, seed] of cases) {
    // Few grey levels make many ties.
    for (const levels of [256, 4, 2]) {
      const ref = noise(w, h, seed, levels);
      const cur = noise(w, h, seed + 100, levels);
      const fast = matchFrame(cur, ref, block, range);
      t.deepEqual(matchFrame(cur, ref, block, range, { earlyExit: false }), fast);
      const { across, down } = blockGrid(cur, block);
      t.is(fast.length, across * down);
      const plain: Vector[] = [];
      for (let by = 0; by < down; by++)
        for (let bx = 0; bx < across; bx++) plain.push(matchBlockExhaustive(cur, ref, bx, by, block, range));
      t.deepEqual(fast, plain);
    }
  }
});

test("early exit == no early exit on a generated sequence", (t) => {
  const seq = generateSequence("96x64:4", 2);
  t.deepEqual(matchSequence(seq.frames, 8, 7), matchSequence(seq.frames, 8, 7, { earlyExit: false }));
});

test("matchRows strips put together make matchFrame", (t) => {
  const seq = generateSequence("80x56:2", 4);
  const [ref, cur] = seq.frames as [Frame, Frame];
  const whole = matchFrame(cur, ref, 8, 5);
  const rows = [
    ...matchRows(cur, ref, 8, 5, 0, 3),
    ...matchRows(cur, ref, 8, 5, 3),
    ...matchRows(cur, ref, 8, 5, 4, 3),
  ];
  t.deepEqual(rows, whole);
  t.deepEqual(matchRows(cur, ref, 8, 5, 7, 0), []);
  t.throws(() => matchRows(cur, ref, 8, 5, 6, 2), { instanceOf: InputError, message: /outside the 7 rows/ });
});

test("the generated sequence's known motion is recovered on every interior block", (t) => {
  for (const [spec, block, range, seed] of [
    ["160x120:5", 16, 8, 1],
    ["200x150:4", 8, 6, 2],
    ["256x192:3", 16, 16, 3],
  ] as const) {
    const seq = generateSequence(spec, seed);
    const result = matchSequence(seq.frames, block, range);
    let interior = 0;
    let total = 0;
    const shapeBlocks = new Set<string>();
    for (const f of result.frames) {
      const expected = expectedVectors(seq, f.frame, block, range);
      t.is(expected.length, f.vectors.length);
      expected.forEach((e, i) => {
        total++;
        if (e === null) return;
        interior++;
        const v = f.vectors[i]!;
        t.deepEqual(v, { ...e, sad: 0 }, `${spec} frame ${f.frame} block ${i}`);
        const label = seq.labels[f.frame]![e.y * seq.frames[0]!.width + e.x]!;
        if (label > 0) shapeBlocks.add(`${label}`);
      });
    }
    // Most blocks are interior, and some lie inside moving shapes.
    t.true(interior > total / 2, `${spec}: ${interior} of ${total}`);
    t.true(shapeBlocks.size > 0, spec);
  }
});

test("interior blocks exclude blocks across a shape edge", (t) => {
  const seq = generateSequence("160x120:3", 1);
  const first = seq.frames[0]!;
  const expected = expectedVectors(seq, 1, 8, 8);
  const { across } = blockGrid(first, 8);
  expected.forEach((e, i) => {
    if (e === null) return;
    const x = (i % across) * 8;
    const y = Math.floor(i / across) * 8;
    t.deepEqual([e.x, e.y], [x, y]);
    const l = seq.labels[1]![y * 160 + x];
    for (let j = 0; j < 8; j++) for (let k = 0; k < 8; k++) t.is(seq.labels[1]![(y + j) * 160 + x + k], l);
  });
  t.throws(() => expectedVectors(seq, 0, 8, 8), { instanceOf: InputError });
});

test("search errors name the bad value", (t) => {
  const f = noise(32, 24, 1);
  t.throws(() => matchFrame(f, f, 25, 4), {
    instanceOf: InputError,
    message: "block size 25 is larger than the 32x24 frame",
  });
  t.throws(() => matchFrame(f, f, 0, 4), {
    instanceOf: InputError,
    message: /block size must be an integer in 1\.\.\d+; got 0/,
  });
  t.throws(() => matchFrame(f, f, 8, -1), { instanceOf: InputError, message: /range must be an integer >= 0; got -1/ });
  t.throws(() => matchFrame(f, noise(32, 16, 1), 8, 2), {
    instanceOf: InputError,
    message: /32x24 but the reference is 32x16/,
  });
  t.throws(() => matchBlock(f, f, 4, 0, 8, 2), {
    instanceOf: InputError,
    message: /block \(4, 0\) is outside the 4x3 blocks/,
  });
  t.throws(() => matchFrame({ width: 4, height: 4, luma: new Uint8Array(3) }, f, 2, 2), { instanceOf: InputError });
  t.throws(() => matchSequence([f], 8, 2), { instanceOf: InputError, message: /at least 2 frames; got 1/ });
});

test("range 0 gives zero vectors (never -0)", (t) => {
  const a = noise(32, 32, 1);
  const b = noise(32, 32, 2);
  for (const v of matchFrame(a, b, 8, 0)) {
    t.true(Object.is(v.dx, 0) && Object.is(v.dy, 0));
  }
  for (const v of matchFrame(a, b, 8, 3)) t.false(Object.is(v.dx, -0) || Object.is(v.dy, -0));
});

test("--out JSON: shape, order, parses back", (t) => {
  const seq = generateSequence("48x40:3", 1);
  const result = matchSequence(seq.frames, 16, 4);
  const text = formatMatchJson(result);
  t.true(text.endsWith("]}\n"));
  const parsed = JSON.parse(text);
  t.deepEqual(Object.keys(parsed), ["width", "height", "block", "range", "frames"]);
  t.deepEqual([parsed.width, parsed.height, parsed.block, parsed.range], [48, 40, 16, 4]);
  t.deepEqual(
    parsed.frames.map((f: { frame: number }) => f.frame),
    [1, 2],
  );
  t.deepEqual(Object.keys(parsed.frames[0].vectors[0]), ["x", "y", "dx", "dy", "sad"]);
  t.deepEqual(
    parsed.frames[1].vectors.map((v: Vector) => [v.x, v.y]),
    [
      [0, 0],
      [16, 0],
      [32, 0],
      [0, 16],
      [16, 16],
      [32, 16],
    ],
  );
  t.deepEqual(parsed, JSON.parse(JSON.stringify(result)));
  t.is(formatMatchJson(matchSequence(seq.frames, 16, 4)), text);
});

test("PNG: valid chunks and CRCs, pixels decode back", (t) => {
  const f = noise(13, 7, 3);
  const png = Buffer.from(encodePng(f));
  t.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let p = 8;
  const chunks: Record<string, Buffer> = {};
  while (p < png.length) {
    const len = png.readUInt32BE(p);
    const type = png.toString("latin1", p + 4, p + 8);
    t.is(png.readUInt32BE(p + 8 + len), crc32(png.subarray(p + 4, p + 8 + len)), type);
    chunks[type] = png.subarray(p + 8, p + 8 + len);
    p += 12 + len;
  }
  t.deepEqual(Object.keys(chunks), ["IHDR", "IDAT", "IEND"]);
  t.deepEqual(
    [chunks["IHDR"]!.readUInt32BE(0), chunks["IHDR"]!.readUInt32BE(4), chunks["IHDR"]![8], chunks["IHDR"]![9]],
    [13, 7, 8, 0],
  );
  const raw = inflateSync(chunks["IDAT"]!);
  t.is(raw.length, 14 * 7);
  for (let y = 0; y < 7; y++) {
    t.is(raw[y * 14], 0);
    t.deepEqual([...raw.subarray(y * 14 + 1, y * 14 + 14)], [...f.luma.subarray(y * 13, y * 13 + 13)]);
  }
  t.is(crc32(Buffer.from("123456789")), 0xcbf43926);
});

test("SVG: embedded PNG frame and one arrow or dot per block", (t) => {
  const seq = generateSequence("64x48:2", 1);
  const vectors = matchFrame(seq.frames[1]!, seq.frames[0]!, 16, 4);
  const svg = renderSvg(seq.frames[1]!, vectors, 16, { scale: 2 });
  t.true(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="128" height="96" viewBox="0 0 64 48">'));
  t.regex(svg, /<image width="64" height="48" [^>]*href="data:image\/png;base64,[A-Za-z0-9+/=]+"\/>/);
  const arrows = (svg.match(/<line /g) ?? []).length;
  const dots = (svg.match(/<circle /g) ?? []).length;
  t.is(arrows + dots, vectors.length);
  t.is(dots, vectors.filter((v) => v.dx === 0 && v.dy === 0).length);
  t.true(svg.trimEnd().endsWith("</svg>"));
});

// --- --loop: the strips as one parallelFor, real ranks through the launcher -----------------------------------

const BLOCK_MATCHING = "apps/block-matching";
/** At most 3 launches at once, so a 2-core machine is not swamped by the tests of this file. */
const launch = limitedLauncher(3);

/** 3 frame pairs of 12x9 blocks of 8x8: 27 strips of one block row. */
const LOOP_SEQUENCE = "96x72:4";
const LOOP_ARGS = ["--generate", LOOP_SEQUENCE, "--seed", "3", "--block", "8", "--range", "5"];
const loopSequential = matchSequence(generateSequence(LOOP_SEQUENCE, 3).frames, 8, 5);
const sadTotalOf = (frames: readonly { readonly vectors: readonly Vector[] }[]): number =>
  frames.reduce((s, f) => s + f.vectors.reduce((a, v) => a + v.sad, 0), 0);

const sum = (xs: unknown): number => (xs as number[]).reduce((a, b) => a + b, 0);

for (const n of [1, 2, 3]) {
  test(`block matching --loop on ${n} rank${n > 1 ? "s" : ""}: --verify passes, --out equals the sequential search, the loop's SAD total is the vectors'`, async (t) => {
    const out = join(tempDir(t), "vectors.json");
    const args = [...LOOP_ARGS, "--loop", "--out", out, "--verify", "--json"];
    const r = await launch(n, "distributed", BLOCK_MATCHING, args);
    ok(t, r);
    t.is(readFileSync(out, "utf8"), formatMatchJson(loopSequential));
    t.true(
      rank0(r.stderr).some((l) => l.startsWith("block-matching: verified: all 324 vectors equal the sequential")),
      r.stderr,
    );
    const json = jsonLine(t, r);
    t.deepEqual(Object.keys(json), ["frames", "blocks", "sadTotal", "seconds", "framesLoaded", "grain", "ranges"]);
    t.like(json, { frames: 3, blocks: 324, sadTotal: sadTotalOf(loopSequential.frames) });
    t.is((json.framesLoaded as number[]).length, n);
    // Every rank works in a distributed pool: each starts on a block of the 27 strips and runs ranges of it.
    t.is((json.grain as number[]).length, n);
    for (const g of json.grain as number[]) t.true(g >= 1, `${json.grain}`);
    for (const k of json.ranges as number[]) t.true(k >= 1, `${json.ranges}`);
  });
}

test("block matching --loop gives the task mode's vectors and SAD total (2 ranks, strips of 2 block rows)", async (t) => {
  // 4 frame pairs of 10x9 blocks: strips of 2 rows, the last of each pair 1 row.
  const dir = tempDir(t);
  const args = ["--generate", "80x72:5", "--seed", "7", "--block", "8", "--range", "6", "--rows", "2", "--json"];
  const [tasks, loop] = await Promise.all(
    ["tasks", "loop"].map((mode) =>
      launch(2, "distributed", BLOCK_MATCHING, [
        ...args,
        ...(mode === "loop" ? ["--loop"] : []),
        "--out",
        join(dir, `${mode}.json`),
      ]),
    ),
  );
  ok(t, tasks as RunResult);
  ok(t, loop as RunResult);
  const text = readFileSync(join(dir, "loop.json"), "utf8");
  t.is(text, readFileSync(join(dir, "tasks.json"), "utf8"));
  t.is(text, formatMatchJson(matchSequence(generateSequence("80x72:5", 7).frames, 8, 6)));
  const a = jsonLine(t, tasks as RunResult);
  const b = jsonLine(t, loop as RunResult);
  t.like(b, { frames: 4, blocks: 360, sadTotal: a.sadTotal });
  t.is(b.sadTotal, sadTotalOf(JSON.parse(text).frames));
});

test("block matching --loop --grain 4: every rank's grain is 4 and the ranges are its block cut in fours", async (t) => {
  const r = await launch(2, "distributed", BLOCK_MATCHING, [
    ...LOOP_ARGS,
    "--loop",
    "--grain",
    "4",
    "--verify",
    "--json",
  ]);
  ok(t, r);
  t.true(
    rank0(r.stderr).some((l) => l.startsWith("block-matching: verified: all 324 vectors")),
    r.stderr,
  );
  const json = jsonLine(t, r);
  t.deepEqual(json.grain, [4, 4]);
  // Blocks of 14 and 13 strips, ranges of 4 (no probe, and a fixed grain never splits): 4 + 4 ranges, wherever
  // they ran.
  t.is(sum(json.ranges), 8, `${json.ranges}`);
});

test("block matching --loop, centralized on 2 ranks, the coordinator idle, a 2-frame cache: the one worker loads each frame once, no more than the task mode", async (t) => {
  // Deterministic: the coordinator runs nothing (parallelFor's pool makes it work unless the spec says it does
  // not), so rank 1 runs the whole loop; it keeps the ranges it puts and
  // runs them upward, pair by pair, and a cache of one pair then loads each of the 6 frames once. The task mode
  // can do no better (every frame is needed); how often it reloads depends on how its tasks are dealt.
  const args = ["--generate", "96x72:6", "--seed", "3", "--block", "8", "--range", "5", "--cache", "2", "--json"];
  const [tasks, loop] = await Promise.all([
    launch(2, "centralized,coordinatorWorks=false", BLOCK_MATCHING, args),
    launch(2, "centralized,coordinatorWorks=false", BLOCK_MATCHING, [...args, "--loop"]),
  ]);
  ok(t, tasks);
  ok(t, loop);
  const a = jsonLine(t, tasks);
  const b = jsonLine(t, loop);
  t.is(b.sadTotal, a.sadTotal);
  t.deepEqual(b.framesLoaded, [0, 6]);
  t.is((a.framesLoaded as number[])[0], 0);
  t.true(sum(b.framesLoaded) <= sum(a.framesLoaded), `loop ${b.framesLoaded}, tasks ${a.framesLoaded}`);
});

test("block matching --loop: the summary line names the loop's pool and grains; --grain and --no-keys refuse the other mode", async (t) => {
  const runs = await Promise.all([
    launch(1, undefined, BLOCK_MATCHING, [...LOOP_ARGS, "--loop", "--grain", "5", "--cache", "3"]),
    launch(2, undefined, BLOCK_MATCHING, [...LOOP_ARGS, "--grain", "4"]),
    launch(2, undefined, BLOCK_MATCHING, [...LOOP_ARGS, "--loop", "--no-keys"]),
    launch(2, undefined, BLOCK_MATCHING, [...LOOP_ARGS, "--loop", "--grain", "0"]),
  ]);
  const [summary, grainAlone, noKeys, zero] = runs as [RunResult, RunResult, RunResult, RunResult];
  ok(t, summary);
  t.regex(
    rank0(summary.stdout)[0] ?? "",
    /^block-matching: 3 frame pairs of 96x72, 12x9 blocks of 8x8, range 5: 324 vectors, SAD total \d+ \(loop on distributed, 1 ranks, [\d.]+ s\); frames loaded per rank: 4 \(cache 3, grain per rank 5\)$/,
  );
  for (const [r, message] of [
    [grainAlone, "block-matching: --grain applies to --loop only"],
    [noKeys, "block-matching: --no-keys applies without --loop only (a loop puts no tasks to key)"],
    [zero, 'block-matching: option --grain must be a whole number from 1 to 2147483647; got "0"'],
  ] as const) {
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    t.deepEqual(rank0(r.stderr), [message], r.stderr);
  }
});
