/**
 * A seeded synthetic video with known motion (`--generate WxH:FRAMES`): textured shapes (rectangles and
 * ellipses) moving at constant integer velocities over a textured background that pans at a constant integer
 * velocity. Textures are fixed to the moving thing (background or shape), so a pixel's content moves exactly
 * with it, and mix a smooth pattern with per-pixel noise so that only the true displacement matches exactly.
 *
 * Vector convention (the one `search.ts` uses): block matching finds for a block at (x, y) of frame k the
 * displacement (dx, dy) such that the block at (x + dx, y + dy) of frame k - 1 matches it. Content moving
 * with velocity (vx, vy) pixels per frame therefore has the vector (-vx, -vy).
 *
 * "Interior" blocks, where the true vector is known to be the unique exact match (SAD 0), are defined
 * precisely in `expectedVectors`.
 */
import { InputError } from "../common/errors.ts";
import { Random } from "../common/random.ts";
import { type Frame, MAX_DIMENSION } from "./frames.ts";

export interface SequenceSpec {
  readonly width: number;
  readonly height: number;
  readonly frames: number;
}

export interface Shape {
  readonly kind: "rect" | "ellipse";
  /** Top-left corner of the bounding box in frame 0 (may lie outside the frame). */
  readonly x0: number;
  readonly y0: number;
  /** Bounding box size. */
  readonly w: number;
  readonly h: number;
  /** Velocity in pixels per frame. */
  readonly vx: number;
  readonly vy: number;
}

export interface Sequence {
  readonly frames: Frame[];
  /** Per frame, per pixel: 0 for background, i + 1 where shape i is visible (later shapes are on top). */
  readonly labels: Uint8Array[];
  readonly shapes: readonly Shape[];
  /** Background velocity in pixels per frame. */
  readonly background: { readonly vx: number; readonly vy: number };
}

/** A block whose true vector is known: block top-left (x, y) and vector (dx, dy). */
export interface ExpectedVector {
  readonly x: number;
  readonly y: number;
  readonly dx: number;
  readonly dy: number;
}

export const DEFAULT_VIDEO_SEED = 1;
/** Largest shape speed per axis, pixels per frame. */
export const MAX_SHAPE_SPEED = 6;
/** Largest background speed per axis, pixels per frame. */
export const MAX_BACKGROUND_SPEED = 2;
/** Most frames a generated sequence may have. */
export const MAX_FRAMES = 10_000;

/** Parses a `--generate WxH:FRAMES` spec. */
export function parseSequenceSpec(spec: string): SequenceSpec {
  const m = /^(\d+)x(\d+):(\d+)$/.exec(spec);
  if (m === null) throw new InputError(`--generate must be WxH:FRAMES (e.g. 352x288:10); got \`${spec}\``);
  const width = Number(m[1]);
  const height = Number(m[2]);
  const frames = Number(m[3]);
  if (width < 1 || height < 1 || width > MAX_DIMENSION || height > MAX_DIMENSION) {
    throw new InputError(`--generate: size ${width}x${height} out of range 1..${MAX_DIMENSION}; got \`${spec}\``);
  }
  if (frames < 2 || frames > MAX_FRAMES) {
    throw new InputError(`--generate: FRAMES must be in 2..${MAX_FRAMES} (motion needs two); got \`${spec}\``);
  }
  return { width, height, frames };
}

/** 32-bit hash of (seed, a, b); a good enough mix that textures show no repeats. */
function hash(seed: number, a: number, b: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ a ^ (h >>> 16), 0xc2b2ae35);
  h = Math.imul(h ^ b ^ (h >>> 13), 0x27d4eb2f);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}

export interface Texture {
  readonly seed: number;
  readonly base: number;
  /** Amplitude of the smooth pattern (8-pixel value noise), 0..255. */
  readonly smooth: number;
  /** Amplitude of the per-pixel noise, 0..255. */
  readonly fine: number;
}

