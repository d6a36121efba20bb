import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DISTRIBUTED_COMBINATIONS, resolvePoolConfig } from "../lib/internal.ts";
import { resolveApp } from "./app-path.ts";
import { OptionReader } from "./argv.ts";
import type { CompareOptions, ConfigSummary, Row, RunMetrics } from "./compare-types.ts";
import { renderReport } from "./report-html.ts";
import type { StatsRecord } from "./stats-table.ts";
import { formatTable } from "./table.ts";
import { UsageError } from "./usage-error.ts";

const BIN = fileURLToPath(new URL("../bin/workpool.js", import.meta.url));

/** Keys of a result line that may differ between correct runs (timings, the variant's name). */
const VOLATILE_KEYS = /^(seconds|ms|millis|time|elapsed|wall|variant|pool|mode)$/i;

/**
 * Centralized (the coordinator only deals, it also works, and the seed slides' protocol where every put goes
 * to the coordinator) plus every distributed combination of the strategy registries.
 */
export function defaultPools(): string[] {
  const out = ["centralized", "centralized,coordinatorWorks=true", "centralized,keep=0"];
  for (const c of DISTRIBUTED_COMBINATIONS) {
    out.push(`distributed,initiation=${c.initiation},partner=${c.partner},termination=${c.termination}`);
  }
  return out;
}

/** Pool time of a launch: per pool run, the slowest rank's wall time; summed over the job's pool runs. */
export function metricsOf(records: readonly StatsRecord[], np: number, result: string | undefined): RunMetrics {
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

/** The last stdout line of rank 0 that is a JSON object, with volatile keys removed, as canonical text. */
export function resultLine(stdout: string): string | undefined {
  const lines = stdout.split("\n").filter((l) => l.startsWith("[0] {"));
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const value = JSON.parse((lines[i] as string).slice(4)) as Record<string, unknown>;
      if (value === null || typeof value !== "object" || Array.isArray(value)) continue;
      const kept = Object.keys(value)
        .filter((k) => !VOLATILE_KEYS.test(k))
        .sort()
        .map((k) => [k, value[k]]);
      return JSON.stringify(Object.fromEntries(kept));
    } catch {
      /* not a result line */
    }
  }
  return undefined;
}

function launchOnce(
  opts: CompareOptions,
  spec: string,
  statsFile: string,
  trace: string | undefined,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const args = [BIN, "launch", "-n", String(opts.np), "--pool", spec, "--quiet", "--stats-json", statsFile];
  if (trace) args.push("--trace", trace);
  if (opts.timeoutSeconds) args.push("--timeout", String(opts.timeoutSeconds));
  args.push(opts.app, ...opts.args);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout, stderr }));
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

export function summarize(c: ConfigSummary, np: number): Row | undefined {
  if (c.runs.length === 0) return undefined;
  const walls = c.runs.map((r) => r.wallMs);
  const mid = median(walls);
  const pick = c.runs[walls.indexOf(walls.find((w) => w === mid) ?? walls[0] ?? 0)] ?? (c.runs[0] as RunMetrics);
  return {
    spec: c.spec,
    medianS: mid / 1000,
    minS: Math.min(...walls) / 1000,
    maxS: Math.max(...walls) / 1000,
    tasks: pick.tasks,
    moved: pick.moved,
    messages: pick.messages,
    idleFraction: pick.rankWallMs > 0 ? pick.idleMs / pick.rankWallMs : 0,
    efficiency: pick.wallMs > 0 ? pick.busyMs / (np * pick.wallMs) : 0,
    terminationMs: median(c.runs.map((r) => r.terminationMs)),
  };
}

export function formatCompare(rows: readonly Row[]): string {
  const fastest = rows.reduce((a, b) => (b.medianS < a.medianS ? b : a), rows[0] as Row);
  const head = [
    "configuration",
    "median s",
    "min s",
    "max s",
    "tasks",
    "moved",
    "pool msgs",
    "idle",
    "efficiency",
    "term ms",
    "",
  ];
  const body = rows.map((r) => [
    r.spec,
    r.medianS.toFixed(3),
    r.minS.toFixed(3),
    r.maxS.toFixed(3),
    r.tasks.toLocaleString("en-US"),
    r.moved.toLocaleString("en-US"),
    r.messages.toLocaleString("en-US"),
    `${(r.idleFraction * 100).toFixed(1)}%`,
    `${(r.efficiency * 100).toFixed(1)}%`,
    r.terminationMs.toFixed(2),
    r === fastest ? "<- fastest" : "",
  ]);
  return formatTable([head, ...body]);
}

