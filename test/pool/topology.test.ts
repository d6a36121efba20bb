/**
 * The graphs of the neighbourhood strategies (lib/pool/topology.ts), checked on every size from 2 to 130:
 * neighbours are symmetric and connected, the spanning tree spans, and the lifeline graph is strongly connected
 * (else an idle rank could wait on lifelines that never lead to work).
 */
import test from "ava";
import { TOPOLOGIES } from "../../lib/pool/config.ts";
import { lifelinesOf, neighboursOf, spanningTree, torusShape } from "../../lib/pool/topology.ts";

const SIZES = Array.from({ length: 129 }, (_, i) => i + 2);

/** Ranks reachable from rank 0 along `edges`. */
function reachable(size: number, edges: (r: number) => readonly number[]): number {
  const seen = new Uint8Array(size);
  const stack = [0];
  seen[0] = 1;
  let n = 1;
  while (stack.length > 0) {
    for (const m of edges(stack.pop() as number)) {
      if (seen[m] === 0) {
        seen[m] = 1;
        n++;
        stack.push(m);
      }
    }
  }
  return n;
}

test("every topology is symmetric, loop-free and connected on every size", (t) => {
  for (const topology of TOPOLOGIES) {
    for (const size of SIZES) {
      for (let r = 0; r < size; r++) {
        const near = neighboursOf(topology, r, size);
        t.false(near.includes(r), `${topology} ${size}: ${r} is its own neighbour`);
        for (const m of near) {
          t.true(m >= 0 && m < size, `${topology} ${size}: ${r} -> ${m}`);
          t.true(neighboursOf(topology, m, size).includes(r), `${topology} ${size}: ${r} -> ${m} one way only`);
        }
      }
      t.is(
        reachable(size, (r) => neighboursOf(topology, r, size)),
        size,
        `${topology} on ${size} ranks`,
      );
    }
  }
});

test("degrees: hypercube log2 size on powers of two, torus 4 on a square, ring 2", (t) => {
  t.deepEqual(neighboursOf("hypercube", 5, 16), [1, 4, 7, 13]);
  t.deepEqual(torusShape(64), [8, 8]);
  t.deepEqual(torusShape(24), [4, 6]);
  t.deepEqual(torusShape(13), [1, 13]);
  t.deepEqual(neighboursOf("torus", 0, 16), [1, 3, 4, 12]);
  t.deepEqual(neighboursOf("ring", 0, 16), [1, 15]);
  t.deepEqual(neighboursOf("ring", 0, 2), [1]);
});

test("the spanning tree spans: parents and children agree, subtree sizes add up", (t) => {
  for (const size of SIZES) {
    const links = Array.from({ length: size }, (_, r) => spanningTree(r, size));
    t.is(links[0]?.parent, -1);
    const sizeOf = (r: number): number => 1 + (links[r]?.childSizes ?? []).reduce((a, b) => a + b, 0);
    t.is(sizeOf(0), size, `${size}: the root's subtree`);
    for (let r = 0; r < size; r++) {
      const l = links[r];
      l?.children.forEach((c, i) => {
        t.is(links[c]?.parent, r, `${size}: parent of ${c}`);
        t.is(l.childSizes[i], sizeOf(c), `${size}: size under ${c}`);
      });
    }
    t.is(
      reachable(size, (r) => links[r]?.children ?? []),
      size,
      `${size}: the tree reaches every rank`,
    );
  }
});

test("the lifeline graph is strongly connected, with about log4(size) lifelines a rank", (t) => {
  for (const size of SIZES) {
    const out = Array.from({ length: size }, (_, r) => lifelinesOf(r, size));
    const into: number[][] = Array.from({ length: size }, () => []);
    out.forEach((ls, r) => ls.forEach((l) => into[l]?.push(r)));
    t.is(
      reachable(size, (r) => out[r] ?? []),
      size,
      `${size}: along lifelines`,
    );
    t.is(
      reachable(size, (r) => into[r] ?? []),
      size,
      `${size}: against lifelines`,
    );
    for (const ls of out) t.true(ls.length <= Math.ceil(Math.log(size) / Math.log(4)), `${size}: ${ls.join(",")}`);
  }
  t.deepEqual(lifelinesOf(0, 64), [3, 12, 48]);
  t.deepEqual(lifelinesOf(5, 16), [4, 1]);
});
