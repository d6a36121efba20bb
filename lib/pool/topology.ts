/**
 * The graphs the neighbourhood strategies balance over: whom a rank counts as its neighbours (`partner:
 * "neighbours"`, `initiation: "diffusion"`), the spanning tree Ripple sends load along, and the lifeline
 * graph of lifeline-based work stealing. Each is a pure function of rank and size, so every rank computes the
 * same graph without a message.
 */
import type { Topology } from "./config.ts";

/**
 * The neighbours of `rank` in a job of `size` ranks, ascending, never `rank` itself:
 * - hypercube: rank xor 2^k for every k with rank xor 2^k < size. When size is not a power of two the graph is
 *   still connected (clearing a rank's top bit gives a smaller rank, which exists), but degrees differ.
 * - torus: a rows x columns grid with wrap-around, rows the largest divisor of size not above its square root
 *   (a prime size gives one row: a ring).
 * - ring: rank - 1 and rank + 1, modulo size.
 */
export function neighboursOf(topology: Topology, rank: number, size: number): number[] {
  const out = new Set<number>();
  if (topology === "hypercube") {
    for (let bit = 1; bit < size; bit <<= 1) {
      const n = rank ^ bit;
      if (n < size) out.add(n);
    }
  } else if (topology === "torus") {
    const [rows, cols] = torusShape(size);
    const row = Math.floor(rank / cols);
    const col = rank % cols;
    out.add(((row + 1) % rows) * cols + col);
    out.add(((row + rows - 1) % rows) * cols + col);
    out.add(row * cols + ((col + 1) % cols));
    out.add(row * cols + ((col + cols - 1) % cols));
  } else {
    out.add((rank + 1) % size);
    out.add((rank + size - 1) % size);
  }
  out.delete(rank);
  return [...out].sort((a, b) => a - b);
}

/** Rows and columns of the torus on `size` ranks: the most square factoring, rows <= columns. */
export function torusShape(size: number): [rows: number, cols: number] {
  let rows = Math.floor(Math.sqrt(size));
  while (rows > 1 && size % rows !== 0) rows--;
  return [rows, size / rows];
}

/**
 * The binomial spanning tree of the hypercube, rooted at rank 0: the parent of rank r is r with its lowest set
 * bit cleared; its children are r + 2^k for every 2^k below that bit (below size). Depth and root degree are
 * both ceil(log2 size), so load crosses the tree in few hops.
 */
export interface TreeLinks {
  /** -1 at the root. */
  readonly parent: number;
  readonly children: readonly number[];
  /** Ranks in the subtree under each child (same order as `children`). */
  readonly childSizes: readonly number[];
}

export function spanningTree(rank: number, size: number): TreeLinks {
  const parent = rank === 0 ? -1 : rank & (rank - 1);
  const children: number[] = [];
  const childSizes: number[] = [];
  for (let bit = 1; rank + bit < size && (rank === 0 || bit < (rank & -rank)); bit <<= 1) {
    children.push(rank + bit);
    childSizes.push(subtreeSize(rank + bit, size));
  }
  return { parent, children, childSizes };
}

/** Ranks in the binomial subtree rooted at `rank` (rank and the ranks below it that exist). */
function subtreeSize(rank: number, size: number): number {
  const span = rank === 0 ? size : rank & -rank;
  return Math.min(span, size - rank);
}

/**
 * Outgoing lifelines of `rank` in X10 GLB's lifeline graph, a base-`base` hypercube: for each base-`base`
 * digit of the rank, the rank with that digit decremented (cyclically) and the other digits kept; if that rank
 * does not exist, the next decrement is tried. Every rank reaches every other along lifelines, and each has
 * about log_base(size) of them.
 */
export function lifelinesOf(rank: number, size: number, base = 4): number[] {
  const out = new Set<number>();
  for (let x = 1; x < size; x *= base) {
    const block = x * base;
    let v = rank;
    for (let k = 1; k < base; k++) {
      v = v - (v % block) + ((v + block - x) % block);
      if (v < size) {
        if (v !== rank) out.add(v);
        break;
      }
    }
  }
  return [...out];
}
