/**
 * Sequential single-source shortest paths on a complete `Graph` (all out-arcs loaded): Dijkstra with a binary
 * heap (the reference solver) and Moore's FIFO label-correcting algorithm (the sequential form of what the
 * parallel app distributes), plus a checker of the shortest-path optimality conditions.
 * Distances are Float64Array indexed by 0-based vertex, `Infinity` for unreachable vertices.
 */
import { InputError } from "../common/errors.ts";
import type { Graph } from "./graph.ts";
import { IndexedHeap } from "./heap.ts";

function requireComplete(g: Graph, source: number, what: string): void {
  if (g.lo !== 0 || g.hi !== g.n) {
    throw new InputError(`${what} needs the whole graph; got the out-arcs of vertices [${g.lo}, ${g.hi}) only`);
  }
  if (!Number.isInteger(source) || source < 0 || source >= g.n) {
    throw new InputError(`${what}: source ${source} is not a vertex of [0, ${g.n})`);
  }
}

/** Dijkstra from 0-based `source`, with the indexed binary heap (decrease-key) of heap.ts. */
export function dijkstra(g: Graph, source: number): Float64Array {
  requireComplete(g, source, "dijkstra");
  const { n, offsets, targets, weights } = g;
  const dist = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  const heap = new IndexedHeap(n);
  dist[source] = 0;
  heap.set(source, 0);
  while (heap.size > 0) {
    const du = heap.minKey();
    const u = heap.pop();
    const end = offsets[u + 1]!;
    for (let e = offsets[u]!; e < end; e++) {
      const v = targets[e]!;
      const nd = du + weights[e]!;
      if (nd < dist[v]!) {
        dist[v] = nd;
        heap.set(v, nd);
      }
    }
  }
  return dist;
}

/** Work counters of a label-correcting run. */
export interface MooreStats {
  /** Vertices taken from the queue and scanned (Dijkstra scans each reachable vertex once). */
  scans: number;
}

/**
 * Moore's algorithm (Bellman-Ford with a FIFO queue of vertices whose label dropped) from 0-based `source`.
 * On grids with random weights it scans vertices many times (see `stats.scans`); on road graphs a few times.
 */
export function moore(g: Graph, source: number, stats?: MooreStats): Float64Array {
  requireComplete(g, source, "moore");
  const { n, offsets, targets, weights } = g;
  const dist = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  const queue = new Int32Array(n);
  const queued = new Uint8Array(n);
  let head = 0;
  let length = 1;
  dist[source] = 0;
  queue[0] = source;
  queued[source] = 1;
  let scans = 0;
  while (length > 0) {
    scans++;
    const u = queue[head]!;
    head = head + 1 === n ? 0 : head + 1;
    length--;
    queued[u] = 0;
    const du = dist[u]!;
    const end = offsets[u + 1]!;
    for (let e = offsets[u]!; e < end; e++) {
      const v = targets[e]!;
      const nd = du + weights[e]!;
      if (nd < dist[v]!) {
        dist[v] = nd;
        if (queued[v] === 0) {
          queued[v] = 1;
          let tail = head + length;
          if (tail >= n) tail -= n;
          queue[tail] = v;
          length++;
        }
      }
    }
  }
  if (stats !== undefined) stats.scans = scans;
  return dist;
}

/**
 * Checks that `dist` are the shortest distances from `source` in the complete graph `g`: dist[source] = 0,
 * no arc can shorten a label, and every other finite label is reached by a tight arc from a finite label
 * (so every finite label is a real path length). Returns undefined when they are, else the first violation.
 */
export function checkDistances(g: Graph, dist: Float64Array, source: number): string | undefined {
  requireComplete(g, source, "checkDistances");
  const { n, offsets, targets, weights } = g;
  if (dist.length !== n) return `expected ${n} distances, got ${dist.length}`;
  if (dist[source] !== 0) return `dist[source ${source}] = ${dist[source]}, expected 0`;
  const tight = new Uint8Array(n);
  tight[source] = 1;
  for (let u = 0; u < n; u++) {
    const du = dist[u]!;
    if (du === Number.POSITIVE_INFINITY) continue;
    if (!(du >= 0)) return `dist[${u}] = ${du} is not a non-negative number`;
    for (let e = offsets[u]!; e < offsets[u + 1]!; e++) {
      const v = targets[e]!;
      const nd = du + weights[e]!;
      if (nd < dist[v]!) return `arc ${u} -> ${v} (weight ${weights[e]}) shortens dist[${v}] = ${dist[v]} to ${nd}`;
      if (nd === dist[v]) tight[v] = 1;
    }
  }
  for (let v = 0; v < n; v++) {
    if (dist[v] !== Number.POSITIVE_INFINITY && tight[v] === 0)
      return `dist[${v}] = ${dist[v]} is not reached by a tight arc`;
  }
  return undefined;
}
