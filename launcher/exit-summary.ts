import { writeFileSync } from "node:fs";
import { how, type Rank, signalStatus } from "./rank.ts";
import { type StatsRecord, formatStats } from "./stats-table.ts";
import type { Failure, Outcome } from "./stop-policy.ts";

/** Node's exit status for an option it does not take (its "Invalid Argument"). */
const NODE_BAD_OPTION = 9;

/**
 * Signals a process raises on itself when it crashes (an abort, a bad memory access): what it wrote last on
 * stderr may say why (V8's `FATAL ERROR: ... JavaScript heap out of memory`). Any other signal came from
 * outside (SIGKILL from a user or the kernel's OOM killer, our SIGTERM), and what the rank was printing then is
 * not why it died.
 */
const CRASH_SIGNALS: ReadonlySet<string> = new Set([
  "SIGABRT",
  "SIGSEGV",
  "SIGBUS",
  "SIGILL",
  "SIGFPE",
  "SIGTRAP",
  "SIGSYS",
]);

/** What the summary reads of the job once every rank has exited. */
export interface SummaryInput {
  readonly outcome: Outcome;
  readonly ranks: readonly Rank[];
  /** How a message names a rank (with its host when it is remote). */
  readonly where: (rank: number) => string;
  /** Whether the job survived `rank`'s death. */
  readonly survived: (rank: number) => boolean;
  /** The rank whose stack was printed for an uncaught error message, if any (record-dispatch.ts). */
  readonly printedBy: (message: string | undefined) => number | undefined;
  /** The options given to node (`--node-arg`): one it refused is named. */
  readonly nodeArgs: readonly string[];
}

/** The end of a job: the launcher's exit status, its last line (if any), and what the dashboard shows of it. */
export interface JobEnd {
  readonly status: number;
  readonly line?: string;
  readonly summary?: string;
}

/**
 * How the job ended, said in one line: why the launcher brought it down, or which rank failed first, how, and
 * why; nothing when it ended well. The status: the stop's own (124 on the timeout, 128+N on signal N, 1 for a
 * silent rank), or the failed rank's (its exit code, or 128+N when signal N ended it), or 0.
 */
export function jobEnd(input: SummaryInput): JobEnd {
  const { outcome } = input;
  if (outcome === undefined) return { status: 0 };
  if ("stop" in outcome)
    return { status: outcome.stop.status, line: outcome.stop.reason, summary: outcome.stop.reason };
  // A task's failure fails every rank: name the rank the task failed on, if it failed on its own too, not
  // whichever rank exited first (which read "rank 1 failed: TaskError: task 77 failed on rank 0").
  const origin = taskOrigin(input.ranks[outcome.failure.rank]?.lastError);
  const failure =
    (origin !== undefined && outcome.own.find((f) => f.rank === origin && !input.survived(f.rank))) || outcome.failure;
  // The stack above may be another rank's, if it failed the same way and reported first: say whose it is.
  const printedBy = input.printedBy(input.ranks[failure.rank]?.lastError);
  const whose = printedBy !== undefined && printedBy !== failure.rank ? printedBy : undefined;
  const line = summarize(failure, outcome.own, input);
  const status =
    failure.signal !== null
      ? signalStatus(failure.signal)
      : failure.code && failure.code > 0 && failure.code < 256
        ? failure.code
        : 1;
  const same = whose === undefined ? "" : ` (the same error as ${input.where(whose)}'s, printed above)`;
  return { status, line: `${line}${same}`, summary: line };
}

/** The rank a TaskError names as the one its task failed on (`TaskError: task 7 failed on rank 2: ...`). */
function taskOrigin(error: string | undefined): number | undefined {
  const m = error === undefined ? null : /^TaskError: task .* failed on rank (\d+)(?::|$)/m.exec(error);
  return m ? Number(m[1]) : undefined;
}

/**
 * The pool statistics the ranks reported: written as JSON to `json` (`--stats-json`, read by `workpool compare`),
 * and printed as tables when `table` (`--stats`). A file that cannot be written is a warning.
 */
