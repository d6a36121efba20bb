/**
 * The mandelbrot app: escape counts and the row checksum in this process, its options, and the app end to end
 * through the real launcher on 1 and 2 ranks, under both pool modes, with the automatic and a fixed grain, with
 * --pgm, --speedup and bad input. The images are small (160x120 or less, 500 iterations).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { parsePgm } from "../../apps/block-matching/frames.ts";
import { InputError } from "../../apps/common/errors.ts";
import {
  escapeRow,
  formatChecksum,
  greyLevels,
  type Picture,
  renderSequential,
  summarizeRow,
} from "../../apps/mandelbrot/image.ts";
import { DEFAULT_ITERATIONS, DEFAULT_SIZE, parseOptions } from "../../apps/mandelbrot/options.ts";
import { jsonLine, limitedLauncher, ok, rank0, type RunResult } from "../helpers/run.ts";
import { tempDir } from "./temp.ts";

const MANDELBROT = "apps/mandelbrot";

/** A 1-row picture whose pixel centres are the integers `from`, `from + 1`, ... on the real axis. */
function onRealAxis(from: number, width: number, iterations: number): Picture {
  return { width, height: 1, iterations, box: { x0: from - 0.5, y0: -0.5, x1: from - 0.5 + width, y1: 0.5 } };
}

// --- escape counts and the checksum, in this process -------------------------------------------------------

test("escape counts: -2, -1 and 0 stay (the limit), 1 escapes after 3 iterations, 2 after 2, -3 after 1", (t) => {
  const counts = new Uint32Array(6);
  escapeRow(onRealAxis(-3, 6, 50), 0, counts);
  t.deepEqual([...counts], [1, 50, 50, 50, 3, 2]);
});

test("the row hash changes with any count, with the order of the counts and with the row", (t) => {
  const a = summarizeRow(4, Uint32Array.of(1, 2, 3));
  t.is(a.escapes, 6);
  t.not(summarizeRow(4, Uint32Array.of(1, 2, 4)).hash, a.hash);
  t.not(summarizeRow(4, Uint32Array.of(2, 1, 3)).hash, a.hash);
  t.not(summarizeRow(5, Uint32Array.of(1, 2, 3)).hash, a.hash);
  t.true(Number.isInteger(a.hash) && a.hash >= 0 && a.hash < 2 ** 32);
  t.is(formatChecksum(2 ** 32 + 255), "000000ff");
});

test("grey levels: black inside the set, brighter the later a pixel escapes", (t) => {
  const grey = greyLevels(100);
  t.is(grey.length, 101);
  t.is(grey[100], 0);
  t.is(grey[0], 0);
  t.is(grey[99], 254);
  for (let n = 1; n < 100; n++) t.true((grey[n] as number) >= (grey[n - 1] as number));
});

// --- options ---------------------------------------------------------------------------------------------------

test("options: the defaults, and --center/--zoom give the box they describe at the image's aspect ratio", (t) => {
  const d = parseOptions([]);
  t.is(`${d.picture.width}x${d.picture.height}`, DEFAULT_SIZE);
  t.is(d.picture.iterations, DEFAULT_ITERATIONS);
  t.deepEqual(d.picture.box, { x0: -2.25, y0: -1.125, x1: 0.75, y1: 1.125 });
  t.like(d, { grain: undefined, pgm: undefined, verify: false, speedup: false, json: false });
  const o = parseOptions(["--size", "40x10", "--center", "-0.5,0.25", "--zoom", "2", "--grain=3", "--verify"]);
  t.deepEqual(o.picture.box, { x0: -1.25, y0: 0.0625, x1: 0.25, y1: 0.4375 });
  t.like(o, { grain: 3, verify: true });
  t.deepEqual(parseOptions(["--box", "-1,-0.5,0.5,1"]).picture.box, { x0: -1, y0: -0.5, x1: 0.5, y1: 1 });
});