/** Texture value at integer texture coordinates (u, v), clamped to 0..255. */
function texel(t: Texture, u: number, v: number): number {
  const cu = u >> 3;
  const cv = v >> 3;
  const fu = u & 7;
  const fv = v & 7;
  const s = t.seed;
  const a = hash(s, cu, cv) & 255;
  const b = hash(s, cu + 1, cv) & 255;
  const c = hash(s, cu, cv + 1) & 255;
  const d = hash(s, cu + 1, cv + 1) & 255;
  const smooth = ((a * (8 - fu) + b * fu) * (8 - fv) + (c * (8 - fu) + d * fu) * fv) >> 6;
  const fine = hash(s + 1, u, v) & 255;
  const value = t.base + ((smooth * t.smooth) >> 8) + ((fine * t.fine) >> 8);
  return Math.max(0, Math.min(255, value));
}

function insideShape(shape: Shape, lx: number, ly: number): boolean {
  if (lx < 0 || ly < 0 || lx >= shape.w || ly >= shape.h) return false;
  if (shape.kind === "rect") return true;
  const ex = (2 * lx + 1 - shape.w) / shape.w;
  const ey = (2 * ly + 1 - shape.h) / shape.h;
  return ex * ex + ey * ey <= 1;
}

/**
 * What a generated sequence is made of: its size, background and shapes with their textures. Any frame can be
 * rendered from it alone (`renderFrame`), so a rank renders only the frames it needs.
 */
export interface SequencePlan {
  readonly width: number;
  readonly height: number;
  readonly count: number;
  readonly background: { readonly vx: number; readonly vy: number };
  readonly shapes: readonly Shape[];
  readonly bgTexture: Texture;
  readonly textures: readonly Texture[];
}

/** The plan of the sequence of `spec` (a `WxH:FRAMES` string or parsed spec) from `seed`: cheap, no pixels. */
export function planSequence(spec: string | SequenceSpec, seed: number = DEFAULT_VIDEO_SEED): SequencePlan {
  const { width, height, frames: count } = typeof spec === "string" ? parseSequenceSpec(spec) : spec;
  const rnd = new Random(seed);
  const background = { vx: rnd.int(-MAX_BACKGROUND_SPEED, MAX_BACKGROUND_SPEED), vy: rnd.int(-1, 1) };
  const bgTexture: Texture = { seed: rnd.nextUint32(), base: 40, smooth: 150, fine: 60 };
  const shapes: Shape[] = [];
  const textures: Texture[] = [];
  const nShapes = rnd.int(3, 6);
  const small = Math.min(width, height);
  const mid = Math.floor((count - 1) / 2);
  for (let i = 0; i < nShapes; i++) {
    const w = Math.max(1, rnd.int(Math.floor(small / 8), Math.floor(small / 3)));
    const h = Math.max(1, rnd.int(Math.floor(small / 8), Math.floor(small / 3)));
    const vx = rnd.int(-MAX_SHAPE_SPEED, MAX_SHAPE_SPEED);
    const vy = rnd.int(-MAX_SHAPE_SPEED, MAX_SHAPE_SPEED);
    // Inside the frame at the middle frame.
    const xm = rnd.int(0, Math.max(0, width - w));
    const ym = rnd.int(0, Math.max(0, height - h));
    shapes.push({ kind: rnd.next() < 0.5 ? "rect" : "ellipse", x0: xm - vx * mid, y0: ym - vy * mid, w, h, vx, vy });
    textures.push({ seed: rnd.nextUint32(), base: rnd.int(0, 120), smooth: rnd.int(60, 140), fine: rnd.int(40, 80) });
  }
  return { width, height, count, background, shapes, bgTexture, textures };
}

