/**
 * The Mandelbrot set as one DOALL loop over the image's rows (`world.parallelFor`, docs/loops.md).
 *
 *   workpool launch -n 2 [--pool ...] apps/mandelbrot [--size WxH] [--iterations N]
 *     [--center X,Y] [--zoom Z | --box X0,Y0,X1,Y1] [--grain G] [--pgm FILE] [--verify] [--speedup] [--json]
 *
 * An index is a row. A row's cost is its pixels' escape counts, from a few iterations a pixel above the set to
 * `--iterations` a pixel across it (image.ts), so rows differ in cost by 100x or more, and the loop, not a fixed
 * split, keeps the ranks busy: each starts on a contiguous block of rows and ranges of rows move to a rank that
 * runs dry. The grain (rows per range) is chosen at run time from the measured row time, or fixed by `--grain`.
 * Each row returns [its escape total, its hash]; the loop sums both, so every rank ends with the escape total
 * and the image checksum (the sum of the row hashes, image.ts), whichever rank ran which row.
 *
 * Rank 0 prints one line, or with `--json` one JSON line: the size, iterations and view, `escapes`, `checksum`,
 * `mode`, `ranks`, `seconds` (the loop, from a barrier to its end), and per rank the `grain` it chose (or the
 * fixed one), the `ranges` and the `rows` it ran. `--verify`: rank 0 renders the image again with the sequential
 * loop in its own process and compares the escape total and the checksum, exactly (status 1 on a mismatch).
 * `--speedup`: rank 0 times that sequential loop and prints both times, the speedup and the efficiency. `--pgm
 * FILE`: rank 0 writes the image as a binary PGM (black inside the set; see image.ts `greyLevels`). Rank 0 also
 * checks that the rows the ranks ran add up to the image's height (with `--pgm`: each row exactly once).
 * Bad input is one line on rank 0 naming the option and the value, and status 2 on every rank (agreeOnInput).
 */
import { type FileHandle, open } from "node:fs/promises";
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { answerHelp, runApp } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import {
  encodePgm,
  escapeRow,
  formatChecksum,
  greyLevels,
  type Picture,
  renderSequential,
  summarizeRow,
} from "./image.ts";
import { type MandelbrotOptions, parseOptions } from "./options.ts";

const APP = "mandelbrot";

/**
 * What each rank sends rank 0 after the loop: its loop figures, and with `--pgm` the rows it ran (`ys`) and
 * their grey pixels, back to back in the same order.
 *
 * Why gather and not a reducing function that merges row chunks: the loop's reduce runs on every combine (once
 * per row on the rank that ran it, copying the chunk so far each time) and its result reaches every rank, so
 * each rank would receive the whole image. Kept rows cross the network once, to rank 0 only, and the loop's
 * own reduction stays two numbers a row.
 */
interface RankPart {
  readonly grain: number;
  readonly ranges: number;
  readonly rows: number;
  readonly ys?: number[];
  readonly pixels?: Uint8Array;
}

/** Opens `--pgm FILE` for writing on rank 0 up front, so a file that cannot be written is bad input, not a lost run. */
async function openOutput(path: string): Promise<FileHandle> {
  try {
    return await open(path, "w");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new InputError(`${APP}: option --pgm: cannot write ${JSON.stringify(path)}: ${code}`, { cause: e });
  }
}

const USAGE = `Usage: workpool launch -n N [--pool SPEC] apps/mandelbrot [options]

The Mandelbrot set as one parallel loop over the image's rows (world.parallelFor).

Options:
  --size WxH          image size in pixels
  --iterations N      most iterations per pixel
  --center X,Y        the view's centre          --zoom Z   its magnification (with --center)
  --box X0,Y0,X1,Y1   the view as a box (instead of --center and --zoom)
  --grain G           rows per range (default: chosen at run time)
  --pgm FILE          rank 0 writes the image as a binary PGM
  --verify            rank 0 renders the image again sequentially and compares; status 1 on a mismatch
  --speedup           also time the sequential loop and print the speedup and efficiency
  --json              one JSON result line on rank 0
  -h, --help          show this help
`;

const world = await connect();
await answerHelp(world, USAGE);

await runApp(
  APP,
  () => world.rank,
  async () => {
    const { options, output } = await agreeOnInput(APP, world, async () => {
      const options = parseOptions(process.argv.slice(2));
      const output = world.rank === 0 && options.pgm !== undefined ? await openOutput(options.pgm) : undefined;
      return { options, output };
    });
    const { picture } = options;
    const { width, height } = picture;

    const counts = new Uint32Array(width);
    const grey = options.pgm === undefined ? undefined : greyLevels(picture.iterations);
    const ys: number[] = [];
    const rows: Uint8Array[] = [];
    const body = (y: number): [number, number] => {
      escapeRow(picture, y, counts);
      if (grey) {
        const row = new Uint8Array(width);
        for (let x = 0; x < width; x++) row[x] = grey[counts[x] as number] as number;
        ys.push(y);
        rows.push(row);
      }
      const { escapes, hash } = summarizeRow(y, counts);
      return [escapes, hash];
    };

    await world.barrier();
    const t0 = performance.now();
    const r = await world.parallelFor(0, height, body, options.grain === undefined ? {} : { grain: options.grain });
    const seconds = (performance.now() - t0) / 1000;
    const [escapes, hashSum] = r.result ?? [0, 0];

    const part: RankPart = {
      grain: r.loop.grain,
      ranges: r.loop.ranges,
      rows: r.loop.iterations,
      ...(grey && { ys, pixels: Buffer.concat(rows) }),
    };
    const parts = await world.gather(part, 0);
    if (world.rank === 0 && parts) {
      report(options, {
        escapes,
        checksum: formatChecksum(hashSum),
        mode: r.mode,
        seconds,
        parts,
      });
      if (output) await writeImage(output, picture, parts);
    }
    await world.close();
  },
);

