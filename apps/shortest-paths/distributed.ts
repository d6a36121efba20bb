/**
 * Moore's algorithm on a distributed workpool: the vertices are split among the ranks in contiguous id ranges,
 * each rank holding only its own vertices' out-arcs and distances. A task is a batch of distance updates for
 * vertices of one rank, pinned there (`put(..., { to: owner })`). A rank applies the updates and settles
 * what they improve with a local priority queue (Dijkstra inside its range), sending the improvements it finds
 * for other ranks' vertices combined per destination. The pool's termination detection says when no update
 * is left anywhere; the distances are then gathered to rank 0.
 */
import type { Pool, World } from "workpool";
import { blockOwner, blockRange, type Graph } from "./graph.ts";
import { VertexHeap } from "./heap.ts";

export interface Update {
  readonly v: Int32Array;
  readonly d: Float64Array;
}

/** Vertices settled per task before the rank sends what it found and lets other work in. */
const SLICE = 20000;

export async function solveDistributed(
  world: World,
  pool: Pool<Update>,
  g: Graph,
  source: number,
): Promise<Float64Array | undefined> {
  const { n, lo, hi, offsets, targets, weights } = g;
  const size = world.size;
  const dist = new Float64Array(hi - lo).fill(Number.POSITIVE_INFINITY);
  const heap = new VertexHeap();
  // Best distance this rank has sent for each vertex of another rank (so it never sends a worse one).
  const sent = new Map<number, number>();
  const outV: number[][] = Array.from({ length: size }, () => []);
  const outD: number[][] = Array.from({ length: size }, () => []);
  if (source >= lo && source < hi) pool.put({ v: Int32Array.of(source), d: Float64Array.of(0) }, { to: world.rank });
  let continuing = false;
  await pool.run((task, ctx) => {
    const tv = task.v;
    const td = task.d;
    if (tv.length === 0) continuing = false;
    for (let i = 0; i < tv.length; i++) {
      const v = tv[i]!;
      const d = td[i]!;
      if (d < dist[v - lo]!) {
        dist[v - lo] = d;
        heap.push(v, d);
      }
    }
    for (let budget = SLICE; heap.size > 0 && budget > 0; budget--) {
      const d = heap.peek();
      const v = heap.pop();
      if (d > dist[v - lo]!) continue;
      for (let e = offsets[v - lo]!, end = offsets[v - lo + 1]!; e < end; e++) {
        const u = targets[e]!;
        const nd = d + weights[e]!;
        if (u >= lo && u < hi) {
          if (nd < dist[u - lo]!) {
            dist[u - lo] = nd;
            heap.push(u, nd);
          }
        } else {
          const known = sent.get(u);
          if (known === undefined || nd < known) {
            sent.set(u, nd);
            const owner = blockOwner(n, size, u);
            outV[owner]!.push(u);
            outD[owner]!.push(nd);
          }
        }
      }
    }
    for (let r = 0; r < size; r++) {
      const vs = outV[r]!;
      if (vs.length === 0) continue;
      const d = Float64Array.from(outD[r]!);
      let min = Number.POSITIVE_INFINITY;
      for (const x of d) if (x < min) min = x;
      ctx.put({ v: Int32Array.from(vs), d }, { to: r, priority: -min });
      vs.length = 0;
      outD[r]!.length = 0;
    }
    if (heap.size > 0 && !continuing) {
      // More to settle here: come back after the queue has had a turn (an empty update means "continue").
      continuing = true;
      ctx.put({ v: new Int32Array(0), d: new Float64Array(0) }, { to: world.rank, priority: -heap.peek() });
    }
  });
  const parts = await world.gather(dist, 0);
  if (!parts) return undefined;
  const all = new Float64Array(n);
  for (let r = 0; r < size; r++) all.set(parts[r]!, blockRange(n, size, r)[0]);
  return all;
}
