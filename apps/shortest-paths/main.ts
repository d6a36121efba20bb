/**
 * Single-source shortest paths with Moore's algorithm on a workpool; the variant follows the pool mode.
 *
 *   workpool launch -n 8 [--pool ...] apps/shortest-paths [--graph FILE.gr | --generate grid:ROWSxCOLS |
 *     --generate random:N,M] [--seed S] [--source V] [--undirected] [--verify] [--out FILE] [--json]
 *     [--repeat K]
 *
 * With no input it solves a generated road-like grid (DEFAULT_GRAPH below). `--repeat K` solves K times in the
 * same processes (a benchmark's warm runs, as Graph500 repeats its searches); "seconds" is then the fastest
 * run and "runs" lists them all, the first one with a cold JIT.
 */
import { type Pool, connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { answerHelp, intOption, parseArgs, runApp } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import { type Relax, solveCentralized } from "./centralized.ts";
import { dijkstra } from "./dijkstra.ts";
import { readDimacs } from "./dimacs.ts";
import { solveDistributed, type Update } from "./distributed.ts";
import { DEFAULT_GRAPH_SEED, generateGraph, parseGraphSpec } from "./generate.ts";
import { arcCount, blockRange, type Graph, weightTotal } from "./graph.ts";
import { addTally, firstDistanceMismatch, summaryOf, type Tally, tally, writeDistances } from "./summary.ts";

const APP = "shortest-paths";
export const DEFAULT_GRAPH = "grid:600x600";
/** Most solves `--repeat` asks for. */
const MAX_REPEAT = 1000;

const USAGE = `Usage: workpool launch -n N [--pool SPEC] apps/shortest-paths [options]

Single-source shortest paths with Moore's algorithm on a workpool; the variant follows the pool mode.

Options:
  --graph FILE.gr         a DIMACS graph file
  --generate SPEC         a generated graph: grid:ROWSxCOLS or random:N,M (default ${DEFAULT_GRAPH})
  --seed S                seed of the generated graph
  --source V              the source vertex (default 1)
  --undirected            read every arc both ways
  --verify                compare with a sequential Dijkstra; status 1 on a mismatch
  --out FILE              write every vertex's distance
  --repeat K              solve K times in the same processes, the fastest reported
  --json                  one JSON result line on rank 0
  -h, --help              show this help
`;

const world = await connect();
await answerHelp(world, USAGE);

await runApp(
  APP,
  () => world.rank,
  async () => {
    // Every rank parses and loads; bad input found on any rank ends every rank with one line (agreeOnInput).
    const { args, pool, variant, load, graph, source, repeat } = await agreeOnInput(APP, world, async () => {
      const args = parseArgs(APP, process.argv.slice(2), {
        graph: "value",
        generate: "value",
        seed: "value",
        source: "value",
        undirected: "switch",
        verify: "switch",
        out: "value",
        json: "switch",
        repeat: "value",
      });
      if (args.graph !== undefined && args.generate !== undefined) {
        throw new InputError(`${APP}: give --graph FILE or --generate SPEC, not both`);
      }
      const seed = intOption(APP, "seed", args.seed, DEFAULT_GRAPH_SEED, 0, 2 ** 31 - 1);
      const undirected = args.undirected ?? false;
      const pool = world.pool<Relax>();
      const variant = pool.config.mode;
      const spec = args.graph === undefined ? parseGraphSpec(args.generate ?? DEFAULT_GRAPH) : undefined;

      // Load: the centralized variant gives every worker the whole graph; the distributed one, each rank its range.
      const load = (range?: (n: number) => readonly [number, number]): Promise<Graph> | Graph => {
        if (args.graph !== undefined) return readDimacs(args.graph, { undirected, range });
        if (!spec) throw new InputError(`${APP}: no graph`);
        const n = spec.kind === "grid" ? spec.rows * spec.cols : spec.n;
        const [lo, hi] = range ? range(n) : [0, n];
        return generateGraph(spec, seed, { undirected, lo, hi });
      };
      const graph = variant === "distributed" ? await load((n) => blockRange(n, world.size, world.rank)) : await load();
      const source = intOption(APP, "source", args.source, 1, 1, graph.n) - 1;
      const repeat = intOption(APP, "repeat", args.repeat, 1, 1, MAX_REPEAT);
      return { args, pool, variant, load, graph, source, repeat };
    });
    const distributed = variant === "distributed";
    // Graph figures, before the clock starts: arcs (each rank counts its own in the distributed variant) and
    // the mean arc weight, which sets the distributed variant's pacing.
    const [arcs, weightSum] = await world.allreduce(
      distributed || world.rank === 0 ? [arcCount(graph), weightTotal(graph)] : [0, 0],
      "sum",
    );
    const meanWeight = arcs > 0 ? weightSum / arcs : 1;

    // Every distance, on rank 0, when it is needed; the distributed variant keeps them on their ranks, rank 0
    // gets their summary and gathers them only when it must print or check every one.
    let dist: Float64Array | undefined;
    let tallied: Tally | undefined;
    let mine: Float64Array | undefined;
    const runs: number[] = [];
    let first: Tally | undefined;
    for (let run = 0; run < repeat; run++) {
      await world.barrier();
      const t0 = performance.now();
      if (distributed) {
        mine = await solveDistributed(world, pool as unknown as Pool<Update>, graph, source, meanWeight);
        tallied = await world.reduce(tally(mine), addTally, 0);
      } else {
        dist = await solveCentralized(world, pool, graph, source);
        tallied = dist && tally(dist);
      }
      runs.push((performance.now() - t0) / 1000);
      first ??= tallied;
      if (tallied && first && (tallied.reachable !== first.reachable || tallied.sum !== first.sum)) {
        throw new Error(`${APP}: run ${run + 1} of ${repeat} found other distances than run 1`);
      }
    }
    const seconds = Math.min(...runs);
    if (mine && (args.out !== undefined || args.verify === true)) {
      const parts = await world.gather(mine, 0);
      if (parts) {
        dist = new Float64Array(graph.n);
        for (let r = 0; r < world.size; r++) dist.set(parts[r] as Float64Array, blockRange(graph.n, world.size, r)[0]);
      }
    }

    if (world.rank === 0 && tallied) {
      const summary = summaryOf(tallied, graph.n, source, arcs);
      if (args.out !== undefined) await writeDistances(args.out, dist as Float64Array);
      if (args.json) {
        const timing = repeat > 1 ? { runs: runs.map((r) => Number(r.toFixed(4))) } : {};
        console.log(JSON.stringify({ ...summary, seconds: Number(seconds.toFixed(4)), variant, ...timing }));
      } else {
        console.log(
          `${APP}: ${summary.vertices} vertices, ${summary.arcs} arcs, source ${summary.source}: ` +
            `${summary.reachable} reachable, sum ${summary.sum}, max ${summary.max} (${variant}, ${world.size} ranks, ${seconds.toFixed(3)} s` +
            `${repeat > 1 ? `, fastest of ${repeat}: ${runs.map((r) => r.toFixed(3)).join(" ")}` : ""})`,
        );
      }
    }
    if (world.rank === 0 && dist && args.verify) {
      const whole = variant === "distributed" || graph.lo !== 0 || graph.hi !== graph.n ? await load() : graph;
      const t1 = performance.now();
      const expected = dijkstra(whole, source);
      const dijkstraSeconds = (performance.now() - t1) / 1000;
      const bad = firstDistanceMismatch(expected, dist);
      if (bad !== undefined) {
        console.error(`${APP}: verify FAILED at ${bad}`);
        process.exitCode = 1;
      } else {
        console.error(
          `${APP}: verified: all ${expected.length} distances equal Dijkstra's (${dijkstraSeconds.toFixed(3)} s sequential)`,
        );
      }
    }
    await world.close();
  },
);
