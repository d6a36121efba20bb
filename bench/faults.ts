/**
 * `npm run bench -- faults`: the centralized pool when a worker dies and when one is a straggler, at 9 ranks (a
 * coordinator and 8 workers), with emulated work (timed waits; programs/faults-ranks.ts): every task waits a
 * Pareto(alpha 3, mean 20 ms) time, ~3 s of it per worker (`--seconds`), all put on rank 0. W is the total task
 * time and L the longest task, as measured (timer overshoot counts as work; normal-speed units), each task
 * counted once: the pool's `result` sums the values the tasks return, once per task; a job whose count of values
 * is not the number of tasks put gave a wrong answer, a miss whatever its times.
 *
 * - Death at half time (`centralized, retries: 1`): a worker SIGKILLs itself once its clock passes half of
 *   W / 8 (W as drawn, which every rank knows) from its run's start, cutting the task it is running then. Bound: with t_d the time of death after rank
 *   0's run started, 8 workers work until t_d and 7 after, so makespan >= t_d + (W - 8 t_d) / 7 (W / 8 if the
 *   work fits before t_d), and >= L. It is optimistic for the pool: it counts all of the dead worker's work as
 *   kept, while the pool redoes what it did since its last commit (up to ~100 ms) and the task it was running.
 *   Target: median makespan / bound <= 1.15. Beside it, the same work with no death in the same job (bound
 *   max(W / 8, L)), and what rank 0 re-dealt (its counters tasksRedealt, workersLost).
 * - Straggler: one worker's waits 10x longer, no death; (a) plain `centralized` (its Expected Card Distribution
 *   near the end) and (b) `centralized, retries: 1, speculate: true`, in the same job. Bound: max(W / (7 +
 *   1/10), L). Target: median (b) / bound <= 1.10. If the pool refuses `speculate`, (b) is "not available".
 *
 * Each of `--rounds` (default 3) runs both jobs with its own seed (the victim is worker 1 + seed % 8); the
 * tables give every round, then the median ratio and the range.
 *
 * Then the distributed pool with `retries` (faults-distributed.ts): `--kills` jobs (default 20) that each lose
 * a rank mid-run on real work, which must all end with the exact count, and what surviving costs without a
 * death on UTS T1 at 2 ranks and on emulated work at 64 ranks (target: at most 10% more time).
 */
import { loadavg } from "node:os";
import { distributedSurvival, killsOption } from "./faults-distributed.ts";
import {
  BenchUsageError,
  fmt,
  formatTable,
  median,
  runJsonLines,
  scorecard,
  type Suite,
  WORKPOOL_BIN,
} from "./harness.ts";

const PROGRAM = new URL("./programs/faults-ranks.ts", import.meta.url).pathname;
const RANKS = 9;
const WORKERS = RANKS - 1;
const SLOWDOWN = 10;
const TARGET_DEATH = 1.15;
/** The promptness target: the coordinator hears of a SIGKILL within this many ms. */
const NOTICE_MS = 2000;
const TARGET_SPECULATE = 1.1;
const TIMEOUT_MS = 180_000;

const OPTIONS = [
  "--rounds N   jobs of each kind, each with its own seed; the median counts (default 3)",
  "--seconds S  emulated work per worker in seconds (default 3)",
  "--kills K    distributed jobs that lose a rank mid-run (default 20; 0 skips the distributed part)",
] as const;

interface Options {
  readonly rounds: number;
  readonly seconds: number;
  readonly kills: number;
}

function parseOptions(all: readonly string[]): Options {
  const { kills, rest: args } = killsOption(all);
  let rounds = 3;
  let seconds = 3;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag !== "--rounds" && flag !== "--seconds") {
      throw new BenchUsageError(
        `faults: unknown option ${flag}; options: ${OPTIONS.map((o) => o.split(" ")[0]).join(", ")}`,
      );
    }
    const value = inline ?? args[++i];
    if (value === undefined) throw new BenchUsageError(`faults: option ${flag} needs a value`);
    const n = Number(value);
    const max = flag === "--rounds" ? 100 : 60;
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new BenchUsageError(`faults: ${flag} must be an integer in 1..${max}; got ${JSON.stringify(value)}`);
    }
    if (flag === "--rounds") rounds = n;
    else seconds = n;
  }
  return { rounds, seconds, kills };
}

/** Rank 0's line for one run (programs/faults-ranks.ts). */
interface RunLine {
  readonly kind: string;
  readonly makespan: number;
  /** Epoch ms when rank 0's run started. */
  readonly startedAt: number;
  readonly work: number;
  readonly longest: number;
  /** Task values in `result`: must be `tasks`. */
  readonly count: number;
  readonly tasks: number;
  readonly counters: Record<string, number>;
}

