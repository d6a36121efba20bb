/**
 * Full-search block matching on a workpool: frame k is matched against frame k - 1 for every k >= 1.
 *
 *   workpool launch -n 8 [--pool ...] apps/block-matching [--yuv FILE --size WxH | --pgm F0 F1 ... |
 *     --generate WxH:FRAMES] [--seed S] [--block 16] [--range 8] [--rows 1] [--out FILE.json] [--svg FILE.svg]
 *     [--verify] [--json]
 *
 * With no input it matches a generated sequence (DEFAULT_SEQUENCE below). Rank 0 prints one summary line, or
 * with --json one line {"frames" (frames matched), "blocks" (vectors), "sadTotal", "seconds"}; --out writes
 * every vector as JSON (output.ts), --svg the last frame with its vectors. On a generated sequence it also
 * reports (stderr) whether the blocks whose true motion is known got it. --verify repeats the search
 * sequentially, without early exit, in rank 0's process and compares block by block (status 1 on a mismatch).
 *
 * Every rank loads the frames itself (reads the file, or generates the sequence from the seed); a task names
 * only a strip of block rows of one frame pair (strips.ts). Rank 0 puts every task; the pool (either mode,
 * same code) spreads them, and the early-exit SAD loop makes their times vary. Each rank keeps the vectors of
 * the strips it ran; they are gathered to rank 0, which puts the frames together in raster order. Bad input
 * (found on any rank) is one line on rank 0 and status 2 everywhere (agreeOnInput).
 */
import { writeFile } from "node:fs/promises";
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { intOption, type ParsedArgs, parseArgs, runApp } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import { firstMismatch, knownMotion } from "./compare.ts";
import { type Frame, MAX_DIMENSION, parseSize, readPgm, readYuv } from "./frames.ts";
import { DEFAULT_VIDEO_SEED, generateSequence, parseSequenceSpec, type Sequence } from "./generate.ts";
import { type FrameVectors, formatMatchJson, matchSequence } from "./output.ts";
import { blockGrid, checkSearch, MAX_BLOCK } from "./search.ts";
import { assemble, matchStrip, type Strip, type StripResult, stripsOf } from "./strips.ts";
import { writeSvg } from "./svg.ts";

const APP = "block-matching";
export const DEFAULT_SEQUENCE = "640x360:6";
export const DEFAULT_BLOCK = 16;
export const DEFAULT_RANGE = 8;
/** Block rows per task. */
export const DEFAULT_STRIP_ROWS = 1;

const OPTIONS = {
  yuv: "value",
  size: "value",
  pgm: "list",
  generate: "value",
  seed: "value",
  block: "value",
  range: "value",
  rows: "value",
  out: "value",
  svg: "value",
  verify: "switch",
  json: "switch",
} as const;

interface Input {
  readonly args: ParsedArgs<typeof OPTIONS>;
  readonly frames: readonly Frame[];
  /** The generated sequence, with its known motion, when the input is generated. */
  readonly sequence: Sequence | undefined;
  readonly block: number;
  readonly range: number;
  readonly stripRows: number;
}

/** Parses the arguments and loads and checks the frames (on every rank). */
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
  const seed = intOption(APP, "seed", args.seed, DEFAULT_VIDEO_SEED, 0, 2 ** 31 - 1);
  let sequence: Sequence | undefined;
  let frames: Frame[];
  if (args.yuv !== undefined) {
    const { width, height } = parseSize(args.size as string);
    frames = await readYuv(args.yuv, width, height);
  } else if (args.pgm !== undefined) {
    frames = await readPgm(args.pgm);
  } else {
    sequence = generateSequence(parseSequenceSpec(args.generate ?? DEFAULT_SEQUENCE), seed);
    frames = sequence.frames;
  }
  const first = frames[0] as Frame;
  if (frames.length < 2) throw new InputError(`block matching needs at least 2 frames; got ${frames.length}`);
  checkSearch(first, first, block, range);
  return { args, frames, sequence, block, range, stripRows };
}

const world = await connect();

await runApp(
  APP,
  () => world.rank,
  async () => {
    const input = await agreeOnInput(APP, world, () => load(process.argv.slice(2)));
    const { args, frames, sequence, block, range, stripRows } = input;
    const first = frames[0] as Frame;
    const { across, down } = blockGrid(first, block);

    const pool = world.pool<Strip>();
    if (world.rank === 0) for (const strip of stripsOf(frames.length, down, stripRows)) pool.put(strip);
    const mine: StripResult[] = [];

    await world.barrier();
    const t0 = performance.now();
    await pool.run((strip) => {
      mine.push(matchStrip(frames, strip, block, range));
    });
    const parts = await world.gather(mine, 0);
    const result = parts && assemble(parts.flat(), first, frames.length, block, range);
    const seconds = (performance.now() - t0) / 1000;

    if (world.rank === 0 && result) {
      const blocks = result.frames.reduce((n, f) => n + f.vectors.length, 0);
      let sadTotal = 0;
      for (const f of result.frames) for (const v of f.vectors) sadTotal += v.sad;
      if (args.out !== undefined) await writeFile(args.out, formatMatchJson(result));
      const last = result.frames.at(-1) as FrameVectors;
      if (args.svg !== undefined) await writeSvg(args.svg, frames[last.frame] as Frame, last.vectors, block);
      if (args.json) {
        console.log(JSON.stringify({ frames: result.frames.length, blocks, sadTotal, seconds: round(seconds) }));
      } else {
        console.log(
          `${APP}: ${result.frames.length} frame pairs of ${first.width}x${first.height}, ${across}x${down} blocks ` +
            `of ${block}x${block}, range ${range}: ${blocks} vectors, SAD total ${sadTotal} ` +
            `(${pool.config.mode}, ${world.size} ranks, ${seconds.toFixed(3)} s)`,
        );
      }
      if (sequence) {
        const { interior, recovered, miss } = knownMotion(sequence, result);
        console.error(
          `${APP}: known motion recovered on ${recovered} of ${interior} interior blocks` +
            (miss === undefined ? "" : `; first miss: ${miss} (tiny blocks can match elsewhere exactly)`),
        );
      }
      if (args.verify) {
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
    await world.close();
  },
);

function round(seconds: number): number {
  return Number(seconds.toFixed(4));
}
