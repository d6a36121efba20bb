/**
 * The runnable apps end to end through the real launcher: under the centralized pool and two distributed
 * configurations they give exactly the sequential answer; both frame formats reach the block matcher; bad input
 * is one line and status 2; the bundled defaults run with no arguments.
 */
import { readFileSync } from "node:fs";
import { truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { type Frame, writePgm, writeYuv, yuvFrameBytes } from "../../apps/block-matching/frames.ts";
import { firstMismatch, knownMotion } from "../../apps/block-matching/compare.ts";
import { generateSequence } from "../../apps/block-matching/generate.ts";
import { formatMatchJson, matchSequence } from "../../apps/block-matching/output.ts";
import { assemble, matchStrip, stripsOf } from "../../apps/block-matching/strips.ts";
import { dijkstra } from "../../apps/shortest-paths/dijkstra.ts";
import { formatDimacs } from "../../apps/shortest-paths/dimacs.ts";
import { generateArcs, generateGraph, parseGraphSpec } from "../../apps/shortest-paths/generate.ts";
import { formatDistances, tally } from "../../apps/shortest-paths/summary.ts";
import { jsonLine, limitedLauncher, linesOf, ok, rank0, type RunResult } from "../helpers/run.ts";
import { tempDir } from "./temp.ts";

const SHORTEST_PATHS = "apps/shortest-paths";
const BLOCK_MATCHING = "apps/block-matching";
const POOLS = [
  "centralized",
  "centralized,coordinatorWorks=true",
  "distributed",
  "distributed,initiation=sender,partner=ring,termination=tree",
];

/** At most 3 launches at once, so a 2-core machine is not swamped by the tests of this file. */
const launch = limitedLauncher(3);

// --- block matching: the pieces the parallel app is made of, in this process ------------------------------------

test("strips cover every block row of every frame pair once; put together in any order they make the sequence", (t) => {
  const { frames } = generateSequence("64x72:4", 2);
  const strips = stripsOf(frames.length, 9, 2);
  t.deepEqual(
    strips.filter((s) => s.k === 1),
    [0, 2, 4, 6, 8].map((row) => ({ k: 1, row, rows: row === 8 ? 1 : 2 })),
  );
  t.is(strips.length, 3 * 5);
  const results = strips.map((s) => matchStrip(frames, s, 8, 4));
  const shuffled = [...results.filter((_, i) => i % 2 === 1), ...results.filter((_, i) => i % 2 === 0).reverse()];
  t.deepEqual(assemble(shuffled, frames[0]!, frames.length, 8, 4), matchSequence(frames, 8, 4));
  t.throws(() => assemble(results.slice(1), frames[0]!, frames.length, 8, 4), {
    message: /no result for block 0 of frame 1/,
  });
  t.throws(() => assemble([...results, results[3]!], frames[0]!, frames.length, 8, 4), { message: /computed twice/ });
});

test("firstMismatch names the first differing block and both vectors; knownMotion counts interior blocks", (t) => {
  const seq = generateSequence("96x64:3", 4);
  const result = matchSequence(seq.frames, 8, 6);
  t.is(firstMismatch(result.frames, matchSequence(seq.frames, 8, 6, { earlyExit: false }).frames), undefined);
  const changed = result.frames.map((f) => ({
    frame: f.frame,
    vectors: f.vectors.map((v, i) => (f.frame === 2 && i >= 13 ? { ...v, dx: v.dx + 1 } : v)),
  }));
  const v = result.frames[1]!.vectors[13]!;
  t.is(
    firstMismatch(result.frames, changed, "A says", "B says"),
    `frame 2 block at (${v.x}, ${v.y}): A says (${v.dx}, ${v.dy}) sad ${v.sad}, B says (${v.dx + 1}, ${v.dy}) sad ${v.sad}`,
  );
  t.regex(firstMismatch(result.frames, result.frames.slice(1)) ?? "", /2 frames expected, 1 in the result/);
  const motion = knownMotion(seq, result);
  t.true(motion.interior > 0);
  t.is(motion.recovered, motion.interior);
  t.is(motion.miss, undefined);
  const wrong = knownMotion(seq, { ...result, frames: changed });
  t.true(wrong.recovered < wrong.interior);
  t.regex(wrong.miss ?? "", /^frame 2 block at /);
});

// --- shortest paths: every pool gives Dijkstra's distances ---------------------------------------------------

const GRAPH = "random:3000,12000";
const expectedDistances = formatDistances(dijkstra(generateGraph(GRAPH, 1), 0));
const graphResults: Record<string, unknown>[] = [];

for (const pool of POOLS) {
  test(`shortest paths, ${pool}: --out equals Dijkstra in this process; --verify agrees`, async (t) => {
    const out = join(tempDir(t), "dist.txt");
    const r = await launch(3, pool, SHORTEST_PATHS, ["--generate", GRAPH, "--out", out, "--verify", "--json"]);
    ok(t, r);
    t.is(readFileSync(out, "utf8"), expectedDistances);
    t.true(
      rank0(r.stderr).some((l) => /^shortest-paths: verified: all 3000 distances equal Dijkstra's/.test(l)),
      r.stderr,
    );
    const json = jsonLine(t, r);
    t.is(json.variant, pool.split(",")[0]);
    const { seconds, variant, ...rest } = json;
    t.true(typeof seconds === "number" && seconds >= 0);
    t.truthy(variant);
    graphResults.push(rest);
    if (graphResults.length === POOLS.length) for (const g of graphResults) t.deepEqual(g, graphResults[0]);
  });
}

for (const pool of ["centralized", "distributed"]) {
  test(`shortest paths, ${pool}, --repeat 3: one answer, the fastest of the three runs, and every run listed`, async (t) => {
    const r = await launch(2, pool, SHORTEST_PATHS, ["--generate", GRAPH, "--repeat", "3", "--verify", "--json"]);
    ok(t, r);
    const json = jsonLine(t, r);
    const runs = json.runs as number[];
    t.is(runs.length, 3);
    t.is(json.seconds, Math.min(...runs));
    t.like(json, { vertices: 3000, ...tally(dijkstra(generateGraph(GRAPH, 1), 0)), variant: pool });
    t.true(
      rank0(r.stderr).some((l) => /^shortest-paths: verified: all 3000 distances/.test(l)),
      r.stderr,
    );
  });
}

// --- block matching: every pool gives the sequential search's vectors ---------------------------------------

const SEQUENCE = "96x72:4";
const expectedVectors = formatMatchJson(matchSequence(generateSequence(SEQUENCE, 3).frames, 8, 5));
const vectorFiles: string[] = [];

POOLS.forEach((pool, i) => {
  // The last configuration also cuts the 9 block rows into strips of 2 (the last strip has one row).
  const rows = i === POOLS.length - 1 ? ["--rows", "2"] : [];
  test(`block matching, ${pool}${rows.length > 0 ? ", 2-row strips" : ""}: --verify, --out equals the sequential search`, async (t) => {
    const out = join(tempDir(t), "vectors.json");
    const args = ["--generate", SEQUENCE, "--seed", "3", "--block", "8", "--range", "5", ...rows];
    const r = await launch(3, pool, BLOCK_MATCHING, [...args, "--out", out, "--verify", "--json"]);
    ok(t, r);
    const text = readFileSync(out, "utf8");
    t.is(text, expectedVectors);
    t.true(
      rank0(r.stderr).some((l) => l.startsWith("block-matching: verified: all 324 vectors equal the sequential")),
      r.stderr,
    );
    t.like(jsonLine(t, r), { frames: 3, blocks: 324 });
    vectorFiles.push(text);
    if (vectorFiles.length === POOLS.length) for (const v of vectorFiles) t.is(v, vectorFiles[0] ?? "");
  });
});

// --- block matching: locality keys and per-rank frame loading ----------------------------------------------

for (const keys of [[], ["--no-keys"]]) {
  test(`block matching, distributed, a 2-frame cache, ${keys.length === 0 ? "strips keyed by frame pair" : "--no-keys"}: verified, frames loaded per rank counted`, async (t) => {
    const out = join(tempDir(t), "vectors.json");
    const args = ["--generate", SEQUENCE, "--seed", "3", "--block", "8", "--range", "5", "--cache", "2", ...keys];
    const r = await launch(3, "distributed", BLOCK_MATCHING, [...args, "--out", out, "--verify", "--json"]);
    ok(t, r);
    t.is(readFileSync(out, "utf8"), expectedVectors);
    t.true(
      rank0(r.stderr).some((l) => l.startsWith("block-matching: verified: all 324 vectors")),
      r.stderr,
    );
    const loaded = jsonLine(t, r).framesLoaded as number[];
    t.is(loaded.length, 3);
    // 4 frames, each needed by some rank; a rank that ran any strip loaded at least its pair.
    t.true(loaded.reduce((a, b) => a + b, 0) >= 4, `${loaded}`);
    for (const n of loaded) t.true(n === 0 || n >= 2, `${loaded}`);
  });
}

test("block matching's summary line names the frames each rank loaded, the cache and whether keys were on", async (t) => {
  const r = await launch(2, "distributed", BLOCK_MATCHING, ["--generate", SEQUENCE, "--block", "8", "--cache", "3"]);
  ok(t, r);
  t.regex(rank0(r.stdout)[0] ?? "", /; frames loaded per rank: \d+, \d+ \(cache 3, keys on\)$/);
});

test("block matching refuses a cache smaller than a frame pair", async (t) => {
  const r = await launch(2, "distributed", BLOCK_MATCHING, ["--generate", SEQUENCE, "--cache", "1"]);
  t.is(r.code, 2, r.stderr);
  t.regex(r.stderr, /block-matching: option --cache must be a whole number from 2 to \d+; got "1"/);
});

// --- block matching: both frame formats -----------------------------------------------------------------------

/** Small frames that are not multiples of the block size, with shapes moving across them. */
const FILE_FRAMES: Frame[] = generateSequence("53x41:4", 5).frames;
const fileExpected = formatMatchJson(matchSequence(FILE_FRAMES, 8, 4));

test("block matching reads YUV (I420) frames and writes --out and --svg", async (t) => {
  const dir = tempDir(t);
  const yuv = join(dir, "clip.yuv");
  await writeYuv(yuv, FILE_FRAMES);
  const out = join(dir, "v.json");
  const svg = join(dir, "v.svg");
  const args = ["--yuv", yuv, "--size", "53x41", "--block", "8", "--range", "4", "--out", out, "--svg", svg];
  const r = await launch(3, "distributed", BLOCK_MATCHING, args);
  ok(t, r);
  t.is(readFileSync(out, "utf8"), fileExpected);
  t.regex(rank0(r.stdout)[0] ?? "", /^block-matching: 3 frame pairs of 53x41, 6x5 blocks of 8x8, range 4: 90 vectors/);
  const picture = readFileSync(svg, "utf8");
  t.true(picture.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="53" height="41"'));
  t.is((picture.match(/<line |<circle /g) ?? []).length, 30);
});

test("block matching reads frames from several PGM files (one holding two images)", async (t) => {
  const dir = tempDir(t);
  const files = [join(dir, "a.pgm"), join(dir, "bc.pgm"), join(dir, "d.pgm")];
  await writePgm(files[0]!, FILE_FRAMES.slice(0, 1));
  await writePgm(files[1]!, FILE_FRAMES.slice(1, 3));
  await writePgm(files[2]!, FILE_FRAMES.slice(3));
  const out = join(dir, "v.json");
  const r = await launch(2, "centralized", BLOCK_MATCHING, [
    "--pgm",
    ...files,
    "--block",
    "8",
    "--range=4",
    "--out",
    out,
  ]);
  ok(t, r);
  t.is(readFileSync(out, "utf8"), fileExpected);
});

// --- bad input: one line from the app, status 2 ---------------------------------------------------------------

/** The app's lines on stderr (the launcher's own summary line, `workpool: rank N failed ...`, left out). */
function appErrors(r: RunResult): string[] {
  return linesOf(r.stderr).filter((l) => !l.startsWith("workpool: "));
}

const BAD_INPUT: [title: string, app: string, args: (dir: string) => Promise<string[]>, message: RegExp][] = [
  [
    "a YUV file that is not a whole number of frames",
    BLOCK_MATCHING,
    async (dir) => {
      const yuv = join(dir, "short.yuv");
      await writeYuv(yuv, FILE_FRAMES.slice(0, 2));
      await truncate(yuv, 2 * yuvFrameBytes(53, 41) - 10);
      return ["--yuv", yuv, "--size", "53x41"];
    },
    /^block-matching: .*short\.yuv: size \d+ bytes is not a whole number of 53x41 I420 frames \(\d+ bytes each\)$/,
  ],
  [
    "PGM frames of different sizes",
    BLOCK_MATCHING,
    async (dir) => {
      const a = join(dir, "a.pgm");
      const b = join(dir, "b.pgm");
      await writePgm(a, FILE_FRAMES.slice(0, 1));
      await writePgm(b, generateSequence("40x41:2", 1).frames);
      return ["--pgm", a, b];
    },
    /^block-matching: .*b\.pgm: frame 1 is 40x41, the first frame is 53x41$/,
  ],
  [
    "a block larger than the frame",
    BLOCK_MATCHING,
    async () => ["--generate", "40x24:2", "--block", "32"],
    /^block-matching: block size 32 is larger than the 40x24 frame$/,
  ],
  [
    "a bad --size",
    BLOCK_MATCHING,
    async () => ["--yuv", "x.yuv", "--size", "53by41"],
    /^block-matching: --size must be WxH/,
  ],
  [
    "--yuv without --size",
    BLOCK_MATCHING,
    async () => ["--yuv", "x.yuv"],
    /^block-matching: --yuv FILE needs --size WxH$/,
  ],
  [
    "--pgm without files",
    BLOCK_MATCHING,
    async () => ["--pgm", "--json"],
    /^block-matching: option --pgm needs at least one value$/,
  ],
  [
    "two inputs",
    BLOCK_MATCHING,
    async () => ["--generate", "40x24:2", "--pgm", "a.pgm"],
    /^block-matching: give one input \(--yuv, --pgm or --generate\); got --pgm, --generate$/,
  ],
  [
    "a missing PGM file",
    BLOCK_MATCHING,
    async (dir) => ["--pgm", join(dir, "nope.pgm")],
    /^block-matching: cannot read .*nope\.pgm: no such file$/,
  ],
  [
    "a directory as --graph",
    SHORTEST_PATHS,
    async (dir) => ["--graph", dir],
    /^shortest-paths: .* is a directory; expected a file$/,
  ],
  [
    "a directory as --yuv",
    BLOCK_MATCHING,
    async (dir) => ["--yuv", dir, "--size", "64x64"],
    /^block-matching: .* is a directory; expected a file$/,
  ],
  [
    "--repeat 0",
    SHORTEST_PATHS,
    async () => ["--generate", "grid:3x4", "--repeat", "0"],
    /^shortest-paths: option --repeat must be a whole number from 1 to 1000; got "0"$/,
  ],
  [
    "a malformed DIMACS graph",
    SHORTEST_PATHS,
    async (dir) => {
      const gr = join(dir, "bad.gr");
      const text = formatDimacs(12, generateArcs(parseGraphSpec("grid:3x4"), 1)).replace(/^a (\d+) \d+ /m, "a $1 two ");
      await writeFile(gr, text);
      return ["--graph", gr];
    },
    /^shortest-paths: .*bad\.gr/,
  ],
];

for (const [title, app, makeArgs, message] of BAD_INPUT) {
  test(`${app.split("/")[1]}: ${title} is one line and status 2`, async (t) => {
    const r = await launch(2, undefined, app, await makeArgs(tempDir(t)));
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    const lines = appErrors(r);
    t.is(lines.length, 1, r.stderr);
    t.regex(lines[0] ?? "", /^\[0\] /);
    t.regex((lines[0] ?? "").slice(4), message);
  });
}

// --- the bundled defaults -------------------------------------------------------------------------------------

test("block matching with no arguments: the default generated sequence, its known motion recovered", async (t) => {
  const r = await launch(4, undefined, BLOCK_MATCHING, []);
  ok(t, r);
  t.regex(
    rank0(r.stdout)[0] ?? "",
    /^block-matching: 5 frame pairs of 640x360, 40x22 blocks of 16x16, range 8: 4400 vectors, SAD total \d+ \(distributed, 4 ranks/,
  );
  const motion = rank0(r.stderr).find((l) => l.includes("known motion")) ?? r.stderr;
  const m = /known motion recovered on (\d+) of (\d+) interior blocks$/.exec(motion);
  t.truthy(m, motion);
  t.is(m?.[1], m?.[2]);
  t.true(Number(m?.[2]) > 2000, motion);
});

test("block matching --json on the default input, distributed: one deterministic line", async (t) => {
  const r = await launch(4, "distributed", BLOCK_MATCHING, ["--json"]);
  ok(t, r);
  const json = jsonLine(t, r);
  t.deepEqual(Object.keys(json), ["frames", "blocks", "sadTotal", "seconds", "framesLoaded"]);
  t.like(json, { frames: 5, blocks: 4400 });
  // Each rank loaded the frames its strips needed: every one of the 6 frames by some rank.
  const loaded = json.framesLoaded as number[];
  t.is(loaded.length, 4);
  t.true(loaded.reduce((a, b) => a + b, 0) >= 6, `${loaded}`);
  // The same total as the sequential search of the same sequence.
  const seq = matchSequence(generateSequence("640x360:6").frames, 16, 8);
  t.is(
    json.sadTotal,
    seq.frames.reduce((s, f) => s + f.vectors.reduce((a, v) => a + v.sad, 0), 0),
  );
});

test("shortest paths with no arguments: the default grid, distributed on 4 ranks", async (t) => {
  const r = await launch(4, "distributed", SHORTEST_PATHS, []);
  ok(t, r);
  t.regex(
    rank0(r.stdout)[0] ?? "",
    /^shortest-paths: 360000 vertices, \d+ arcs, source 1: 360000 reachable, sum \d+, max \d+ \(distributed, 4 ranks/,
  );
});

test("shortest paths --json on 4 ranks, centralized, a smaller generated grid", async (t) => {
  const r = await launch(4, "centralized", SHORTEST_PATHS, ["--json", "--generate", "grid:40x50"]);
  ok(t, r);
  const json = jsonLine(t, r);
  const d = dijkstra(generateGraph("grid:40x50", 1), 0);
  let sum = 0;
  for (const x of d) sum += x;
  t.like(json, { vertices: 2000, source: 1, reachable: 2000, sum, variant: "centralized" });
});
