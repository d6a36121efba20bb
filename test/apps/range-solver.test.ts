// The distributed shortest-path kernel without a transport: the indexed heap, and RangeSolver ranks whose
// updates are handed over by the test in a shuffled order and with a pacing limit, as the pool may deliver
// them. The same code under real ranks is tested through the launcher in parallel.slow.test.ts.
import test from "ava";
import { Random } from "../../apps/common/random.ts";
import { dijkstra } from "../../apps/shortest-paths/dijkstra.ts";
import { RangeSolver } from "../../apps/shortest-paths/distributed.ts";
import { generateArcs, parseGraphSpec } from "../../apps/shortest-paths/generate.ts";
import { blockRange, buildGraph, type Graph } from "../../apps/shortest-paths/graph.ts";
import { IndexedHeap } from "../../apps/shortest-paths/heap.ts";

test("IndexedHeap pops in key order with inserts and decrease-keys interleaved", (t) => {
  const rnd = new Random(7);
  const n = 500;
  const heap = new IndexedHeap(n);
  const key = new Map<number, number>();
  const popped: number[] = [];
  for (let step = 0; step < 5000; step++) {
    const v = rnd.int(0, n - 1);
    const k = rnd.int(0, 10_000);
    if (!key.has(v) || k < (key.get(v) as number)) {
      key.set(v, k);
      heap.set(v, k);
    }
    if (step % 7 === 0 && heap.size > 0) {
      const min = Math.min(...key.values());
      t.is(heap.minKey(), min);
      const v = heap.pop();
      t.is(key.get(v), min);
      key.delete(v);
      popped.push(min);
    }
  }
  t.is(heap.size, key.size);
  while (heap.size > 0) {
    const k = heap.minKey();
    key.delete(heap.pop());
    popped.push(k);
  }
  t.is(key.size, 0);
  t.is(heap.minKey(), Number.POSITIVE_INFINITY);
  t.true(popped.length > 400);
});

/** Runs `parts` RangeSolvers on `spec` from `source`; updates are delivered in a random order. */
function solveInProcess(spec: string, parts: number, source: number, seed: number, limitStep: number): Float64Array {
  const s = parseGraphSpec(spec);
  const n = s.kind === "grid" ? s.rows * s.cols : s.n;
  const arcs = generateArcs(s, 3);
  const ranks: { g: Graph; solver: RangeSolver }[] = [];
  for (let r = 0; r < parts; r++) {
    const [lo, hi] = blockRange(n, parts, r);
    const g = buildGraph(n, arcs, { lo, hi });
    ranks.push({ g, solver: new RangeSolver(g, parts) });
  }
  const owner = ranks.findIndex(({ g }) => source >= g.lo && source < g.hi);
  ranks[owner]!.solver.improve([source], [0]);
  const rnd = new Random(seed);
  const inFlight: { to: number; v: Int32Array; d: Float64Array }[] = [];
  for (let rounds = 0; ; rounds++) {
    if (rounds > 1_000_000) throw new Error("no progress");
    // Deliver some messages, in a random order.
    for (let k = rnd.int(0, inFlight.length); k > 0; k--) {
      const [m] = inFlight.splice(rnd.int(0, inFlight.length - 1), 1);
      ranks[m!.to]!.solver.improve(m!.v, m!.d);
    }
    // Every rank settles a little, up to a limit that rises as the smallest frontier does.
    let global = Number.POSITIVE_INFINITY;
    for (const { solver } of ranks) global = Math.min(global, solver.frontier);
    for (const m of inFlight) for (const d of m.d) global = Math.min(global, d);
    if (global === Number.POSITIVE_INFINITY) break;
    for (const [r, { solver }] of ranks.entries()) {
      solver.settle(global + limitStep, rnd.int(1, 50));
      for (let to = 0; to < parts; to++) {
        if (to !== r && solver.owed(to) > 0) {
          const { v, d, min } = solver.take(to);
          checkMin(d, min);
          inFlight.push({ to, v, d });
        }
      }
    }
  }
  const dist = new Float64Array(n);
  for (const { g, solver } of ranks) dist.set(solver.dist, g.lo);
  return dist;
}

function checkMin(d: Float64Array, min: number): void {
  if (Math.min(...d) !== min) throw new Error(`take: min ${min} but the smallest distance is ${Math.min(...d)}`);
}

for (const [spec, parts, source] of [
  ["grid:12x30", 1, 0],
  ["grid:12x30", 3, 0],
  ["grid:12x30", 4, 200],
  ["random:400,1600", 2, 0],
  ["random:400,1600", 5, 17],
] as const) {
  test(`RangeSolver on ${parts} in-process ranks matches Dijkstra: ${spec} from ${source}`, (t) => {
    const s = parseGraphSpec(spec);
    const n = s.kind === "grid" ? s.rows * s.cols : s.n;
    const expected = dijkstra(buildGraph(n, generateArcs(s, 3)), source);
    for (const seed of [1, 2, 3]) {
      for (const limitStep of [0, 500, Number.POSITIVE_INFINITY]) {
        t.deepEqual(
          solveInProcess(spec, parts, source, seed, limitStep),
          expected,
          `seed ${seed}, limit +${limitStep}`,
        );
      }
    }
  });
}

test("RangeSolver sends each remote vertex only when its distance improves, combined per destination", (t) => {
  // 0 -> 2 (5), 0 -> 3 (9), 1 -> 2 (1); vertices 2 and 3 belong to the second of two ranks.
  const arcs = generateArcs(parseGraphSpec("random:4,0"));
  for (const [u, v, w] of [
    [0, 2, 5],
    [0, 3, 9],
    [1, 2, 1],
    [0, 1, 1],
  ] as const)
    arcs.push(u, v, w);
  const g = buildGraph(4, arcs, { lo: 0, hi: 2 });
  const solver = new RangeSolver(g, 2);
  solver.improve([0], [0]);
  t.is(solver.settle(Number.POSITIVE_INFINITY, 10), 2);
  t.is(solver.owed(1), 2);
  const { v, d, min } = solver.take(1);
  t.deepEqual([...v], [2, 3]);
  // Vertex 2: 5 through 0, then 2 through 1: only the better one is sent.
  t.deepEqual([...d], [2, 9]);
  t.is(min, 2);
  t.is(solver.owed(1), 0);
  // An update from another rank lowers vertex 1: it is settled again and the better distance of 2 is sent.
  solver.improve([1], [0]);
  t.is(solver.settle(Number.POSITIVE_INFINITY, 10), 1);
  const again = solver.take(1);
  t.deepEqual([...again.v], [2]);
  t.deepEqual([...again.d], [1]);
  // No longer an improvement: nothing is owed.
  solver.improve([1], [0]);
  solver.settle(Number.POSITIVE_INFINITY, 10);
  t.is(solver.owed(1), 0);
  t.deepEqual([...solver.dist], [0, 0]);
});
