import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ENV, serveRendezvous, type TransportKind } from "../lib/internal.ts";
import { TS_LOADER } from "./loader.ts";
import { pipeLines } from "./lines.ts";
import { ProgressLine } from "./progress.ts";
import { type StatsRecord, formatStats } from "./stats-table.ts";
import { mergeTrace } from "./trace-merge.ts";

export interface JobOptions {
  readonly np: number;
  readonly app: string;
  readonly args: readonly string[];
  readonly prefix: boolean;
  readonly timeoutSeconds: number | undefined;
  readonly pool: string | undefined;
  readonly transport: TransportKind;
  /** Print the gathered per-rank pool statistics as a table after the run. */
  readonly stats?: boolean;
  /** Write the per-rank pool statistics, as JSON, to this file (used by `workpool compare`). */
  readonly statsJson?: string;
  /** Write a Chrome Trace Event Format file of every pool run. */
  readonly trace?: string;
  /** No live progress line even when stderr is a terminal. */
  readonly quiet?: boolean;
  /** Options for node itself, given to every rank before the app (`--node-arg`). */
  readonly nodeArgs?: readonly string[];
}

/** How long ranks get between SIGTERM and SIGKILL when the job is brought down. */
const GRACE_MS = 2000;

interface Rank {
  readonly rank: number;
  readonly child: ChildProcess;
  exited: boolean;
  lastError: string | undefined;
  lastStderr: string | undefined;
}

interface Failure {
  readonly rank: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly message: string | undefined;
}

const preload = new URL("../lib/runtime/preload.ts", import.meta.url).href;
const reaperScript = fileURLToPath(new URL("./reaper.js", import.meta.url));

function signalNumber(signal: NodeJS.Signals): number {
  return (constants.signals as Record<string, number>)[signal] ?? 1;
}

/**
 * Runs one job: N ranks of `app`, joined through a rendezvous service, their output prefixed, and brought
 * down together when any rank fails, on a timeout, or when the launcher is interrupted.
 * Resolves to the launcher's exit status.
 */
