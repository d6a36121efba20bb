/**
 * Video frames for block matching: only the luma (brightness) plane is kept.
 *
 * - YUV 4:2:0 planar (I420), `--yuv FILE --size WxH`: each frame is W*H luma bytes, then two chroma planes
 *   of ceil(W/2) * ceil(H/2) bytes each (W/2 * H/2 for even sizes). The file must hold a whole number of
 *   frames.
 * - Binary PGM (P5) with maxval <= 255: one or more files, each holding one or more images back to back
 *   (netpbm allows that); header comments (`#` to the end of the line) are allowed. Samples are used as is
 *   (not rescaled to 255). All frames must have the same size.
 */
import { writeFile } from "node:fs/promises";
import { InputError } from "../common/errors.ts";
import { openInput, readInput } from "../common/files.ts";

export interface Frame {
  readonly width: number;
  readonly height: number;
  /** width * height bytes, row by row. */
  readonly luma: Uint8Array;
}

/** Largest width or height accepted. */
export const MAX_DIMENSION = 1 << 15;

/** Bytes of one I420 frame of the given size. */
export function yuvFrameBytes(width: number, height: number): number {
  return width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
}

/** Parses a `--size WxH` value. */
export function parseSize(text: string): { width: number; height: number } {
  const m = /^(\d+)x(\d+)$/.exec(text);
  const width = Number(m?.[1]);
  const height = Number(m?.[2]);
  if (m === null || width < 1 || height < 1 || width > MAX_DIMENSION || height > MAX_DIMENSION) {
    throw new InputError(`--size must be WxH with W and H in 1..${MAX_DIMENSION}; got \`${text}\``);
  }
  return { width, height };
}

function checkSize(width: number, height: number, what: string): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new InputError(`${what}: size must be positive integers; got ${width}x${height}`);
  }
}

/** Checks a frame's fields are consistent; returns it. */
export function checkFrame(frame: Frame, what = "frame"): Frame {
  const { width, height, luma } = frame;
  checkSize(width, height, what);
  if (luma.length !== width * height) {
    throw new InputError(`${what}: ${width}x${height} needs ${width * height} luma bytes; got ${luma.length}`);
  }
  return frame;
}

/** Number of whole frames in an I420 file; rejects when its size is not a whole number of frames. */
export async function yuvFrameCount(path: string, width: number, height: number): Promise<number> {
  await using fh = await openInput(path);
  return frameCountOf(path, (await fh.stat()).size, width, height);
}

function frameCountOf(path: string, size: number, width: number, height: number): number {
  checkSize(width, height, `${path}: --size`);
  const frameBytes = yuvFrameBytes(width, height);
  if (size === 0 || size % frameBytes !== 0) {
    throw new InputError(
      `${path}: size ${size} bytes is not a whole number of ${width}x${height} I420 frames ` +
        `(${frameBytes} bytes each)`,
      { file: path },
    );
  }
  return size / frameBytes;
}

export interface FrameSelection {
  /** Index of the first frame to read. @default 0 */
  readonly first?: number;
  /** Number of frames to read. @default all from `first` */
  readonly count?: number;
}

/** Reads the luma planes of an I420 file (all frames, or `selection` of them); chroma is skipped, not read. */
export async function readYuv(
  path: string,
  width: number,
  height: number,
  selection: FrameSelection = {},
): Promise<Frame[]> {
  await using fh = await openInput(path);
  const total = frameCountOf(path, (await fh.stat()).size, width, height);
  const first = selection.first ?? 0;
  const count = selection.count ?? total - first;
  if (!Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0 || first + count > total) {
    throw new InputError(`${path}: frames ${first}..${first + count - 1} requested, the file has ${total}`, {
      file: path,
    });
  }
  const frameBytes = yuvFrameBytes(width, height);
  const frames: Frame[] = [];
  for (let k = first; k < first + count; k++) {
    const luma = new Uint8Array(width * height);
    const { bytesRead } = await fh.read(luma, 0, luma.length, k * frameBytes);
    if (bytesRead !== luma.length) throw new InputError(`${path}: short read of frame ${k}`, { file: path });
    frames.push({ width, height, luma });
  }
  return frames;
}

/** I420 bytes of `frames`, with flat (128) chroma. */
export function encodeYuv(frames: readonly Frame[]): Uint8Array {
  const first = frames[0];
  if (first === undefined) return new Uint8Array(0);
  const { width, height } = first;
  const frameBytes = yuvFrameBytes(width, height);
  const out = new Uint8Array(frameBytes * frames.length).fill(128);
  frames.forEach((f, k) => {
    sameSize(f, first, `frame ${k}`);
    out.set(f.luma, k * frameBytes);
  });
  return out;
}

