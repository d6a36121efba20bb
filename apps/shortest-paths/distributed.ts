/**
 * Moore's algorithm on a distributed workpool: the vertices are split among the ranks in contiguous id ranges,
 * each rank holding only its own vertices' out-arcs and distances. A task is a batch of distance updates for
 * vertices of one rank, pinned there (`put(..., { to: owner })`). A rank applies the updates and settles what
 * they improve in distance order with the same indexed heap as sequential Dijkstra (heap.ts), sending the
 * improvements it finds for other ranks' vertices combined per destination (one message per destination per
 * slice, the smallest distance per vertex, never one it has already beaten). A rank may settle a vertex too
 * early (a shorter path through another rank arrives later); the update then lowers it and it is settled
 * again, so the answer is exact whatever the timing. The pool's termination detection says when no update is
 * left anywhere.
 *
 * Pacing: a rank that settles vertices far beyond what the others have settled does work that later updates
 * undo. Every message carries its sender's frontier (the smallest distance in its heap: a lower bound on the
 * updates it will send), and a rank settles only up to the smallest frontier of the others plus DELTA. The rank
 * holding the globally smallest distance can always go on, so the pacing cannot deadlock; DELTA lets ranks
 * work at the same time instead of taking turns. A rank settles at most SP_SLICE vertices per task, then sends
 * what it found and lets the updates others sent it in; an eighth of that while another rank, which has work,
 * waits for this one's frontier to move (the second rank of a grid solved from a corner, at the start).
 *
 * The result stays distributed: each rank returns the distances of its own range.
 *
 * Two knobs, for experiments, from the environment: SP_SLICE (vertices per task, default 32768) and
 * SP_DELTA_FACTOR (DELTA in mean arc weights, default 64). Measured on 2 ranks of 2 cores (grids of 1M and 4M
 * vertices), 32768 beat 8192 and DELTA between 16 and 256 made little difference.
 */
import type { Pool, TaskContext, World } from "workpool";
import { InputError } from "../common/errors.ts";
import { blockOwner, type Graph } from "./graph.ts";
import { IndexedHeap } from "./heap.ts";

export interface Update {
  readonly v: Int32Array;
  readonly d: Float64Array;
  /** Sender rank, its message sequence number, and its frontier when it sent this. */
  readonly r: number;
  readonly s: number;
  readonly f: number;
}

/** A tuning knob from the environment (for experiments): a positive number, else `fallback`. */
function knob(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const v = Number(raw);
  if (!(v > 0))
    throw new InputError(`environment variable ${name} must be a positive number; got ${JSON.stringify(raw)}`);
  return v;
}

/** Vertices settled per task before the rank sends what it found and lets other work in. */
const DEFAULT_SLICE = 32768;
/**
 * While another rank waits for this one's frontier, slices are this many times shorter, so it hears sooner.
 * Measured on the default grid (2 ranks, 8 warm solves, 3 alternated trials): medians 58-61 ms against 60-70 ms
 * with full slices; divisors 4, 16 and 32 were no better.
 */
const SHORT_SLICE_DIVISOR = 8;
/** DELTA = DELTA_FACTOR x the mean arc weight. */
const DEFAULT_DELTA_FACTOR = 64;

/** Smaller distances first; a frontier-only message of an empty heap (Infinity) goes last. */
const priorityOf = (d: number) => (Number.isFinite(d) ? -d : -Number.MAX_VALUE);

/** One rank's part of the problem: its distances, its heap, and the updates it owes other ranks. */
export class RangeSolver {
  /** Distances of vertices lo .. hi-1 (index v - lo). */
  readonly dist: Float64Array;
  private readonly heap: IndexedHeap;
  /** Per destination rank: vertex -> smallest distance found since the last `take`. */
  private readonly pending: Map<number, number>[] = [];
  /** Best distance ever sent for each vertex of another rank. */
  private readonly sent = new Map<number, number>();

  constructor(
    private readonly g: Graph,
    private readonly size: number,
  ) {
    this.dist = new Float64Array(g.hi - g.lo).fill(Number.POSITIVE_INFINITY);
    this.heap = new IndexedHeap(g.hi - g.lo);
    for (let r = 0; r < size; r++) this.pending.push(new Map());
  }

  /** The smallest tentative distance not yet settled here (Infinity when none). */
  get frontier(): number {
    return this.heap.minKey();
  }

  /** Lowers the distances of vertices `v` (global ids in this rank's range) to `d` where that is shorter. */
  improve(v: ArrayLike<number>, d: ArrayLike<number>): void {
    const { dist, heap } = this;
    const lo = this.g.lo;
    for (let i = 0; i < v.length; i++) {
      const x = v[i]! - lo;
      const nd = d[i]!;
      if (nd < dist[x]!) {
        dist[x] = nd;
        heap.set(x, nd);
      }
    }
  }

