/**
 * Full-search block matching on a workpool: frame k is matched against frame k - 1 for every k >= 1.
 *
 *   workpool launch -n 8 [--pool ...] apps/block-matching [--yuv FILE --size WxH | --pgm F0 F1 ... |
 *     --generate WxH:FRAMES] [--seed S] [--block 16] [--range 8] [--rows 1] [--cache 4]
 *     [--no-keys | --loop [--grain G]] [--out FILE.json] [--svg FILE.svg] [--verify] [--json]
 *
 * With no input it matches a generated sequence (DEFAULT_SEQUENCE below). Rank 0 prints one summary line, or
 * with --json one line {"frames" (frames matched), "blocks" (vectors), "sadTotal", "seconds", "framesLoaded"
 * (per rank)}; --out writes every vector as JSON (output.ts), --svg the last frame with its vectors. On a
 * generated sequence it also reports (stderr) whether the blocks whose true motion is known got it. --verify
 * repeats the search sequentially, without early exit, in rank 0's process and compares block by block
 * (status 1 on a mismatch).
 *
 * Every rank checks the input (its size and frame count: agreeOnInput), then loads only the frames its strips
 * need, when it runs them, into a cache of `--cache` frames (source.ts): a generated frame is rendered, a file
 * frame read at its offset. The unit of work is a strip of block rows of one frame pair (strips.ts), and the
 * early-exit SAD loop makes the strips' times vary. Two ways to spread them:
 *
 * - Tasks (the default). Rank 0 puts every strip as a task, with the pair's index as its locality key
 *   (PutOptions.key; `--no-keys` leaves it out), so a distributed pool moves strips in whole frame pairs,
 *   preferably pairs whose frames the receiver holds, and keeps the pairs whose frames the giver holds (the
 *   centralized pool ignores keys).
 * - `--loop`: the strips of every pair, pair-major (`stripsOf`), are the indices of one
 *   `world.parallelFor(0, strips, ...)` on the launcher's `--pool` (docs/loops.md). Each working rank starts on
 *   a contiguous block of them and ranges of consecutive strips move to ranks that run dry, so a rank's strips
 *   come in runs that touch few frames: the cache gets its locality without keys. The loop sums the strips'
 *   SADs into the SAD total (rank 0 checks it against the assembled vectors). The grain (strips per range) is
 *   chosen at run time from the measured strip time, or fixed by `--grain G`; --json adds each rank's grain and
 *   ranges run (`"grain"`, `"ranges"`).
 *
 * Either way each rank keeps the vectors of the strips it ran and counts the frames it loaded; both are gathered
 * to rank 0, which puts the frames together in raster order. Bad input (found on any rank) is one line on rank 0
 * and status 2 everywhere (agreeOnInput).
 */
import { writeFile } from "node:fs/promises";
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { answerHelp, intOption, parseArgs, type ParsedArgs, runApp } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import { firstMismatch, knownMotion } from "./compare.ts";
import { type Frame, MAX_DIMENSION, parseSize } from "./frames.ts";
import { DEFAULT_VIDEO_SEED, generateSequence } from "./generate.ts";
import { type FrameVectors, formatMatchJson, matchSequence } from "./output.ts";
import { blockGrid, checkSearchSize, MAX_BLOCK } from "./search.ts";
import { FrameCache, type FrameSource, generatedSource, pgmSource, yuvSource } from "./source.ts";
import { assemble, matchStrip, type Strip, type StripResult, stripSad, stripsOf } from "./strips.ts";
import { writeSvg } from "./svg.ts";

const APP = "block-matching";
export const DEFAULT_SEQUENCE = "640x360:6";
export const DEFAULT_BLOCK = 16;
export const DEFAULT_RANGE = 8;
/** Block rows per task. */
export const DEFAULT_STRIP_ROWS = 1;
/** Frames a rank holds at once (two frame pairs that share no frame, or three consecutive pairs). */
export const DEFAULT_CACHE_FRAMES = 4;
const MAX_CACHE_FRAMES = 100_000;
const MAX_GRAIN = 2 ** 31 - 1;

const OPTIONS = {
  yuv: "value",
  size: "value",
  pgm: "list",
  generate: "value",
  seed: "value",
  block: "value",
  range: "value",
  rows: "value",
  cache: "value",
  "no-keys": "switch",
  loop: "switch",
  grain: "value",
  out: "value",
  svg: "value",
  verify: "switch",
  json: "switch",
} as const;

interface Input {
  readonly args: ParsedArgs<typeof OPTIONS>;
  readonly source: FrameSource;
  /** The generated sequence's spec and seed, when the input is generated (its known motion is checked). */
  readonly generated: { readonly spec: string; readonly seed: number } | undefined;
  readonly block: number;
  readonly range: number;
  readonly stripRows: number;
  readonly cacheFrames: number;
  /** `--loop`: run the strips as one parallelFor, with this fixed grain if set. */
  readonly loop: { readonly grain: number | undefined } | undefined;
}

