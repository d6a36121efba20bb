/** Checks of a block-matching result: against another result (`--verify`), and against known motion. */
import { expectedVectors, type Sequence } from "./generate.ts";
import type { FrameVectors, MatchResult } from "./output.ts";
import type { Vector } from "./search.ts";

function describe(v: Vector): string {
  return `(${v.dx}, ${v.dy}) sad ${v.sad}`;
}

/**
 * Where `got` first differs from `expected` (frame, block position, both vectors), or undefined when every
 * vector is equal. `expectedName` and `gotName` say whose answers they are.
 */
export function firstMismatch(
  expected: readonly FrameVectors[],
  got: readonly FrameVectors[],
  expectedName = "expected",
  gotName = "got",
): string | undefined {
  if (got.length !== expected.length) return `${expected.length} frames expected, ${got.length} in the result`;
  for (const [f, e] of expected.entries()) {
    const g = got[f] as FrameVectors;
    if (g.frame !== e.frame) return `frame ${e.frame} expected, frame ${g.frame} found`;
    if (g.vectors.length !== e.vectors.length) {
      return `frame ${e.frame}: ${e.vectors.length} blocks expected, ${g.vectors.length} in the result`;
    }
    for (const [i, a] of e.vectors.entries()) {
      const b = g.vectors[i] as Vector;
      if (a.x !== b.x || a.y !== b.y || a.dx !== b.dx || a.dy !== b.dy || a.sad !== b.sad) {
        const where = a.x === b.x && a.y === b.y ? "" : ` at (${b.x}, ${b.y})`;
        return `frame ${e.frame} block at (${a.x}, ${a.y}): ${expectedName} ${describe(a)}, ${gotName} ${describe(b)}${where}`;
      }
    }
  }
  return undefined;
}

export interface KnownMotion {
  /** Blocks whose true vector is known (`expectedVectors`), over all frames. */
  readonly interior: number;
  /** Of those, the blocks that got the true vector with SAD 0. */
  readonly recovered: number;
  /** The first interior block that did not, described. */
  readonly miss: string | undefined;
}

/**
 * Do the blocks of a generated sequence whose true motion is known get it? With tiny blocks another candidate
 * can match exactly too (and win the tie), so a miss there need not be a bug.
 */
export function knownMotion(sequence: Sequence, result: MatchResult): KnownMotion {
  let interior = 0;
  let recovered = 0;
  let miss: string | undefined;
  for (const f of result.frames) {
    for (const [i, e] of expectedVectors(sequence, f.frame, result.block, result.range).entries()) {
      if (e === null) continue;
      interior++;
      const v = f.vectors[i] as Vector;
      if (v.dx === e.dx && v.dy === e.dy && v.sad === 0) recovered++;
      else miss ??= `frame ${f.frame} block at (${e.x}, ${e.y}): true motion (${e.dx}, ${e.dy}), found ${describe(v)}`;
    }
  }
  return { interior, recovered, miss };
}
