// Rank program for `npm run bench -- trees`. Rank 0 prints one JSON line per measurement.
//   trees-ranks.ts sequential <tree> <repeat>   the plain stack loop (apps/uts searchSequential), the reference;
//       one rank only, started like the pool runs (`workpool launch -n 1`), so both pay the same start-up
//   trees-ranks.ts pool <tree> <repeat>         apps/uts searchPool under the launcher's --pool
//       Both: `seconds` is the fastest of the repeats, `first` the first (cold) one, `stats` every rank's
//       PoolStats of the fastest run (pool.gatherStats), `rssKiB` every rank's peak RSS (KiB) at the end.
//   trees-ranks.ts emulate <tree>:<fixed|pareto>:<meanMs>[,...] <spec>...
//       Emulated node work: each node's handler waits (setTimeout) before putting its children, a fixed
//       meanMs or a Pareto(alpha 3, mean meanMs) time drawn from the node's own SHA-1 state (so every
//       configuration waits the same times). For each tree, one pool per spec (`centralized`,
//       `distributed,initiation=...`), in this order on every rank. Reports the waits asked for, the waits
//       measured (timer overshoot counts as work) and the longest root-to-leaf chain of measured waits.
//   trees-ranks.ts overhead <depth> <repeat>
//       A counted binary tree (every task of depth < depth puts 2 children: 2^(depth+1) - 1 tasks) run
//       through a pool with a sync handler, and the same walk as a plain stack loop on rank 0 alone (the other
//       ranks wait), alternated, best of `repeat` each.
import { connect, type PoolStats } from "workpool";
import { parsePoolSpec } from "workpool/internal";
import { searchPool } from "../../apps/uts/pool-search.ts";
import { sampleTree } from "../../apps/uts/samples.ts";
import { searchSequential } from "../../apps/uts/sequential.ts";
import { Tree, type UtsNode } from "../../apps/uts/tree.ts";

const [mode = "pool", ...rest] = process.argv.slice(2);
const world = await connect();

/** The named sample tree; the bench names only known ones. */
function namedTree(name: string): Tree {
  const sample = sampleTree(name);
  if (!sample) throw new Error(`trees-ranks: unknown tree ${name}`);
  return new Tree(sample.params);
}

/** Every rank's peak resident set size (KiB) on rank 0. */
const gatherRss = () => world.gather(process.resourceUsage().maxRSS, 0);

