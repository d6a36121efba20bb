/**
 * The timed simulation from the command line (run from the repository: `npx tsx bench/sim/cli.ts ...`):
 *
 *   npx tsx bench/sim/cli.ts '{"size":1024,"combo":"receiver/ring/tree","workload":"one-source",...}'
 *       replays one run (the JSON a `replay:` line prints) and prints its whole outcome;
 *   npx tsx bench/sim/cli.ts [--size N] [--seconds S] [--seed N] [--workloads a,b] [--combo NAME]...
 *       runs the named combinations (default: every registered one) on the workloads (default: all three) and
 *       prints makespan / bound, messages per task and tasks moved per task, flagging wrong runs.
 */
import { comboName } from "../../lib/internal.ts";
import { availableCombos } from "../combos.ts";
import { fmt, formatTable } from "../harness.ts";
import { describeLatency } from "./latency.ts";
import { replayTimed, simulateTimed, type TimedParams } from "./timed.ts";
import { TIMED_WORKLOADS, type TimedWorkload } from "./workload.ts";

function fail(message: string): never {
  process.stderr.write(`sim: ${message}\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0]?.startsWith("{")) {
  const out = await simulateTimed(JSON.parse(argv[0]) as TimedParams);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  process.exitCode = out.problems.length > 0 ? 1 : 0;
} else {
  let size = 1024;
  let seconds = 2;
  let seed = 1;
  let workloads: TimedWorkload[] = [...TIMED_WORKLOADS];
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    const value = argv[++i];
    if (value === undefined) fail(`option ${flag} needs a value`);
    if (flag === "--size") size = Number(value);
    else if (flag === "--seconds") seconds = Number(value);
    else if (flag === "--seed") seed = Number(value);
    else if (flag === "--combo") names.push(value);
    else if (flag === "--workloads") {
      workloads = value.split(",") as TimedWorkload[];
      for (const w of workloads)
        if (!TIMED_WORKLOADS.includes(w)) fail(`--workloads: unknown ${w}; known: ${TIMED_WORKLOADS.join(", ")}`);
    } else fail(`unknown option ${flag}; options: --size, --seconds, --seed, --workloads, --combo`);
  }
  if (!Number.isInteger(size) || size < 2) fail(`--size must be an integer >= 2; got ${size}`);
  if (!(seconds > 0)) fail(`--seconds must be > 0; got ${seconds}`);
  const combos = names.length > 0 ? names : availableCombos().map(comboName);
  process.stdout.write(`${size} simulated ranks, ${seconds} s of work per rank, seed ${seed}; ${describeLatency()}\n`);
  const rows: string[][] = [["combination", "workload", "tasks", "makespan/bound", "msgs/task", "moved/task", "sim s"]];
  const flagged: string[] = [];
  for (const combo of combos) {
    for (const workload of workloads) {
      const p: TimedParams = { size, combo, workload, workPerRankMs: seconds * 1000, seed };
      const out = await simulateTimed(p);
      rows.push([
        combo,
        workload,
        String(out.tasks),
        Number.isFinite(out.ratio) ? out.ratio.toFixed(3) : "-",
        out.messagesPerTask.toFixed(2),
        (out.moved / out.tasks).toFixed(2),
        fmt(out.wallSeconds),
      ]);
      if (out.problems.length > 0)
        flagged.push(`${combo} ${workload}: ${out.problems.join("; ")}\n  ${replayTimed(p)}`);
    }
  }
  process.stdout.write(`${formatTable(rows)}\n`);
  for (const f of flagged) process.stdout.write(`flagged: ${f}\n`);
}
