/**
 * `npm run bench -- pool`: the centralized pool's task rate with no-op tasks beside Piscina's in the same run,
 * and its scheduling quality with emulated work at 16, 32 and 64 ranks (plain, and with a quarter of the
 * workers slowed 4x). Emulated work is timed waits, so 64 ranks on a 2-core machine still measure scheduling,
 * not CPU contention.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TS_LOADER } from "../launcher/loader.ts";
import { comboName, TERMINATIONS } from "../lib/internal.ts";
import { availableCombos } from "./combos.ts";
import { fmt, formatTable, runJsonLines, scorecard, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/pool-ranks.ts", import.meta.url).pathname;
const PISCINA = new URL("./programs/piscina-bench.ts", import.meta.url).pathname;
const DISTRIBUTED = new URL("./programs/distributed-ranks.ts", import.meta.url).pathname;
/** Every registered combination, by short name (`receiver/random/tree`, `lifeline/tree`). */
const COMBOS = availableCombos().map(comboName);

interface DistributedRow {
  combo: string;
  ratio: number;
  moved: number;
  messages: number;
  latencyMs: number;
}

interface Throughput {
  tasks: number;
  seconds: number;
  rate: number;
  messages?: number;
}
interface Emulated {
  ranks: number;
  slowCount: number;
  tasks: number;
  makespan: number;
  bound: number;
  ratio: number;
  deferrals: number;
}

async function launchAll(
  np: number,
  args: string[],
  timeoutMs: number,
  program = PROGRAM,
  extra: string[] = [],
): Promise<unknown[]> {
  const flags = ["launch", "-n", String(np), "--no-prefix", "--quiet", ...extra];
  const lines = await runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, program, ...args], { timeoutMs });
  if (lines.length === 0) throw new Error(`no result line from ${args.join(" ")}`);
  return lines;
}

async function launch<T>(
  np: number,
  args: string[],
  timeoutMs: number,
  program = PROGRAM,
  extra: string[] = [],
): Promise<T> {
  return (await launchAll(np, args, timeoutMs, program, extra)).at(-1) as T;
}

