/**
 * From the runs' statistics to the table's rows: each launch's figures (`metricsOf`), each configuration's
 * medians and ranges over its runs, speedups against the baseline, the fastest at each rank count.
 */
import type { StatsRecord } from "../stats-table.ts";
import { formatTable } from "../table.ts";
import { metricCells, metricHeads } from "./cells.ts";
import { shortLabel } from "./labels.ts";
import type { Agreement, Baseline, ConfigSummary, ResultLine, Row, RunMetrics, Spread } from "./types.ts";

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

/** The median of `xs`: the mean of the middle two when their number is even; NaN when empty. */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

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

/** A figure whose largest run is this many times its smallest is too spread to choose a configuration by. */
export const WIDE_SPREAD = 1.5;

/**
 * The figures too spread to trust, one phrase each: a row's wall time or speedup, or the baseline's time, whose
 * largest run over its smallest is WIDE_SPREAD or more (a busy machine, or an app whose runs vary).
 */
export function wideSpreads(rows: readonly Row[], baseline: Baseline | undefined): string[] {
  const out: string[] = [];
  const wide = (lo: number, hi: number) => lo > 0 && hi / lo >= WIDE_SPREAD;
  const range = (lo: number, hi: number, unit: string) =>
    `${lo.toFixed(2)}..${hi.toFixed(2)}${unit} (${(hi / lo).toFixed(1)}x)`;
  if (baseline && baseline.runsS.length > 1) {
    const lo = Math.min(...baseline.runsS);
    const hi = Math.max(...baseline.runsS);
    if (wide(lo, hi)) out.push(`the baseline ${range(lo, hi, " s")}`);
  }
  for (const r of rows) {
    const s = r.spread.speedup;
    if (wide(r.minS, r.maxS)) out.push(`${r.spec} -n ${r.np} wall ${range(r.minS, r.maxS, " s")}`);
    else if (s && wide(s.min, s.max)) out.push(`${r.spec} -n ${r.np} speedup ${range(s.min, s.max, "")}`);
  }
  return out;
}
