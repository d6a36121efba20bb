/**
 * The distributed half of `npm run bench -- faults`: a distributed pool with `retries` (lib/pool/distributed/
 * resilient.ts) through rank deaths, and what surviving costs when no rank dies.
 *
 * - Kills: `--kills` jobs (default 20) of programs/survive-ranks.ts at 4 ranks, UTS T1XS (1,031,269 nodes of
 *   real work), job k with seed k: rank 1 + k % 3 SIGKILLs itself in the middle of a task, after a seeded
 *   number of its own tasks; the pools cycle through random stealing and lifelines under both termination
 *   options. A job counts when it ends 0 with the tree's exact counts. Target: every job.
 * - Cost without deaths, as ratios in the same process tree, `distributed,retries=1` over plain `distributed`:
 *   UTS T1 (4,130,071 nodes) at 2 ranks (programs/trees-ranks.ts, fastest of 3 solves per launch, the best
 *   launch of `--rounds`, launches alternated), and emulated node work at 64 ranks (trees-ranks.ts `emulate`,
 *   T1XXS with Pareto 1 ms waits: both pools in each launch, best makespan of the rounds). Target: <= 1.10.
 */
import { BenchUsageError, fmt, formatTable, runJsonLines, WORKPOOL_BIN } from "./harness.ts";

const SURVIVE = new URL("./programs/survive-ranks.ts", import.meta.url).pathname;
const TREES = new URL("./programs/trees-ranks.ts", import.meta.url).pathname;
const KILL_RANKS = 4;
const SPECS = [
  "distributed,retries=1,initiation=receiver,termination=token-ring",
  "distributed,retries=1,initiation=lifeline,termination=token-ring",
  "distributed,retries=1,initiation=receiver,termination=tree",
  "distributed,retries=1,initiation=lifeline,termination=tree",
] as const;
const PLAIN = "distributed";
const SURVIVING = "distributed,retries=1";
const TARGET_COST = 1.1;
const TIMEOUT_MS = 300_000;

interface KillLine {
  readonly victim: number;
  readonly after: number;
  readonly nodes: number;
  readonly leaves: number;
  readonly depth: number;
  readonly expected: { readonly nodes: number; readonly leaves?: number; readonly depth?: number };
  readonly seconds: number;
  readonly counters: Record<string, number>;
}

/** One row of the summary: label, median, range, target, verdict. */
export type SummaryRow = string[];

async function launch(np: number, pool: string | undefined, program: string, args: string[]): Promise<unknown[]> {
  const flags = ["launch", "-n", String(np), "--no-prefix", "--quiet", ...(pool ? ["--pool", pool] : [])];
  return runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, program, ...args], { timeoutMs: TIMEOUT_MS });
}

/** Parses `--kills N` out of `args`; returns it and the other arguments. */
export function killsOption(args: readonly string[]): { kills: number; rest: string[] } {
  const rest: string[] = [];
  let kills = 20;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag !== "--kills") {
      rest.push(args[i] as string);
      continue;
    }
    const value = inline ?? args[++i];
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 200) {
      throw new BenchUsageError(`faults: --kills must be an integer in 0..200; got ${JSON.stringify(value)}`);
    }
    kills = n;
  }
  return { kills, rest };
}

