/**
 * The unit of parallel work: a strip of block rows of one frame pair. A task (or, with `--loop`, an index into
 * `stripsOf`) names the strip only (the rank that runs it loads the frames, source.ts); its result travels
 * packed, and rank 0 puts the strips of every rank back together.
 */
import type { Frame } from "./frames.ts";
import type { FrameVectors, MatchResult } from "./output.ts";
import { blockGrid, matchRows, type Vector } from "./search.ts";

/** Block rows [row, row + rows) of frame k, matched against frame k - 1. */
export interface Strip {
  readonly k: number;
  readonly row: number;
  readonly rows: number;
}

/** The vectors of a strip, packed as (dx, dy, sad) per block in raster order; x and y follow from the index. */
export interface StripResult extends Strip {
  readonly data: Int32Array;
}

/**
 * The strips of `rows` block rows (the last may be shorter) of every frame pair, frame by frame, top down: pair
 * major, so a contiguous run of them (a loop's range) needs few frames.
 */
export function stripsOf(frames: number, down: number, rows: number): Strip[] {
  const out: Strip[] = [];
  for (let k = 1; k < frames; k++) {
    for (let row = 0; row < down; row += rows) out.push({ k, row, rows: Math.min(rows, down - row) });
  }
  return out;
}

/**
 * Matches one strip (early exit on) and packs its vectors; `frames` gives frame k (an array, or a getter such
 * as a rank's FrameCache).
 */
export function matchStrip(
  frames: readonly Frame[] | ((k: number) => Frame),
  strip: Strip,
  block: number,
  range: number,
): StripResult {
  const { k, row, rows } = strip;
  const frame = typeof frames === "function" ? frames : (i: number) => frames[i] as Frame;
  const cur = frame(k);
  const vectors = matchRows(cur, frame(k - 1), block, range, row, rows);
  const data = new Int32Array(3 * vectors.length);
  vectors.forEach((v, i) => data.set([v.dx, v.dy, v.sad], 3 * i));
  return { k, row, rows, data };
}

/** The sum of a strip's SADs (what a loop over strips reduces to the sequence's SAD total). */
export function stripSad(result: StripResult): number {
  const { data } = result;
  let sad = 0;
  for (let i = 2; i < data.length; i += 3) sad += data[i] as number;
  return sad;
}

/**
 * Puts strips computed anywhere, in any order, together: frames 1 .. count - 1 in order, each frame's vectors
 * in raster order. Throws (a bug, not bad input) when a block is missing or computed twice.
 */
export function assemble(
  strips: Iterable<StripResult>,
  first: { readonly width: number; readonly height: number },
  count: number,
  block: number,
  range: number,
): MatchResult {
  const { across, down } = blockGrid(first, block);
  const perFrame = across * down;
  const slots: (Vector | undefined)[][] = Array.from({ length: count - 1 }, () => new Array(perFrame));
  for (const { k, row, rows, data } of strips) {
    const vectors = slots[k - 1];
    if (vectors === undefined || data.length !== 3 * rows * across || row < 0 || row + rows > down) {
      throw new Error(`block matching: malformed result for frame ${k} rows ${row}..${row + rows - 1}`);
    }
    for (let i = 0; i < rows * across; i++) {
      const index = row * across + i;
      if (vectors[index] !== undefined) throw new Error(`block matching: block ${index} of frame ${k} computed twice`);
      const [dx, dy, sad] = [data[3 * i] as number, data[3 * i + 1] as number, data[3 * i + 2] as number];
      vectors[index] = { x: (index % across) * block, y: Math.floor(index / across) * block, dx, dy, sad };
    }
  }
  const frames = slots.map((vectors, i): FrameVectors => {
    for (let index = 0; index < perFrame; index++) {
      if (vectors[index] === undefined)
        throw new Error(`block matching: no result for block ${index} of frame ${i + 1}`);
    }
    return { frame: i + 1, vectors: vectors as Vector[] };
  });
  return { width: first.width, height: first.height, block, range, frames };
}