/** Runs every configuration `repeat` times, prints the table and the agreement check; resolves to an exit status. */
export async function runCompare(opts: CompareOptions): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), "wp-compare-"));
  const configs: ConfigSummary[] = [];
  if (opts.traceDir) mkdirSync(opts.traceDir, { recursive: true });
  const traceFor = (spec: string) => {
    if (!opts.traceDir && !opts.report) return undefined;
    const dir = opts.traceDir ?? work;
    return join(dir, `${spec.replace(/[^a-z0-9=-]+/gi, "_")}.trace.json`);
  };
  try {
    for (const spec of opts.pools) {
      const summary: { spec: string; runs: RunMetrics[]; failed: string | undefined; tracePath: string | undefined } = {
        spec,
        runs: [],
        failed: undefined,
        tracePath: traceFor(spec),
      };
      for (let k = 1; k <= opts.repeat && !summary.failed; k++) {
        const statsFile = join(work, `stats-${configs.length}-${k}.json`);
        const r = await launchOnce(opts, spec, statsFile, k === 1 ? summary.tracePath : undefined);
        if (r.code !== 0) {
          summary.failed = `exit ${r.code}: ${r.stderr.trim().split("\n").at(-1) ?? ""}`;
          process.stderr.write(`compare: ${spec} run ${k} failed (${summary.failed})\n`);
          break;
        }
        const records = JSON.parse(readFileSync(statsFile, "utf8")) as StatsRecord[];
        const m = metricsOf(records, opts.np, resultLine(r.stdout));
        summary.runs.push(m);
        process.stderr.write(`compare: ${spec} run ${k}/${opts.repeat}: ${(m.wallMs / 1000).toFixed(3)} s\n`);
      }
      configs.push(summary);
    }
    const rows = configs.map((c) => summarize(c, opts.np)).filter((r): r is Row => r !== undefined);
    process.stdout.write(
      `workpool compare: ${opts.np} ranks, ${opts.repeat} run${opts.repeat === 1 ? "" : "s"} per configuration; ` +
        "wall = time in pool runs (slowest rank); efficiency = busy / (ranks x wall)\n",
    );
    if (rows.length > 0) process.stdout.write(`${formatCompare(rows)}\n`);
    let status = 0;
    const failed = configs.filter((c) => c.failed);
    for (const c of failed) {
      process.stdout.write(`FAILED: ${c.spec}: ${c.failed}\n`);
      status = 1;
    }
    const results = new Map<string, string[]>();
    let total = 0;
    for (const c of configs) {
      c.runs.forEach((r, i) => {
        const key = r.result ?? "(no JSON result line from rank 0)";
        results.set(key, [...(results.get(key) ?? []), `${c.spec} #${i + 1}`]);
        total++;
      });
    }
    if (results.size === 1 && !results.has("(no JSON result line from rank 0)")) {
      process.stdout.write(`results agree: all ${total} runs printed the same rank-0 result line (timings ignored)\n`);
    } else if (results.size === 1) {
      process.stdout.write("results not checked: rank 0 printed no JSON result line (pass the app's --json flag)\n");
    } else {
      status = 1;
      process.stdout.write(`results DISAGREE: ${results.size} different rank-0 result lines\n`);
      for (const [line, runs] of results) process.stdout.write(`  ${line}\n    from ${runs.join(", ")}\n`);
    }
    if (opts.report) {
      writeFileSync(opts.report, renderReport(opts, configs, rows));
      process.stdout.write(`report: ${resolve(opts.report)}\n`);
    }
    return status;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function parseCompareArgs(argv: readonly string[], maxRanks: number): CompareOptions | "help" {
  let np = 2;
  const pools: string[] = [];
  let repeat = 3;
  let report: string | undefined;
  let traceDir: string | undefined;
  let timeoutSeconds: number | undefined;
  const opts = new OptionReader(argv);
  for (let flag = opts.next(); flag !== undefined; flag = opts.next()) {
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "-n":
      case "--np":
        np = opts.int(flag, 1, maxRanks);
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
        timeoutSeconds = opts.positive(flag);
        break;
      default:
        opts.unknown(flag, "compare");
    }
  }
  for (const spec of pools) {
    try {
      resolvePoolConfig(undefined, spec, np);
    } catch (e) {
      throw new UsageError(`option --pool: ${(e as Error).message}`);
    }
  }
  const { app, args } = opts.app("compare");
  return {
    np,
    pools: pools.length > 0 ? pools : defaultPools(),
    repeat,
    report,
    traceDir,
    timeoutSeconds,
    app: resolveApp(app),
    args,
  };
}
