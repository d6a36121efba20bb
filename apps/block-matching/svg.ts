/**
 * An SVG picture of one frame's motion field: the frame as an embedded grayscale PNG, and for each block an
 * arrow from where its content was in the reference frame (block centre + (dx, dy)) to the block centre, i.e.
 * pointing the way the content moved, drawn `arrowScale` times its length. Zero vectors get a small dot.
 */
import { writeFile } from "node:fs/promises";
import type { Frame } from "./frames.ts";
import { encodePng } from "./png.ts";
import type { Vector } from "./search.ts";

export interface SvgOptions {
  /** Display size factor (the SVG's width and height attributes); the drawing keeps pixel coordinates. @default 1 */
  readonly scale?: number;
  /** Arrow colour. @default "#ff3030" */
  readonly color?: string;
  /** Arrow length per pixel of displacement. @default the longest vector spans 0.9 block, but never below 1 */
  readonly arrowScale?: number;
}

/** SVG text of `frame` with the vectors of its blocks of size `block`. */
export function renderSvg(frame: Frame, vectors: readonly Vector[], block: number, options: SvgOptions = {}): string {
  const { width, height } = frame;
  const scale = options.scale ?? 1;
  const color = options.color ?? "#ff3030";
  const png = Buffer.from(encodePng(frame)).toString("base64");
  const half = block / 2;
  const longest = vectors.reduce((m, v) => Math.max(m, Math.hypot(v.dx, v.dy)), 0);
  const k = options.arrowScale ?? Math.max(1, longest > 0 ? (0.9 * block) / longest : 1);
  const stroke = Math.max(0.5, block / 16);
  const lines: string[] = [];
  const dots: string[] = [];
  const fmt = (n: number): string => String(Math.round(n * 100) / 100);
  for (const v of vectors) {
    const cx = v.x + half;
    const cy = v.y + half;
    if (v.dx === 0 && v.dy === 0) dots.push(`<circle cx="${cx}" cy="${cy}" r="${fmt(stroke)}"/>`);
    else lines.push(`<line x1="${fmt(cx + k * v.dx)}" y1="${fmt(cy + k * v.dy)}" x2="${cx}" y2="${cy}"/>`);
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width * scale}" height="${height * scale}" viewBox="0 0 ${width} ${height}">`,
    '<defs><marker id="head" viewBox="0 0 6 6" refX="5" refY="3" markerWidth="4" markerHeight="4" orient="auto">' +
      `<path d="M0,0 L6,3 L0,6 z" fill="${color}"/></marker></defs>`,
    `<image width="${width}" height="${height}" style="image-rendering:pixelated" href="data:image/png;base64,${png}"/>`,
    `<g stroke="${color}" stroke-width="${fmt(stroke)}" marker-end="url(#head)">`,
    ...lines,
    "</g>",
    `<g fill="${color}">`,
    ...dots,
    "</g>",
    "</svg>",
    "",
  ].join("\n");
}

export async function writeSvg(
  path: string,
  frame: Frame,
  vectors: readonly Vector[],
  block: number,
  options: SvgOptions = {},
): Promise<void> {
  await writeFile(path, renderSvg(frame, vectors, block, options));
}
