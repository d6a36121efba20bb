import test from "ava";
import { InputError } from "../../apps/common/errors.ts";
import { Random } from "../../apps/common/random.ts";
import { checkDistances, dijkstra, moore } from "../../apps/shortest-paths/dijkstra.ts";
import { formatDimacs, parseDimacs } from "../../apps/shortest-paths/dimacs.ts";
import {
  generateArcs,
  generateGraph,
  gridArcs,
  parseGraphSpec,
  randomArcs,
  specVertices,
} from "../../apps/shortest-paths/generate.ts";
import { ArcList, blockOwner, blockRange, buildGraph } from "../../apps/shortest-paths/graph.ts";
import {
  addTally,
  firstDistanceMismatch,
  formatDistances,
  summarize,
  tally,
  writeDistances,
} from "../../apps/shortest-paths/summary.ts";
import { tempDir } from "./temp.ts";

function arcList(arcs: [number, number, number][]): ArcList {
  const list = new ArcList();
  for (const [u, v, w] of arcs) list.push(u, v, w);
  return list;
}

test("Random is deterministic and spreads values", (t) => {
  const a = new Random(42);
  const b = new Random(42);
  const xs = Array.from({ length: 1000 }, () => a.int(0, 9));
  t.deepEqual(
    xs,
    Array.from({ length: 1000 }, () => b.int(0, 9)),
  );
  for (let d = 0; d < 10; d++) t.true(xs.filter((x) => x === d).length > 60);
  t.notDeepEqual(
    Array.from({ length: 10 }, () => new Random(1).nextUint32()),
    Array.from({ length: 10 }, (_, i) => new Random(2 + i).nextUint32()),
  );
});

test("buildGraph: CSR layout, input order kept per vertex, ranges", (t) => {
  const arcs = arcList([
    [2, 0, 5],
    [0, 1, 1],
    [0, 2, 4],
    [1, 2, 2],
  ]);
  const g = buildGraph(3, arcs);
  t.deepEqual([...g.offsets], [0, 2, 3, 4]);
  t.deepEqual([...g.targets], [1, 2, 2, 0]);
  t.deepEqual([...g.weights], [1, 4, 2, 5]);
  const part = buildGraph(3, arcs, { lo: 1, hi: 3, undirected: true });
  t.is(part.n, 3);
  t.deepEqual([...part.offsets], [0, 2, 5]);
  t.deepEqual([...part.targets], [0, 2, 0, 0, 1]);
  t.throws(() => buildGraph(3, arcs, { lo: 2, hi: 1 }), { instanceOf: InputError, message: /\[2, 1\)/ });
  t.throws(() => buildGraph(3, arcs, { hi: 4 }), { instanceOf: InputError });
});

test("blockRange partitions [0, n) and blockOwner inverts it", (t) => {
  for (const [n, parts] of [
    [10, 3],
    [3, 5],
    [100, 7],
    [1, 1],
  ] as const) {
    let next = 0;
    for (let r = 0; r < parts; r++) {
      const [lo, hi] = blockRange(n, parts, r);
      t.is(lo, next);
      t.true(hi - lo >= Math.floor(n / parts) && hi - lo <= Math.ceil(n / parts));
      for (let v = lo; v < hi; v++) t.is(blockOwner(n, parts, v), r);
      next = hi;
    }
    t.is(next, n);
  }
  t.throws(() => blockRange(10, 3, 3), { instanceOf: InputError });
});

test("parseGraphSpec accepts grid and random specs", (t) => {
  t.deepEqual(parseGraphSpec("grid:3x4"), { kind: "grid", rows: 3, cols: 4 });
  t.deepEqual(parseGraphSpec("random:10,30"), { kind: "random", n: 10, m: 30 });
  t.is(specVertices(parseGraphSpec("grid:3x4")), 12);
});

for (const bad of [
  "grid",
  "grid:3",
  "grid:3x",
  "grid:0x4",
  "grid:3x4x5",
  "grid:-1x3",
  "random:10",
  "random:0,1",
  "random:a,b",
  "random:1,1",
  "rand:3,4",
  "",
  "grid:3.5x2",
]) {
  test(`parseGraphSpec rejects \`${bad}\``, (t) => {
    const err = t.throws(() => parseGraphSpec(bad), { instanceOf: InputError });
    t.regex(err?.message ?? "", /--generate/);
    t.true(err?.message.includes(`\`${bad}\``) || /larger than|got \d/.test(err?.message ?? ""), err?.message);
  });
}

test("generators are deterministic from the seed", (t) => {
  for (const spec of ["grid:20x30", "random:500,2000"]) {
    const s = parseGraphSpec(spec);
    t.deepEqual(generateArcs(s, 7), generateArcs(s, 7));
    t.notDeepEqual(generateArcs(s, 7).weights, generateArcs(s, 8).weights);
    t.deepEqual(generateGraph(spec, 3), generateGraph(s, 3));
  }
});

test("grid: right/down neighbours both ways plus shortcuts, weights in range", (t) => {
  const arcs = gridArcs(30, 40, 1);
  const pairs = 30 * 39 + 29 * 40;
  const shortcuts = Math.max(1, Math.floor(1200 / 1000));
  t.is(arcs.count, 2 * (pairs + shortcuts));
  const g = buildGraph(1200, arcs);
  // Vertex (1, 1) = 41 has its 4 grid neighbours.
  const nb = new Set([...g.targets.subarray(g.offsets[41]!, g.offsets[42]!)]);
  for (const v of [40, 42, 1, 81]) t.true(nb.has(v));
  for (let i = 0; i < 2 * pairs; i++) t.true(arcs.weights[i]! >= 1 && arcs.weights[i]! <= 1000);
  const d = dijkstra(g, 0);
  t.is(tally(d).reachable, 1200);
});

