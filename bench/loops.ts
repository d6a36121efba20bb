/**
 * `npm run bench -- loops`: DOALL loops (`pool.forEach`) with the grain chosen at run time against every fixed
 * power-of-two grain, swept in the same job (each run twice, interleaved, the faster kept), for iterations of
 * 0.1 us to 10 ms on 2 and 16 ranks; beside them grain 1 and an mpi4py.futures-like executor (a master deals
 * one index per request), both timed on a prefix and projected. On 2 ranks, iterations up to 100 us are a
 * calibrated spin. On 16 ranks they are emulated: each iteration's time is slept off in Atomics.wait once
 * 0.2 ms are owed, so the 16 ranks measure scheduling, not the sharing of this machine's 2 cores (only the
 * loop's own overhead competes for them). 10 ms iterations are timed waits everywhere. Then one of two ranks
 * slowed by a busy loop pinned to its core. Target: the automatic grain within 1.10x of the best fixed grain
 * everywhere. Then short loops of a 3 ns body (8 and 80 ms of work) through `world.parallelFor` on 2 ranks
 * against the plain loop (target: faster than it), and the DOACROSS wavefront against its sequential program.
 */
import { BenchUsageError, fmt, formatTable, runJsonLines, scorecard, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/loops-ranks.ts", import.meta.url).pathname;
const PLAIN = new URL("./programs/loops-plain.ts", import.meta.url).pathname;
const APP_LCS = new URL("../apps/lcs", import.meta.url).pathname;
/** Short loops against the plain loop: iterations of one Math.sqrt (about 3 ns), 8 ms and 80 ms of work. */
const PLAIN_N = [3_000_000, 30_000_000] as const;
/** ... where 2 ranks must beat the plain loop. */
const PLAIN_TARGET = 1;
const ITERATION_US = [0.1, 1, 10, 100, 10_000] as const;
const RANKS = [2, 16] as const;
const TARGET = 1.1;

interface Sweep {
  iterationUs: number;
  ranks: number;
  n: number;
  timed: boolean;
  autoMs: number;
  autoGrain: number;
  bestFixedMs: number;
  bestFixedGrain: number;
  swept: number;
  grain1Ms: number;
  mpiMs: number;
  prefix: number;
  slowRank: number;
  emulated: boolean;
}

/** Ranks from which iterations under 1000 us are emulated (slept off) rather than spun. */
const EMULATE_FROM = 16;

/** Microseconds to two significant digits, without an exponent. */
function usSeen(us: number): string {
  return us >= 10 ? fmt(Math.round(us)) : us.toPrecision(2);
}

async function sweep(ranks: number, iterationUs: number, seconds: number, slowRank?: number): Promise<Sweep> {
  const args = ["launch", "-n", String(ranks), "--no-prefix", "--quiet", "--timeout", "900"];
  const extra = slowRank !== undefined ? [String(slowRank)] : ranks >= EMULATE_FROM ? ["emulate"] : [];
  const lines = await runJsonLines(
    process.execPath,
    [WORKPOOL_BIN, ...args, PROGRAM, "sweep", String(iterationUs), String(seconds), ...extra],
    { timeoutMs: 960_000 },
  );
  const last = lines.at(-1) as Sweep | undefined;
  if (!last) throw new Error(`no result line from loops-ranks.ts sweep ${iterationUs} on ${ranks} ranks`);
  return last;
}

const OPTIONS = ["--seconds S  CPU seconds of work per loop (default 0.3; timed waits: seconds per rank)"] as const;

function parseSeconds(args: readonly string[]): number {
  let seconds = 0.3;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--seconds" || a.startsWith("--seconds=")) {
      const v = a.includes("=") ? a.slice("--seconds=".length) : args[++i];
      seconds = Number(v);
      if (!(seconds > 0)) throw new BenchUsageError(`--seconds must be a positive number; got ${v}`);
    } else throw new BenchUsageError(`unknown option ${a}`);
  }
  return seconds;
}

