/**
 * The block-matching result and its `--out` JSON:
 *
 *     {"width":W,"height":H,"block":B,"range":R,"frames":[
 *     {"frame":1,"vectors":[
 *     {"x":0,"y":0,"dx":0,"dy":0,"sad":0},
 *     ...]},
 *     ...]}
 *
 * Frame k (k >= 1) is matched against frame k - 1; vectors are in raster order of the blocks. One vector per
 * line, keys in this order, so outputs of the same run compare byte for byte.
 */
import { InputError } from "../common/errors.ts";
import type { Frame } from "./frames.ts";
import { matchFrame, type SearchOptions, type Vector } from "./search.ts";

export interface FrameVectors {
  /** Index of the matched frame (>= 1); its reference is frame `frame - 1`. */
  readonly frame: number;
  readonly vectors: readonly Vector[];
}

export interface MatchResult {
  readonly width: number;
  readonly height: number;
  readonly block: number;
  readonly range: number;
  readonly frames: readonly FrameVectors[];
}

/** Sequential run over a whole sequence: frame k against k - 1 for every k >= 1. */
export function matchSequence(
  frames: readonly Frame[],
  block: number,
  range: number,
  options: SearchOptions = {},
): MatchResult {
  const first = frames[0];
  if (first === undefined || frames.length < 2) {
    throw new InputError(`block matching needs at least 2 frames; got ${frames.length}`);
  }
  const out: FrameVectors[] = [];
  for (let k = 1; k < frames.length; k++) {
    out.push({ frame: k, vectors: matchFrame(frames[k]!, frames[k - 1]!, block, range, options) });
  }
  return { width: first.width, height: first.height, block, range, frames: out };
}

/** The `--out` JSON text (ends with a newline). */
export function formatMatchJson(result: MatchResult): string {
  const { width, height, block, range } = result;
  const parts = [`{"width":${width},"height":${height},"block":${block},"range":${range},"frames":[`];
  result.frames.forEach((f, i) => {
    const vectors = f.vectors.map((v) => `{"x":${v.x},"y":${v.y},"dx":${v.dx},"dy":${v.dy},"sad":${v.sad}}`);
    parts.push(
      `${i > 0 ? "," : ""}\n{"frame":${f.frame},"vectors":[${vectors.length > 0 ? "\n" : ""}${vectors.join(",\n")}]}`,
    );
  });
  parts.push("]}\n");
  return parts.join("");
}
