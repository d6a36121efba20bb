/**
 * Moore's algorithm on a distributed workpool: the vertices are split among the ranks in contiguous id ranges,
 * each rank holding only its own vertices' out-arcs and distances. A task is a batch of distance updates for
 * vertices of one rank, pinned there (`put(..., { to: owner })`). A rank applies the updates and settles
 * what they improve with a local priority queue (Dijkstra inside its range), sending the improvements it finds
 * for other ranks' vertices combined per destination. The pool's termination detection says when no update
 * is left anywhere; the distances are then gathered to rank 0.
 *
 * Pacing: a rank that settles vertices far beyond what the others have settled does work that later updates
 * undo. Every batch carries its sender's frontier (the smallest distance still in its queue, a lower bound on
 * the updates it will send), and a rank settles only up to the smallest frontier of the others plus DELTA.
 * The rank holding the globally smallest distance can always go on, so the pacing cannot deadlock; DELTA lets
 * neighbouring ranks work at the same time instead of taking turns.
 */
import type { Pool, World } from "workpool";
import { blockOwner, blockRange, type Graph } from "./graph.ts";
import { VertexHeap } from "./heap.ts";

export interface Update {
  readonly v: Int32Array;
  readonly d: Float64Array;
  /** Sender rank, its message sequence number, and its frontier when it sent this. */
  readonly r: number;
  readonly s: number;
  readonly f: number;
}

/** Vertices settled per task before the rank sends what it found and lets other work in. */
const SLICE = Number(process.env.SP_SLICE ?? 4000);

/** Smaller distances first; a frontier-only message of an empty queue (Infinity) goes last. */
const priorityOf = (d: number) => (Number.isFinite(d) ? -d : -Number.MAX_VALUE);

export async function solveDistributed(
  world: World,
  pool: Pool<Update>,
  g: Graph,
  source: number,
): Promise<Float64Array | undefined> {
  const { n, lo, hi, offsets, targets, weights } = g;
  const size = world.size;
  const me = world.rank;
  const dist = new Float64Array(hi - lo).fill(Number.POSITIVE_INFINITY);
  const heap = new VertexHeap();
  let weightSum = 0;
  for (const w of weights) weightSum += w;
  const stats = await world.allreduce([weightSum, weights.length], "sum");
  const meanWeight = stats[1]! > 0 ? stats[0]! / stats[1]! : 1;
  const delta = Number(process.env.SP_DELTA_FACTOR ?? 32) * meanWeight;
  // Each other rank's latest frontier (by its sequence number); unheard-of ranks hold nothing yet.
  const frontier = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  const frontierSeq = new Float64Array(size).fill(-1);
  const announced = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  let seq = 0;
  // Best distance this rank has sent for each vertex of another rank (so it never sends a worse one).
  const sent = new Map<number, number>();
  const outV: number[][] = Array.from({ length: size }, () => []);
  const outD: number[][] = Array.from({ length: size }, () => []);
  const empty = { v: new Int32Array(0), d: new Float64Array(0) };
  if (source >= lo && source < hi) pool.put({ ...empty, r: me, s: -1, f: 0 }, { to: me });
  if (source >= lo && source < hi) {
    dist[source - lo] = 0;
    heap.push(source, 0);
  }
  let continuing = false;
  const horizon = () => {
    let h = Number.POSITIVE_INFINITY;
    for (let r = 0; r < size; r++) if (r !== me && frontier[r]! < h) h = frontier[r]!;
    return h + delta;
  };
  await pool.run((task, ctx) => {
    if (task.r === me) continuing = false;
    else if (task.s > frontierSeq[task.r]!) {
      frontierSeq[task.r] = task.s;
      frontier[task.r] = task.f;
    }
    const tv = task.v;
    const td = task.d;
    for (let i = 0; i < tv.length; i++) {
      const v = tv[i]!;
      const d = td[i]!;
      if (d < dist[v - lo]!) {
        dist[v - lo] = d;
        heap.push(v, d);
      }
    }
    const limit = horizon();
    for (let budget = SLICE; heap.size > 0 && budget > 0 && heap.peek() <= limit; budget--) {
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
    // Drop stale heap tops so the frontier we announce is a real pending distance.
    while (heap.size > 0 && heap.peek() > dist[heap.peekVertex() - lo]!) heap.pop();
    const mine = heap.peek();
    for (let r = 0; r < size; r++) {
      if (r === me) continue;
      const vs = outV[r]!;
      if (vs.length === 0 && announced[r] === mine) continue;
      announced[r] = mine;
      const d = Float64Array.from(outD[r]!);
      let min = mine;
      for (const x of d) if (x < min) min = x;
      ctx.put({ v: Int32Array.from(vs), d, r: me, s: seq++, f: mine }, { to: r, priority: priorityOf(min) });
      vs.length = 0;
      outD[r]!.length = 0;
    }
    if (heap.size > 0 && mine <= horizon() && !continuing) {
      // More to settle here: come back after the queue has had a turn.
      continuing = true;
      ctx.put({ ...empty, r: me, s: -1, f: mine }, { to: me, priority: priorityOf(mine) });
    }
  });
  const parts = await world.gather(dist, 0);
  if (!parts) return undefined;
  const all = new Float64Array(n);
  for (let r = 0; r < size; r++) all.set(parts[r]!, blockRange(n, size, r)[0]);
  return all;
}
