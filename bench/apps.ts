/**
 * `npm run bench -- apps`: the two reference apps against their sequential algorithms, measured in the same
 * run on the same machine.
 *
 * - Shortest paths: the app's solve time (its `--json` "seconds": after loading, until rank 0 has the summary,
 *   i.e. every distance is final) for each variant at -n 2 and -n 3, and the distributed variant on one rank,
 *   beside sequential Dijkstra on the same graph (after loading). Both solve SOLVES times in their processes
 *   (the app with `--repeat`): the fastest is the warm time the speedup and target use, the first the cold
 *   one. Graphs: the app's default grid, ../shared/data/graphs/DE.gr when it exists, every `.gr` named in
 *   BENCH_GRAPH (a list separated by `,` or the path delimiter), and a larger generated grid (LARGE_GRAPH:
 *   the distributed variant, and the centralized one on two ranks). Targets: the distributed variant on two
 *   ranks is faster than Dijkstra; the centralized one on two ranks reaches 0.3x Dijkstra on LARGE_GRAPH.
 * - Block matching on a generated 1280x720 sequence of 8 frames, 16x16 blocks, range 16: speedup over the
 *   sequential search with two workers: centralized -n 3 (a coordinator and 2 workers, 3 processes on the
 *   cores), centralized with coordinatorWorks -n 2 (the coordinator is one of the 2 workers), distributed -n 2.
 *   Target: >= 1.8x.
 * - Block matching's locality keys (PutOptions.key: a strip's frame pair): frames loaded (every rank loads the
 *   frames its strips need into a cache of 4) and solve time, with keys and with `--no-keys`, distributed -n 2
 *   on the same sequence, each round; and the same shape with emulated work at 16 ranks
 *   (bench/programs/bm-emulated.ts: timed waits, a strip ~20 ms, a frame load 100 ms; one seed per round).
 *   Reported as figures and ratios, no target.
 *
 * Every parallel answer is checked against the sequential one (sum of distances; SAD total); a wrong answer, or
 * a run that fails, is a miss whatever the times (the failures are listed under the tables). These are real CPU-bound runs, so the figures depend on the cores free: the
 * measurements run in rounds (`--rounds N`, default 3), each round the sequential reference and then every
 * configuration, so drifting machine load hits them alike; the tables give the best time of each (load from
 * other work only ever adds time).
 */
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, relative, resolve } from "node:path";
import { TS_LOADER } from "../launcher/loader.ts";
import {
  BenchUsageError,
  fmt,
  formatTable,
  median,
  ROOT,
  runJsonLines,
  scorecard,
  type Suite,
  WORKPOOL_BIN,
} from "./harness.ts";

const SHORTEST_PATHS = join(ROOT, "apps", "shortest-paths");
const BLOCK_MATCHING = join(ROOT, "apps", "block-matching");
const DIJKSTRA = join(ROOT, "bench", "programs", "dijkstra.ts");
const BM_SEQ = join(ROOT, "bench", "programs", "bm-seq.ts");
const BM_EMULATED = join(ROOT, "bench", "programs", "bm-emulated.ts");
/** The emulated block matching at 16 ranks: frame pairs, strips per pair, ms per frame load, cache frames. */
const EMULATED_BM = { ranks: 16, pairs: 24, strips: 100, loadMs: 100, cache: 4 } as const;

/** What `apps/shortest-paths` generates with no input (its DEFAULT_GRAPH). */
const DEFAULT_GRAPH = "grid:600x600";
/** A larger generated grid, where the fixed costs of a parallel run (start-up, a cold JIT) weigh less. */
const LARGE_GRAPH = "grid:2000x2000";
const DE = join(ROOT, "..", "shared", "data", "graphs", "DE.gr");
const SEQUENCE = "1280x720:8";
const BLOCK = 16;
const RANGE = 16;
const TIMEOUT_MS = 600_000;
/** Solves per process, for Dijkstra and for the shortest-path app (`--repeat`): the first is cold, the rest warm. */
const SOLVES = 3;