/** What the loop found, on rank 0. */
interface Outcome {
  readonly escapes: number;
  readonly checksum: string;
  readonly mode: string;
  readonly seconds: number;
  readonly parts: readonly RankPart[];
}

/** Prints rank 0's line (or JSON), runs the sequential loop for --verify and --speedup, and checks the rows. */
function report(options: MandelbrotOptions, o: Outcome): void {
  const { picture } = options;
  const ranks = o.parts.length;
  const rowsRun = o.parts.reduce((n, p) => n + p.rows, 0);
  let sequential: { escapes: number; checksum: string; seconds: number } | undefined;
  if (options.verify || options.speedup) {
    const t0 = performance.now();
    const totals = renderSequential(picture);
    const seconds = (performance.now() - t0) / 1000;
    sequential = { escapes: totals.escapes, checksum: formatChecksum(totals.hashSum), seconds };
  }
  const verified = sequential && sequential.escapes === o.escapes && sequential.checksum === o.checksum;
  const speedup = sequential && sequential.seconds / o.seconds;
  const { x0, y0, x1, y1 } = picture.box;
  if (options.json) {
    console.log(
      JSON.stringify({
        width: picture.width,
        height: picture.height,
        iterations: picture.iterations,
        box: [x0, y0, x1, y1],
        escapes: o.escapes,
        checksum: o.checksum,
        mode: o.mode,
        ranks,
        seconds: round(o.seconds),
        grain: o.parts.map((p) => p.grain),
        ranges: o.parts.map((p) => p.ranges),
        rows: o.parts.map((p) => p.rows),
        ...(options.verify && { verified }),
        ...(options.speedup &&
          sequential &&
          speedup !== undefined && {
            seqSeconds: round(sequential.seconds),
            speedup: Number(speedup.toFixed(3)),
            efficiency: Number((speedup / ranks).toFixed(3)),
          }),
      }),
    );
  } else {
    console.log(
      `${APP} ${picture.width}x${picture.height}, ${picture.iterations} iterations, view ${x0},${y0} to ${x1},${y1}: ` +
        `escape total ${o.escapes}, checksum ${o.checksum} (loop on ${o.mode}, ${ranks} ranks, ` +
        `${o.seconds.toFixed(3)} s; grain per rank ${o.parts.map((p) => p.grain).join(", ")})`,
    );
    if (options.speedup && sequential && speedup !== undefined) {
      console.log(
        `${APP}: loop on ${ranks} ranks ${o.seconds.toFixed(3)} s, sequential loop ${sequential.seconds.toFixed(3)} s: ` +
          `speedup ${speedup.toFixed(2)}x, efficiency ${(speedup / ranks).toFixed(2)}`,
      );
    }
  }
  if (rowsRun !== picture.height) {
    console.error(`${APP}: the ranks ran ${rowsRun} rows of ${picture.height}`);
    process.exitCode = 1;
  }
  if (options.verify && sequential) {
    if (verified) {
      console.error(
        `${APP}: verified: escape total ${o.escapes} and checksum ${o.checksum} equal the sequential loop's ` +
          `(${sequential.seconds.toFixed(3)} s)`,
      );
    } else {
      console.error(
        `${APP}: verify FAILED: the loop gave escape total ${o.escapes}, checksum ${o.checksum}; ` +
          `the sequential loop ${sequential.escapes}, ${sequential.checksum}`,
      );
      process.exitCode = 1;
    }
  }
}

/** Puts the ranks' rows in place, each exactly once, and writes the PGM. */
async function writeImage(output: FileHandle, picture: Picture, parts: readonly RankPart[]): Promise<void> {
  const { width, height } = picture;
  const pixels = new Uint8Array(width * height);
  const seen = new Uint8Array(height);
  for (const p of parts) {
    const ys = p.ys ?? [];
    const from = p.pixels ?? new Uint8Array(0);
    ys.forEach((y, k) => {
      if (seen[y]) throw new Error(`${APP}: row ${y} was computed twice`);
      seen[y] = 1;
      pixels.set(from.subarray(k * width, (k + 1) * width), y * width);
    });
  }
  const missing = seen.indexOf(0);
  if (missing >= 0) throw new Error(`${APP}: row ${missing} was never computed`);
  const { x0, y0, x1, y1 } = picture.box;
  const comment = `mandelbrot ${picture.iterations} iterations, view ${x0},${y0} to ${x1},${y1}`;
  await output.writeFile(encodePgm(width, height, pixels, comment));
  await output.close();
}

function round(seconds: number): number {
  return Number(seconds.toFixed(4));
}