/** The victim's last line, and rank 0's when it heard of the death. */
interface Died {
  readonly kind: "died" | "noticed";
  readonly rank: number;
  readonly at: number;
}

/** One figure over the rounds: the ratios of the rounds with a right answer, and what went wrong in the others. */
interface Figure {
  readonly ratios: number[];
  readonly wrong: string[];
}
const newFigure = (): Figure => ({ ratios: [], wrong: [] });

const seconds = (ms: number) => fmt(ms / 1000);

async function job(scenario: "death" | "stragglers", perWorker: number, seed: number): Promise<unknown[]> {
  const flags = ["launch", "-n", String(RANKS), "--no-prefix", "--quiet"];
  const args = [scenario, String(perWorker), String(seed)];
  const lines = await runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, PROGRAM, ...args], {
    timeoutMs: TIMEOUT_MS,
  });
  if (lines.length === 0) throw new Error(`no result line from faults-ranks.ts ${args.join(" ")}`);
  return lines;
}

function line<T extends { kind: string }>(lines: readonly unknown[], kind: string, what: string): T {
  const found = lines.find((l) => (l as { kind?: unknown }).kind === kind);
  if (!found) throw new Error(`${what}: no "${kind}" line`);
  return found as T;
}

/**
 * Adds `r`'s ratio to `figure`, or what was wrong with its answer; returns the ratio cell. `extra` is one more
 * check of the run (a message when it failed).
 */
function record(figure: Figure, label: string, r: RunLine, bound: number, extra?: string): string {
  const problem =
    r.count !== r.tasks ? `${label}: the result counts ${r.count} task values for ${r.tasks} tasks put` : extra;
  if (problem !== undefined) {
    figure.wrong.push(problem);
    return "WRONG";
  }
  const ratio = r.makespan / bound;
  figure.ratios.push(ratio);
  return ratio.toFixed(3);
}

