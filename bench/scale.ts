/**
 * `npm run bench -- scale`: every distributed combination at 1,024 and 4,096 SIMULATED ranks (bench/sim/timed.ts:
 * the real engines and strategies on a virtual clock) on every workload of the simulation, as makespan / bound,
 * next to an ideal central scheduler on the same work; then termination latency, in the simulation (last task to
 * the root's detection and to every rank's end, in message times) and on 16 and 64 real ranks with emulated work.
 *
 * Targets: every combination ends on every workload with makespan / bound <= 2 (ring partners excepted: they
 * must end, but their one-dimensional spread may stay slow, so their runs go on to 20 times the bound, not 5); the recommended combinations (RECOMMENDED) <= 1.10
 * on the tree workloads at 1,024 ranks and <= 1.20 at 4,096; the tree detector's end within 5 message latencies x
 * log2(ranks) in the simulation at 1,024 ranks; on real ranks a median of 5 ms at 16 and 20 ms at 64 from the
 * last task's end to every rank returning from `run`.
 */
import { loadavg } from "node:os";
import { comboName } from "../lib/internal.ts";
import { availableCombos } from "./combos.ts";
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
import { TIMED_WORKLOADS, type TimedWorkload } from "./sim/workload.ts";

const PROGRAM = new URL("./programs/distributed-ranks.ts", import.meta.url).pathname;
/** The combinations docs/distributed.md recommends past 1,000 ranks. */
export const RECOMMENDED = ["lifeline/tree", "receiver/random/tree"] as const;
const TREE_WORKLOADS: readonly TimedWorkload[] = ["tree", "deep"];
const SIM_SEED = 1;
const MAX_RATIO = 5;
/** Ring partners may stay slow but must end: their runs go on to this many times the bound before they stop. */
const RING_MAX_RATIO = 20;
const REAL_RANKS = [16, 64] as const;
/** Runs per real row, and emulated work per rank in each (spread over every rank). */
const REAL_REPS = 14;
const REAL_SECONDS = 0.2;

interface Options {
  readonly seconds: number;
  readonly sizes: readonly number[];
  readonly combos: readonly string[];
  readonly real: boolean;
}

const OPTIONS = [
  "--seconds S     emulated work per simulated rank, seconds (default 2)",
  "--sizes A,B     simulated sizes (default 1024,4096)",
  "--combo NAME    only this combination (repeatable; default every one)",
  "--real yes|no   the real-rank termination rows (default yes)",
] as const;

function parseOptions(args: readonly string[]): Options {
  let seconds = 2;
  let sizes: number[] = [1024, 4096];
  const combos: string[] = [];
  let real = true;
  const known = availableCombos().map(comboName);
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (!["--seconds", "--sizes", "--combo", "--real"].includes(flag))
      throw new BenchUsageError(`scale: unknown option ${flag}; options: --seconds, --sizes, --combo, --real`);
    if (value === undefined) throw new BenchUsageError(`scale: option ${flag} needs a value`);
    if (flag === "--seconds") {
      seconds = Number(value);
      if (!(seconds >= 0.1 && seconds <= 30))
        throw new BenchUsageError(`scale: --seconds must be a number in 0.1..30; got ${JSON.stringify(value)}`);
    } else if (flag === "--sizes") {
      sizes = value.split(",").map(Number);
      if (sizes.some((n) => !Number.isInteger(n) || n < 2 || n > 16_384))
        throw new BenchUsageError(`scale: --sizes must be integers in 2..16384; got ${JSON.stringify(value)}`);
    } else if (flag === "--combo") {
      if (!known.includes(value))
        throw new BenchUsageError(`scale: unknown combination ${JSON.stringify(value)}; known: ${known.join(", ")}`);
      combos.push(value);
    } else {
      if (value !== "yes" && value !== "no")
        throw new BenchUsageError(`scale: --real must be yes or no; got ${JSON.stringify(value)}`);
      real = value === "yes";
    }
  }
  return { seconds, sizes, combos: combos.length > 0 ? combos : known, real };
}

const ratio = (x: number, limit = MAX_RATIO) =>
  x === Number.POSITIVE_INFINITY ? `> ${limit}` : Number.isFinite(x) ? x.toFixed(3) : "-";
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n").slice(0, 3).join(" | ");
const isRing = (name: string) => name.includes("/ring/");

interface Ending {
  readonly ranks: number;
  readonly combo: string;
  readonly endMedianMs: number;
  readonly endAtOnceMedianMs: number;
  readonly detectMedianMs: number;
  readonly detectorMessagesMedian: number;
  readonly messagesPerTaskMedian: number;
}