for (const [argv, message] of [
  [["--size", "0x5"], /^mandelbrot: option --size must be WxH .* from 1 to 16384; got "0x5"$/],
  [["--size", "640"], /option --size must be WxH .*; got "640"$/],
  [["--iterations", "-3"], /^mandelbrot: option --iterations must be a whole number from 1 to 1000000; got "-3"$/],
  [["--iterations", "2.5"], /option --iterations .*; got "2.5"$/],
  [["--grain", "0"], /option --grain must be a whole number from 1 to 16384; got "0"$/],
  [["--zoom", "-1"], /^mandelbrot: option --zoom must be a number above 0; got "-1"$/],
  [["--center", "1,x"], /^mandelbrot: option --center must be x,y \(finite numbers\); got "1,x"$/],
  [["--box", "0,0,1"], /^mandelbrot: option --box must be x0,y0,x1,y1 \(finite numbers\); got "0,0,1"$/],
  [["--box", "1,0,0,1"], /^mandelbrot: option --box needs x0 < x1 and y0 < y1; got "1,0,0,1"$/],
  [["--box", "0,0,1,1", "--zoom", "2"], /^mandelbrot: give either --box or --center\/--zoom, not both$/],
  [["--zoom", "1e300"], /^mandelbrot: the view --center -0.75,0 --zoom 1e\+300 is out of double precision's reach/],
  [["--colour", "red"], /^mandelbrot: unknown option --colour \(known: --size, /],
  [["--verify=yes"], /^mandelbrot: option --verify takes no value$/],
] as const) {
  test(`options: ${argv.join(" ")} is bad input`, (t) => {
    t.throws(() => parseOptions(argv), { instanceOf: InputError, message });
  });
}

// --- the app through the launcher ------------------------------------------------------------------------------

/** One launch at a time: each is at most 2 ranks, so this file never runs more ranks than the machine has cores. */
const limited = limitedLauncher(1);
const launch = (n: number, pool: string | undefined, args: readonly string[]) => limited(n, pool, MANDELBROT, args);

/** A small image, off the real axis so that its top and bottom halves differ in cost. */
const SMALL = ["--size", "160x120", "--iterations", "500", "--center", "-0.6,0.3", "--zoom", "1.5"] as const;
const small = parseOptions(SMALL).picture;
const expected = renderSequential(small);
const CHECKSUM = formatChecksum(expected.hashSum);

/** The JSON line of a run with SMALL, checked to have the sequential loop's escape total and checksum. */
function checkedJson(t: ExecutionContext, r: RunResult): Record<string, unknown> {
  ok(t, r);
  const json = jsonLine(t, r);
  t.like(json, { width: 160, height: 120, iterations: 500, escapes: expected.escapes, checksum: CHECKSUM });
  t.is(
    (json.rows as number[]).reduce((a, b) => a + b, 0),
    120,
    "every row ran once",
  );
  return json;
}

for (const [ranks, pool] of [
  [1, undefined],
  [2, "distributed"],
  [2, "centralized,coordinatorWorks=true"],
] as const) {
  test(`app: ${ranks} rank(s) under --pool ${pool ?? "(default)"} verify and give the sequential loop's checksum`, async (t) => {
    const r = await launch(ranks, pool, [...SMALL, "--verify", "--json"]);
    const json = checkedJson(t, r);
    t.like(json, { ranks, verified: true });
    t.regex(r.stderr, /\[0\] mandelbrot: verified: escape total \d+ and checksum [0-9a-f]{8} equal the sequential/);
    // In a distributed pool each rank's block is pinned to it, so every rank runs rows (its block's probe at least).
    if (pool === "distributed") for (const rows of json.rows as number[]) t.true(rows > 0, JSON.stringify(json));
  });
}

test("app: on a centralized pool the coordinator runs rows too; told not to work, it runs none", async (t) => {
  const [works, idle] = await Promise.all([
    launch(2, "centralized", [...SMALL, "--json"]),
    launch(2, "centralized,coordinatorWorks=false", [...SMALL, "--json"]),
  ]);
  const a = checkedJson(t, works);
  const b = checkedJson(t, idle as RunResult);
  t.like(a, { mode: "centralized", ranks: 2 });
  // Each rank starts on its own block at once, before any request can move it, so both run rows.
  for (const rows of a.rows as number[]) t.true(rows > 0, JSON.stringify(a));
  t.deepEqual(b.rows, [0, 120]);
  t.is(b.checksum, a.checksum);
});

test("app: --grain 7 on 2 ranks: every grain is 7, the blocks are cut in sevens, and it verifies", async (t) => {
  const json = checkedJson(t, await launch(2, "distributed", [...SMALL, "--grain", "7", "--verify", "--json"]));
  t.like(json, { verified: true, grain: [7, 7] });
  // Two blocks of 60 rows, each cut into ceil(60 / 7) = 9 ranges that run wherever they moved to.
  t.is(
    (json.ranges as number[]).reduce((a, b) => a + b, 0),
    18,
  );
});

test("app: --pgm on 2 ranks writes a P5 header and width x height pixels equal to the sequential image", async (t) => {
  const file = join(tempDir(t), "set.pgm");
  const r = await launch(2, "distributed", [...SMALL, "--pgm", file]);
  ok(t, r);
  t.regex(rank0(r.stdout)[0] ?? "", new RegExp(`escape total ${expected.escapes}, checksum ${CHECKSUM} `));
  const bytes = readFileSync(file);
  const header = /^P5\n# mandelbrot 500 iterations, view [^\n]*\n160 120\n255\n/.exec(bytes.toString("latin1"));
  t.truthy(header, bytes.subarray(0, 80).toString("latin1"));
  t.is(bytes.length, (header?.[0].length ?? 0) + 160 * 120);
  const [frame] = parsePgm(bytes, file);
  const grey = greyLevels(500);
  const counts = new Uint32Array(160);
  const want = new Uint8Array(160 * 120);
  for (let y = 0; y < 120; y++) {
    escapeRow(small, y, counts);
    for (let x = 0; x < 160; x++) want[y * 160 + x] = grey[counts[x] as number] as number;
  }
  t.true(Buffer.from(want).equals(Buffer.from(frame?.luma ?? [])), "pixels differ from the sequential image");
});

test("app: --speedup times the sequential loop and prints both, side by side; --json has them too", async (t) => {
  const [text, json] = await Promise.all([
    launch(2, "distributed", [...SMALL, "--speedup"]),
    launch(2, "distributed", [...SMALL, "--speedup", "--json"]),
  ]);
  ok(t, text);
  t.regex(
    rank0(text.stdout)[1] ?? "",
    /^mandelbrot: loop on 2 ranks \d+\.\d{3} s, sequential loop \d+\.\d{3} s: speedup \d+\.\d{2}x, efficiency \d+\.\d{2}$/,
  );
  const line = checkedJson(t, json as RunResult);
  const { seconds, seqSeconds, speedup } = line as { seconds: number; seqSeconds: number; speedup: number };
  t.true(seqSeconds > 0, JSON.stringify(line));
  // Both times are rounded to 0.1 ms in the JSON, the speedup is not: 2% leaves room for that on a tiny image.
  t.true(Math.abs(speedup - seqSeconds / seconds) < 0.02 * speedup, JSON.stringify(line));
});

for (const [args, line] of [
  [["--size", "0x5"], /^mandelbrot: option --size must be WxH .*; got "0x5"$/],
  [["--iterations", "-3"], /^mandelbrot: option --iterations must be a whole number from 1 to 1000000; got "-3"$/],
  [["--frobnicate"], /^mandelbrot: unknown option --frobnicate \(known: /],
  [
    ["--pgm", "/nonexistent-dir/set.pgm"],
    /^mandelbrot: option --pgm: cannot write "\/nonexistent-dir\/set.pgm": ENOENT$/,
  ],
] as const) {
  test(`app: ${args.join(" ")} is one line on rank 0 and status 2`, async (t) => {
    const r = await launch(2, "distributed", args);
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    const lines = rank0(r.stderr);
    t.is(lines.length, 1, r.stderr);
    t.regex(lines[0] ?? "", line);
  });
}
