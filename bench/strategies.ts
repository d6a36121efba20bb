/**
 * `npm run bench -- strategies`: every distributed combination (DISTRIBUTED_COMBINATIONS, those registered:
 * combos.ts) side by side, on emulated work (Pareto alpha 3, mean 20 ms: programs/emulated.ts) put on one rank
 * or spread over all of them:
 *
 * 1. makespan / bound at 16 and 64 real ranks (`workpool launch`, ZeroMQ over loopback; the work is timed
 *    waits, so 64 ranks on a 2-core machine measure scheduling, not CPU contention; programs/strategies-ranks.ts)
 *    and at 1024 simulated ranks (sim/timed.ts: the real engines in one process on a virtual clock), with pool
 *    messages per task, in one table; the simulation also runs a tree of tasks that create tasks.
 *    The simulation also runs at 16 and 64 ranks on the real runs' work (their seeds), the ranks sharing this
 *    machine's cores, and the table 1c shows how far its ratios depart from the real ones (target: 10%).
 * 2. UTS T1 on 2 ranks (bench/trees.ts's launches): efficiency of the lifeline rows against the best of the
 *    twelve first combinations, every row launched `--rounds` times, interleaved, the best kept.
 *
 * Targets (a target whose strategy is not registered yet prints "not run", and counts as missed):
 * lifeline <= 1.05 at 64 ranks from one source; diffusion and ripple within 10% of the best at 64 ranks on
 * spread work; lifeline's UTS efficiency on 2 ranks >= the best of the twelve.
 */
import { availableParallelism, loadavg } from "node:os";
import { SAMPLE_TREES, sampleTree } from "../apps/uts/samples.ts";
import { comboName, type DistributedCombination, distributedSpec } from "../lib/internal.ts";
import { availableCombos, isOneOfTheTwelve, missingCombos } from "./combos.ts";
import {
  BenchUsageError,
  fmt,
  formatTable,
  runJsonLines,
  scorecard,
  type Suite,
  type SuiteReport,
  WORKPOOL_BIN,
} from "./harness.ts";
import { DEFAULT_LATENCY, describeLatency } from "./sim/latency.ts";
import { replayTimed, simulateTimed, type TimedParams } from "./sim/timed.ts";
import type { TimedWorkload } from "./sim/workload.ts";
import { activity, type RunJson, solveTree } from "./trees.ts";

const PROGRAM = new URL("./programs/strategies-ranks.ts", import.meta.url).pathname;
const REAL_RANKS = [16, 64] as const;
const SIM_RANKS = 1024;
const WORKLOADS = ["one-source", "spread"] as const;
type Workload = (typeof WORKLOADS)[number];
/**
 * Solves per UTS launch. One: on T1 the first (cold) solve was as fast as a second one, and more launches,
 * interleaved, spread the machine's load drift better than more solves per launch.
 */
const UTS_REPEAT = 1;
const SIM_SEED = 1;
/** The seed programs/strategies-ranks.ts draws its emulated work from (spread: plus 7919 x rank). */
const REAL_WORK_SEED = 11;
/** The simulation of the real runs: the default costs, the ranks sharing this machine's cores as the real ones do. */
const MACHINE_LATENCY = { ...DEFAULT_LATENCY, cores: availableParallelism() };
/** A simulated run still going at this many times its work per rank is stopped (and shown as "> 5"). */
const SIM_MAX_RATIO = 5;

interface Options {
  readonly seconds: number;
  readonly tree: string;
  readonly rounds: number;
}

const OPTIONS = [
  "--seconds S  emulated work per rank, seconds (default 2; 0.5 for a fast smoke run)",
  "--tree NAME  the UTS tree of the 2-rank rows (default T1; T1XS is ~4x smaller)",
  "--rounds N   launches per UTS row, interleaved, the best kept (default 3)",
] as const;

