import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DISTRIBUTED_COMBINATIONS, distributedSpec, resolvePoolConfig } from "../../lib/internal.ts";
import { resolveApp } from "../app-path.ts";
import { PACKAGE_ROOT } from "../loader.ts";
import { OptionReader } from "../argv.ts";
import { checkOutputFile, checkOutputFolder } from "../output-path.ts";
import { shortLabel } from "./labels.ts";
import { agreementHeadline, checkAgreement, resultLine } from "./results.ts";
import type {
  Agreement,
  Baseline,
  CompareOptions,
  ConfigSummary,
  ResultLine,
  Row,
  RunMetrics,
  Spread,
} from "./types.ts";
import { metricCells, metricHeads } from "./cells.ts";
import { renderReport } from "./report-html.ts";
import type { StatsRecord } from "../stats-table.ts";
import { formatTable } from "../table.ts";
import { UsageError } from "../usage-error.ts";

const BIN = fileURLToPath(new URL("bin/workpool.js", PACKAGE_ROOT));

/**
 * Centralized (the coordinator only deals, it also works, and the seed slides' protocol where every put goes
 * to the coordinator) plus every distributed combination of the strategy registries.
 */
export function defaultPools(): string[] {
  const out = ["centralized", "centralized,coordinatorWorks=true", "centralized,keep=0"];
  for (const c of DISTRIBUTED_COMBINATIONS) {
    out.push(distributedSpec(c));
  }
  return out;
}

/** Pool time of a launch: per pool run, the slowest rank's wall time; summed over the job's pool runs. */
export function metricsOf(records: readonly StatsRecord[], np: number, result: ResultLine | undefined): RunMetrics {
  const runs = new Map<string, StatsRecord[]>();
  for (const r of records) {
    const key = `${r.pool}/${r.run}`;
    runs.set(key, [...(runs.get(key) ?? []), r]);
  }
  let wallMs = 0;
  let terminationMs = 0;
  for (const group of runs.values()) {
    wallMs += Math.max(...group.map((r) => r.stats.wallMs));
    const lastTask = Math.max(...group.map((r) => r.stats.lastTaskAt));
    const allKnow = Math.max(...group.map((r) => r.stats.startedAt + r.stats.wallMs));
    if (lastTask > 0) terminationMs += Math.max(0, allKnow - lastTask);
  }
  const perRank = Array.from({ length: np }, () => ({ busyMs: 0, idleMs: 0 }));
  let tasks = 0;
  let moved = 0;
  let messages = 0;
  let busyMs = 0;
  let idleMs = 0;
  let rankWallMs = 0;
  for (const r of records) {
    const s = r.stats;
    tasks += s.tasksExecuted;
    // Distributed: tasks that changed rank; centralized: tasks dealt by the coordinator.
    moved += (s.counters.tasksMovedIn ?? 0) + (s.counters.tasksGranted ?? 0);
    messages += s.messagesSent;
    busyMs += s.busyMs;
    idleMs += s.idleMs;
    rankWallMs += s.wallMs;
    const pr = perRank[r.rank];
    if (pr) {
      pr.busyMs += s.busyMs;
      pr.idleMs += s.idleMs;
    }
  }
  return { wallMs, tasks, moved, messages, busyMs, idleMs, rankWallMs, terminationMs, result, perRank };
}

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** From start to exit, in ms. */
  readonly ms: number;
}

/**
 * Runs a command to its end. With a timeout it is killed then (code null) and its output streams closed, so
 * that a grandchild holding them open does not hold this up.
 */
function runToEnd(
  command: string,
  args: readonly string[],
  shell: boolean,
  timeoutSeconds: number | undefined,
): Promise<Exit> {
  return new Promise((resolvePromise, reject) => {
    const t0 = performance.now();
    // A shell command runs in a process group of its own, so that a timeout kills what it started, not just
    // the shell; then Ctrl-C no longer reaches it from the terminal, so a signal to compare is passed on.
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], shell, detached: shell });
    const kill = (): void => {
      try {
        if (shell) process.kill(-(child.pid as number), "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const onSignal = (signal: NodeJS.Signals): void => {
      kill();
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
      process.kill(process.pid, signal);
    };
    if (shell) {
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
    }
    let stdout = "";
    let stderr = "";
    let ms = 0;
    const timer =
      timeoutSeconds === undefined
        ? undefined
        : setTimeout(() => {
            kill();
            child.stdout.destroy();
            child.stderr.destroy();
          }, timeoutSeconds * 1000);
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.on("error", reject);
    child.on("exit", () => (ms = performance.now() - t0));
    child.on("close", (code) => {
      clearTimeout(timer);
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
      resolvePromise({ code, stdout, stderr, ms });
    });
  });
}