export const suite: Suite = {
  name: "pool",
  description:
    "pool task rates vs Piscina, tracing cost, makespan / lower bound with emulated work, termination latency",
  async run() {
    const score = scorecard();
    const verdict = score.verdict;

    const ours = await launch<Throughput>(3, ["throughput", "1000000"], 120_000);
    const [pisc] = (await runJsonLines(process.execPath, ["--import", TS_LOADER, PISCINA, "200000"], {
      timeoutMs: 120_000,
    })) as Throughput[];
    process.stdout.write(
      `${formatTable([
        ["figure", "workpool", "Piscina", "ratio", "target", ""],
        [
          "no-op tasks/s, -n 3 (1 coordinator + 2 workers)",
          fmt(ours.rate),
          fmt(pisc?.rate ?? Number.NaN),
          `${fmt(ours.rate / (pisc?.rate ?? Number.NaN))}x`,
          ">= 250,000/s",
          verdict(ours.rate >= 250_000),
        ],
      ])}\n`,
    );
    process.stdout.write(
      `  (${fmt(ours.tasks)} tasks in ${fmt(ours.seconds)} s with ${fmt(ours.messages ?? 0)} pool messages; Piscina: 2 threads, 1024 in flight)\n\n`,
    );

    process.stdout.write(
      "Emulated work: each task waits a Pareto(alpha 3, mean 20 ms) time; ~3 s of work per worker; the bound is\n" +
        "max(total work / worker speed, longest task) from the waits actually measured.\n",
    );
    const rows: string[][] = [
      ["ranks", "slowed 4x", "tasks", "makespan s", "bound s", "ratio", "ECD deferrals", "target", ""],
    ];
    for (const ranks of [16, 32, 64]) {
      for (const slow of [0, 0.25]) {
        const r = await launch<Emulated>(ranks, ["emulate", "3", String(slow), "7"], 300_000);
        const target = slow === 0 ? 1.05 : 1.1;
        const checked = ranks === 16;
        rows.push([
          String(ranks),
          `${r.slowCount} of ${ranks - 1}`,
          String(r.tasks),
          fmt(r.makespan / 1000),
          fmt(r.bound / 1000),
          r.ratio.toFixed(3),
          String(r.deferrals),
          checked ? `<= ${target}` : "-",
          checked ? verdict(r.ratio <= target) : "",
        ]);
      }
    }
    process.stdout.write(`${formatTable(rows)}\n\n`);

    // Tracing cost: the same no-op run with --trace, best of two each way (runs alternate, so load hits both).
    // In a folder of its own: a fixed name in the shared temporary folder is one another user can plant first.
    const traceDir = mkdtempSync(join(tmpdir(), "wp-bench-trace-"));
    const tracePath = join(traceDir, "trace.json");
    const rates = { traced: 0, plain: ours.rate };
    for (let k = 0; k < 2; k++) {
      const t = await launch<Throughput>(3, ["throughput", "1000000"], 120_000, PROGRAM, ["--trace", tracePath]);
      rates.traced = Math.max(rates.traced, t.rate);
      if (k === 0)
        rates.plain = Math.max(rates.plain, (await launch<Throughput>(3, ["throughput", "1000000"], 120_000)).rate);
    }
    rmSync(traceDir, { recursive: true, force: true });
    const traced = { rate: rates.traced };
    const plain = rates.plain;
    const cost = 1 - traced.rate / plain;
    process.stdout.write(
      `${formatTable([
        ["figure", "with --trace", "without", "cost", "target", ""],
        [
          "no-op tasks/s, -n 3",
          fmt(traced.rate),
          fmt(plain),
          `${(cost * 100).toFixed(1)}%`,
          "< 10%",
          verdict(cost < 0.1),
        ],
      ])}\n\n`,
    );

    // Distributed mode.
    const local = await launch<{ perRank: number; tasks: number; seconds: number; moved: number }>(
      2,
      ["throughput", "10", "4"],
      120_000,
      DISTRIBUTED,
    );
    process.stdout.write(
      `${formatTable([
        ["figure", "workpool", "target", ""],
        [
          "distributed, -n 2, each rank grows and runs its own no-op task tree: tasks/s per rank",
          fmt(local.perRank),
          ">= 1,000,000",
          verdict(local.perRank >= 1_000_000),
        ],
      ])}\n`,
    );
    process.stdout.write(`  (${fmt(local.tasks)} tasks in ${fmt(local.seconds)} s, ${fmt(local.moved)} moved)\n\n`);

    process.stdout.write(
      "Distributed, emulated work (timed waits: Pareto alpha 3, mean 20 ms, ~3 s per rank), all put on rank 0.\n" +
        "ratio = makespan / max(total work / ranks, longest task); moved, messages and termination latency at 64 ranks.\n",
    );
    const table = new Map<string, Map<number, DistributedRow>>();
    for (const ranks of [16, 32, 64]) {
      const lines = (await launchAll(ranks, ["emulate", "3", ...COMBOS], 900_000, DISTRIBUTED)) as DistributedRow[];
      for (const row of lines) {
        const byRanks = table.get(row.combo) ?? new Map<number, DistributedRow>();
        byRanks.set(ranks, row);
        table.set(row.combo, byRanks);
      }
    }
    const drows: string[][] = [["combination", "16", "32", "64", "moved", "pool msgs", "term ms"]];
    let best = Number.POSITIVE_INFINITY;
    for (const combo of COMBOS) {
      const r = table.get(combo);
      const at = (n: number) => (r?.get(n) ? (r.get(n) as DistributedRow).ratio.toFixed(3) : "-");
      const r64 = r?.get(64);
      if (r64 && r64.ratio < best) best = r64.ratio;
      drows.push([
        combo,
        at(16),
        at(32),
        at(64),
        fmt(r64?.moved ?? 0),
        fmt(r64?.messages ?? 0),
        fmt(r64?.latencyMs ?? 0),
      ]);
    }
    process.stdout.write(`${formatTable(drows)}\n`);
    process.stdout.write(
      `${formatTable([
        ["figure", "workpool", "target", ""],
        ["best ratio at 64 ranks", best.toFixed(3), "<= 1.10", verdict(best <= 1.1)],
      ])}\n\n`,
    );

    // Termination latency: 2000 no-op tasks put on rank 0, the receiver-initiated default, 15 runs per row.
    const latency: string[][] = [
      [
        "termination latency, 2000 no-op tasks, 15 runs",
        "ranks",
        "median ms",
        "detected ms",
        "last entry ms",
        "broadcast ms",
        "target",
        "",
      ],
    ];
    for (const [ranks, target] of [
      [16, 5],
      [64, 20],
    ] as const) {
      for (const termination of TERMINATIONS) {
        const r = await launch<{
          medianMs: number;
          detectMedianMs: number;
          lateEntryMedianMs: number;
          broadcastMedianMs: number;
        }>(ranks, ["latency", "15", termination], 600_000, DISTRIBUTED);
        latency.push([
          termination,
          String(ranks),
          r.medianMs.toFixed(2),
          r.detectMedianMs.toFixed(2),
          r.lateEntryMedianMs.toFixed(2),
          r.broadcastMedianMs.toFixed(2),
          `<= ${target}`,
          verdict(r.medianMs <= target),
        ]);
      }
    }
    process.stdout.write(`${formatTable(latency)}\n`);
    process.stdout.write(
      "  (median: last task finished anywhere to the last rank returning from run; detected: to the root's proof;\n" +
        "  last entry: to the last rank entering the run, after the barrier before it (negative: before the last task\n" +
        "  ended); broadcast: the floor under DONE, one message from rank 0 to every other rank over the same ranks'\n" +
        "  messaging just after a barrier, until the last has it; medians)\n",
    );
    return score.report();
  },
};
