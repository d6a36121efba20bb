/**
 * What the shortest-path app reports: a summary of the distances, and the `--out` file (one distance per
 * line in vertex order, `inf` for unreachable vertices).
 */
import { open } from "node:fs/promises";

export interface Summary {
  /** Vertices of the graph. */
  readonly vertices: number;
  /** Arcs of the graph as stored (an undirected read counts both directions). */
  readonly arcs: number;
  /** The source, as a 1-based (DIMACS) vertex id. */
  readonly source: number;
  /** Vertices with a finite distance, the source included. */
  readonly reachable: number;
  /** Sum of the finite distances. */
  readonly sum: number;
  /** Largest finite distance. */
  readonly max: number;
}

/** The reachable count, sum and max of finite distances in `dist`; partial tallies combine with `addTally`. */
export interface Tally {
  readonly reachable: number;
  readonly sum: number;
  readonly max: number;
}

export function tally(dist: ArrayLike<number>): Tally {
  let reachable = 0;
  let sum = 0;
  let max = 0;
  for (let i = 0; i < dist.length; i++) {
    const d = dist[i]!;
    if (d === Number.POSITIVE_INFINITY) continue;
    reachable++;
    sum += d;
    if (d > max) max = d;
  }
  return { reachable, sum, max };
}

export function addTally(a: Tally, b: Tally): Tally {
  return { reachable: a.reachable + b.reachable, sum: a.sum + b.sum, max: Math.max(a.max, b.max) };
}

/** Summary of a graph of `vertices` vertices and `arcs` arcs from 0-based `source`, given its tally. */
export function summaryOf(t: Tally, vertices: number, source: number, arcs: number): Summary {
  return { vertices, arcs, source: source + 1, ...t };
}

/** Summary of distances from 0-based `source` over a graph of `arcs` arcs. */
export function summarize(dist: ArrayLike<number>, source: number, arcs: number): Summary {
  return summaryOf(tally(dist), dist.length, source, arcs);
}

/**
 * `--verify`: the first vertex whose distance in `actual` differs from `expected` (Dijkstra's), described with
 * its 1-based id and both distances; undefined when every distance is equal.
 */
export function firstDistanceMismatch(expected: ArrayLike<number>, actual: ArrayLike<number>): string | undefined {
  if (actual.length !== expected.length) return `${expected.length} distances expected, ${actual.length} found`;
  for (let v = 0; v < expected.length; v++) {
    if (expected[v] !== actual[v]) {
      return `vertex ${v + 1}: Dijkstra says ${formatDistance(expected[v]!)}, workpool says ${formatDistance(actual[v]!)}`;
    }
  }
  return undefined;
}

/** One `--out` line: the distance, or `inf`. */
export function formatDistance(d: number): string {
  return d === Number.POSITIVE_INFINITY ? "inf" : String(d);
}

/** The whole `--out` text (fine for small graphs; use `writeDistances` for big ones). */
export function formatDistances(dist: ArrayLike<number>): string {
  let s = "";
  for (let i = 0; i < dist.length; i++) s += `${formatDistance(dist[i]!)}\n`;
  return s;
}

/** Writes the `--out` file in blocks of lines, without building one string of the whole output. */
export async function writeDistances(path: string, dist: ArrayLike<number>): Promise<void> {
  await using fh = await open(path, "w");
  const BLOCK = 1 << 16;
  for (let start = 0; start < dist.length; start += BLOCK) {
    const end = Math.min(dist.length, start + BLOCK);
    let s = "";
    for (let i = start; i < end; i++) s += `${formatDistance(dist[i]!)}\n`;
    await fh.write(s);
  }
}
