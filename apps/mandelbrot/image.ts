/**
 * The Mandelbrot set on a grid of pixels: escape counts row by row, a checksum of the counts that rows can be
 * added to in any order, the sequential loop `--verify` and `--speedup` compare with, and the image as PGM.
 *
 * A pixel's escape count is how many times z -> z^2 + c (z from 0, c the pixel's centre) runs before |z| > 2,
 * at most the iteration limit (then c is taken to be in the set). There is no shortcut for the main cardioid or
 * bulb: a row through the set costs the limit at each of its pixels inside, a row above it a few per pixel, so
 * rows differ in cost by 100x or more and a loop over them has to balance.
 */

/** The rectangle of the complex plane the image covers: real `x0..x1`, imaginary `y0..y1`. */
export interface Box {
  readonly x0: number;
  readonly y0: number;
  readonly x1: number;
  readonly y1: number;
}

/** What to render. */
export interface Picture {
  readonly width: number;
  readonly height: number;
  /** The most iterations a pixel runs; its escape count is between 0 and this. */
  readonly iterations: number;
  readonly box: Box;
}

/** A row's escape count total and checksum. */
export interface RowSummary {
  readonly escapes: number;
  readonly hash: number;
}

/**
 * Escape counts of row `y` (row 0 is the top, at imaginary y1) into `out` (width entries). Pixel (x, y) is the
 * centre of its cell; the same arithmetic on every rank, so a row's counts never depend on where it ran.
 */
export function escapeRow(p: Picture, y: number, out: Uint32Array): void {
  const { width, height, iterations, box } = p;
  const dx = (box.x1 - box.x0) / width;
  const ci = box.y1 - (y + 0.5) * ((box.y1 - box.y0) / height);
  for (let x = 0; x < width; x++) {
    const cr = box.x0 + (x + 0.5) * dx;
    let zr = 0;
    let zi = 0;
    let n = 0;
    while (n < iterations) {
      const zr2 = zr * zr;
      const zi2 = zi * zi;
      if (zr2 + zi2 > 4) break;
      zi = 2 * zr * zi + ci;
      zr = zr2 - zi2 + cr;
      n++;
    }
    out[x] = n;
  }
}

/**
 * Row `y`'s escape count total and a 32-bit hash of its counts and of `y` (FNV-1a over 32-bit words, then a
 * final mix), so that the image checksum, the sum of its rows' hashes, changes when any count changes or two
 * rows trade places, yet can be summed in any order and split (a row's hash is below 2^32, so a sum of up to
 * 2^21 of them is exact in a double).
 */
export function summarizeRow(y: number, counts: Uint32Array): RowSummary {
  let escapes = 0;
  let h = Math.imul(0x811c9dc5 ^ y, 0x01000193);
  for (let x = 0; x < counts.length; x++) {
    const n = counts[x] as number;
    escapes += n;
    h = Math.imul(h ^ n, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return { escapes, hash: h >>> 0 };
}

/** The image checksum, 8 hex digits, from the sum of its rows' hashes. */
export function formatChecksum(hashSum: number): string {
  return (hashSum % 2 ** 32).toString(16).padStart(8, "0");
}

/** The whole image's escape total and hash sum. */
export interface Totals {
  readonly escapes: number;
  readonly hashSum: number;
}

/** The plain loop over the rows, in this process: what the parallel loop must reproduce. */
export function renderSequential(p: Picture): Totals {
  const counts = new Uint32Array(p.width);
  let escapes = 0;
  let hashSum = 0;
  for (let y = 0; y < p.height; y++) {
    escapeRow(p, y, counts);
    const s = summarizeRow(y, counts);
    escapes += s.escapes;
    hashSum += s.hash;
  }
  return { escapes, hashSum };
}

/**
 * Grey levels for escape counts 0..iterations: black inside the set (the limit), and outside, brighter the
 * longer a pixel took to escape, on a log scale (most escape within a few iterations).
 */
export function greyLevels(iterations: number): Uint8Array {
  const grey = new Uint8Array(iterations + 1);
  const top = Math.log1p(iterations);
  for (let n = 0; n < iterations; n++) grey[n] = Math.round((255 * Math.log1p(n)) / top);
  return grey;
}

/** Binary PGM (P5, maxval 255) bytes of a `width` x `height` grey image held row by row in `pixels`. */
export function encodePgm(width: number, height: number, pixels: Uint8Array, comment: string): Uint8Array {
  const header = Buffer.from(`P5\n# ${comment}\n${width} ${height}\n255\n`);
  const out = new Uint8Array(header.length + pixels.length);
  out.set(header);
  out.set(pixels, header.length);
  return out;
}