export const suite: Suite = {
  name: "faults",
  description:
    "a worker killed at half time (centralized retries), a 10x straggler (ECD vs speculate); distributed: kills, cost",
  options: OPTIONS,
  check: (args) => void parseOptions(args),
  async run(args) {
    const o = parseOptions(args);
    const score = scorecard();
    const verdict = score.verdict;
    process.stdout.write(
      `Emulated work (timed waits): each task waits a Pareto(alpha 3, mean 20 ms) time, ~${o.seconds} s of work per ` +
        `worker, all put\non rank 0; ${RANKS} ranks (a coordinator and ${WORKERS} workers); ${o.rounds} rounds, seeds ` +
        `1..${o.rounds}. W = total task time, L = longest task,\nboth measured (normal-speed units) and each task ` +
        "counted once; makespan: rank 0's, from the barrier before run to run\nresolving.\n\n",
    );

    const death = newFigure();
    const reference = newFigure();
    const ecd = newFigure();
    const speculate = newFigure();
    const versus: number[] = [];
    const notices: number[] = [];
    const deathRows: string[][] = [
      [
        "round",
        "victim",
        "died at s",
        "noticed ms",
        "makespan s",
        "bound s",
        "ratio",
        "re-dealt",
        "no death: makespan s",
        "bound s",
        "ratio",
      ],
    ];
    const slowRows: string[][] = [
      [
        "round",
        "ECD: makespan s",
        "bound s",
        "ratio",
        "deferrals",
        "speculate: makespan s",
        "bound s",
        "ratio",
        "b / a",
      ],
    ];
    for (let round = 1; round <= o.rounds; round++) {
      const dLines = await job("death", o.seconds, round);
      const ref = line<RunLine>(dLines, "reference", `round ${round}, death job`);
      const dead = line<RunLine>(dLines, "death", `round ${round}, death job`);
      const died = dLines.find((l) => (l as { kind?: unknown }).kind === "died") as Died | undefined;
      const td = died ? died.at - dead.startedAt : Number.NaN;
      const noticed = dLines.find((l) => (l as { kind?: unknown }).kind === "noticed") as Died | undefined;
      const notice = died && noticed ? noticed.at - died.at : Number.NaN;
      if (Number.isFinite(notice)) notices.push(notice);
      const deathBound = Math.max(
        dead.longest,
        dead.work <= WORKERS * td ? dead.work / WORKERS : td + (dead.work - WORKERS * td) / (WORKERS - 1),
      );
      const lost = dead.counters.workersLost ?? 0;
      const lostProblem = !died
        ? `round ${round}, death: the victim never died`
        : lost !== 1
          ? `round ${round}, death: rank 0 counted ${lost} workers lost`
          : undefined;
      const refBound = Math.max(ref.work / WORKERS, ref.longest);
      deathRows.push([
        String(round),
        died ? `rank ${died.rank}` : "none",
        died ? seconds(td) : "-",
        Number.isFinite(notice) ? notice.toFixed(0) : "-",
        seconds(dead.makespan),
        seconds(deathBound),
        record(death, `round ${round}, death`, dead, deathBound, lostProblem),
        String(dead.counters.tasksRedealt ?? 0),
        seconds(ref.makespan),
        seconds(refBound),
        record(reference, `round ${round}, no death`, ref, refBound),
      ]);

      const sLines = await job("stragglers", o.seconds, round);
      const a = line<RunLine>(sLines, "ecd", `round ${round}, straggler job`);
      const b = line<RunLine>(sLines, "speculate", `round ${round}, straggler job`);
      const speed = WORKERS - 1 + 1 / SLOWDOWN;
      const aBound = Math.max(a.work / speed, a.longest);
      const row = [
        String(round),
        seconds(a.makespan),
        seconds(aBound),
        record(ecd, `round ${round}, ECD`, a, aBound),
        String(a.counters.ecdDeferrals ?? 0),
      ];
      const bBound = Math.max(b.work / speed, b.longest);
      const cell = record(speculate, `round ${round}, speculate`, b, bBound);
      const rightB = cell !== "WRONG";
      if (rightB) versus.push(b.makespan / a.makespan);
      row.push(seconds(b.makespan), seconds(bBound), cell, rightB ? fmt(b.makespan / a.makespan) : "-");
      slowRows.push(row);
    }

    process.stdout.write(
      `Death at half time, centralized, retries: 1: worker 1 + seed % ${WORKERS} SIGKILLs itself once its clock passes\n` +
        `half of W / ${WORKERS} from its run's start; "died at": after rank 0's run started (t_d). Bound: max(L, t_d + ` +
        `(W - ${WORKERS} t_d) / ${WORKERS - 1}):\n${WORKERS} workers until t_d, ${WORKERS - 1} after; optimistic for ` +
        "the pool, which redoes the dead worker's uncommitted work. No death: the\nsame work before, in the same " +
        `job; bound max(W / ${WORKERS}, L). re-dealt: rank 0's counter tasksRedealt. noticed: from the victim's\n` +
        "last line to rank 0 hearing of the death (the launcher's notice).\n",
    );
    process.stdout.write(`${formatTable(deathRows)}\n\n`);
    process.stdout.write(
      `Straggler: one worker's waits ${SLOWDOWN}x longer, no death; (a) centralized (Expected Card Distribution), ` +
        `(b) centralized,\nretries: 1, speculate: true. Bound: max(W / (${WORKERS - 1} + 1/${SLOWDOWN}), L). ` +
        "deferrals: rank 0's counter ecdDeferrals in (a).\n",
    );
    process.stdout.write(`${formatTable(slowRows)}\n\n`);

    const spread = (xs: readonly number[]) =>
      xs.length === 0
        ? ["-", "-"]
        : [median(xs).toFixed(3), `${Math.min(...xs).toFixed(3)}..${Math.max(...xs).toFixed(3)}`];
    const summary: string[][] = [["figure (median of the rounds)", "median", "range", "target", ""]];
    const figure = (label: string, f: Figure, target?: number) => {
      const m = f.ratios.length > 0 ? median(f.ratios) : Number.NaN;
      const cells = [label, ...spread(f.ratios)];
      if (target !== undefined) cells.push(`<= ${target.toFixed(2)}`, verdict(f.wrong.length === 0 && m <= target));
      else if (f.wrong.length > 0) cells.push("correct", verdict(false));
      else cells.push("-", "");
      summary.push(cells);
    };
    figure("death at half time: makespan / bound", death, TARGET_DEATH);
    const slowest = notices.length > 0 ? Math.max(...notices) : Number.NaN;
    summary.push([
      "death heard by the coordinator, ms",
      notices.length > 0 ? median(notices).toFixed(0) : "-",
      notices.length > 0 ? `${Math.min(...notices).toFixed(0)}..${slowest.toFixed(0)}` : "-",
      `<= ${NOTICE_MS}`,
      verdict(slowest <= NOTICE_MS),
    ]);
    figure("no death: makespan / bound", reference);
    figure("straggler, (a) ECD: makespan / bound", ecd);
    figure("straggler, (b) speculate: makespan / bound", speculate, TARGET_SPECULATE);
    summary.push(["straggler, makespan (b) / (a)", ...spread(versus), "-", ""]);
    if (o.kills > 0) summary.push(...(await distributedSurvival(o.kills, o.rounds, verdict)));
    process.stdout.write(`${formatTable(summary)}\n`);
    for (const w of [...death.wrong, ...reference.wrong, ...ecd.wrong, ...speculate.wrong])
      process.stdout.write(`wrong answer: ${w}\n`);
    const load = loadavg()
      .map((x) => x.toFixed(1))
      .join(" ");
    process.stdout.write(`Load average (1, 5, 15 min) at the end: ${load}\n`);
    return score.report();
  },
};