/** Renders frame `k` of a planned sequence, with its labels (0 background, i + 1 where shape i is visible). */
export function renderFrame(plan: SequencePlan, k: number): { frame: Frame; label: Uint8Array } {
  const { width, height, background, shapes, bgTexture, textures } = plan;
  if (!Number.isInteger(k) || k < 0 || k >= plan.count) {
    throw new InputError(`frame ${k} is not in the ${plan.count}-frame generated sequence`);
  }
  const luma = new Uint8Array(width * height);
  const label = new Uint8Array(width * height);
  const ox = background.vx * k;
  const oy = background.vy * k;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) luma[y * width + x] = texel(bgTexture, x - ox, y - oy);
  }
  shapes.forEach((s, i) => {
    const sx = s.x0 + s.vx * k;
    const sy = s.y0 + s.vy * k;
    const tex = textures[i]!;
    for (let y = Math.max(0, sy); y < Math.min(height, sy + s.h); y++) {
      for (let x = Math.max(0, sx); x < Math.min(width, sx + s.w); x++) {
        if (!insideShape(s, x - sx, y - sy)) continue;
        luma[y * width + x] = texel(tex, x - sx, y - sy);
        label[y * width + x] = i + 1;
      }
    }
  });
  return { frame: { width, height, luma }, label };
}

/** Generates the sequence of `spec` (a `WxH:FRAMES` string or parsed spec) from `seed`: every frame. */
export function generateSequence(spec: string | SequenceSpec, seed: number = DEFAULT_VIDEO_SEED): Sequence {
  const plan = planSequence(spec, seed);
  const frames: Frame[] = [];
  const labels: Uint8Array[] = [];
  for (let k = 0; k < plan.count; k++) {
    const { frame, label } = renderFrame(plan, k);
    frames.push(frame);
    labels.push(label);
  }
  return { frames, labels, shapes: plan.shapes, background: plan.background };
}

/**
 * The known vectors of frame `k` (k >= 1, matched against k - 1) for blocks of size `block` and search range
 * `range`, in raster order of the whole blocks; null where the block is not interior.
 *
 * A block at (x, y) is interior when, with L the label of its pixels and (dx, dy) = minus the velocity of L:
 * 1. every pixel of the block in frame k has label L (fully inside one visible shape, or all background);
 * 2. |dx| <= range, |dy| <= range, and the block at (x + dx, y + dy) lies fully inside the frame;
 * 3. every pixel of that block in frame k - 1 has label L.
 * Then both blocks show the same texels, so (dx, dy) matches with SAD 0, and the texture noise makes every
 * other candidate's SAD positive.
 */
export function expectedVectors(seq: Sequence, k: number, block: number, range: number): (ExpectedVector | null)[] {
  const cur = seq.labels[k];
  const prev = seq.labels[k - 1];
  const first = seq.frames[0];
  if (cur === undefined || prev === undefined || first === undefined) {
    throw new InputError(`expectedVectors: frame ${k} has no previous frame in a ${seq.frames.length}-frame sequence`);
  }
  const { width, height } = first;
  const across = Math.floor(width / block);
  const down = Math.floor(height / block);
  const out: (ExpectedVector | null)[] = [];
  const uniform = (labels: Uint8Array, x: number, y: number, l: number): boolean => {
    for (let j = 0; j < block; j++) {
      for (let i = 0; i < block; i++) if (labels[(y + j) * width + x + i] !== l) return false;
    }
    return true;
  };
  for (let by = 0; by < down; by++) {
    for (let bx = 0; bx < across; bx++) {
      const x = bx * block;
      const y = by * block;
      const l = cur[y * width + x]!;
      const v = l === 0 ? seq.background : seq.shapes[l - 1]!;
      const dx = 0 - v.vx;
      const dy = 0 - v.vy;
      const rx = x + dx;
      const ry = y + dy;
      const interior =
        Math.abs(dx) <= range &&
        Math.abs(dy) <= range &&
        rx >= 0 &&
        ry >= 0 &&
        rx + block <= width &&
        ry + block <= height &&
        uniform(cur, x, y, l) &&
        uniform(prev, rx, ry, l);
      out.push(interior ? { x, y, dx, dy } : null);
    }
  }
  return out;
}