export const suite: Suite = {
  name: "scale",
  description:
    "every distributed combination at 1,024 and 4,096 simulated ranks on every workload; termination latency",
  options: OPTIONS,
  check: (args) => void parseOptions(args),
  async run(args): Promise<SuiteReport> {
    const o = parseOptions(args);
    const score = scorecard();
    const targets: string[][] = [["figure", "measured", "target", ""]];
    const flagged: string[] = [];
    process.stdout.write(
      `SIMULATED ranks (bench/sim/timed.ts, seed ${SIM_SEED}): ${describeLatency()}.\n` +
        `Emulated work: Pareto(alpha 3, mean 20 ms) task times, ${o.seconds} s per rank; workloads: one-source (all put\n` +
        "on rank 0), spread (every rank its own), tree (one root task; each task splits what is left among 1-4\n" +
        "children), deep (UTS T3's shape: one child, a fork in four, long chains). ratio = makespan / bound, bound =\n" +
        "max(work / ranks, longest task or root-to-leaf chain). `ideal`: a central greedy scheduler on the same work,\n" +
        "newest or oldest task first, messages free (a reference, not a bound: oldest first, a tree unfolds sooner;\n" +
        "only a scheduler that knew each subtree's size could start the biggest first). msgs: pool messages per task\n" +
        "over the four.\n" +
        `Load average (1, 5, 15 min) at the start: ${load()}\n\n`,
    );
    const endings: string[][] = [
      ["ranks", "combination", "detect ms", "end ms", "end / message time", "target (tree) ms"],
    ];
    for (const size of o.sizes) {
      const t0 = performance.now();
      const rows: string[][] = [["combination", ...TIMED_WORKLOADS, "msgs/task"]];
      for (const order of ["newest", "oldest"] as const) {
        const ideal = [`ideal (central greedy), ${order} first`];
        for (const workload of TIMED_WORKLOADS) {
          const p: TimedParams = {
            size,
            combo: "receiver/random/tree",
            workload,
            workPerRankMs: o.seconds * 1000,
            seed: SIM_SEED,
            ideal: order === "newest" ? true : "oldest",
          };
          ideal.push(ratio((await simulateTimed(p)).ratio));
        }
        ideal.push("");
        rows.push(ideal);
      }
      const best = new Map<string, number>();
      for (const name of o.combos) {
        const row = [name];
        let messages = 0;
        let tasks = 0;
        for (const workload of TIMED_WORKLOADS) {
          const p: TimedParams = {
            size,
            combo: name,
            workload,
            workPerRankMs: o.seconds * 1000,
            seed: SIM_SEED,
            maxRatio: isRing(name) ? RING_MAX_RATIO : MAX_RATIO,
          };
          try {
            const out = await simulateTimed(p);
            const r = out.ended ? out.ratio : Number.POSITIVE_INFINITY;
            row.push(ratio(r, p.maxRatio));
            messages += out.messages;
            tasks += out.tasks;
            if (out.problems.length > 0)
              flagged.push(`${name}, ${size} ranks, ${workload}: ${out.problems.join("; ")}\n    ${replayTimed(p)}`);
            else if (r > 2)
              flagged.push(`${name}, ${size} ranks, ${workload}: ratio ${ratio(r)}\n    ${replayTimed(p)}`);
            if (!isRing(name)) best.set(`${name} ${workload}`, r);
            else best.set(`${name} ${workload}`, out.ended ? 0 : r);
            if (workload === "spread") {
              const hop =
                DEFAULT_LATENCY.messageMs + (DEFAULT_LATENCY.sendCpuMs ?? 0) + (DEFAULT_LATENCY.receiveCpuMs ?? 0);
              const target = name.endsWith("/tree") ? (5 * DEFAULT_LATENCY.messageMs * Math.log2(size)).toFixed(2) : "";
              endings.push([
                String(size),
                name,
                out.detectMs.toFixed(2),
                out.endMs.toFixed(2),
                (out.endMs / hop).toFixed(1),
                target,
              ]);
              if (size === 1024 && RECOMMENDED.includes(name as (typeof RECOMMENDED)[number])) {
                const t = 5 * DEFAULT_LATENCY.messageMs * Math.log2(size);
                targets.push([
                  `${name}: every rank ended after the last task, 1,024 simulated ranks`,
                  `${out.endMs.toFixed(2)} ms`,
                  `<= ${t.toFixed(2)} ms`,
                  score.verdict(out.endMs <= t),
                ]);
              }
            }
          } catch (e) {
            row.push("FAILED");
            flagged.push(`${name}, ${size} ranks, ${workload}: ${firstLine(e)}`);
            best.set(`${name} ${workload}`, Number.NaN);
          }
        }
        row.push(tasks > 0 ? (messages / tasks).toFixed(2) : "-");
        rows.push(row);
      }
      process.stdout.write(
        `${size} simulated ranks (${fmt((performance.now() - t0) / 1000)} s)\n${formatTable(rows)}\n\n`,
      );
      // Every combination ends within 2x (ring: ends at all).
      let worst = { name: "", r: 0 };
      for (const [k, r] of best) if (!(r <= worst.r)) worst = { name: k, r };
      targets.push([
        `${size} ranks: worst combination and workload (ring rows: ended or not)`,
        worst.name === ""
          ? "every ring run ended"
          : `${ratio(worst.r, isRing(worst.name) ? RING_MAX_RATIO : MAX_RATIO)} (${worst.name})`,
        "<= 2",
        score.verdict(worst.r <= 2),
      ]);
      const limit = size <= 1024 ? 1.1 : 1.2;
      for (const name of RECOMMENDED) {
        if (!o.combos.includes(name)) continue;
        for (const w of TREE_WORKLOADS) {
          const r = best.get(`${name} ${w}`) ?? Number.NaN;
          targets.push([`${name}, ${size} ranks, ${w}`, ratio(r), `<= ${limit.toFixed(2)}`, score.verdict(r <= limit)]);
        }
      }
    }
    process.stdout.write(
      "Termination in the simulation, spread workload: from the last task's end to the root's detection, and to\n" +
        "every rank's end (DONE down a spanning tree beyond 64 ranks); a message time is latency + send and receive CPU.\n" +
        `${formatTable(endings)}\n\n`,
    );
    for (const f of flagged) process.stdout.write(`  flagged: ${f}\n`);

    if (o.real) {
      const real: string[][] = [
        [
          "real ranks",
          "combination",
          "median end ms",
          "reporting at once",
          "median detect ms",
          "detector msgs",
          "msgs/task",
        ],
      ];
      for (const np of REAL_RANKS) {
        for (const combo of ["receiver/random/token-ring", ...RECOMMENDED]) {
          try {
            const flags = ["launch", "-n", String(np), "--no-prefix", "--quiet"];
            const lines = (await runJsonLines(
              process.execPath,
              [WORKPOOL_BIN, ...flags, PROGRAM, "ending", String(REAL_REPS), String(REAL_SECONDS), combo],
              { timeoutMs: 600_000 },
            )) as Ending[];
            const e = lines.find((l) => l.combo === combo);
            if (!e) throw new Error("no result line");
            real.push([
              String(np),
              combo,
              fmt(e.endMedianMs),
              fmt(e.endAtOnceMedianMs),
              fmt(e.detectMedianMs),
              String(e.detectorMessagesMedian),
              e.messagesPerTaskMedian.toFixed(2),
            ]);
            if (RECOMMENDED.includes(combo as (typeof RECOMMENDED)[number])) {
              const t = np === 16 ? 5 : 20;
              targets.push([
                `${combo}, ${np} real ranks: last task to every rank returning (median)`,
                `${fmt(e.endMedianMs)} ms`,
                `<= ${t} ms`,
                score.verdict(e.endMedianMs <= t),
              ]);
            }
          } catch (err) {
            real.push([String(np), combo, "FAILED", firstLine(err), "", "", ""]);
          }
        }
      }
      process.stdout.write(
        `Termination on REAL ranks (\`workpool launch\`, ZeroMQ over loopback), ${REAL_REPS} runs each of ${REAL_SECONDS} s of\n` +
          "emulated work per rank (timed waits, put on every rank): from the last task's end anywhere to the last rank\n" +
          "returning from `run`, and to the root's detection. Each rank reports its times to rank 0 after a quiet spell\n" +
          "(the median of half the runs), or as soon as it returns (the other half): then those reports compete with the\n" +
          "DONE still on its way to the ranks yet to return. On a machine with fewer cores than ranks every message\n" +
          "waits for its receiver to be scheduled: these figures grow with the machine's load.\n" +
          `${formatTable(real)}\n\n`,
      );
    }
    process.stdout.write(`${formatTable(targets)}\nLoad average (1, 5, 15 min) at the end: ${load()}\n`);
    return score.report();
  },
};
