/**
 * Per-rank frame loading: a rank loads only the frames its strips need, when it needs them, into a bounded
 * cache (the data objects of the TDC paper's block matching: a strip needs two frames, and loading one is the
 * cost of moving a strip to a rank that lacks them).
 *
 * A `FrameSource` knows the input's size and frame count up front (checked on every rank before the run) and
 * loads one frame on demand: a generated frame is rendered from the sequence's plan, a YUV frame is read at
 * its offset in the file, a PGM frame at the offset found when the files were checked. Reads are synchronous:
 * a task runs on the rank's one thread either way, and a strip cannot start before its frames are there.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { InputError } from "../common/errors.ts";
import { readInput } from "../common/files.ts";
import { type Frame, parsePgm, yuvFrameBytes, yuvFrameCount } from "./frames.ts";
import { planSequence, renderFrame, type SequencePlan } from "./generate.ts";

export interface FrameSource {
  readonly width: number;
  readonly height: number;
  /** Frames in the input. */
  readonly count: number;
  /** Loads frame `k` (0 <= k < count) now: renders it, or reads it from the file. */
  load(k: number): Frame;
  /** Closes the files it holds open. */
  close(): void;
}

/** A generated sequence (`--generate`): each frame is rendered from the plan when loaded. */
export function generatedSource(spec: string, seed: number): FrameSource & { readonly plan: SequencePlan } {
  const plan = planSequence(spec, seed);
  return {
    plan,
    width: plan.width,
    height: plan.height,
    count: plan.count,
    load: (k) => renderFrame(plan, k).frame,
    close: () => {},
  };
}

/** The frames of an I420 file (`--yuv`), each read at its offset when loaded (chroma is never read). */
export async function yuvSource(path: string, width: number, height: number): Promise<FrameSource> {
  const count = await yuvFrameCount(path, width, height);
  const frameBytes = yuvFrameBytes(width, height);
  return fileSource([path], width, height, count, (k) => ({ file: 0, offset: k * frameBytes }));
}

/**
 * The frames of one or more PGM files (`--pgm`): every file is read and checked whole once (as before the
 * run), remembering where each image's samples start; a frame is then read from there when loaded.
 */
export async function pgmSource(paths: readonly string[]): Promise<FrameSource> {
  if (paths.length === 0) throw new InputError("PGM: no files given");
  const at: { file: number; offset: number }[] = [];
  let size: { width: number; height: number } | undefined;
  for (const [file, path] of paths.entries()) {
    const offsets: number[] = [];
    const frames = parsePgm(await readInput(path), path, offsets);
    for (const [i, f] of frames.entries()) {
      if (size !== undefined && (size.width !== f.width || size.height !== f.height)) {
        throw new InputError(
          `${path}: frame ${at.length} is ${f.width}x${f.height}, the first frame is ${size.width}x${size.height}`,
          { file: path },
        );
      }
      size ??= { width: f.width, height: f.height };
      at.push({ file, offset: offsets[i] as number });
    }
  }
  const { width, height } = size as { width: number; height: number };
  return fileSource(paths, width, height, at.length, (k) => at[k] as { file: number; offset: number });
}

function fileSource(
  paths: readonly string[],
  width: number,
  height: number,
  count: number,
  where: (k: number) => { file: number; offset: number },
): FrameSource {
  const fds: (number | undefined)[] = [];
  return {
    width,
    height,
    count,
    load(k) {
      if (!Number.isInteger(k) || k < 0 || k >= count) throw new InputError(`frame ${k} is not in the ${count} frames`);
      const { file, offset } = where(k);
      const path = paths[file] as string;
      let fd = fds[file];
      if (fd === undefined) {
        if (!statSync(path).isFile()) throw new InputError(`${path} is not a regular file`, { file: path });
        fds[file] = fd = openSync(path, "r");
      }
      const luma = new Uint8Array(width * height);
      const n = readSync(fd, luma, 0, luma.length, offset);
      if (n !== luma.length) throw new InputError(`${path}: short read of frame ${k}`, { file: path });
      return { width, height, luma };
    },
    close() {
      for (const fd of fds) if (fd !== undefined) closeSync(fd);
      fds.length = 0;
    },
  };
}

/**
 * The frames a rank holds: at most `capacity`, the least recently used dropped first. `loads` counts the
 * frames loaded (the misses): the figure that locality keys bring down. Generic in what it holds, so a
 * benchmark can cache emulated loads (a promise that a timed wait resolves) the same way.
 */
export class FrameCache<F = Frame> {
  /** Frames by index; a Map keeps insertion order, so the first entry is the least recently used. */
  private readonly held = new Map<number, F>();
  loads = 0;

  constructor(
    private readonly load: (k: number) => F,
    readonly capacity: number,
  ) {
    if (!Number.isInteger(capacity) || capacity < 2) {
      throw new InputError(`a frame cache needs room for a frame pair (2 or more frames); got ${capacity}`);
    }
  }

  /** Frame `k`, loaded now if it is not held. */
  get(k: number): F {
    const held = this.held;
    const frame = held.get(k);
    if (frame !== undefined) {
      held.delete(k);
      held.set(k, frame);
      return frame;
    }
    if (held.size >= this.capacity) held.delete(held.keys().next().value as number);
    const loaded = this.load(k);
    this.loads++;
    held.set(k, loaded);
    return loaded;
  }
}
