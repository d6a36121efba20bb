/**
 * The sequential reference: a depth-first walk with an explicit stack in one process, no pool. It is what the
 * parallel runs are measured against, so it is a plain loop over the same `Tree` (the same SHA-1 calls), with
 * no per-node allocation beyond the child states themselves.
 */
import type { Counts } from "./counts.ts";
import type { Tree } from "./tree.ts";

export function searchSequential(tree: Tree): Counts {
  const root = tree.root();
  // The stack: states and depths side by side.
  const states: Uint8Array[] = [root.s];
  const depths: number[] = [root.d];
  let nodes = 0;
  let leaves = 0;
  let depth = 0;
  while (states.length > 0) {
    const s = states.pop() as Uint8Array;
    const d = depths.pop() as number;
    nodes++;
    if (d > depth) depth = d;
    const n = tree.numChildren(s, d);
    if (n === 0) {
      leaves++;
      continue;
    }
    for (let i = 0; i < n; i++) {
      states.push(tree.spawn(s, i));
      depths.push(d + 1);
    }
  }
  return { nodes, leaves, depth };
}
