/**
 * Full-search block matching on a workpool: frame k is matched against frame k - 1 for every k >= 1.
 *
 *   workpool launch -n 8 [--pool ...] apps/block-matching [--yuv FILE --size WxH | --pgm F0 F1 ... |
 *     --generate WxH:FRAMES] [--seed S] [--block 16] [--range 8] [--rows 1] [--cache 4] [--no-keys]
 *     [--out FILE.json] [--svg FILE.svg] [--verify] [--json]
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
 * frame read at its offset. A task names only a strip of block rows of one frame pair (strips.ts) and is put
 * with the pair's index as its locality key (PutOptions.key; `--no-keys` leaves it out), so a distributed pool
 * moves strips in whole frame pairs, preferably pairs whose frames the receiver holds, and keeps the pairs
 * whose frames the giver holds (the centralized pool ignores keys). Rank 0 puts every task; the pool spreads
 * them, and the early-exit SAD loop makes their times vary. Each rank keeps the vectors of the strips it ran and
 * counts the frames it loaded; both are gathered to rank 0, which puts the frames together in raster order.
 * Bad input (found on any rank) is one line on rank 0 and status 2 everywhere (agreeOnInput).
 */
import { writeFile } from "node:fs/promises";
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { intOption, type ParsedArgs, parseArgs, runApp } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import { firstMismatch, knownMotion } from "./compare.ts";
import { type Frame, MAX_DIMENSION, parseSize } from "./frames.ts";
import { DEFAULT_VIDEO_SEED, generateSequence } from "./generate.ts";
import { type FrameVectors, formatMatchJson, matchSequence } from "./output.ts";
import { blockGrid, checkSearchSize, MAX_BLOCK } from "./search.ts";
import { FrameCache, type FrameSource, generatedSource, pgmSource, yuvSource } from "./source.ts";
import { assemble, matchStrip, type Strip, type StripResult, stripsOf } from "./strips.ts";
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
  return { args, source, generated, block, range, stripRows, cacheFrames };
}

/** What each rank sends rank 0 after the run: the strips it matched, and how many frames it loaded. */
interface RankPart {
  readonly strips: StripResult[];
  readonly framesLoaded: number;
}

const world = await connect();

await runApp(
  APP,
  () => world.rank,
  async () => {
    const input = await agreeOnInput(APP, world, () => load(process.argv.slice(2)));
    const { args, source, generated, block, range, stripRows, cacheFrames } = input;
    const count = source.count;
    const { across, down } = blockGrid(source, block);
    const keys = args["no-keys"] !== true;

    const pool = world.pool<Strip>();
    if (world.rank === 0) {
      for (const strip of stripsOf(count, down, stripRows)) pool.put(strip, keys ? { key: strip.k } : undefined);
    }
    const mine: StripResult[] = [];
    const cache = new FrameCache((k) => source.load(k), cacheFrames);
    const frameOf = (k: number): Frame => cache.get(k);

    await world.barrier();
    const t0 = performance.now();
    await pool.run((strip) => {
      mine.push(matchStrip(frameOf, strip, block, range));
    });
    const parts = await world.gather<RankPart>({ strips: mine, framesLoaded: cache.loads }, 0);
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
      if (args.out !== undefined) await writeFile(args.out, formatMatchJson(result));
      const last = result.frames.at(-1) as FrameVectors;
      if (args.svg !== undefined) await writeSvg(args.svg, source.load(last.frame), last.vectors, block);
      if (args.json) {
        console.log(
          JSON.stringify({ frames: result.frames.length, blocks, sadTotal, seconds: round(seconds), framesLoaded }),
        );
      } else {
        console.log(
          `${APP}: ${result.frames.length} frame pairs of ${source.width}x${source.height}, ${across}x${down} blocks ` +
            `of ${block}x${block}, range ${range}: ${blocks} vectors, SAD total ${sadTotal} ` +
            `(${pool.config.mode}, ${world.size} ranks, ${seconds.toFixed(3)} s); frames loaded per rank: ` +
            `${framesLoaded.join(", ")} (cache ${cacheFrames}, keys ${keys ? "on" : "off"})`,
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