function launchOnce(opts: CompareOptions, np: number, spec: string, statsFile: string, trace: string | undefined) {
  const args = [
    BIN,
    "launch",
    ...opts.launchArgs,
    "-n",
    String(np),
    "--pool",
    spec,
    "--quiet",
    "--stats-json",
    statsFile,
  ];
  if (trace) args.push("--trace", trace);
  if (opts.timeoutSeconds) args.push("--timeout", String(opts.timeoutSeconds));
  args.push(opts.app, ...opts.args);
  return runToEnd(process.execPath, args, false, undefined);
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

/**
 * Why a launch failed, in one line: the launcher's summary if there is one, else the first error line (the
 * launcher itself failed), else the last line that says something.
 */
function failureLine(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim());
  const last = [...lines].reverse();
  return (
    last.find((l) => l.startsWith("workpool:")) ??
    lines.find((l) => /^(\[\d+\] )?([A-Z]\w*)?Error\b/.test(l)) ??
    last.find((l) => /\w/.test(l) && !/^(\[\d+\] )?Node\.js v/.test(l)) ??
    ""
  );
}

/**
 * The time a baseline run reports: the `seconds` key of the last JSON object line of its stdout that has a
 * numeric one (a `[N] ` rank prefix allowed), so a command can leave out its start-up; else undefined.
 */
export function reportedSeconds(stdout: string): number | undefined {
  const lines = stdout.split("\n").reverse();
  for (const raw of lines) {
    const line = raw.replace(/^\[\d+\] /, "").trim();
    if (!line.startsWith("{")) continue;
    try {
      const value = JSON.parse(line) as { seconds?: unknown };
      if (typeof value.seconds === "number" && Number.isFinite(value.seconds) && value.seconds >= 0) {
        return value.seconds;
      }
    } catch {
      /* not JSON */
    }
  }
  return undefined;
}

/** One run of the sequential reference: its wall time and the `seconds` it printed, if any. */
interface BaselineRun {
  readonly wallS: number;
  readonly reportedS: number | undefined;
}

/** Runs the sequential reference once through the shell; rejects with the reason it failed. */
async function runBaselineOnce(command: string, timeoutSeconds: number | undefined): Promise<BaselineRun> {
  const r = await runToEnd(command, [], true, timeoutSeconds);
  if (r.code !== 0) {
    const why = r.code === null ? `killed after ${timeoutSeconds} s` : `exit ${r.code}`;
    throw new Error(`${why}: ${lastLine(r.stderr) || lastLine(r.stdout)}`);
  }
  return { wallS: r.ms / 1000, reportedS: reportedSeconds(r.stdout) };
}

/** Each run's time is the `seconds` it printed (see `reportedSeconds`), or its wall time when a run printed none. */
function baselineOf(command: string, runs: readonly BaselineRun[]): Baseline {
  const fromJson = runs.every((r) => r.reportedS !== undefined);
  const runsS = runs.map((r) => (fromJson ? (r.reportedS as number) : r.wallS));
  return { command, runsS, seconds: median(runsS), source: fromJson ? "json" : "wall" };
}

const secondsOf = (r: BaselineRun) => r.reportedS ?? r.wallS;

/**
 * Runs the sequential reference `repeat` times through the shell, one after the other (see `baselineOf` for
 * each run's time). Rejects with the reason a run failed.
 */
