/**
 * `workpool compare`: runs every configuration (options.ts) in rounds with the baseline (runs.ts), turns what
 * the runs gave into rows (rows.ts), checks that their results agree (results.ts), and prints the table (and
 * writes the report, report-html.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { StatsRecord } from "../stats-table.ts";
import { renderReport } from "./report-html.ts";
import { agreementHeadline, checkAgreement, resultLine } from "./results.ts";
import { formatCompare, metricsOf, tableRows, WIDE_SPREAD, wideSpreads } from "./rows.ts";
import { type BaselineRun, baselineOf, failureLine, launchOnce, runBaselineOnce, secondsOf } from "./runs.ts";
import type { CompareOptions, ConfigSummary } from "./types.ts";

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** A configuration at one rank count, and what its runs gave. */
type Config = { -readonly [K in keyof ConfigSummary]: ConfigSummary[K] };

/** The baseline's runs, or why one failed (it is not run again). */
interface BaselineRuns {
  readonly runs: BaselineRun[];
  failed: string | undefined;
}

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
  if (opts.traceDir) mkdirSync(opts.traceDir, { recursive: true });
  const traceFor = (spec: string, np: number) => {
    if (!opts.traceDir && !opts.report) return undefined;
    return join(opts.traceDir ?? work, `${spec.replace(/[^a-z0-9=-]+/gi, "_")}.n${np}.trace.json`);
  };
  const configs: Config[] = opts.ranks.flatMap((np) =>
    opts.pools.map((spec) => ({ spec, np, runs: [], failed: undefined, tracePath: traceFor(spec, np) })),
  );
  try {
    const baseline: BaselineRuns = { runs: [], failed: undefined };
    // The units of a round: the baseline (-1), if any, and each configuration (its index).
    const units = [...(opts.baseline !== undefined ? [-1] : []), ...configs.keys()];
    for (let k = 1; k <= opts.repeat; k++) {
      for (let u = 0; u < units.length; u++) {
        const unit = units[(u + k - 1) % units.length] as number;
        if (unit === -1) await runBaselineUnit(opts, baseline, k);
        else await runConfigUnit(opts, configs[unit] as Config, join(work, `stats-${unit}-${k}.json`), k);
      }
    }
    return printout(opts, configs, baseline);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const say = (line: string) => process.stderr.write(`${line}\n`);

/** Round `k`'s run of the baseline, unless one failed before. */
async function runBaselineUnit(opts: CompareOptions, baseline: BaselineRuns, k: number): Promise<void> {
  if (baseline.failed !== undefined) return;
  const round = `round ${k}/${opts.repeat}`;
  try {
    baseline.runs.push(await runBaselineOnce(opts.baseline as string, opts.timeoutSeconds));
    say(`compare: ${round}: baseline: ${secondsOf(baseline.runs.at(-1) as BaselineRun).toFixed(3)} s`);
  } catch (e) {
    baseline.failed = (e as Error).message;
    say(`compare: ${round}: baseline failed (${baseline.failed})`);
  }
}

/** Round `k`'s launch of configuration `c` (its trace in round 1), unless one failed before. */
async function runConfigUnit(opts: CompareOptions, c: Config, statsFile: string, k: number): Promise<void> {
  if (c.failed !== undefined) return;
  const round = `round ${k}/${opts.repeat}`;
  const r = await launchOnce(opts, c.np, c.spec, statsFile, k === 1 ? c.tracePath : undefined);
  if (r.code !== 0) {
    c.failed = `exit ${r.code}: ${failureLine(r.stderr)}`;
    say(`compare: ${round}: ${c.spec} -n ${c.np} failed (${c.failed})`);
    return;
  }
  let records: StatsRecord[];
  try {
    records = JSON.parse(readFileSync(statsFile, "utf8")) as StatsRecord[];
  } catch (e) {
    c.failed = `no statistics (${(e as Error).message}): ${failureLine(r.stderr)}`;
    say(`compare: ${round}: ${c.spec} -n ${c.np} failed (${c.failed})`);
    return;
  }
  const m = metricsOf(records, c.np, resultLine(r.stdout, opts.ignore));
  c.runs.push(m);
  say(`compare: ${round}: ${c.spec} -n ${c.np}: ${(m.wallMs / 1000).toFixed(3)} s`);
}

/** Prints the table, what failed and the agreement check (and writes the report); returns the exit status. */
function printout(opts: CompareOptions, configs: readonly Config[], baselineRuns: BaselineRuns): number {
  const baselineFailed = baselineRuns.failed;
  const baseline =
    opts.baseline !== undefined && baselineFailed === undefined
      ? baselineOf(opts.baseline, baselineRuns.runs)
      : undefined;
  const agreement = checkAgreement(configs);
  const rows = tableRows(configs, opts.pools, baseline, agreement);
  let status = 0;
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
  const wide = wideSpreads(rows, baseline);
  if (wide.length > 0)
    out.push(
      `too spread to choose by (the largest run ${WIDE_SPREAD} times the smallest or more: a busy machine, or ` +
        `runs that vary; rerun with a larger --repeat, on a quieter machine): ${wide.join("; ")}`,
    );
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
}
