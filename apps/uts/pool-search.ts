/**
 * UTS on a workpool: a task is one node; its handler computes the node's children, puts each one, and returns
 * what the node adds to the counts. `run` combines those values on every rank (one node, a leaf or not, at
 * its depth), so the search needs no reduction of its own, and a count travels with the completion of the
 * task that made it. The coordinator's rank (rank 0 in a distributed pool) puts the root: a centralized pool with
 * `retries` survives the death of any other rank, and a root put on a worker's rank would die with it before it
 * reached the coordinator.
 */
import type { Pool, World } from "workpool";
import type { Counts } from "./counts.ts";
import type { Tree, UtsNode } from "./tree.ts";

/** What one node adds: [nodes, leaves, depth]. */
type Tally = [nodes: number, leaves: number, depth: number];

/** Adds `b` into the running total `a` in place (run's reducer may: `a` is never a value a handler returned). */
const combine = (a: Tally, b: Tally): Tally => {
  a[0] += b[0];
  a[1] += b[1];
  if (b[2] > a[2]) a[2] = b[2];
  return a;
};

/** One tally per depth for inner nodes and for leaves, made once: handlers return these, so a node allocates none. */
const inner: Tally[] = [];
const leaf: Tally[] = [];
function tally(d: number, isLeaf: boolean): Tally {
  const table = isLeaf ? leaf : inner;
  return (table[d] ??= [1, isLeaf ? 1 : 0, d]);
}

/** Searches the whole tree on every rank of `pool`; a collective. Resolves on every rank to the tree's counts. */
export async function searchPool(world: World, pool: Pool<UtsNode>, tree: Tree): Promise<Counts> {
  const first = pool.config.mode === "centralized" ? pool.config.coordinator : 0;
  if (world.rank === first) pool.put(tree.root());
  const { result } = await pool.run<Tally>(
    (node, ctx) => {
      const { s, d } = node;
      const n = tree.numChildren(s, d);
      for (let i = 0; i < n; i++) ctx.put({ s: tree.spawn(s, i), d: d + 1 });
      return tally(d, n === 0);
    },
    { reduce: combine },
  );
  const [nodes, leaves, depth] = result ?? [0, 0, 0];
  return { nodes, leaves, depth };
}