/** Parses the arguments and opens and checks the input (on every rank); loads no frame yet. */
async function load(argv: readonly string[]): Promise<Input> {
  const args = parseArgs(APP, argv, OPTIONS);
  const inputs = [args.yuv && "--yuv", args.pgm && "--pgm", args.generate && "--generate"].filter(Boolean);
  if (inputs.length > 1) throw new InputError(`give one input (--yuv, --pgm or --generate); got ${inputs.join(", ")}`);
  if (args.yuv !== undefined && args.size === undefined) throw new InputError("--yuv FILE needs --size WxH");
  if (args.size !== undefined && args.yuv === undefined) throw new InputError("--size applies to --yuv only");
  if (args.seed !== undefined && inputs.length > 0 && args.generate === undefined) {
    throw new InputError("--seed applies to generated input only");
  }
  const block = intOption(APP, "block", args.block, DEFAULT_BLOCK, 1, MAX_BLOCK);
  const range = intOption(APP, "range", args.range, DEFAULT_RANGE, 0, MAX_DIMENSION);
  const stripRows = intOption(APP, "rows", args.rows, DEFAULT_STRIP_ROWS, 1, MAX_DIMENSION);
  const cacheFrames = intOption(APP, "cache", args.cache, DEFAULT_CACHE_FRAMES, 2, MAX_CACHE_FRAMES);
  const seed = intOption(APP, "seed", args.seed, DEFAULT_VIDEO_SEED, 0, 2 ** 31 - 1);
  if (args.loop === true && args["no-keys"] === true) {
    throw new InputError("--no-keys applies without --loop only (a loop puts no tasks to key)");
  }
  if (args.grain !== undefined && args.loop !== true) throw new InputError("--grain applies to --loop only");
  const loop =
    args.loop === true
      ? { grain: args.grain === undefined ? undefined : intOption(APP, "grain", args.grain, 1, 1, MAX_GRAIN) }
      : undefined;
  let generated: Input["generated"];
  let source: FrameSource;
  if (args.yuv !== undefined) {
    const { width, height } = parseSize(args.size as string);
    source = await yuvSource(args.yuv, width, height);
  } else if (args.pgm !== undefined) {
    source = await pgmSource(args.pgm);
  } else {
    generated = { spec: args.generate ?? DEFAULT_SEQUENCE, seed };
    source = generatedSource(generated.spec, seed);
  }
  if (source.count < 2) throw new InputError(`block matching needs at least 2 frames; got ${source.count}`);
  checkSearchSize(source, block, range);
  return { args, source, generated, block, range, stripRows, cacheFrames, loop };
}

/**
 * What each rank sends rank 0 after the run: the strips it matched, how many frames it loaded, and with
 * `--loop` its grain and the ranges it ran.
 */
interface RankPart {
  readonly strips: StripResult[];
  readonly framesLoaded: number;
  readonly loop?: { readonly grain: number; readonly ranges: number };
}

const USAGE = `Usage: workpool launch -n N [--pool SPEC] apps/block-matching [options]

Full-search block matching: frame k against frame k - 1 for every k >= 1.

Input (default: a generated sequence):
  --yuv FILE --size WxH     a raw YUV 4:2:0 file
  --pgm F0 F1 ...           PGM frames
  --generate WxH:FRAMES     a generated sequence          --seed S   its seed
Options:
  --block B         block size (default 16)        --range R   search range (default 8)
  --rows R          block rows per strip (default 1)
  --cache C         frames a rank holds at once (default 4)
  --no-keys         put strips without their frame pair as locality key
  --loop            run the strips as one parallelFor   --grain G   its strips per range
  --out FILE.json   write every motion vector          --svg FILE.svg   the last frame with its vectors
  --verify          repeat the search sequentially and compare; status 1 on a mismatch
  --json            one JSON result line on rank 0
  -h, --help        show this help
`;

const world = await connect();
await answerHelp(world, USAGE);