export async function runBaseline(
  command: string,
  repeat: number,
  timeoutSeconds: number | undefined,
  progress: (line: string) => void = () => {},
): Promise<Baseline> {
  const runs: BaselineRun[] = [];
  for (let k = 1; k <= repeat; k++) {
    runs.push(await runBaselineOnce(command, timeoutSeconds));
    progress(`compare: baseline run ${k}/${repeat}: ${secondsOf(runs.at(-1) as BaselineRun).toFixed(3)} s`);
  }
  return baselineOf(command, runs);
}

/** The median and range of `xs` (not empty). */
export function spreadOf(xs: readonly number[]): Spread {
  return { min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
}

/**
 * A configuration's row: every figure's median and range over its runs. Speedups are paired by round: run k
 * against the baseline's run k (compare runs them in the same round), or the baseline's median past its runs.
 */
export function summarize(c: ConfigSummary, baseline: Baseline | undefined): Omit<Row, "fastest"> | undefined {
  if (c.runs.length === 0) return undefined;
  const walls = c.runs.map((r) => r.wallMs);
  const of = (figure: (r: RunMetrics) => number) => spreadOf(c.runs.map(figure));
  const speedups = baseline
    ? c.runs.flatMap((r, k) => (r.wallMs > 0 ? [(baseline.runsS[k] ?? baseline.seconds) / (r.wallMs / 1000)] : []))
    : [];
  const speedup = speedups.length > 0 ? spreadOf(speedups) : undefined;
  const efficiency = speedup && {
    min: speedup.min / c.np,
    median: speedup.median / c.np,
    max: speedup.max / c.np,
  };
  const spread = {
    tasks: of((r) => r.tasks),
    moved: of((r) => r.moved),
    messages: of((r) => r.messages),
    idleFraction: of((r) => (r.rankWallMs > 0 ? r.idleMs / r.rankWallMs : 0)),
    busyFraction: of((r) => (r.wallMs > 0 ? r.busyMs / (c.np * r.wallMs) : 0)),
    terminationMs: of((r) => r.terminationMs),
    speedup,
    efficiency,
  };
  return {
    spec: c.spec,
    label: shortLabel(c.spec),
    np: c.np,
    medianS: median(walls) / 1000,
    minS: Math.min(...walls) / 1000,
    maxS: Math.max(...walls) / 1000,
    tasks: spread.tasks.median,
    moved: spread.moved.median,
    messages: spread.messages.median,
    idleFraction: spread.idleFraction.median,
    busyFraction: spread.busyFraction.median,
    terminationMs: spread.terminationMs.median,
    speedup: speedup?.median,
    efficiency: efficiency?.median,
    spread,
  };
}

/**
 * The table's rows, by configuration then rank count; at each rank count the fastest is marked, unless the
 * results disagree (then no configuration has earned it).
 */
export function tableRows(
  configs: readonly ConfigSummary[],
  pools: readonly string[],
  baseline: Baseline | undefined,
  agreement: Agreement,
): Row[] {
  const rows = configs
    .map((c) => summarize(c, baseline))
    .filter((r) => r !== undefined)
    .sort((a, b) => pools.indexOf(a.spec) - pools.indexOf(b.spec) || a.np - b.np);
  const best = new Map<number, number>();
  for (const r of rows) best.set(r.np, Math.min(best.get(r.np) ?? Infinity, r.medianS));
  return rows.map((r) => ({ ...r, fastest: agreement.kind !== "disagree" && best.get(r.np) === r.medianS }));
}

export function formatCompare(rows: readonly Row[]): string {
  const speedups = rows.some((r) => r.speedup !== undefined);
  const head = ["configuration", ...metricHeads(speedups, "term ms"), ""];
  const body = rows.map((r) => [r.spec, ...metricCells(r, speedups), r.fastest ? "<- fastest" : ""]);
  return formatTable([head, ...body]);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * Runs every configuration `repeat` times at each rank count, and the baseline as often, interleaved round
 * robin: each round runs the baseline once and every configuration once, starting one further along the list
 * than the round before. Load that drifts during a compare (other jobs, a warming machine) then falls on
 * every configuration alike and shows as spread, where running them block by block made it a difference
 * between them (an efficiency of 111% at one rank). A configuration, or the baseline, that fails is not run
 * again. Prints the table and the agreement check; resolves to an exit status.
 */
export async function runCompare(opts: CompareOptions): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), "wp-compare-"));
  const say = (line: string) => process.stderr.write(`${line}\n`);
  if (opts.traceDir) mkdirSync(opts.traceDir, { recursive: true });
  const traceFor = (spec: string, np: number) => {
    if (!opts.traceDir && !opts.report) return undefined;
    return join(opts.traceDir ?? work, `${spec.replace(/[^a-z0-9=-]+/gi, "_")}.n${np}.trace.json`);
  };
  const configs = opts.ranks.flatMap((np) =>
    opts.pools.map((spec) => ({
      spec,
      np,
      runs: [] as RunMetrics[],
      failed: undefined as string | undefined,
      tracePath: traceFor(spec, np),
    })),
  );
  let status = 0;
  try {
    const baselineRuns: BaselineRun[] = [];
    let baselineFailed: string | undefined;
    // The units of a round: the baseline (-1), if any, and each configuration (its index).
    const units = [...(opts.baseline !== undefined ? [-1] : []), ...configs.keys()];
    for (let k = 1; k <= opts.repeat; k++) {
      const round = `round ${k}/${opts.repeat}`;
      for (let u = 0; u < units.length; u++) {
        const unit = units[(u + k - 1) % units.length] as number;
        if (unit === -1) {
          if (baselineFailed !== undefined) continue;
          try {
            baselineRuns.push(await runBaselineOnce(opts.baseline as string, opts.timeoutSeconds));
            say(`compare: ${round}: baseline: ${secondsOf(baselineRuns.at(-1) as BaselineRun).toFixed(3)} s`);
          } catch (e) {
            baselineFailed = (e as Error).message;
            say(`compare: ${round}: baseline failed (${baselineFailed})`);
          }
          continue;
        }
        const c = configs[unit] as (typeof configs)[number];
        if (c.failed !== undefined) continue;
        const statsFile = join(work, `stats-${unit}-${k}.json`);
        const r = await launchOnce(opts, c.np, c.spec, statsFile, k === 1 ? c.tracePath : undefined);
        if (r.code !== 0) {
          c.failed = `exit ${r.code}: ${failureLine(r.stderr)}`;
          say(`compare: ${round}: ${c.spec} -n ${c.np} failed (${c.failed})`);
          continue;
        }
        let records: StatsRecord[];
        try {
          records = JSON.parse(readFileSync(statsFile, "utf8")) as StatsRecord[];
        } catch (e) {
          c.failed = `no statistics (${(e as Error).message}): ${failureLine(r.stderr)}`;
          say(`compare: ${round}: ${c.spec} -n ${c.np} failed (${c.failed})`);
          continue;
        }
        const m = metricsOf(records, c.np, resultLine(r.stdout, opts.ignore));
        c.runs.push(m);
        say(`compare: ${round}: ${c.spec} -n ${c.np}: ${(m.wallMs / 1000).toFixed(3)} s`);
      }
    }
    const baseline =
      opts.baseline !== undefined && baselineFailed === undefined ? baselineOf(opts.baseline, baselineRuns) : undefined;
    const agreement = checkAgreement(configs);
    const rows = tableRows(configs, opts.pools, baseline, agreement);
    const out: string[] = [];
    const sweep = opts.ranks.length > 1;
    out.push(
      `workpool compare: ${sweep ? `ranks ${opts.ranks.join(", ")}` : plural(opts.ranks[0] ?? 0, "rank")}; ` +
        `${plural(opts.repeat, "run")} per configuration${opts.baseline !== undefined ? " and baseline" : ""}, ` +
        `interleaved round robin; figures are medians, (min..max) over the runs when they differ; ` +
        `wall = time in pool runs (slowest rank); ` +
        `busy = busy time / (ranks x wall)${sweep ? "; fastest marked at each rank count" : ""}`,
    );
    if (baseline) {
      const from = baseline.source === "json" ? 'its JSON "seconds"' : "wall time, start-up included";
      out.push(
        `baseline: ${baseline.seconds.toFixed(3)} s (median of ${plural(baseline.runsS.length, "run")}, ${from}) ` +
          `of ${opts.baseline}; speedup = baseline / wall, run by run against the baseline run of the same round; ` +
          `efficiency = speedup / ranks`,
      );
    }
    if (agreement.kind === "disagree") out.push(agreementHeadline(agreement));
    if (rows.length > 0) out.push(formatCompare(rows));
    if (baselineFailed !== undefined) {
      out.push(`FAILED: baseline ${opts.baseline}: ${baselineFailed}`);
      status = 1;
    }
    for (const c of configs.filter((c) => c.failed)) {
      out.push(`FAILED: ${c.spec} -n ${c.np}: ${c.failed}`);
      status = 1;
    }
    if (agreement.kind === "disagree") {
      status = 1;
      out.push(`the ${agreement.lines.length} different rank-0 result lines:`);
      for (const { line, runs } of agreement.lines) out.push(`  ${line}\n    from ${runs.join(", ")}`);
      if (agreement.ignored.length > 0) out.push(`  (ignored keys: ${agreement.ignored.join(", ")})`);
    } else {
      out.push(agreementHeadline(agreement));
    }
    if (opts.report) {
      writeFileSync(opts.report, renderReport({ options: opts, configs, rows, baseline, baselineFailed, agreement }));
      out.push(`report: ${resolve(opts.report)}`);
    }
    process.stdout.write(`${out.join("\n")}\n`);
    return status;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** `-n 4` or `-n 2,4,8`: ascending, without repeats. */
function rankList(flag: string, raw: string, max: number): number[] {
  const parts = raw.split(",").map((p) => p.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1 || Number(p) > max)) {
    throw new UsageError(
      `option ${flag} must be a whole number from 1 to ${max}, or a comma-separated list of them; got ${JSON.stringify(raw)}`,
    );
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

export function parseCompareArgs(argv: readonly string[], maxRanks: number): CompareOptions | "help" {
  let ranks = [2];
  const pools: string[] = [];
  const ignore: string[] = [];
  let repeat = 3;
  let report: string | undefined;
  let traceDir: string | undefined;
  let timeoutSeconds: number | undefined;
  let baseline: string | undefined;
  const launchArgs: string[] = [];
  const opts = new OptionReader(argv);
  for (let flag = opts.next(); flag !== undefined; flag = opts.next()) {
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "-n":
      case "--np":
        ranks = rankList(flag, opts.value(flag), maxRanks);
        break;
      case "--pool":
        pools.push(opts.value(flag));
        break;
      case "--repeat":
        repeat = opts.int(flag, 1, 1000);
        break;
      case "--report":
        report = opts.value(flag);
        break;
      case "--trace-dir":
        traceDir = opts.value(flag);
        break;
      case "--timeout":
        timeoutSeconds = opts.seconds(flag);
        break;
      case "--ignore": {
        const key = opts.value(flag);
        if (key === "") throw new UsageError("option --ignore needs a result key; got an empty string");
        ignore.push(key);
        break;
      }
      case "--hostfile":
      case "-H":
      case "--host":
      case "--agent":
      case "-x":
        launchArgs.push(flag, opts.value(flag));
        break;
      case "--oversubscribe":
        launchArgs.push(flag);
        break;
      case "--baseline":
        baseline = opts.value(flag);
        if (baseline.trim() === "") throw new UsageError("option --baseline needs a command; got an empty string");
        break;
      default:
        opts.unknown(flag, "compare");
    }
  }
  for (const spec of pools) {
    for (const np of ranks) {
      try {
        resolvePoolConfig(undefined, spec, np);
      } catch (e) {
        const at = ranks.length > 1 ? ` (at -n ${np})` : "";
        throw new UsageError(`option --pool: ${(e as Error).message}${at}`);
      }
    }
  }
  const { app, args } = opts.app("compare");
  const appFile = resolveApp(app);
  if (report !== undefined) checkOutputFile("--report", report);
  if (traceDir !== undefined) checkOutputFolder("--trace-dir", traceDir);
  return {
    ranks,
    pools: pools.length > 0 ? [...new Set(pools)] : defaultPools(),
    repeat,
    report,
    traceDir,
    timeoutSeconds,
    ignore,
    baseline,
    launchArgs,
    app: appFile,
    args,
  };
}
