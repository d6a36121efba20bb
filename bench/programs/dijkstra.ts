// Sequential reference for `npm run bench -- apps`: loads or generates the graph the shortest-path app solves,
// then times dijkstra() from vertex 1 (after loading), several times. Prints one JSON line: the best time
// ("seconds") and every run's.
//   dijkstra.ts <FILE.gr | grid:RxC | random:N,M> [repeat]
import { existsSync } from "node:fs";
import { dijkstra } from "../../apps/shortest-paths/dijkstra.ts";
import { readDimacs } from "../../apps/shortest-paths/dimacs.ts";
import { DEFAULT_GRAPH_SEED, generateGraph } from "../../apps/shortest-paths/generate.ts";
import { tally } from "../../apps/shortest-paths/summary.ts";

const [input = "grid:600x600", repeatArg = "3"] = process.argv.slice(2);
const repeat = Math.max(1, Number(repeatArg));
const graph = existsSync(input) ? await readDimacs(input) : generateGraph(input, DEFAULT_GRAPH_SEED);
const runs: number[] = [];
let dist: Float64Array | undefined;
for (let i = 0; i < repeat; i++) {
  const t0 = performance.now();
  dist = dijkstra(graph, 0);
  runs.push((performance.now() - t0) / 1000);
}
const { reachable, sum, max } = tally(dist ?? []);
console.log(
  JSON.stringify({
    vertices: graph.n,
    reachable,
    sum,
    max,
    seconds: Math.min(...runs),
    runs,
  }),
);
