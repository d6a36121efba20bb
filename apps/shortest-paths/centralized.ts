/**
 * Moore's algorithm on a centralized workpool, as in the seed slides, with all four improvements they list:
 * 1. a task carries several vertices (a batch of (vertex, distance) pairs);
 * 2. the improvements found by exploring a vertex's edges are sent together, as tasks of up to BATCH pairs;
 * 3. every worker keeps its own copy of the distance array and drops tasks it knows are useless;
 * 4. the workpool is priority-ordered: smaller tentative distances first (priority = -distance).
 * The distances: the element-wise minimum of every worker's array (a reduce to rank 0).
 */
import type { Pool, World } from "workpool";
import type { Graph } from "./graph.ts";

export interface Relax {
  readonly v: Int32Array;
  readonly d: Float64Array;
}

/** Pairs per task. */
const BATCH = 64;

export async function solveCentralized(
  world: World,
  pool: Pool<Relax>,
  g: Graph,
  source: number,
): Promise<Float64Array | undefined> {
  const n = g.n;
  const { offsets, targets, weights } = g;
  const best = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  const expanded = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  best[source] = 0;
  if (world.rank === pool.config.coordinator) pool.put({ v: Int32Array.of(source), d: Float64Array.of(0) });
  const outV: number[] = [];
  const outD: number[] = [];
  await pool.run((task, ctx) => {
    const tv = task.v;
    const td = task.d;
    for (let i = 0; i < tv.length; i++) {
      const v = tv[i]!;
      const d = td[i]!;
      // Useless: a shorter path to v is known here, or v was already explored at this distance here.
      if (d > best[v]! || expanded[v]! <= d) continue;
      best[v] = d;
      expanded[v] = d;
      for (let e = offsets[v]!, end = offsets[v + 1]!; e < end; e++) {
        const u = targets[e]!;
        const nd = d + weights[e]!;
        if (nd < best[u]!) {
          best[u] = nd;
          outV.push(u);
          outD.push(nd);
        }
      }
    }
    for (let s = 0; s < outV.length; s += BATCH) {
      const d = Float64Array.from(outD.slice(s, s + BATCH));
      let min = Number.POSITIVE_INFINITY;
      for (const x of d) if (x < min) min = x;
      ctx.put({ v: Int32Array.from(outV.slice(s, s + BATCH)), d }, { priority: -min });
    }
    outV.length = 0;
    outD.length = 0;
  });
  return world.reduce(best, "min", 0);
}
