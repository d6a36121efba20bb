/**
 * What `workpool compare` runs: one launch of the app under one configuration (`workpool launch --stats-json`),
 * and the sequential reference (`--baseline`) through the shell, with the time each run took or reported.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { PACKAGE_ROOT } from "../loader.ts";
import { median } from "./rows.ts";
import type { Baseline, CompareOptions } from "./types.ts";

const BIN = fileURLToPath(new URL("bin/workpool.js", PACKAGE_ROOT));

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

/** Launches the app once under `spec` on `np` ranks, its statistics to `statsFile`. */
export function launchOnce(
  opts: CompareOptions,
  np: number,
  spec: string,
  statsFile: string,
  trace: string | undefined,
) {
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

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

/**
 * Why a launch failed, in one line: the launcher's summary if there is one, else the first error line (the
 * launcher itself failed), else the last line that says something.
 */
export function failureLine(stderr: string): string {
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
export interface BaselineRun {
  readonly wallS: number;
  readonly reportedS: number | undefined;
}

/** Runs the sequential reference once through the shell; rejects with the reason it failed. */
export async function runBaselineOnce(command: string, timeoutSeconds: number | undefined): Promise<BaselineRun> {
  const r = await runToEnd(command, [], true, timeoutSeconds);
  if (r.code !== 0) {
    const why = r.code === null ? `killed after ${timeoutSeconds} s` : `exit ${r.code}`;
    throw new Error(`${why}: ${lastLine(r.stderr) || lastLine(r.stdout)}`);
  }
  return { wallS: r.ms / 1000, reportedS: reportedSeconds(r.stdout) };
}

/** Each run's time is the `seconds` it printed (see `reportedSeconds`), or its wall time when a run printed none. */
export function baselineOf(command: string, runs: readonly BaselineRun[]): Baseline {
  const fromJson = runs.every((r) => r.reportedS !== undefined);
  const runsS = runs.map((r) => (fromJson ? (r.reportedS as number) : r.wallS));
  return { command, runsS, seconds: median(runsS), source: fromJson ? "json" : "wall" };
}

export const secondsOf = (r: BaselineRun) => r.reportedS ?? r.wallS;

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
