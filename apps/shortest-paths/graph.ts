/**
 * Compact CSR graphs for the shortest-path app. Vertices are 0-based inside (DIMACS ids are 1-based: vertex
 * `v` here is `v + 1` in a .gr file). Weights are non-negative 32-bit integers, as in the DIMACS format.
 *
 * A graph may hold the out-arcs of a contiguous vertex range [lo, hi) only (a rank that owns that range loads
 * just its part) while still knowing `n`, the number of vertices of the whole graph, so arc targets outside
 * the range stay valid ids.
 */
import { InputError } from "../common/errors.ts";

export interface Graph {
  /** Number of vertices of the whole graph. */
  readonly n: number;
  /** First vertex whose out-arcs are stored. */
  readonly lo: number;
  /** One past the last vertex whose out-arcs are stored. */
  readonly hi: number;
  /**
   * Length `hi - lo + 1`: the out-arcs of vertex `v` (lo <= v < hi) are indices
   * `offsets[v - lo]` .. `offsets[v - lo + 1] - 1` of `targets` and `weights`.
   */
  readonly offsets: Int32Array;
  /** Arc heads, 0-based vertex ids in [0, n). */
  readonly targets: Int32Array;
  /** Arc weights, >= 0. */
  readonly weights: Int32Array;
}

/** Number of arcs stored in `g` (the out-arcs of its range only). */
export function arcCount(g: Graph): number {
  return g.targets.length;
}

/** Sum of the weights of the arcs stored in `g`. */
export function weightTotal(g: Graph): number {
  const w = g.weights;
  let sum = 0;
  for (let i = 0; i < w.length; i++) sum += w[i]!;
  return sum;
}

/** True when `g` holds the out-arcs of every vertex. */
export function isComplete(g: Graph): boolean {
  return g.lo === 0 && g.hi === g.n;
}

/**
 * Growable list of arcs (0-based tail, head, weight) in three parallel typed arrays, the input of `buildGraph`.
 * Only `count` entries of each array are meaningful.
 */
export class ArcList {
  tails: Int32Array;
  heads: Int32Array;
  weights: Int32Array;
  count = 0;

  constructor(capacity = 1024) {
    const c = Math.max(16, capacity);
    this.tails = new Int32Array(c);
    this.heads = new Int32Array(c);
    this.weights = new Int32Array(c);
  }

  push(tail: number, head: number, weight: number): void {
    if (this.count === this.tails.length) this.grow();
    const i = this.count++;
    this.tails[i] = tail;
    this.heads[i] = head;
    this.weights[i] = weight;
  }

  private grow(): void {
    const c = this.tails.length * 2;
    const t = new Int32Array(c);
    t.set(this.tails);
    this.tails = t;
    const h = new Int32Array(c);
    h.set(this.heads);
    this.heads = h;
    const w = new Int32Array(c);
    w.set(this.weights);
    this.weights = w;
  }
}

export interface BuildOptions {
  /** Also add every arc reversed (head -> tail, same weight). @default false */
  readonly undirected?: boolean;
  /** Keep only out-arcs of vertices in [lo, hi). @default 0 */
  readonly lo?: number;
  /** @default n */
  readonly hi?: number;
}

/** Checks a vertex range against `n`; returns it resolved. */
export function checkRange(n: number, lo: number | undefined, hi: number | undefined): [number, number] {
  const l = lo ?? 0;
  const h = hi ?? n;
  if (!Number.isInteger(l) || !Number.isInteger(h) || l < 0 || h > n || l > h) {
    throw new InputError(`vertex range [${l}, ${h}) is not inside [0, ${n})`);
  }
  return [l, h];
}

/**
 * Builds the CSR graph of `arcs` over `n` vertices. Arcs of a vertex keep their input order (for undirected
 * graphs an arc's reverse comes at the position of the arc). Arc ends must already be checked to be in [0, n).
 */
export function buildGraph(n: number, arcs: ArcList, options: BuildOptions = {}): Graph {
  const [lo, hi] = checkRange(n, options.lo, options.hi);
  const undirected = options.undirected ?? false;
  const { tails, heads, weights, count } = arcs;
  const span = hi - lo;
  const offsets = new Int32Array(span + 1);
  // Count out-degrees into offsets[v - lo + 1], then prefix-sum.
  for (let i = 0; i < count; i++) {
    const u = tails[i]! - lo;
    if (u >= 0 && u < span) offsets[u + 1]!++;
    if (undirected) {
      const v = heads[i]! - lo;
      if (v >= 0 && v < span) offsets[v + 1]!++;
    }
  }
  for (let v = 0; v < span; v++) offsets[v + 1]! += offsets[v]!;
  const m = offsets[span]!;
  const targets = new Int32Array(m);
  const w = new Int32Array(m);
  const fill = offsets.slice(0, span);
  for (let i = 0; i < count; i++) {
    const u = tails[i]! - lo;
    if (u >= 0 && u < span) {
      const e = fill[u]!++;
      targets[e] = heads[i]!;
      w[e] = weights[i]!;
    }
    if (undirected) {
      const v = heads[i]! - lo;
      if (v >= 0 && v < span) {
        const e = fill[v]!++;
        targets[e] = tails[i]!;
        w[e] = weights[i]!;
      }
    }
  }
  return { n, lo, hi, offsets, targets, weights: w };
}

/**
 * The `index`-th of `parts` contiguous, nearly equal vertex ranges of [0, n) (the first `n % parts` ranges get
 * one vertex more). Ranges of consecutive indices are adjacent, and together cover every vertex.
 */
export function blockRange(n: number, parts: number, index: number): [number, number] {
  if (!Number.isInteger(parts) || parts < 1 || !Number.isInteger(index) || index < 0 || index >= parts) {
    throw new InputError(`block range: need 0 <= index < parts; got index ${index}, parts ${parts}`);
  }
  const base = Math.floor(n / parts);
  const extra = n % parts;
  const lo = index * base + Math.min(index, extra);
  return [lo, lo + base + (index < extra ? 1 : 0)];
}

/** The index of the range of `blockRange(n, parts, *)` that holds vertex `v`. */
export function blockOwner(n: number, parts: number, v: number): number {
  const base = Math.floor(n / parts);
  const extra = n % parts;
  const cut = extra * (base + 1);
  return v < cut ? Math.floor(v / (base + 1)) : extra + Math.floor((v - cut) / base);
}
