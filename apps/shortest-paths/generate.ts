/**
 * Seeded graph generators, so tests and benchmarks need no data files. The same spec and seed give the same
 * arcs in the same order on every rank and every run.
 *
 * - `grid:ROWSxCOLS`: a road-like grid. Vertex `r * COLS + c` is joined to its right and lower neighbours in
 *   both directions (one random weight in [1, 1000] per pair), plus `max(1, floor(N / 1000))` random
 *   shortcuts, each in both directions with weight `(1 + manhattan distance) * [250, 1000]`. Every vertex is
 *   reachable from every other.
 * - `random:N,M`: the first `min(M, N - 1)` arcs form a random tree rooted at vertex 0 (vertex `perm[i]`
 *   gets an arc from a random earlier `perm[j]`), so with M >= N - 1 every vertex is reachable from 0; the
 *   remaining arcs join random distinct vertices. Weights are random in [1, 1000].
 */
import { InputError } from "../common/errors.ts";
import { Random } from "../common/random.ts";
import { ArcList, type BuildOptions, buildGraph, type Graph } from "./graph.ts";

export type GraphSpec =
  | { readonly kind: "grid"; readonly rows: number; readonly cols: number }
  | { readonly kind: "random"; readonly n: number; readonly m: number };

/** Seed used when none is given. */
export const DEFAULT_GRAPH_SEED = 1;
/** Largest weight of a generated grid or random arc. */
export const MAX_GENERATED_WEIGHT = 1000;
/** Most vertices a generated graph may have; arcs are bounded the same way. */
export const MAX_GENERATED = 2 ** 30;

const USAGE = "grid:ROWSxCOLS or random:N,M";

function count(spec: string, what: string, text: string | undefined, min: number): number {
  if (text === undefined || !/^\d+$/.test(text)) {
    throw new InputError(`--generate ${USAGE}: ${what} must be an integer; got \`${spec}\``);
  }
  const v = Number(text);
  if (v < min || v > MAX_GENERATED) {
    throw new InputError(
      `--generate ${USAGE}: ${what} must be in ${min}..${MAX_GENERATED}; got ${text} in \`${spec}\``,
    );
  }
  return v;
}

/** Parses a `--generate` spec: `grid:ROWSxCOLS` or `random:N,M`. */
export function parseGraphSpec(spec: string): GraphSpec {
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? "" : spec.slice(colon + 1);
  if (kind === "grid") {
    const [r, c, extra] = rest.split("x");
    if (extra !== undefined) throw new InputError(`--generate ${USAGE}: got \`${spec}\``);
    const rows = count(spec, "ROWS", r, 1);
    const cols = count(spec, "COLS", c, 1);
    if (rows * cols > MAX_GENERATED) {
      throw new InputError(`--generate: grid of ${rows * cols} vertices is larger than ${MAX_GENERATED}`);
    }
    return { kind, rows, cols };
  }
  if (kind === "random") {
    const [a, b, extra] = rest.split(",");
    if (extra !== undefined) throw new InputError(`--generate ${USAGE}: got \`${spec}\``);
    const n = count(spec, "N", a, 1);
    const m = count(spec, "M", b, 0);
    if (n === 1 && m > 0)
      throw new InputError(`--generate: random graph with one vertex can have no arcs; got \`${spec}\``);
    return { kind, n, m };
  }
  throw new InputError(`--generate must be ${USAGE}; got \`${spec}\``);
}

/** Number of vertices of the graph `spec` describes. */
export function specVertices(spec: GraphSpec): number {
  return spec.kind === "grid" ? spec.rows * spec.cols : spec.n;
}

/** Arcs of a grid graph (see the module comment), 0-based. */
export function gridArcs(rows: number, cols: number, seed: number = DEFAULT_GRAPH_SEED): ArcList {
  const rnd = new Random(seed);
  const n = rows * cols;
  const pairs = rows * (cols - 1) + (rows - 1) * cols;
  const shortcuts = n > 1 ? Math.max(1, Math.floor(n / 1000)) : 0;
  const arcs = new ArcList(2 * (pairs + shortcuts));
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = r * cols + c;
      if (c + 1 < cols) {
        const w = rnd.int(1, MAX_GENERATED_WEIGHT);
        arcs.push(v, v + 1, w);
        arcs.push(v + 1, v, w);
      }
      if (r + 1 < rows) {
        const w = rnd.int(1, MAX_GENERATED_WEIGHT);
        arcs.push(v, v + cols, w);
        arcs.push(v + cols, v, w);
      }
    }
  }
  for (let i = 0; i < shortcuts; i++) {
    const a = rnd.int(0, n - 1);
    let b = rnd.int(0, n - 2);
    if (b >= a) b++;
    const manhattan = Math.abs(Math.floor(a / cols) - Math.floor(b / cols)) + Math.abs((a % cols) - (b % cols));
    const w = Math.min(2 ** 31 - 1, (1 + manhattan) * rnd.int(MAX_GENERATED_WEIGHT / 4, MAX_GENERATED_WEIGHT));
    arcs.push(a, b, w);
    arcs.push(b, a, w);
  }
  return arcs;
}

/** Arcs of a random graph (see the module comment), 0-based. */
export function randomArcs(n: number, m: number, seed: number = DEFAULT_GRAPH_SEED): ArcList {
  if (n < 2 && m > 0) throw new InputError(`random graph: ${n} vertex cannot hold ${m} arcs`);
  const rnd = new Random(seed);
  const arcs = new ArcList(m);
  // perm[0] = 0; the rest a Fisher-Yates shuffle of 1..n-1.
  const perm = new Int32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 1; i--) {
    const j = rnd.int(1, i);
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
  }
  const tree = Math.min(m, n - 1);
  for (let i = 1; i <= tree; i++) arcs.push(perm[rnd.int(0, i - 1)]!, perm[i]!, rnd.int(1, MAX_GENERATED_WEIGHT));
  for (let i = tree; i < m; i++) {
    const a = rnd.int(0, n - 1);
    let b = rnd.int(0, n - 2);
    if (b >= a) b++;
    arcs.push(a, b, rnd.int(1, MAX_GENERATED_WEIGHT));
  }
  return arcs;
}

/** Arcs of `spec`, 0-based, in generation order. */
export function generateArcs(spec: GraphSpec, seed: number = DEFAULT_GRAPH_SEED): ArcList {
  return spec.kind === "grid" ? gridArcs(spec.rows, spec.cols, seed) : randomArcs(spec.n, spec.m, seed);
}

/**
 * The graph of `spec` (a spec string or parsed spec), or with `options.lo/hi` the out-arcs of that range only.
 * Every rank generates all arcs and keeps its own, so ranges of one spec and seed fit together.
 */
export function generateGraph(
  spec: string | GraphSpec,
  seed: number = DEFAULT_GRAPH_SEED,
  options: BuildOptions = {},
): Graph {
  const s = typeof spec === "string" ? parseGraphSpec(spec) : spec;
  return buildGraph(specVertices(s), generateArcs(s, seed), options);
}
