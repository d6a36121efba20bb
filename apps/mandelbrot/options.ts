/**
 * The mandelbrot app's command line, checked before any work so that bad input is one line naming the option
 * and the value received.
 */
import { intOption, parseArgs } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import type { Box, Picture } from "./image.ts";

const APP = "mandelbrot";

/** Image size when `--size` is not given: the sequential loop takes about 1.5 s on one core here. */
export const DEFAULT_SIZE = "1600x1200";
/** Escape iterations when `--iterations` is not given. */
export const DEFAULT_ITERATIONS = 1000;
/** The view when neither `--center`/`--zoom` nor `--box` is given: the whole set. */
export const DEFAULT_CENTER = { x: -0.75, y: 0 } as const;
/** Width of the view at zoom 1, in the complex plane; the height follows from the image's aspect ratio. */
export const VIEW_WIDTH = 3;
/**
 * Largest width or height. Rows are summed as 32-bit hashes, exact while a sum has fewer than 2^21 terms; and
 * 16384^2 pixels at the most iterations keep the escape total below 2^53.
 */
export const MAX_SIDE = 16384;
export const MAX_ITERATIONS = 1_000_000;
const MAX_GRAIN = MAX_SIDE;

const SPEC = {
  size: "value",
  iterations: "value",
  center: "value",
  zoom: "value",
  box: "value",
  grain: "value",
  pgm: "value",
  verify: "switch",
  speedup: "switch",
  json: "switch",
} as const;

export interface MandelbrotOptions {
  /**
   * `--size WxH`, `--iterations N`, and the view: `--box X0,Y0,X1,Y1`, or `--center X,Y` and `--zoom Z` (the
   * view is VIEW_WIDTH / Z wide, as high as the image's aspect ratio makes it). @default DEFAULT_SIZE,
   * DEFAULT_ITERATIONS, DEFAULT_CENTER at zoom 1
   */
  readonly picture: Picture;
  /** `--grain G`: rows per range, fixed. @default undefined: chosen at run time on each rank */
  readonly grain: number | undefined;
  /** `--pgm FILE`: where rank 0 writes the image. @default undefined: no image written */
  readonly pgm: string | undefined;
  /** `--verify`: compare with the sequential loop in rank 0's process (status 1 on a mismatch). @default false */
  readonly verify: boolean;
  /** `--speedup`: time the sequential loop on rank 0 and print the speedup and efficiency. @default false */
  readonly speedup: boolean;
  /** `--json`: one JSON line on rank 0 instead of text. @default false */
  readonly json: boolean;
}

/** Parses `--size WxH`. */
export function parseSize(raw: string): { width: number; height: number } {
  const m = /^(\d+)x(\d+)$/.exec(raw);
  const width = Number(m?.[1]);
  const height = Number(m?.[2]);
  if (m === null || !(width >= 1 && width <= MAX_SIDE && height >= 1 && height <= MAX_SIDE)) {
    throw new InputError(
      `${APP}: option --size must be WxH with W and H whole numbers from 1 to ${MAX_SIDE}; got ${JSON.stringify(raw)}`,
    );
  }
  return { width, height };
}

/** Parses `count` finite numbers separated by commas, for option `name`. */
function numbers(name: string, raw: string, count: number, shape: string): number[] {
  const parts = raw.split(",");
  const values = parts.map((s) => (s.trim() === "" ? Number.NaN : Number(s)));
  if (parts.length !== count || !values.every(Number.isFinite)) {
    throw new InputError(`${APP}: option --${name} must be ${shape} (finite numbers); got ${JSON.stringify(raw)}`);
  }
  return values;
}

/** The view from `--box`, or from `--center` and `--zoom` (each defaulted) and the image's aspect ratio. */
function viewport(args: { center?: string; zoom?: string; box?: string }, width: number, height: number): Box {
  let box: Box;
  let given: string;
  if (args.box !== undefined) {
    if (args.center !== undefined || args.zoom !== undefined) {
      throw new InputError(`${APP}: give either --box or --center/--zoom, not both`);
    }
    const [x0, y0, x1, y1] = numbers("box", args.box, 4, "x0,y0,x1,y1") as [number, number, number, number];
    if (!(x0 < x1 && y0 < y1)) {
      throw new InputError(`${APP}: option --box needs x0 < x1 and y0 < y1; got ${JSON.stringify(args.box)}`);
    }
    box = { x0, y0, x1, y1 };
    given = `--box ${args.box}`;
  } else {
    const [cx, cy] =
      args.center === undefined
        ? [DEFAULT_CENTER.x, DEFAULT_CENTER.y]
        : (numbers("center", args.center, 2, "x,y") as [number, number]);
    const zoom = args.zoom === undefined ? 1 : Number(args.zoom);
    if (args.zoom !== undefined && (args.zoom.trim() === "" || !Number.isFinite(zoom) || zoom <= 0)) {
      throw new InputError(`${APP}: option --zoom must be a number above 0; got ${JSON.stringify(args.zoom)}`);
    }
    const halfWidth = VIEW_WIDTH / zoom / 2;
    const halfHeight = (halfWidth * height) / width;
    box = { x0: cx - halfWidth, y0: cy - halfHeight, x1: cx + halfWidth, y1: cy + halfHeight };
    given = `--center ${cx},${cy} --zoom ${zoom}`;
  }
  // Too wide a view overflows; too narrow a one gives neighbouring pixels the same coordinates (flat stripes).
  const pixel = Math.min((box.x1 - box.x0) / width, (box.y1 - box.y0) / height);
  const scale = Math.max(Math.abs(box.x0), Math.abs(box.x1), Math.abs(box.y0), Math.abs(box.y1));
  if (!Object.values(box).every(Number.isFinite) || !(pixel > scale * Number.EPSILON * 4)) {
    throw new InputError(`${APP}: the view ${given} is out of double precision's reach at ${width}x${height}`);
  }
  return box;
}

/** Reads the command line (without node and the app). Throws InputError for bad input. */
export function parseOptions(argv: readonly string[]): MandelbrotOptions {
  const args = parseArgs(APP, argv, SPEC);
  const { width, height } = parseSize(args.size ?? DEFAULT_SIZE);
  const iterations = intOption(APP, "iterations", args.iterations, DEFAULT_ITERATIONS, 1, MAX_ITERATIONS);
  const box = viewport(args, width, height);
  const grain = args.grain === undefined ? undefined : intOption(APP, "grain", args.grain, 1, 1, MAX_GRAIN);
  if (args.pgm === "") throw new InputError(`${APP}: option --pgm needs a file name; got ""`);
  return {
    picture: { width, height, iterations, box },
    grain,
    pgm: args.pgm,
    verify: args.verify === true,
    speedup: args.speedup === true,
    json: args.json === true,
  };
}