interface PathsJson {
  reachable: number;
  sum: number;
  /** The fastest of `runs`. */
  seconds: number;
  runs: number[];
}
interface BlocksJson {
  blocks: number;
  sadTotal: number;
  seconds: number;
  /** Frames each rank loaded (the app's --json; not bm-seq's). */
  framesLoaded?: number[];
}
interface EmulatedBmJson {
  seconds: number;
  framesLoaded: number[];
  workSeconds: number;
}

/** Runs a program under tsx (as ranks run) and returns its last JSON line. */
async function program<T>(file: string, args: string[]): Promise<T> {
  const lines = await runJsonLines(process.execPath, ["--import", TS_LOADER, file, ...args], {
    timeoutMs: TIMEOUT_MS,
  });
  const last = lines.at(-1);
  if (!last) throw new Error(`no result line from ${relative(ROOT, file)} ${args.join(" ")}`);
  return last as T;
}

/** Runs `workpool launch -n N --pool MODE app args... --json` and returns rank 0's JSON line. */
async function launch<T>(np: number, pool: string, app: string, args: string[]): Promise<T> {
  const flags = ["launch", "-n", String(np), "--no-prefix", "--pool", pool];
  const lines = await runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, app, ...args, "--json"], {
    timeoutMs: TIMEOUT_MS,
  });
  const last = lines.at(-1);
  if (!last) throw new Error(`no result line from ${relative(ROOT, app)} -n ${np} --pool ${pool}`);
  return last as T;
}

type Config = readonly [variant: "centralized" | "distributed", ranks: number];
/** Every variant at -n 2 and -n 3, and the distributed variant alone on one rank (its sequential speed). */
const ALL_CONFIGS: readonly Config[] = [
  ["centralized", 2],
  ["centralized", 3],
  ["distributed", 1],
  ["distributed", 2],
  ["distributed", 3],
];
/** The large grid: the distributed variant, and the centralized one on 2 ranks (a coordinator and a worker). */
const LARGE_CONFIGS: readonly Config[] = [
  ["centralized", 2],
  ...ALL_CONFIGS.filter(([variant]) => variant === "distributed"),
];

interface Options {
  /** `.gr` files to solve besides the default ones (absolute paths). */
  readonly graphs: readonly string[];
  readonly rounds: number;
}

const OPTIONS = [
  "--graph FILE.gr  also solve this DIMACS graph (repeatable)",
  "--rounds N       rounds of measurements (default 3)",
] as const;

function parseOptions(args: readonly string[]): Options {
  const graphs: string[] = [];
  let rounds = 3;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (flag !== "--graph" && flag !== "--rounds") {
      throw new BenchUsageError(
        `apps: unknown option ${flag}; options: ${OPTIONS.map((o) => o.split(" ")[0]).join(", ")}`,
      );
    }
    if (value === undefined) throw new BenchUsageError(`apps: option ${flag} needs a value`);
    if (flag === "--graph") {
      if (!existsSync(value)) throw new BenchUsageError(`apps: --graph ${value}: no such file`);
      graphs.push(resolve(value));
    } else {
      rounds = Number(value);
      if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
        throw new BenchUsageError(`apps: --rounds must be an integer in 1..100; got ${JSON.stringify(value)}`);
      }
    }
  }
  return { graphs, rounds };
}