export async function writeYuv(path: string, frames: readonly Frame[]): Promise<void> {
  await writeFile(path, encodeYuv(frames));
}

function sameSize(f: Frame, first: Frame, what: string): void {
  if (f.width !== first.width || f.height !== first.height) {
    throw new InputError(`${what} is ${f.width}x${f.height}, frame 0 is ${first.width}x${first.height}`);
  }
}

const isSpace = (c: number | undefined): boolean => c === 32 || c === 9 || c === 10 || c === 13 || c === 11 || c === 12;

/**
 * Parses the P5 images in `bytes` (one or more back to back; only whitespace may follow the last).
 * `file` names the input in error messages; `offsets`, if given, receives where each image's samples start.
 */
export function parsePgm(bytes: Uint8Array, file = "<input>", offsets?: number[]): Frame[] {
  const frames: Frame[] = [];
  let p = 0;
  const fail = (what: string): never => {
    throw new InputError(`${file}: image ${frames.length} (byte ${p}): ${what}`, { file });
  };
  /** Skips whitespace and `#` comments. */
  const skip = (): void => {
    for (;;) {
      while (p < bytes.length && isSpace(bytes[p])) p++;
      if (bytes[p] !== 35 /* # */) return;
      while (p < bytes.length && bytes[p] !== 10 && bytes[p] !== 13) p++;
    }
  };
  const number = (what: string): number => {
    skip();
    const start = p;
    let v = 0;
    while (p < bytes.length && bytes[p]! >= 48 && bytes[p]! <= 57 && p - start < 9) v = v * 10 + bytes[p++]! - 48;
    if (p === start || (p < bytes.length && !isSpace(bytes[p]) && bytes[p] !== 35)) fail(`bad ${what} in header`);
    return v;
  };
  while (p < bytes.length) {
    skip();
    if (p >= bytes.length && frames.length > 0) break;
    if (bytes[p] !== 80 /* P */ || bytes[p + 1] !== 53 /* 5 */) fail("not a binary PGM (P5) image");
    p += 2;
    if (!isSpace(bytes[p]) && bytes[p] !== 35) fail("not a binary PGM (P5) image");
    const width = number("width");
    const height = number("height");
    const maxval = number("maxval");
    if (width < 1 || height < 1 || width > MAX_DIMENSION || height > MAX_DIMENSION) {
      fail(`size ${width}x${height} out of range 1..${MAX_DIMENSION}`);
    }
    if (maxval < 1 || maxval > 255) fail(`maxval ${maxval} not supported (need 1..255, one byte a sample)`);
    if (!isSpace(bytes[p])) fail("missing whitespace after maxval");
    p++;
    const size = width * height;
    if (p + size > bytes.length) fail(`truncated: ${width}x${height} needs ${size} bytes, ${bytes.length - p} left`);
    const frame = { width, height, luma: new Uint8Array(bytes.subarray(p, p + size)) };
    offsets?.push(p);
    p += size;
    const first = frames[0];
    if (first !== undefined && (first.width !== width || first.height !== height)) {
      fail(`size ${width}x${height} differs from the first frame's ${first.width}x${first.height}`);
    }
    frames.push(frame);
  }
  if (frames.length === 0) fail("no image");
  return frames;
}

/** Reads the frames of one or more PGM files, in order; all must have the same size. */
export async function readPgm(paths: string | readonly string[]): Promise<Frame[]> {
  const list = typeof paths === "string" ? [paths] : paths;
  const frames: Frame[] = [];
  for (const path of list) {
    for (const f of parsePgm(await readInput(path), path)) {
      const first = frames[0];
      if (first !== undefined && (first.width !== f.width || first.height !== f.height)) {
        throw new InputError(
          `${path}: frame ${frames.length} is ${f.width}x${f.height}, the first frame is ${first.width}x${first.height}`,
          { file: path },
        );
      }
      frames.push(f);
    }
  }
  if (frames.length === 0) throw new InputError("PGM: no files given");
  return frames;
}

/** P5 bytes of one frame (maxval 255). */
export function encodePgm(frame: Frame, comment?: string): Uint8Array {
  const header = Buffer.from(
    `P5\n${comment === undefined ? "" : `# ${comment}\n`}${frame.width} ${frame.height}\n255\n`,
  );
  const out = new Uint8Array(header.length + frame.luma.length);
  out.set(header);
  out.set(frame.luma, header.length);
  return out;
}

/** Writes `frames` as one multi-image PGM file. */
export async function writePgm(path: string, frames: readonly Frame[]): Promise<void> {
  await writeFile(path, Buffer.concat(frames.map((f) => encodePgm(f))));
}