export const suite: Suite = {
  name: "loops",
  description: "DOALL loops: grain chosen at run time vs the best fixed grain, grain 1, an mpi4py-like master",
  options: OPTIONS,
  check: (args) => void parseSeconds(args),
  async run(args) {
    const seconds = parseSeconds(args);
    const score = scorecard();
    process.stdout.write(
      `Iterations up to 100 us: on 2 ranks a calibrated spin; on 16 ranks EMULATED (each rank sleeps its\n` +
        `iterations' time off in Atomics.wait every 0.2 ms owed, so 16 ranks do not share 2 cores' work). 10000 us:\n` +
        `timed waits. us seen: the best fixed grain's time x ranks / n, what an iteration really took with the\n` +
        `loop's overhead. ms: the slowest rank's loop time, the faster of two runs. grain 1 and mpi4py-like:\n` +
        `projected from a prefix. Distributed pool; every rank works.\n`,
    );
    const rows: string[][] = [
      [
        "iteration",
        "ranks",
        "n",
        "us seen",
        "auto ms",
        "auto grain",
        "best fixed ms",
        "best grain",
        "ratio",
        "grain 1 ms",
        "mpi4py-like ms",
        "target",
        "",
      ],
    ];
    const row = (r: Sweep, what: string) => {
      const label = r.emulated ? `${what} (emulated)` : what;
      const ratio = r.autoMs / r.bestFixedMs;
      rows.push([
        label,
        String(r.ranks),
        fmt(r.n),
        // What an iteration really took: the best fixed grain's time on every rank, per iteration.
        usSeen((r.bestFixedMs * r.ranks * 1000) / r.n),
        fmt(r.autoMs),
        String(r.autoGrain),
        fmt(r.bestFixedMs),
        String(r.bestFixedGrain),
        `${ratio.toFixed(2)}x`,
        fmt(r.grain1Ms),
        fmt(r.mpiMs),
        `<= ${TARGET}`,
        score.verdict(ratio <= TARGET),
      ]);
    };
    for (const us of ITERATION_US) {
      for (const ranks of RANKS) {
        const r = await sweep(ranks, us, seconds);
        row(r, `${us >= 1000 ? `${us / 1000} ms (wait)` : `${us} us`}`);
        process.stdout.write(`  ${rows.at(-1)?.join(" ")}\n`);
      }
    }
    const slowed = await sweep(2, 10, seconds, 1);
    row(slowed, "10 us, rank 1 slowed");
    process.stdout.write(`\n${formatTable(rows)}\n\n`);

    // Short loops of a cheap body, parallelFor as an app calls it (the launcher's default pool) against the
    // plain loop it replaces, on rank 0 of the same job: what a loop costs per iteration and per loop.
    const plainRows: string[][] = [
      ["Math.sqrt(i) summed, 2 ranks", "n", "parallelFor ms", "plain loop ms", "speedup", "first ms", "target", ""],
    ];
    for (const n of PLAIN_N) {
      const lines = (await runJsonLines(
        process.execPath,
        [WORKPOOL_BIN, "launch", "-n", "2", "--no-prefix", "--quiet", PLAIN, String(n), "10"],
        { timeoutMs: 300_000 },
      )) as { parallelMs: number; plainMs: number; firstMs: number }[];
      const r = lines.at(-1);
      if (!r) throw new Error(`no result line from loops-plain.ts ${n}`);
      const speedup = r.plainMs / r.parallelMs;
      plainRows.push([
        "parallelFor, best of 10",
        fmt(n),
        fmt(r.parallelMs),
        fmt(r.plainMs),
        `${speedup.toFixed(2)}x`,
        fmt(r.firstMs),
        `> ${PLAIN_TARGET}`,
        score.verdict(speedup > PLAIN_TARGET),
      ]);
    }
    process.stdout.write(`${formatTable(plainRows)}\n\n`);

    // DOACROSS: the LCS wavefront (apps/lcs) on 2 ranks against its sequential dynamic program, timed in the
    // same job after the parallel run; the block size chosen at run time beside fixed ones.
    const lcs: string[][] = [
      ["LCS 8000 x 8000, 2 ranks", "blocks", "last block", "parallel s", "sequential s", "speedup"],
    ];
    for (const block of [undefined, 1, 16, 256]) {
      const extra = block === undefined ? [] : ["--block", String(block)];
      const lines = (await runJsonLines(
        process.execPath,
        [
          WORKPOOL_BIN,
          "launch",
          "-n",
          "2",
          "--no-prefix",
          "--quiet",
          APP_LCS,
          "--length",
          "8000",
          "--speedup",
          "--json",
          ...extra,
        ],
        { timeoutMs: 300_000 },
      )) as { seconds: number; seqSeconds: number; speedup: number; block: number; blocks: number }[];
      const r = lines.at(-1);
      if (!r) throw new Error("no result line from apps/lcs");
      lcs.push([
        block === undefined ? "chosen at run time" : "fixed",
        String(r.blocks),
        String(r.block),
        fmt(r.seconds),
        fmt(r.seqSeconds),
        `${r.speedup.toFixed(2)}x`,
      ]);
    }
    process.stdout.write(`${formatTable(lcs)}\n`);
    return score.report();
  },
};