function parseOptions(args: readonly string[]): Options {
  let seconds = 2;
  let tree = "T1";
  let rounds = 3;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag !== "--seconds" && flag !== "--tree" && flag !== "--rounds") {
      throw new BenchUsageError(
        `strategies: unknown option ${flag}; options: ${OPTIONS.map((o) => o.split(" ")[0]).join(", ")}`,
      );
    }
    const value = inline ?? args[++i];
    if (value === undefined) throw new BenchUsageError(`strategies: option ${flag} needs a value`);
    if (flag === "--seconds") {
      seconds = Number(value);
      if (!(seconds >= 0.1 && seconds <= 30))
        throw new BenchUsageError(`strategies: --seconds must be a number in 0.1..30; got ${JSON.stringify(value)}`);
    } else if (flag === "--tree") {
      const sample = sampleTree(value);
      if (!sample) {
        const known = SAMPLE_TREES.map((t) => t.name).join(", ");
        throw new BenchUsageError(`strategies: unknown tree ${JSON.stringify(value)} for --tree (known: ${known})`);
      }
      tree = sample.name;
    } else {
      rounds = Number(value);
      if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20)
        throw new BenchUsageError(`strategies: --rounds must be an integer in 1..20; got ${JSON.stringify(value)}`);
    }
  }
  return { seconds, tree, rounds };
}

/** Rank 0's line of one real run (programs/strategies-ranks.ts). */
interface RealRun {
  readonly combo: string;
  readonly workload: Workload;
  readonly ranks: number;
  readonly makespan: number;
  readonly bound: number;
  readonly ratio: number;
  readonly messages: number;
  readonly tasks: number;
  readonly moved: number;
  readonly error?: string;
}

/** One cell's figures: from a real run or a simulated one. */
interface Cell {
  /** NaN when the run failed; Infinity when a simulated run was stopped at its limit (`maxRatio`). */
  readonly ratio: number;
  readonly messagesPerTask: number;
  /** Why the run has no figure, or what went wrong in it (with the replay line, when simulated). */
  readonly problem?: string;
}

const key = (combo: string, ranks: number, workload: TimedWorkload) => `${combo} ${ranks} ${workload}`;
const ratio = (x: number | undefined) =>
  x === Number.POSITIVE_INFINITY ? `> ${SIM_MAX_RATIO}` : x !== undefined && Number.isFinite(x) ? x.toFixed(3) : "-";
const perTask = (x: number | undefined) => (x !== undefined && Number.isFinite(x) ? x.toFixed(2) : "-");
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
const count = (n: number) => Math.round(n).toLocaleString("en-US");
const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n").slice(0, 3).join(" | ");

/** Launches every combination on `np` real ranks, both workloads, in one job; rank 0's lines. */
async function realRuns(np: number, combos: readonly string[], seconds: number): Promise<RealRun[]> {
  // Each run is capped by the rank program (10x its work + 20 s); this is for the launch as a whole.
  const timeoutMs = combos.length * WORKLOADS.length * (3 * seconds * 1000 + 10_000) + 120_000;
  const flags = ["launch", "-n", String(np), "--no-prefix", "--quiet"];
  const args = [String(seconds), WORKLOADS.join(","), ...combos];
  return (await runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, PROGRAM, ...args], { timeoutMs })) as RealRun[];
}