if (mode === "sequential" || mode === "pool") {
  const [name = "T1", repeatArg = "3"] = rest;
  const repeat = Number(repeatArg);
  const tree = namedTree(name);
  if (mode === "sequential" && world.size !== 1) throw new Error("trees-ranks: sequential runs on one rank");
  const pool = world.pool<UtsNode>();
  const runs: number[] = [];
  let counts: { nodes: number; leaves: number; depth: number } | undefined;
  let stats: PoolStats[] | undefined;
  for (let k = 0; k < repeat; k++) {
    await world.barrier();
    const t0 = performance.now();
    const c = mode === "sequential" ? searchSequential(tree) : await searchPool(world, pool, tree);
    const seconds = (performance.now() - t0) / 1000;
    if (counts && c.nodes !== counts.nodes) throw new Error(`trees-ranks: run ${k + 1} counted other nodes than run 1`);
    counts = c;
    runs.push(seconds);
    // Collective, outside the timing: keep the fastest run's statistics (rank 0's clock decides).
    const all = mode === "pool" ? await pool.gatherStats() : undefined;
    if (seconds <= Math.min(...runs)) stats = all;
  }
  const rssKiB = await gatherRss();
  if (world.rank === 0) {
    console.log(
      JSON.stringify({
        mode,
        tree: name,
        ranks: world.size,
        config: mode === "pool" ? pool.config : undefined,
        ...counts,
        seconds: Math.min(...runs),
        first: runs[0],
        runs,
        stats,
        rssKiB,
      }),
    );
  }
} else if (mode === "emulate") {
  const [workloads = "T1XXS:pareto:1", ...specs] = rest;
  const ALPHA = 3;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A node with the measured waits of the chain above it. */
  type Chained = UtsNode & { readonly c: number };
  for (const workload of workloads.split(",")) {
    const [name = "T1XXS", dist = "pareto", meanArg = "1"] = workload.split(":");
    const meanMs = Number(meanArg);
    const tree = namedTree(name);
    const xm = (meanMs * (ALPHA - 1)) / ALPHA;
    /** A node's wait: fixed, or Pareto from its state's first 4 bytes (its branching uses the last 4). */
    const waitOf = (s: Uint8Array): number => {
      if (dist === "fixed") return meanMs;
      const u =
        ((((s[0] as number) << 24) | ((s[1] as number) << 16) | ((s[2] as number) << 8) | (s[3] as number)) >>> 0) /
        2 ** 32;
      return xm / (1 - u) ** (1 / ALPHA);
    };
    for (const spec of specs) {
      // One task at a time: a timed wait stands for a CPU-bound node, which a rank runs alone.
      const pool = world.pool<Chained>({ ...parsePoolSpec(spec), concurrency: 1 });
      const measured = { asked: 0, work: 0, chain: 0 };
      if (world.rank === 0) pool.put({ ...tree.root(), c: 0 });
      await world.barrier();
      const t0 = performance.now();
      const { result } = await pool.run<number>(async (node, ctx) => {
        const ms = waitOf(node.s);
        const s0 = performance.now();
        await sleep(ms);
        const waited = performance.now() - s0;
        measured.asked += ms;
        measured.work += waited;
        const chain = node.c + waited;
        if (chain > measured.chain) measured.chain = chain;
        const n = tree.numChildren(node.s, node.d);
        for (let i = 0; i < n; i++) ctx.put({ s: tree.spawn(node.s, i), d: node.d + 1, c: chain });
        return 1;
      });
      const makespan = performance.now() - t0;
      const stats = await pool.gatherStats();
      const asked = await world.allreduce(measured.asked, "sum");
      const totalWork = await world.allreduce(measured.work, "sum");
      const chain = await world.allreduce(measured.chain, "max");
      if (world.rank === 0) {
        const cfg = pool.config;
        const workers =
          cfg.mode === "centralized" && !cfg.coordinatorWorks && world.size > 1 ? world.size - 1 : world.size;
        const bound = Math.max(totalWork / workers, chain);
        console.log(
          JSON.stringify({
            mode,
            tree: name,
            dist,
            meanMs,
            spec,
            ranks: world.size,
            workers,
            nodes: result ?? 0,
            makespan,
            asked,
            totalWork,
            chain,
            bound,
            ratio: makespan / bound,
            stats,
          }),
        );
      }
    }
  }
} else if (mode === "overhead") {
  // On several ranks: rank 0 times the loop alone (the others wait at a barrier), then every rank the pool's runs.
  const depth = Number(rest[0] ?? 20);
  const repeat = Number(rest[1] ?? 3);
  const pool = world.pool<number>();
  const loop = (): number => {
    const stack = [0];
    let n = 0;
    while (stack.length > 0) {
      const d = stack.pop() as number;
      n++;
      if (d < depth) stack.push(d + 1, d + 1);
    }
    return n;
  };
  const loopSeconds: number[] = [];
  const poolSeconds: number[] = [];
  let tasks = 0;
  let loopTasks = 0;
  for (let k = 0; k < repeat; k++) {
    let t0 = performance.now();
    if (world.rank === 0) loopTasks = loop();
    loopSeconds.push((performance.now() - t0) / 1000);
    await world.barrier();
    if (world.rank === 0) pool.put(0);
    t0 = performance.now();
    const stats = await pool.run((d, ctx) => {
      if (d < depth) {
        ctx.put(d + 1);
        ctx.put(d + 1);
      }
    });
    poolSeconds.push((performance.now() - t0) / 1000);
    tasks = await world.allreduce(stats.tasksExecuted, "sum");
  }
  const rssKiB = await gatherRss();
  if (world.rank === 0) {
    console.log(
      JSON.stringify({ mode, depth, tasks, loopTasks, config: pool.config, loopSeconds, poolSeconds, rssKiB }),
    );
  }
} else {
  throw new Error(`trees-ranks: unknown mode ${mode}`);
}
await world.close();
