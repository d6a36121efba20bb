/**
 * Full-search block matching on luma, with these exact conventions (every variant here and every parallel
 * version must give the same vectors):
 *
 * - Only whole B x B blocks are matched, tiled from the top-left corner: floor(W / B) x floor(H / B) blocks,
 *   in raster order; block (bx, by) has its top-left pixel at (x, y) = (bx * B, by * B).
 * - Candidates: every displacement (dx, dy) with -range <= dx, dy <= range such that the candidate block at
 *   (x + dx, y + dy) lies fully inside the reference (previous) frame.
 * - Cost: sum of absolute differences (SAD) of the luma samples.
 * - Order: dy outer, dx inner, both ascending; a tie goes to the LATER candidate (`sad <= best`).
 * - Early exit: a candidate's SAD loop stops (after a block row) once its partial sum is strictly greater than
 *   the best so far. Such a candidate could never be taken, even on a tie, so results do not change.
 */
import { InputError } from "../common/errors.ts";
import type { Frame } from "./frames.ts";

/** One block's result: block top-left pixel (x, y), best displacement (dx, dy), its SAD. */
export interface Vector {
  readonly x: number;
  readonly y: number;
  readonly dx: number;
  readonly dy: number;
  readonly sad: number;
}

export interface SearchOptions {
  /** Stop a candidate's SAD once it exceeds the best so far. @default true */
  readonly earlyExit?: boolean;
}

/** Largest block size accepted (keeps every SAD a small integer). */
export const MAX_BLOCK = 1024;

/** Number of whole blocks across and down a frame. */
export function blockGrid(frame: { width: number; height: number }, block: number): { across: number; down: number } {
  return { across: Math.floor(frame.width / block), down: Math.floor(frame.height / block) };
}

/** Validates a search (frames, block size, range); throws `InputError` naming the bad value. */
export function checkSearch(cur: Frame, ref: Frame, block: number, range: number): void {
  checkBlockAndRange(block, range);
  if (cur.width !== ref.width || cur.height !== ref.height) {
    throw new InputError(`frame is ${cur.width}x${cur.height} but the reference is ${ref.width}x${ref.height}`);
  }
  if (cur.luma.length !== cur.width * cur.height || ref.luma.length !== ref.width * ref.height) {
    throw new InputError(`frame luma must hold width * height = ${cur.width * cur.height} bytes`);
  }
  checkBlockFits(cur, block);
}

/** Checks a search of `block`-sized blocks and `range` on frames of `size`, before any frame is loaded. */
export function checkSearchSize(size: { width: number; height: number }, block: number, range: number): void {
  checkBlockAndRange(block, range);
  checkBlockFits(size, block);
}

function checkBlockAndRange(block: number, range: number): void {
  if (!Number.isInteger(block) || block < 1 || block > MAX_BLOCK) {
    throw new InputError(`block size must be an integer in 1..${MAX_BLOCK}; got ${block}`);
  }
  if (!Number.isInteger(range) || range < 0) throw new InputError(`search range must be an integer >= 0; got ${range}`);
}

function checkBlockFits(size: { width: number; height: number }, block: number): void {
  if (block > size.width || block > size.height) {
    throw new InputError(`block size ${block} is larger than the ${size.width}x${size.height} frame`);
  }
}

function checkBlock(cur: Frame, block: number, bx: number, by: number): void {
  const { across, down } = blockGrid(cur, block);
  if (!Number.isInteger(bx) || !Number.isInteger(by) || bx < 0 || by < 0 || bx >= across || by >= down) {
    throw new InputError(`block (${bx}, ${by}) is outside the ${across}x${down} blocks of size ${block}`);
  }
}

/**
 * The displacement `searchBlock` found last. Why not a returned object: the candidate loop is long enough
 * that V8 compiles it on-stack (OSR) during the first call, before the code after the loop has ever run. An
 * object literal there has no type feedback yet, so the optimized loop could be left through a deopt
 * ("insufficient type feedback for generic named access"), in some runs again and again (8 times in one run,
 * with --trace-deopt), depending on when the compiler thread finished. Module variables need no feedback.
 */
let foundDx = 0;
let foundDy = 0;

/**
 * Search of one block, no validation; `earlyExit` selects the SAD loop. Returns the best SAD; its
 * displacement is left in foundDx, foundDy (see there).
 */