export const suite: Suite = {
  name: "strategies",
  description:
    "every distributed combination: makespan / bound at 16, 64 real and 1024 simulated ranks; lifeline on UTS",
  options: OPTIONS,
  check: (args) => void parseOptions(args),
  async run(args): Promise<SuiteReport> {
    const o = parseOptions(args);
    const score = scorecard();
    const combos = availableCombos();
    const names = combos.map(comboName);
    const missing = missingCombos();
    const cells = new Map<string, Cell>();
    const flagged: string[] = [];
    const failures: string[] = [];

    process.stdout.write(
      `${names.length} combinations registered${missing.length > 0 ? `; not registered yet, so not run: ${missing.join(", ")}` : ""}.\n` +
        `Emulated work: Pareto(alpha 3, mean 20 ms) task times, ${o.seconds} s of work per rank; one-source: all of it\n` +
        "put on rank 0; spread: every rank puts its own share. ratio = makespan / max(total work / ranks, longest\n" +
        "task); makespan is the root's time from the start to detecting termination.\n" +
        `Load average (1, 5, 15 min) at the start: ${load()}\n\n`,
    );

    // 1a. Real ranks.
    const realSeconds: string[] = [];
    for (const np of REAL_RANKS) {
      const t0 = performance.now();
      try {
        for (const r of await realRuns(np, names, o.seconds)) {
          const problem = r.error ? `real run failed: ${r.error}` : undefined;
          cells.set(key(r.combo, np, r.workload), {
            ratio: r.error ? Number.NaN : r.ratio,
            messagesPerTask: r.messages / Math.max(1, r.tasks),
            problem,
          });
          if (problem) flagged.push(`${r.combo}, ${np} real ranks, ${r.workload}: ${problem}`);
        }
      } catch (e) {
        failures.push(`-n ${np}: ${firstLine(e)}`);
      }
      realSeconds.push(`${np} ranks ${fmt((performance.now() - t0) / 1000)} s`);
    }

    // 1b. Simulated ranks.
    const t1 = performance.now();
    const simWorkloads: TimedWorkload[] = [...WORKLOADS, "tree"];
    for (const name of names) {
      for (const workload of simWorkloads) {
        const p: TimedParams = {
          size: SIM_RANKS,
          combo: name,
          workload,
          workPerRankMs: o.seconds * 1000,
          seed: SIM_SEED,
          maxRatio: SIM_MAX_RATIO,
        };
        try {
          const out = await simulateTimed(p);
          const problem = out.problems.length > 0 ? `${out.problems.join("; ")}\n    ${replayTimed(p)}` : undefined;
          cells.set(key(name, SIM_RANKS, workload), {
            ratio: out.ended ? out.ratio : Number.POSITIVE_INFINITY,
            messagesPerTask: out.messagesPerTask,
            problem,
          });
          if (problem) flagged.push(`${name}, ${SIM_RANKS} simulated ranks, ${workload}: ${problem}`);
          else if (out.ratio > 2)
            flagged.push(
              `${name}, ${SIM_RANKS} simulated ranks, ${workload}: ratio ${ratio(out.ratio)}\n    ${replayTimed(p)}`,
            );
        } catch (e) {
          failures.push(`simulation ${name} ${workload}: ${firstLine(e)}`);
        }
      }
    }
    // 1c. The simulation at the real sizes, on the same work (the rank program's seeds): how far it departs.
    const simAtReal = new Map<string, number>();
    for (const np of REAL_RANKS) {
      for (const name of names) {
        for (const workload of WORKLOADS) {
          if (!cells.has(key(name, np, workload))) continue;
          const p: TimedParams = {
            size: np,
            combo: name,
            workload,
            workPerRankMs: o.seconds * 1000,
            seed: SIM_SEED,
            workSeed: REAL_WORK_SEED,
            maxRatio: SIM_MAX_RATIO,
            latency: MACHINE_LATENCY,
          };
          try {
            const out = await simulateTimed(p);
            simAtReal.set(key(name, np, workload), out.ended ? out.ratio : Number.POSITIVE_INFINITY);
          } catch (e) {
            failures.push(`simulation ${name} ${np} ${workload}: ${firstLine(e)}`);
          }
        }
      }
    }
    const simSeconds = (performance.now() - t1) / 1000;

    const head = ["combination"];
    for (const np of [...REAL_RANKS, SIM_RANKS]) for (const w of WORKLOADS) head.push(`${np} ${w}`);
    head.push(`${SIM_RANKS} tree`, "msgs/task 64 (one/spread)", `msgs/task ${SIM_RANKS} (one/spread)`);
    const rows: string[][] = [head];
    for (const name of names) {
      const row = [name];
      for (const np of [...REAL_RANKS, SIM_RANKS])
        for (const w of WORKLOADS) row.push(ratio(cells.get(key(name, np, w))?.ratio));
      row.push(ratio(cells.get(key(name, SIM_RANKS, "tree"))?.ratio));
      for (const np of [64, SIM_RANKS]) {
        const [a, b] = WORKLOADS.map((w) => perTask(cells.get(key(name, np, w))?.messagesPerTask));
        row.push(`${a} / ${b}`);
      }
      rows.push(row);
    }
    process.stdout.write(
      `1. makespan / bound. ${REAL_RANKS.join(" and ")} ranks: real ranks started by \`workpool launch\` (ZeroMQ over\n` +
        "loopback), the work emulated by timed waits (so many ranks on few cores measure scheduling, not CPU\n" +
        `contention); the bound uses the waits measured. ${SIM_RANKS} ranks: SIMULATED (bench/sim/timed.ts): the real\n` +
        `engines and strategies in one process on a virtual clock, seed ${SIM_SEED}; ${describeLatency()}.\n` +
        `${SIM_RANKS} tree (simulated only): one root task whose subtree holds all the work (each task splits what is\n` +
        "left among 1-4 children); its bound is max(work / ranks, longest root-to-leaf chain). msgs/task: pool messages\n" +
        "sent by every rank over tasks run.\n",
    );
    process.stdout.write(`${formatTable(rows)}\n`);
    process.stdout.write(`  (ran: ${realSeconds.join(", ")}; simulation ${fmt(simSeconds)} s)\n`);
    for (const f of flagged) process.stdout.write(`  flagged: ${f}\n`);
    process.stdout.write("\n");

    const compare: string[][] = [["combination"]];
    for (const np of REAL_RANKS) for (const w of WORKLOADS) (compare[0] as string[]).push(`${np} ${w} real / sim`);
    const departures: number[] = [];
    for (const name of names) {
      const row = [name];
      for (const np of REAL_RANKS) {
        for (const w of WORKLOADS) {
          const real = cells.get(key(name, np, w))?.ratio;
          const sim = simAtReal.get(key(name, np, w));
          const ok = real !== undefined && sim !== undefined && Number.isFinite(real) && Number.isFinite(sim);
          if (ok) departures.push(Math.abs(sim / real - 1));
          row.push(
            ok
              ? `${ratio(real)} / ${ratio(sim)} (${sim / real >= 1 ? "+" : ""}${((sim / real - 1) * 100).toFixed(0)}%)`
              : "-",
          );
        }
      }
      compare.push(row);
    }
    const within = departures.filter((d) => d <= 0.1).length;
    process.stdout.write(
      `1c. The simulation against the real runs: the same combinations and the same work (seeds of the rank program)\n` +
        `at ${REAL_RANKS.join(" and ")} SIMULATED ranks sharing ${MACHINE_LATENCY.cores} cores, makespan / bound real and simulated, and how\n` +
        "far the simulation departs.\n" +
        `${formatTable(compare)}\n  ${within} of ${departures.length} cells within 10%\n\n`,
    );
    const simVsReal = { within, cells: departures.length };

    // Targets on section 1.
    const targets: string[][] = [["figure", "measured", "target", ""]];
    targets.push([
      "simulated vs real ratio, 16 and 64 ranks: cells within 10%",
      `${simVsReal.within} of ${simVsReal.cells}`,
      "all",
      score.verdict(simVsReal.cells > 0 && simVsReal.within === simVsReal.cells),
    ]);
    const bestOf = (pick: (c: DistributedCombination) => boolean, np: number, w: Workload) => {
      let best: { name: string; ratio: number } | undefined;
      for (const c of combos.filter(pick)) {
        const r = cells.get(key(comboName(c), np, w))?.ratio;
        if (r !== undefined && Number.isFinite(r) && (!best || r < best.ratio)) best = { name: comboName(c), ratio: r };
      }
      return best;
    };
    const exists = (initiation: string) => combos.some((c) => c.initiation === initiation);
    const notRun = (label: string, why: string) => {
      score.verdict(false);
      targets.push([label, why, "", "not run"]);
    };
    const isLifeline = (c: DistributedCombination) => c.initiation === "lifeline";
    {
      const label = "lifeline, 64 ranks, one source (best lifeline row)";
      if (!exists("lifeline")) notRun(label, "lifeline not registered");
      else {
        const b = bestOf(isLifeline, 64, "one-source");
        targets.push([
          label,
          b ? `${ratio(b.ratio)} (${b.name})` : "no run",
          "<= 1.05",
          score.verdict(b !== undefined && b.ratio <= 1.05),
        ]);
      }
    }
    const best64 = bestOf(() => true, 64, "spread");
    for (const initiation of ["diffusion", "ripple"]) {
      const label = `${initiation}, 64 ranks, spread: best row / best of all`;
      if (!exists(initiation)) {
        notRun(label, `${initiation} not registered`);
        continue;
      }
      const b = bestOf((c) => c.initiation === initiation, 64, "spread");
      const x = b && best64 ? b.ratio / best64.ratio : Number.NaN;
      targets.push([
        label,
        b && best64
          ? `${ratio(x)} (${b.name} ${ratio(b.ratio)}; best ${best64.name} ${ratio(best64.ratio)})`
          : "no run",
        "<= 1.10",
        score.verdict(x <= 1.1),
      ]);
    }

    // 2. UTS on 2 ranks: the twelve and the lifeline rows.
    const utsLabel = `lifeline, UTS ${o.tree} on 2 ranks: efficiency vs the best of the twelve`;
    if (!exists("lifeline")) notRun(utsLabel, "lifeline not registered");
    else {
      const rowsUts = combos.filter((c) => isOneOfTheTwelve(c) || isLifeline(c));
      const t2 = performance.now();
      let seq: RunJson | undefined;
      const best = new Map<string, RunJson>();
      try {
        for (let round = 0; round < o.rounds; round++) {
          const r = await solveTree(1, undefined, o.tree, UTS_REPEAT);
          if (!seq || r.seconds < seq.seconds) seq = r;
          // Every other round runs the rows backwards, so that drifting machine load hits them alike.
          const order = round % 2 === 0 ? rowsUts : [...rowsUts].reverse();
          for (const c of order) {
            const name = comboName(c);
            try {
              const m = await solveTree(2, distributedSpec(c), o.tree, UTS_REPEAT);
              const seen = best.get(name);
              if (!seen || m.seconds < seen.seconds) best.set(name, m);
            } catch (e) {
              if (firstLine(e).startsWith("WRONG COUNT")) throw e;
              failures.push(`UTS ${name}: ${firstLine(e)}`);
            }
          }
        }
      } catch (e) {
        failures.push(`UTS: ${firstLine(e)}`);
      }
      const eff = (m: RunJson | undefined) => (seq && m ? seq.seconds / (2 * m.seconds) : Number.NaN);
      const uts: string[][] = [["combination", "best s", "efficiency", "moved", "pool msgs"]];
      uts.push([`plain loop (1 rank), the reference`, seq ? fmt(seq.seconds) : "FAILED", "", "", ""]);
      let twelve: { name: string; eff: number } | undefined;
      let lifeline: { name: string; eff: number } | undefined;
      for (const c of rowsUts) {
        const name = comboName(c);
        const m = best.get(name);
        const e = eff(m);
        const a = activity(m?.stats);
        uts.push([name, m ? fmt(m.seconds) : "FAILED", ratio(e), m ? count(a.moved) : "", m ? count(a.messages) : ""]);
        if (!Number.isFinite(e)) continue;
        const slot = isLifeline(c) ? lifeline : twelve;
        if (!slot || e > slot.eff) {
          if (isLifeline(c)) lifeline = { name, eff: e };
          else twelve = { name, eff: e };
        }
      }
      process.stdout.write(
        `2. UTS ${o.tree} on 2 real ranks (bench/trees.ts's launches; counts checked), the twelve first combinations\n` +
          `and the lifeline rows, ${o.rounds} launch(es) each, interleaved, ${UTS_REPEAT} solve(s) per launch; best kept.\n` +
          "efficiency = loop s / (2 x best s).\n",
      );
      process.stdout.write(`${formatTable(uts)}\n`);
      process.stdout.write(`  (ran ${fmt((performance.now() - t2) / 1000)} s)\n\n`);
      targets.push([
        utsLabel,
        lifeline && twelve
          ? `${ratio(lifeline.eff)} (${lifeline.name}) vs ${ratio(twelve.eff)} (${twelve.name})`
          : "no run",
        ">= best of the twelve",
        score.verdict(lifeline !== undefined && twelve !== undefined && lifeline.eff >= twelve.eff),
      ]);
    }

    process.stdout.write(`${formatTable(targets)}\n`);
    for (const f of failures) process.stdout.write(`failed: ${f}\n`);
    process.stdout.write(`Load average (1, 5, 15 min) at the end: ${load()}\n`);
    return score.report();
  },
};