export async function runJob(opts: JobOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "wp-"));
  const jobId = dir.slice(dir.lastIndexOf("-") + 1);
  const rendezvousAddress = opts.transport === "ipc" ? `ipc://${dir}/rendezvous` : "tcp://127.0.0.1:*";
  const rendezvous = await serveRendezvous(opts.np, rendezvousAddress);

  const reaper = spawn(process.execPath, [reaperScript, dir], { stdio: ["pipe", "ignore", "ignore"], detached: true });
  reaper.unref();
  reaper.stdin?.on("error", () => {});

  const ranks: Rank[] = [];
  const statsRecords: StatsRecord[] = [];
  const traceDir = opts.trace ? join(dir, "trace") : undefined;
  const progress = !opts.quiet && process.stderr.isTTY ? new ProgressLine(process.stderr) : undefined;
  const stdout = progress ? progress.around(process.stdout) : process.stdout;
  const stderr = progress ? progress.around(process.stderr) : process.stderr;
  let failure: Failure | undefined;
  /** Ranks that failed before any was stopped, in exit order (several often fail on the same bad input). */
  const ownFailures: Failure[] = [];
  let stopping = false;
  let stopReason: string | undefined;
  let exitStatus: number | undefined;
  let killTimer: NodeJS.Timeout | undefined;

  const stopAll = () => {
    stopping = true;
    for (const r of ranks) if (!r.exited) signalGroup(r, "SIGTERM");
    killTimer ??= setTimeout(() => {
      for (const r of ranks) if (!r.exited) signalGroup(r, "SIGKILL");
    }, GRACE_MS);
  };

  const spawnRank = (rank: number): Rank => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [ENV.rank]: String(rank),
      [ENV.size]: String(opts.np),
      [ENV.job]: jobId,
      [ENV.rendezvous]: rendezvous.endpoint,
      [ENV.transport]: opts.transport,
      [ENV.ipcDir]: dir,
      [ENV.lifelineFd]: "3",
    };
    if (opts.pool !== undefined) env[ENV.pool] = opts.pool;
    else delete env[ENV.pool];
    env.WORKPOOL_REPORT_STATS = opts.stats || opts.statsJson ? "1" : "0";
    env.WORKPOOL_REPORT_PROGRESS = progress ? "1" : "0";
    if (traceDir) env.WORKPOOL_TRACE_DIR = traceDir;
    else delete env.WORKPOOL_TRACE_DIR;
    const child = spawn(
      process.execPath,
      [
        ...(opts.nodeArgs ?? []),
        "--conditions=workpool-source",
        "--import",
        TS_LOADER,
        "--import",
        preload,
        opts.app,
        ...opts.args,
      ],
      { env, stdio: ["ignore", "pipe", "pipe", "pipe"], detached: true },
    );
    const r: Rank = { rank, child, exited: false, lastError: undefined, lastStderr: undefined };
    if (child.pid !== undefined) reaper.stdin?.write(`${child.pid}\n`);
    return r;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopReason !== undefined) {
      for (const r of ranks) if (!r.exited) signalGroup(r, "SIGKILL");
      return;
    }
    stopReason = `workpool: received ${signal}; stopping ${opts.np} rank${opts.np === 1 ? "" : "s"}`;
    exitStatus = 128 + signalNumber(signal);
    stopAll();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);

  let timeout: NodeJS.Timeout | undefined;
  if (opts.timeoutSeconds !== undefined) {
    timeout = setTimeout(() => {
      if (stopReason !== undefined || failure) return;
      stopReason = `workpool: job timed out after ${opts.timeoutSeconds} s; stopping ${opts.np} rank${opts.np === 1 ? "" : "s"}`;
      exitStatus = 124;
      stopAll();
    }, opts.timeoutSeconds * 1000);
  }

  const finished: Promise<void>[] = [];
  for (let i = 0; i < opts.np; i++) {
    const r = spawnRank(i);
    ranks.push(r);
    const prefix = opts.prefix ? `[${i}] ` : "";
    const { child } = r;
    const streams = [
      pipeLines(child.stdout as never, stdout as never, prefix),
      pipeLines(child.stderr as never, stderr as never, prefix, (line) => {
        r.lastStderr = line;
      }),
      pipeLines(
        child.stdio[3] as never,
        devNull,
        "",
        (line) => {
          let msg: { t?: string; message?: string; pool?: string; done?: number; queued?: number };
          try {
            msg = JSON.parse(line);
          } catch {
            return;
          }
          if (msg.t === "error" && typeof msg.message === "string") r.lastError = msg.message;
          else if (msg.t === "stats") statsRecords.push({ ...(msg as unknown as StatsRecord), rank: i });
          else if (msg.t === "progress") progress?.update(i, String(msg.pool), msg.done ?? 0, msg.queued ?? 0);
        },
        true,
      ),
    ];
    const exited = new Promise<void>((resolve) => {
      child.on("error", (e) => {
        r.lastError = e.message;
      });
      child.on("exit", (code, signal) => {
        r.exited = true;
        (child.stdio[3] as NodeJS.ReadableStream & { destroy?: () => void })?.destroy?.();
        const failed = code !== 0 || signal !== null;
        // A rank that failed before the job was being stopped, or that exited with a status of its own after
        // (not by our SIGTERM or SIGKILL), failed on its own.
        const own = !stopping || (signal === null && code !== 143);
        if (failed && stopReason === undefined && own) ownFailures.push({ rank: i, code, signal, message: undefined });
        if (failed && !failure && stopReason === undefined) {
          failure = { rank: i, code, signal, message: undefined };
          stopAll();
        }
        resolve();
      });
    });
    finished.push(Promise.all([exited, ...streams.slice(0, 2)]).then(() => {}));
  }

  await Promise.all(finished);
  clearTimeout(timeout);
  clearTimeout(killTimer);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  process.off("SIGHUP", onSignal);
  rendezvous.close();
  progress?.stop();
  if (opts.trace && traceDir) {
    try {
      mergeTrace(traceDir, opts.np, opts.trace);
    } catch (e) {
      process.stderr.write(`workpool: could not write trace ${opts.trace}: ${(e as Error).message}\n`);
    }
  }
  reaper.stdin?.end("done\n");
  rmSync(dir, { recursive: true, force: true });
  if (opts.statsJson) writeFileSync(opts.statsJson, JSON.stringify(statsRecords));
  if (opts.stats && statsRecords.length > 0) process.stderr.write(`${formatStats(statsRecords)}\n`);

  if (stopReason !== undefined) {
    process.stderr.write(`${stopReason}\n`);
    return exitStatus ?? 1;
  }
  if (failure) {
    process.stderr.write(`${summarize(failure, ranks, ownFailures)}\n`);
    if (failure.signal !== null) return 128 + signalNumber(failure.signal);
    return failure.code && failure.code > 0 && failure.code < 256 ? failure.code : 1;
  }
  return 0;
}

/** What a rank said last: its uncaught error, else its last stderr line; cut to one line. */
function lastWords(r: Rank): string | undefined {
  const full = r.lastError ?? r.lastStderr;
  const first = full?.split("\n").find((l) => l.trim() !== "");
  return first !== undefined && first !== full?.trim() ? `${first.trim()} (...)` : first;
}

/**
 * The one-line summary of a failed job: the first rank that failed, how, and why. When that rank left no
 * message but another said why (ranks often fail together on the same input, and the one that printed may
 * have been stopped by our SIGTERM a moment later), that rank's words are added.
 */
function summarize(failure: Failure, ranks: readonly Rank[], ownFailures: readonly Failure[]): string {
  const how = failure.signal !== null ? `killed by ${failure.signal}` : `exit code ${failure.code}`;
  const head = `workpool: rank ${failure.rank} failed (${how})`;
  const own = lastWords(ranks[failure.rank] as Rank);
  if (own) return `${head}: ${own}`;
  const order = [...ownFailures.map((f) => f.rank), ...ranks.map((r) => r.rank)];
  const explainer =
    order.find((rank) => (ranks[rank] as Rank).lastError !== undefined) ??
    order.find((rank) => lastWords(ranks[rank] as Rank) !== undefined);
  return explainer === undefined ? head : `${head}; rank ${explainer} said: ${lastWords(ranks[explainer] as Rank)}`;
}

function signalGroup(r: Rank, signal: NodeJS.Signals): void {
  const pid = r.child.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      r.child.kill(signal);
    } catch {
      /* gone */
    }
  }
}

const devNull = {
  write: () => true,
} as unknown as NodeJS.WritableStream as never;