await runApp(
  APP,
  () => world.rank,
  async () => {
    const input = await agreeOnInput(APP, world, () => load(process.argv.slice(2)));
    const { args, source, generated, block, range, stripRows, cacheFrames, loop } = input;
    const count = source.count;
    const { across, down } = blockGrid(source, block);
    const keys = args["no-keys"] !== true;
    const strips = stripsOf(count, down, stripRows);

    const pool = loop ? undefined : world.pool<Strip>();
    if (pool && world.rank === 0) {
      for (const strip of strips) pool.put(strip, keys ? { key: strip.k } : undefined);
    }
    const mine: StripResult[] = [];
    const cache = new FrameCache((k) => source.load(k), cacheFrames);
    const frameOf = (k: number): Frame => cache.get(k);
    const match = (strip: Strip): StripResult => {
      const r = matchStrip(frameOf, strip, block, range);
      mine.push(r);
      return r;
    };

    await world.barrier();
    const t0 = performance.now();
    let mode: string;
    /** With --loop: the SAD total the loop reduced (the same on every rank), and this rank's loop figures. */
    let loopSad: number | undefined;
    let mineLoop: RankPart["loop"];
    if (pool) {
      await pool.run((strip) => void match(strip));
      mode = pool.config.mode;
    } else {
      const body = (i: number): number => {
        const strip = strips[i] as Strip;
        // A range runs its strips upward, so the pair before this one (if this rank ran it) used frame k - 1.
        // Touched before matchStrip asks for frame k, it stays: a cache of one pair then loads frame k only
        // (dropping k - 2), where asking for k first would drop k - 1 and load both frames of the pair again.
        cache.get(strip.k - 1);
        return stripSad(match(strip));
      };
      const r = await world.parallelFor(0, strips.length, body, loop?.grain ? { grain: loop.grain } : {});
      mode = `loop on ${r.mode}`;
      loopSad = r.result;
      mineLoop = { grain: r.loop.grain, ranges: r.loop.ranges };
    }
    const part: RankPart = { strips: mine, framesLoaded: cache.loads, ...(mineLoop && { loop: mineLoop }) };
    const parts = await world.gather<RankPart>(part, 0);
    const result =
      parts &&
      assemble(
        parts.flatMap((p) => p.strips),
        source,
        count,
        block,
        range,
      );
    const seconds = (performance.now() - t0) / 1000;

    if (world.rank === 0 && parts && result) {
      const framesLoaded = parts.map((p) => p.framesLoaded);
      const blocks = result.frames.reduce((n, f) => n + f.vectors.length, 0);
      let sadTotal = 0;
      for (const f of result.frames) for (const v of f.vectors) sadTotal += v.sad;
      if (loop && loopSad !== sadTotal) {
        throw new Error(`block matching: the loop's SAD total ${loopSad} is not the vectors' ${sadTotal}`);
      }
      if (args.out !== undefined) await writeFile(args.out, formatMatchJson(result));
      const last = result.frames.at(-1) as FrameVectors;
      if (args.svg !== undefined) await writeSvg(args.svg, source.load(last.frame), last.vectors, block);
      const grains = parts.map((p) => p.loop?.grain ?? 0);
      if (args.json) {
        const line = { frames: result.frames.length, blocks, sadTotal, seconds: round(seconds), framesLoaded };
        const loopFigures = loop ? { grain: grains, ranges: parts.map((p) => p.loop?.ranges ?? 0) } : {};
        console.log(JSON.stringify({ ...line, ...loopFigures }));
      } else {
        console.log(
          `${APP}: ${result.frames.length} frame pairs of ${source.width}x${source.height}, ${across}x${down} blocks ` +
            `of ${block}x${block}, range ${range}: ${blocks} vectors, SAD total ${sadTotal} ` +
            `(${mode}, ${world.size} ranks, ${seconds.toFixed(3)} s); frames loaded per rank: ` +
            `${framesLoaded.join(", ")} ` +
            (loop
              ? `(cache ${cacheFrames}, grain per rank ${grains.join(", ")})`
              : `(cache ${cacheFrames}, keys ${keys ? "on" : "off"})`),
        );
      }
      if (generated) {
        const { interior, recovered, miss } = knownMotion(generateSequence(generated.spec, generated.seed), result);
        console.error(
          `${APP}: known motion recovered on ${recovered} of ${interior} interior blocks` +
            (miss === undefined ? "" : `; first miss: ${miss} (tiny blocks can match elsewhere exactly)`),
        );
      }
      if (args.verify) {
        const frames = Array.from({ length: count }, (_, k) => source.load(k));
        const t1 = performance.now();
        const expected = matchSequence(frames, block, range, { earlyExit: false }).frames;
        const sequentialSeconds = (performance.now() - t1) / 1000;
        const bad = firstMismatch(expected, result.frames, "sequential full search says", "workpool says");
        if (bad) {
          console.error(`${APP}: verify FAILED at ${bad}`);
          process.exitCode = 1;
        } else {
          console.error(
            `${APP}: verified: all ${blocks} vectors equal the sequential full search ` +
              `(${sequentialSeconds.toFixed(3)} s sequential, no early exit)`,
          );
        }
      }
    }
    source.close();
    await world.close();
  },
);

function round(seconds: number): number {
  return Number(seconds.toFixed(4));
}