/** Runs the distributed measurements; prints their tables; returns summary rows (verdict from the scorecard). */
export async function distributedSurvival(
  kills: number,
  rounds: number,
  verdict: (ok: boolean) => string,
): Promise<SummaryRow[]> {
  const rows: string[][] = [["job", "pool", "victim", "died after", "seconds", "re-dealt", "answer"]];
  let exact = 0;
  for (let k = 1; k <= kills; k++) {
    const spec = SPECS[k % SPECS.length] as string;
    const short = spec.replace("distributed,retries=1,", "").replace("initiation=", "").replace("termination=", "");
    try {
      const lines = await launch(KILL_RANKS, undefined, SURVIVE, [String(k), spec]);
      const r = lines.find((l) => (l as { kind?: unknown }).kind === "kill") as KillLine | undefined;
      if (!r) throw new Error("no result line");
      const e = r.expected;
      const right = r.nodes === e.nodes && r.leaves === e.leaves && r.depth === e.depth;
      const died = (r.counters.workersLost ?? 0) === 1;
      if (right && died) exact++;
      rows.push([
        String(k),
        short,
        `rank ${r.victim}`,
        `${r.after} tasks`,
        fmt(r.seconds),
        String(r.counters.tasksRedealt ?? 0),
        !died ? "NO DEATH" : right ? "exact" : `WRONG: ${r.nodes} nodes`,
      ]);
    } catch (err) {
      const message = err instanceof Error ? err.message.split("\n").slice(0, 2).join(" | ") : String(err);
      rows.push([String(k), short, "-", "-", "-", "-", `JOB ENDED: ${message}`]);
    }
  }
  process.stdout.write(
    `Distributed pool, retries=1, ${KILL_RANKS} ranks, UTS T1XS: job k kills rank 1 + k % ${KILL_RANKS - 1} after a seeded ` +
      "number of its tasks, mid-task;\nre-dealt: rank 0's counter tasksRedealt. answer: exact when the job ended 0 " +
      "with the tree's counts after one death.\n",
  );
  process.stdout.write(`${formatTable(rows)}\n\n`);

  // Cost without deaths: UTS T1 at 2 ranks, plain and surviving launches alternated.
  const best = new Map<string, number>();
  const costRows: string[][] = [["measurement", "pool", "round", "seconds"]];
  let failed: string | undefined;
  for (let round = 1; round <= rounds; round++) {
    for (const pool of [PLAIN, SURVIVING]) {
      try {
        const [r] = (await launch(2, pool, TREES, ["pool", "T1", "3"])) as { seconds: number; nodes: number }[];
        if (!r || r.nodes !== 4_130_071) throw new Error(`T1 counted ${r?.nodes} nodes`);
        costRows.push(["UTS T1, 2 ranks", pool, String(round), fmt(r.seconds)]);
        best.set(`t1 ${pool}`, Math.min(best.get(`t1 ${pool}`) ?? Infinity, r.seconds));
      } catch (err) {
        failed = err instanceof Error ? err.message.split("\n")[0] : String(err);
      }
    }
  }
  for (let round = 1; round <= rounds; round++) {
    try {
      const lines = (await launch(64, undefined, TREES, ["emulate", "T1XXS:pareto:1", PLAIN, SURVIVING])) as {
        spec: string;
        /** ms */
        makespan: number;
      }[];
      for (const r of lines) {
        costRows.push(["emulated T1XXS, 64 ranks", r.spec, String(round), fmt(r.makespan / 1000)]);
        best.set(`emu ${r.spec}`, Math.min(best.get(`emu ${r.spec}`) ?? Infinity, r.makespan));
      }
    } catch (err) {
      failed = err instanceof Error ? err.message.split("\n")[0] : String(err);
    }
  }
  process.stdout.write(
    "Cost without deaths: distributed,retries=1 against distributed, in the same process tree; UTS T1 fastest of 3 " +
      "solves per\nlaunch; emulated: makespan of each pool in one launch (Pareto 1 ms waits per node, 64 ranks).\n",
  );
  process.stdout.write(`${formatTable(costRows)}\n`);
  if (failed !== undefined) process.stdout.write(`  a launch failed: ${failed}\n`);
  process.stdout.write("\n");

  const ratio = (key: string): number =>
    (best.get(`${key} ${SURVIVING}`) ?? Number.NaN) / (best.get(`${key} ${PLAIN}`) ?? Number.NaN);
  const t1 = ratio("t1");
  const emu = ratio("emu");
  const costRow = (label: string, r: number): SummaryRow => [
    label,
    Number.isFinite(r) ? r.toFixed(3) : "-",
    "-",
    `<= ${TARGET_COST.toFixed(2)}`,
    verdict(Number.isFinite(r) && r <= TARGET_COST),
  ];
  return [
    [
      `distributed: kills survived, exact`,
      `${exact} of ${kills}`,
      "-",
      `${kills} of ${kills}`,
      verdict(exact === kills),
    ],
    costRow("distributed, no death: T1 2 ranks, retries / plain", t1),
    costRow("distributed, no death: emulated 64 ranks, retries / plain", emu),
  ];
}