/** The graphs to solve: [label, dijkstra.ts input, app arguments, configurations]. */
function graphs(named: readonly string[]): [string, string, string[], readonly Config[]][] {
  const list: [string, string, string[], readonly Config[]][] = [
    [`default (${DEFAULT_GRAPH})`, DEFAULT_GRAPH, [], ALL_CONFIGS],
  ];
  for (const file of new Set([...(existsSync(DE) ? [DE] : []), ...named])) {
    list.push([relative(ROOT, file), file, ["--graph", file], ALL_CONFIGS]);
  }
  list.push([LARGE_GRAPH, LARGE_GRAPH, ["--generate", LARGE_GRAPH], LARGE_CONFIGS]);
  return list;
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");

/** Times of one parallel configuration and of the sequential reference, over the rounds. */
interface Samples {
  readonly parallel: number[];
  readonly sequential: number[];
  /** First (cold) solves, for runs that solve several times. */
  readonly parallelFirst: number[];
  readonly sequentialFirst: number[];
  /** Rounds whose answer differed from the sequential one. */
  wrong: number;
  /** Rounds whose run failed. */
  failed: number;
}

const newSamples = (): Samples => ({
  parallel: [],
  sequential: [],
  parallelFirst: [],
  sequentialFirst: [],
  wrong: 0,
  failed: 0,
});
const answer = (s: Samples): string =>
  s.wrong + s.failed === 0
    ? "same"
    : [s.wrong && `${s.wrong} WRONG`, s.failed && `${s.failed} FAILED`].filter(Boolean).join(", ");
/**
 * Runs one parallel configuration into `s`; `same` checks its answer against the sequential one. A failed run
 * is counted in `s` and described in `failures`.
 */
async function sample<T extends { seconds: number; runs?: number[] }>(
  failures: string[],
  s: Samples,
  sequential: { seconds: number; runs?: number[] },
  run: () => Promise<T>,
  same: (r: T) => boolean,
): Promise<void> {
  try {
    const r = await run();
    s.parallel.push(r.seconds);
    s.sequential.push(sequential.seconds);
    if (r.runs?.[0] !== undefined && sequential.runs?.[0] !== undefined) {
      s.parallelFirst.push(r.runs[0]);
      s.sequentialFirst.push(sequential.runs[0]);
    }
    if (!same(r)) s.wrong++;
  } catch (e) {
    s.failed++;
    failures.push((e instanceof Error ? e.message : String(e)).split("\n").slice(0, 3).join(" | "));
  }
}
const best = (values: readonly number[]): number => Math.min(...values);
/** Best sequential time over best parallel time: other work on the machine only ever adds time. */
const speedup = (s: Samples): number => (s.parallel.length > 0 ? best(s.sequential) / best(s.parallel) : Number.NaN);
/** The same for the first (cold) solves. */
const firstSpeedup = (s: Samples): number =>
  s.parallelFirst.length > 0 ? best(s.sequentialFirst) / best(s.parallelFirst) : Number.NaN;

export const suite: Suite = {
  name: "apps",
  description: "shortest paths vs sequential Dijkstra; block matching speedup over the sequential search",
  options: OPTIONS,
  check: (args) => void parseOptions(args),
  async run(args) {
    // Rounds of measurements; each round runs the sequential reference and then every parallel configuration.
    const { graphs: named, rounds } = parseOptions(args);
    const score = scorecard();
    const verdict = score.verdict;
    const failures: string[] = [];
    process.stdout.write(
      `This machine has ${cpus().length} cores; every rank is a process, so -n 3 puts 3 processes on them.\n` +
        `${rounds} rounds (--rounds); each round runs the sequential reference, then every configuration once.\n` +
        "Times are the best of the rounds (other work on the machine only adds time); speedup = best sequential /\n" +
        "best parallel.\n\n",
    );

    const rows: string[][] = [
      [
        "graph",
        "variant",
        "ranks",
        "solve s",
        "Dijkstra s",
        "speedup",
        "1st s",
        "Dijkstra 1st s",
        "1st speedup",
        "answer",
        "target",
        "",
      ],
    ];
    for (const [label, input, args, configs] of graphs(named)) {
      const samples = configs.map(newSamples);
      for (let round = 0; round < rounds; round++) {
        const seq = await program<PathsJson>(DIJKSTRA, [input, String(SOLVES)]);
        for (const [i, [variant, np]] of configs.entries()) {
          await sample(
            failures,
            samples[i] as Samples,
            seq,
            () => launch<PathsJson>(np, variant, SHORTEST_PATHS, [...args, "--repeat", String(SOLVES)]),
            (r) => r.sum === seq.sum && r.reachable === seq.reachable,
          );
        }
      }
      for (const [i, [variant, np]] of configs.entries()) {
        const s = samples[i] as Samples;
        const checked = variant === "distributed" && np === 2;
        // The centralized variant on the large grid: its workers keep the tasks they put (option keep), so it
        // reaches a useful fraction of Dijkstra's speed.
        const centralTarget = variant === "centralized" && np === 2 && input === LARGE_GRAPH;
        const x = speedup(s);
        rows.push([
          label,
          variant,
          String(np),
          fmt(best(s.parallel)),
          fmt(best(s.sequential)),
          `${fmt(x)}x`,
          fmt(best(s.parallelFirst)),
          fmt(best(s.sequentialFirst)),
          `${fmt(firstSpeedup(s))}x`,
          answer(s),
          checked ? "> 1x" : centralTarget ? ">= 0.3x" : answer(s) !== "same" ? "correct" : "-",
          checked
            ? verdict(x > 1 && answer(s) === "same")
            : centralTarget
              ? verdict(x >= 0.3 && answer(s) === "same")
              : answer(s) !== "same"
                ? verdict(false)
                : "",
        ]);
      }
    }
    process.stdout.write(
      "Shortest paths from vertex 1: the app's solve time after loading (--json seconds: until rank 0 has the\n" +
        `summary, every distance final) beside sequential Dijkstra on the same graph. Both solve ${SOLVES} times in their\n` +
        `processes (the app with --repeat ${SOLVES}): "solve s" is the fastest of those, with a warm JIT, and the speedup\n` +
        'and target use it; "1st s" is the first solve, with a cold JIT. Dijkstra and every rank of the distributed\n' +
        "variant use the same indexed binary heap; distributed -n 1 is its speed alone.\n",
    );
    process.stdout.write(`${formatTable(rows)}\n\n`);

    const bmConfigs = [
      ["centralized", 3, 2],
      ["centralized,coordinatorWorks=true", 2, 2],
      ["distributed", 2, 2],
    ] as const;
    const appArgs = ["--generate", SEQUENCE, "--block", String(BLOCK), "--range", String(RANGE)];
    const bmSamples = bmConfigs.map(newSamples);
    /** Locality keys: distributed -n 2 with keys (bmConfigs' run) and without, and the emulated 16 ranks. */
    const keyed = {
      on: { seconds: [] as number[], loads: [] as number[] },
      off: { seconds: [] as number[], loads: [] as number[] },
    };
    const emulated = {
      on: { seconds: [] as number[], loads: [] as number[] },
      off: { seconds: [] as number[], loads: [] as number[] },
    };
    const sum = (xs: readonly number[] | undefined) => (xs ?? []).reduce((a, b) => a + b, 0);
    let blocks = 0;
    // The machine's own ceiling for two workers: two sequential searches at once, each on its own core.
    const ceilings: number[] = [];
    const seqArgs = [SEQUENCE, String(BLOCK), String(RANGE)];
    for (let round = 0; round < rounds; round++) {
      const seq = await program<BlocksJson>(BM_SEQ, seqArgs);
      const pair = await Promise.all([program<BlocksJson>(BM_SEQ, seqArgs), program<BlocksJson>(BM_SEQ, seqArgs)]);
      ceilings.push((2 * seq.seconds) / Math.max(pair[0].seconds, pair[1].seconds));
      blocks = seq.blocks;
      for (const [i, [variant, np]] of bmConfigs.entries()) {
        await sample(
          failures,
          bmSamples[i] as Samples,
          seq,
          async () => {
            const r = await launch<BlocksJson>(np, variant, BLOCK_MATCHING, appArgs);
            if (variant === "distributed") {
              keyed.on.seconds.push(r.seconds);
              keyed.on.loads.push(sum(r.framesLoaded));
            }
            return r;
          },
          (r) => r.sadTotal === seq.sadTotal && r.blocks === seq.blocks,
        );
      }
      try {
        const r = await launch<BlocksJson>(2, "distributed", BLOCK_MATCHING, [...appArgs, "--no-keys"]);
        if (r.sadTotal !== seq.sadTotal || r.blocks !== seq.blocks)
          failures.push("block matching --no-keys: WRONG answer");
        keyed.off.seconds.push(r.seconds);
        keyed.off.loads.push(sum(r.framesLoaded));
      } catch (e) {
        failures.push(`block matching --no-keys: ${(e instanceof Error ? e.message : String(e)).split("\n")[0]}`);
      }
      for (const keys of ["on", "off"] as const) {
        const { ranks, pairs, strips, loadMs, cache } = EMULATED_BM;
        const args = [pairs, strips, loadMs, cache, keys, round + 1].map(String);
        try {
          const r = await launch<EmulatedBmJson>(ranks, "distributed", BM_EMULATED, args);
          emulated[keys].seconds.push(r.seconds);
          emulated[keys].loads.push(sum(r.framesLoaded));
        } catch (e) {
          failures.push(
            `emulated block matching, keys ${keys}: ${(e instanceof Error ? e.message : String(e)).split("\n")[0]}`,
          );
        }
      }
    }
    const bmRows: string[][] = [
      ["block matching", "ranks", "workers", "solve s", "sequential s", "speedup", "answer", "target", ""],
    ];
    for (const [i, [variant, np, workers]] of bmConfigs.entries()) {
      const s = bmSamples[i] as Samples;
      const x = speedup(s);
      bmRows.push([
        variant,
        String(np),
        String(workers),
        fmt(best(s.parallel)),
        fmt(best(s.sequential)),
        `${fmt(x)}x`,
        answer(s),
        ">= 1.8x",
        verdict(x >= 1.8 && answer(s) === "same"),
      ]);
    }
    process.stdout.write(
      `Block matching, generated ${SEQUENCE}, ${BLOCK}x${BLOCK} blocks, range ${RANGE} (${fmt(blocks)} blocks): ` +
        "the app's solve time vs\nthe sequential search in one process (matchFrame over the frame pairs, early exit on).\n" +
        "The machine's ceiling for two workers: two copies of the sequential search run at once do twice the work\n" +
        `${fmt(Math.max(...ceilings))}x faster than one copy alone would (2 x alone / together; best round; rounds: ` +
        `${ceilings.map((c) => fmt(c)).join(", ")}).\n`,
    );
    process.stdout.write(`${formatTable(bmRows)}\n`);
    const { ranks, pairs, strips, loadMs, cache } = EMULATED_BM;
    const keyRows: string[][] = [
      ["locality keys", "ranks", "frames loaded, keys", "without", "ratio", "solve s, keys", "without", "ratio"],
    ];
    for (const [label, np, m] of [
      [`block matching ${SEQUENCE}`, 2, keyed],
      [`emulated ${pairs} pairs x ${strips} strips`, ranks, emulated],
    ] as const) {
      const loadsOn = median(m.on.loads);
      const loadsOff = median(m.off.loads);
      keyRows.push([
        label,
        String(np),
        `${fmt(loadsOn)} (${m.on.loads.join(", ")})`,
        `${fmt(loadsOff)} (${m.off.loads.join(", ")})`,
        fmt(loadsOn / loadsOff),
        fmt(best(m.on.seconds)),
        fmt(best(m.off.seconds)),
        fmt(best(m.on.seconds) / best(m.off.seconds)),
      ]);
    }
    process.stdout.write(
      "\nLocality keys (put(strip, { key: frame pair })) against --no-keys, distributed (receiver-initiated), each\n" +
        `rank loading the frames its strips need into a cache of ${cache} frames. Frames loaded: the sum over ranks,\n` +
        "median of the rounds (each round's in brackets); ratio = with keys / without (below 1: keys load fewer).\n" +
        "Solve s: best of the rounds. The 16-rank row emulates the work with timed waits (this machine has " +
        `${cpus().length} cores):\na strip waits ~20 ms (bench/programs/emulated.ts), a frame load ${loadMs} ms; one seed per round.\n`,
    );
    process.stdout.write(`${formatTable(keyRows)}\n`);
    for (const f of failures) process.stdout.write(`failed run: ${f}\n`);
    process.stdout.write(`Load average (1, 5, 15 min) at the end: ${load()}\n`);
    return score.report();
  },
};