function searchBlock(
  cur: Frame,
  ref: Frame,
  bx: number,
  by: number,
  block: number,
  range: number,
  earlyExit: boolean,
): number {
  const width = cur.width;
  const c = cur.luma;
  const r = ref.luma;
  const x = bx * block;
  const y = by * block;
  // `| 0` turns -0 into 0, so a zero vector prints and compares as 0.
  const dxMin = Math.max(-range, -x) | 0;
  const dxMax = Math.min(range, width - block - x) | 0;
  const dyMin = Math.max(-range, -y) | 0;
  const dyMax = Math.min(range, cur.height - block - y) | 0;
  const origin = y * width + x;
  const block4 = block & ~3;
  // Larger than any SAD; keeps `best` a small integer.
  let best = 255 * block * block + 1;
  let bestDx = 0;
  let bestDy = 0;
  for (let dy = dyMin; dy <= dyMax; dy++) {
    for (let dx = dxMin; dx <= dxMax; dx++) {
      let sad = 0;
      let ci = origin;
      let ri = origin + dy * width + dx;
      for (let row = 0; row < block; row++) {
        let i = 0;
        for (; i < block4; i += 4) {
          sad +=
            Math.abs(c[ci + i]! - r[ri + i]!) +
            Math.abs(c[ci + i + 1]! - r[ri + i + 1]!) +
            Math.abs(c[ci + i + 2]! - r[ri + i + 2]!) +
            Math.abs(c[ci + i + 3]! - r[ri + i + 3]!);
        }
        for (; i < block; i++) sad += Math.abs(c[ci + i]! - r[ri + i]!);
        if (earlyExit && sad > best) break;
        ci += width;
        ri += width;
      }
      if (sad <= best) {
        best = sad;
        bestDx = dx;
        bestDy = dy;
      }
    }
  }
  foundDx = bestDx;
  foundDy = bestDy;
  return best;
}

/** The vector of block (bx, by): `searchBlock`, its result as a Vector. */
function searchVector(
  cur: Frame,
  ref: Frame,
  bx: number,
  by: number,
  block: number,
  range: number,
  earlyExit: boolean,
): Vector {
  const sad = searchBlock(cur, ref, bx, by, block, range, earlyExit);
  return { x: bx * block, y: by * block, dx: foundDx, dy: foundDy, sad };
}

/** Best vector of block (bx, by) (block indices, not pixels) of `cur` against `ref`, with early exit. */
export function matchBlock(cur: Frame, ref: Frame, bx: number, by: number, block: number, range: number): Vector {
  checkSearch(cur, ref, block, range);
  checkBlock(cur, block, bx, by);
  return searchVector(cur, ref, bx, by, block, range, true);
}

/**
 * The same search written plainly, SAD always computed in full: the reference `matchBlock` is checked against.
 */
export function matchBlockExhaustive(
  cur: Frame,
  ref: Frame,
  bx: number,
  by: number,
  block: number,
  range: number,
): Vector {
  checkSearch(cur, ref, block, range);
  checkBlock(cur, block, bx, by);
  const { width, height } = cur;
  const x = bx * block;
  const y = by * block;
  let best: Vector | undefined;
  for (let dy = -range | 0; dy <= range; dy++) {
    for (let dx = -range | 0; dx <= range; dx++) {
      if (x + dx < 0 || y + dy < 0 || x + dx + block > width || y + dy + block > height) continue;
      let sad = 0;
      for (let j = 0; j < block; j++) {
        for (let i = 0; i < block; i++) {
          sad += Math.abs(cur.luma[(y + j) * width + x + i]! - ref.luma[(y + dy + j) * width + x + dx + i]!);
        }
      }
      if (best === undefined || sad <= best.sad) best = { x, y, dx, dy, sad };
    }
  }
  return best!;
}

/**
 * Vectors of block rows [firstRow, firstRow + rows) (a horizontal strip: the unit of parallel work), raster order.
 */
export function matchRows(
  cur: Frame,
  ref: Frame,
  block: number,
  range: number,
  firstRow: number,
  rows = 1,
  options: SearchOptions = {},
): Vector[] {
  checkSearch(cur, ref, block, range);
  const { across, down } = blockGrid(cur, block);
  if (!Number.isInteger(firstRow) || !Number.isInteger(rows) || firstRow < 0 || rows < 0 || firstRow + rows > down) {
    throw new InputError(`block rows ${firstRow}..${firstRow + rows - 1} are outside the ${down} rows of blocks`);
  }
  const earlyExit = options.earlyExit ?? true;
  const out: Vector[] = [];
  for (let by = firstRow; by < firstRow + rows; by++) {
    for (let bx = 0; bx < across; bx++) out.push(searchVector(cur, ref, bx, by, block, range, earlyExit));
  }
  return out;
}

/** Vectors of every whole block of `cur` against `ref`, raster order. */
export function matchFrame(
  cur: Frame,
  ref: Frame,
  block: number,
  range: number,
  options: SearchOptions = {},
): Vector[] {
  checkSearch(cur, ref, block, range);
  return matchRows(cur, ref, block, range, 0, blockGrid(cur, block).down, options);
}