  /** Settles vertices in distance order while the smallest is at most `limit`, at most `budget` of them. */
  settle(limit: number, budget: number): number {
    const { dist, heap } = this;
    const { lo, offsets, targets, weights } = this.g;
    const span = dist.length;
    let settled = 0;
    while (settled < budget && heap.size > 0) {
      const du = heap.minKey();
      if (du > limit) break;
      const u = heap.pop();
      settled++;
      const end = offsets[u + 1]!;
      for (let e = offsets[u]!; e < end; e++) {
        const t = targets[e]!;
        const nd = du + weights[e]!;
        const x = t - lo;
        if (x >= 0 && x < span) {
          if (nd < dist[x]!) {
            dist[x] = nd;
            heap.set(x, nd);
          }
        } else this.remote(t, nd);
      }
    }
    return settled;
  }

  private remote(t: number, nd: number): void {
    const known = this.sent.get(t);
    if (known !== undefined && known <= nd) return;
    this.sent.set(t, nd);
    this.pending[blockOwner(this.g.n, this.size, t)]!.set(t, nd);
  }

  /** Number of updates waiting for rank `r`. */
  owed(r: number): number {
    return this.pending[r]!.size;
  }

  /** Takes the updates waiting for rank `r`: vertices, distances, and the smallest distance among them. */
  take(r: number): { v: Int32Array; d: Float64Array; min: number } {
    const m = this.pending[r]!;
    const v = new Int32Array(m.size);
    const d = new Float64Array(m.size);
    let min = Number.POSITIVE_INFINITY;
    let i = 0;
    for (const [x, dx] of m) {
      v[i] = x;
      d[i++] = dx;
      if (dx < min) min = dx;
    }
    m.clear();
    return { v, d, min };
  }
}

/** Solves from 0-based `source`; returns this rank's distances (its range of vertices). */
export async function solveDistributed(
  world: World,
  pool: Pool<Update>,
  g: Graph,
  source: number,
  meanWeight: number,
): Promise<Float64Array> {
  const size = world.size;
  const me = world.rank;
  const solver = new RangeSolver(g, size);
  const slice = knob("SP_SLICE", DEFAULT_SLICE);
  const short = Math.max(1, Math.floor(slice / SHORT_SLICE_DIVISOR));
  const delta = knob("SP_DELTA_FACTOR", DEFAULT_DELTA_FACTOR) * meanWeight;
  // Each other rank's latest frontier (by its sequence number); unheard-of ranks hold nothing yet.
  const frontier = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  const frontierSeq = new Float64Array(size).fill(-1);
  const announced = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  // The smallest update sent to each rank since its last message: its frontier is no larger.
  const sentMin = new Float64Array(size).fill(Number.POSITIVE_INFINITY);
  let seq = 0;
  const none = { v: new Int32Array(0), d: new Float64Array(0) };
  if (source >= g.lo && source < g.hi) {
    solver.improve([source], [0]);
    pool.put({ ...none, r: me, s: -1, f: 0 }, { to: me });
  }
  let continuing = false;
  const horizon = (): number => {
    let h = Number.POSITIVE_INFINITY;
    for (let r = 0; r < size; r++) if (r !== me && frontier[r]! < h) h = frontier[r]!;
    return h + delta;
  };
  // A rank that has work but may not start it (its frontier, as far as we know it, lies beyond what we last
  // announced plus DELTA) waits for our next announcement: while one does, slices are short.
  const waitedOn = (): boolean => {
    for (let r = 0; r < size; r++) {
      if (r === me) continue;
      const theirs = Math.min(frontier[r]!, sentMin[r]!);
      if (theirs !== Number.POSITIVE_INFINITY && theirs > announced[r]! + delta) return true;
    }
    return false;
  };
  const step = (task: Update, ctx: TaskContext<Update>): void => {
    if (task.r === me) continuing = false;
    else {
      if (task.s > frontierSeq[task.r]!) {
        frontierSeq[task.r] = task.s;
        frontier[task.r] = task.f;
        sentMin[task.r] = Number.POSITIVE_INFINITY;
      }
      solver.improve(task.v, task.d);
    }
    solver.settle(horizon(), waitedOn() ? short : slice);
    const mine = solver.frontier;
    for (let r = 0; r < size; r++) {
      if (r === me || (solver.owed(r) === 0 && announced[r] === mine)) continue;
      announced[r] = mine;
      const { v, d, min } = solver.take(r);
      if (min < sentMin[r]!) sentMin[r] = min;
      ctx.put({ v, d, r: me, s: seq++, f: mine }, { to: r, priority: priorityOf(Math.min(min, mine)) });
    }
    if (mine !== Number.POSITIVE_INFINITY && mine <= horizon() && !continuing) {
      // More to settle here: come back after the queue has had a turn.
      continuing = true;
      ctx.put({ ...none, r: me, s: -1, f: mine }, { to: me, priority: priorityOf(mine) });
    }
  };
  await pool.run(step);
  return solver.dist;
}