test("random: a tree from vertex 0 first, so every vertex is reachable when M >= N - 1", (t) => {
  const arcs = randomArcs(1000, 999, 3);
  t.is(arcs.count, 999);
  t.is(tally(dijkstra(buildGraph(1000, arcs), 0)).reachable, 1000);
  const more = randomArcs(1000, 5000, 3);
  for (let i = 0; i < more.count; i++) t.not(more.tails[i], more.heads[i]);
  t.is(tally(dijkstra(buildGraph(1000, more), 0)).reachable, 1000);
  // Fewer arcs than a tree: a partial tree, the rest unreachable.
  t.is(tally(dijkstra(buildGraph(1000, randomArcs(1000, 99, 3)), 0)).reachable, 100);
});

test("dijkstra on a hand-made graph", (t) => {
  const g = buildGraph(
    5,
    arcList([
      [0, 1, 10],
      [0, 2, 3],
      [2, 1, 4],
      [1, 3, 2],
      [2, 3, 8],
      [3, 0, 1],
    ]),
  );
  t.deepEqual([...dijkstra(g, 0)], [0, 7, 3, 9, Number.POSITIVE_INFINITY]);
  t.deepEqual([...moore(g, 0)], [0, 7, 3, 9, Number.POSITIVE_INFINITY]);
  t.deepEqual(
    [...dijkstra(g, 4)],
    [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 0],
  );
  t.is(checkDistances(g, dijkstra(g, 0), 0), undefined);
  t.regex(checkDistances(g, new Float64Array([0, 8, 3, 9, Number.POSITIVE_INFINITY]), 0) ?? "", /shortens dist\[1\]/);
  t.regex(checkDistances(g, new Float64Array([0, 6, 3, 8, Number.POSITIVE_INFINITY]), 0) ?? "", /tight arc/);
  t.throws(() => dijkstra(g, 5), { instanceOf: InputError, message: /source 5/ });
  t.throws(() => moore(buildGraph(5, new ArcList(), { lo: 1 }), 1), { instanceOf: InputError, message: /whole graph/ });
});

test("zero-weight arcs and parallel arcs", (t) => {
  const g = buildGraph(
    3,
    arcList([
      [0, 1, 5],
      [0, 1, 0],
      [1, 2, 0],
      [2, 0, 0],
    ]),
  );
  t.deepEqual([...dijkstra(g, 0)], [0, 0, 0]);
  t.deepEqual([...moore(g, 0)], [0, 0, 0]);
});

for (const spec of ["grid:40x50", "grid:1x200", "random:2000,8000", "random:3000,3500", "random:500,400"]) {
  for (const undirected of [false, true]) {
    test(`dijkstra == moore on ${spec}${undirected ? " undirected" : ""}`, (t) => {
      const g = generateGraph(spec, 11, { undirected });
      for (const source of [0, Math.floor(g.n / 2), g.n - 1]) {
        const d = dijkstra(g, source);
        const stats = { scans: 0 };
        t.deepEqual(moore(g, source, stats), d);
        t.true(stats.scans >= tally(d).reachable);
        t.is(checkDistances(g, d, source), undefined);
      }
    });
  }
}

test("a generated graph survives a DIMACS round trip", (t) => {
  const arcs = generateArcs(parseGraphSpec("grid:10x12"), 2);
  t.deepEqual(parseDimacs(formatDimacs(120, arcs)), buildGraph(120, arcs));
});

test("summary and --out format", async (t) => {
  const inf = Number.POSITIVE_INFINITY;
  const d = new Float64Array([0, 7, inf, 3, 12]);
  t.deepEqual(summarize(d, 0, 9), { vertices: 5, arcs: 9, source: 1, reachable: 4, sum: 22, max: 12 });
  t.deepEqual(addTally(tally(d.subarray(0, 2)), tally(d.subarray(2))), tally(d));
  t.is(formatDistances(d), "0\n7\ninf\n3\n12\n");
  const path = `${tempDir(t)}/out.txt`;
  const big = dijkstra(generateGraph("random:70000,70000", 1), 0);
  await writeDistances(path, big);
  const { readFile } = await import("node:fs/promises");
  t.is(await readFile(path, "utf8"), formatDistances(big));
});

test("--verify's comparison names the first differing vertex (1-based) and both distances", (t) => {
  const inf = Number.POSITIVE_INFINITY;
  const expected = new Float64Array([0, 7, inf, 3]);
  t.is(firstDistanceMismatch(expected, Float64Array.from(expected)), undefined);
  t.is(firstDistanceMismatch(expected, new Float64Array([0, 7, 5, 2])), "vertex 3: Dijkstra says inf, workpool says 5");
  t.is(firstDistanceMismatch(expected, new Float64Array([0, 6, inf, 3])), "vertex 2: Dijkstra says 7, workpool says 6");
  t.is(firstDistanceMismatch(expected, new Float64Array(3)), "4 distances expected, 3 found");
});