export function reportStats(records: readonly StatsRecord[], json: string | undefined, table: boolean): void {
  if (json) {
    try {
      writeFileSync(json, JSON.stringify(records));
    } catch (e) {
      process.stderr.write(`workpool: warning: could not write statistics ${json}: ${(e as Error).message}\n`);
    }
  }
  if (table && records.length > 0) process.stderr.write(`${formatStats(records)}\n`);
}

/**
 * The one-line summary of a failed job: the first rank that failed, how, and why. When that rank left no
 * message but another said why (ranks often fail together on the same input, and the first to exit may be
 * one that printed nothing), that rank's words are added: an uncaught error of any rank, or the last stderr
 * line of a rank that failed on its own (a status of its own, not our SIGTERM); never a line of a rank that
 * ended well or was stopped (what it printed is its ordinary output, such as a result it verified), nor the
 * words of a rank whose death the job survived (they explain that death, which has its own line).
 */
function summarize(failure: Failure, ownFailures: readonly Failure[], input: SummaryInput): string {
  const { ranks, where, survived } = input;
  const head = `workpool: ${where(failure.rank)} failed (${how(failure.code, failure.signal)})`;
  const refused = refusedNodeArg(ranks[failure.rank] as Rank, failure.code, input.nodeArgs);
  if (refused) return `${head}: ${refused}`;
  const own = lastWords(ranks[failure.rank] as Rank, failure);
  if (own) return `${head}: ${own}`;
  const others = ownFailures.filter((f) => f.rank !== failure.rank && !survived(f.rank));
  const order = [...others.map((f) => f.rank), ...ranks.map((r) => r.rank)].filter((rank) => !survived(rank));
  const thrower = order.find((rank) => (ranks[rank] as Rank).lastError !== undefined);
  if (thrower !== undefined) return `${head}; ${where(thrower)} said: ${oneLine((ranks[thrower] as Rank).lastError)}`;
  for (const f of others) {
    const said = lastWords(ranks[f.rank] as Rank, f);
    if (said !== undefined) return `${head}; ${where(f.rank)} said: ${said}`;
  }
  return head;
}

/**
 * Why node refused to start a rank, when it was an option the user gave with --node-arg: the first line node
 * wrote that names it. Node's last line would blame the wrong flag: after a bad option it complains about
 * options it adds itself (`bad option: --harmony-import-attributes`).
 */
function refusedNodeArg(r: Rank, code: number | null, nodeArgs: readonly string[]): string | undefined {
  if (r.heard || code !== NODE_BAD_OPTION || nodeArgs.length === 0) return undefined;
  const name = (arg: string) => arg.split("=")[0] as string;
  for (const named of [(a: string) => a, name]) {
    for (const line of r.earlyStderr) {
      const arg = nodeArgs.find((a) => line.includes(named(a)));
      if (arg !== undefined) return `node refused --node-arg=${arg}: ${line.trim()}`;
    }
  }
  return undefined;
}

/**
 * What a failed rank said that may explain its failure, cut to one line: its uncaught error; else its last
 * stderr line, when it ended by a status of its own (the app's verdict, which the line before it most likely
 * gives) or crashed. Never an ordinary line a rank was printing when it was killed from outside.
 */
function lastWords(r: Rank, ended: Failure): string | undefined {
  const stderr = ended.signal === null || CRASH_SIGNALS.has(ended.signal) ? r.lastStderr : undefined;
  return oneLine(r.lastError ?? stderr);
}

/** A message's first non-blank line, marked `(...)` when it had more. */
function oneLine(full: string | undefined): string | undefined {
  const first = full?.split("\n").find((l) => l.trim() !== "");
  // (ssh ends its lines with \r\n: compare trimmed, or a one-line message would look cut.)
  return first !== undefined && first.trim() !== full?.trim() ? `${first.trim()} (...)` : first?.trim();
}
