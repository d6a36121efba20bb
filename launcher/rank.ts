import { constants } from "node:os";
import type { RankExit, RankLauncher, RankProcess } from "./backend.ts";
import { pipeLines } from "./lines.ts";

/** How many of a rank's first stderr lines, before it reports, are kept to explain a failed start. */
const EARLY_STDERR_LINES = 20;

/** What the launcher knows of one rank while the job runs (job.ts starts it; the other parts read it). */
export interface Rank {
  readonly rank: number;
  readonly process: RankProcess;
  exited: boolean;
  lastError: string | undefined;
  lastStderr: string | undefined;
  /** The first stderr lines written before the launcher heard from the rank: node's own, if it refused to start. */
  readonly earlyStderr: string[];
  /** When the launcher last heard from the rank over its control channel (or started it), epoch ms. */
  lastHeard: number;
  /** Whether it has heard from the rank at all: until then, its start gets firstRecordDueMs (heartbeat.ts). */
  heard: boolean;
  /** Whether it was started through an agent on another host. */
  readonly remote: boolean;
}

/** Where a rank's output goes. */
export interface RankOutput {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Each line behind `[rank] ` (`--prefix`). */
  readonly prefix: boolean;
  /** Sees every line a rank writes (`err`: on stderr), for the dashboard. */
  readonly onLine: (rank: number, line: string, err: boolean) => void;
}

/**
 * Starts rank `rank` through the back-end and passes its output on, whole lines at a time. `onExit` is called
 * once its process has exited (the rank marked exited first); `finished` settles once that call has and the
 * rank's output has all been passed on.
 */
export function startRank(
  backend: RankLauncher,
  rank: number,
  env: Readonly<Record<string, string>>,
  argv: readonly string[],
  output: RankOutput,
  onExit: (r: Rank, exit: RankExit) => Promise<void>,
): { readonly rank: Rank; readonly finished: Promise<void> } {
  const proc = backend.start(rank, env, argv);
  const r: Rank = {
    rank,
    process: proc,
    exited: false,
    lastError: undefined,
    lastStderr: undefined,
    earlyStderr: [],
    lastHeard: Date.now(),
    heard: false,
    remote: backend.hostOf?.(rank) !== undefined,
  };
  const prefix = output.prefix ? `[${rank}] ` : "";
  const stdout = pipeLines(proc.stdout, output.stdout as never, prefix, (l) => output.onLine(rank, l, false), true);
  const onStderr = (line: string) => {
    output.onLine(rank, line, true);
    if (line.trim() === "") return;
    r.lastStderr = line;
    if (!r.heard && r.earlyStderr.length < EARLY_STDERR_LINES) r.earlyStderr.push(line);
  };
  const stderr = pipeLines(proc.stderr, output.stderr as never, prefix, onStderr, true);
  const exited = proc.exit.then((exit) => {
    r.exited = true;
    return onExit(r, exit);
  });
  return { rank: r, finished: Promise.all([exited, stdout, stderr]).then(() => {}) };
}

/** Ranks a message names one by one; the rest are counted (`nameRanks`). */
export const MAX_RANKS_NAMED = 16;

/** `ranks` named for a message, the first MAX_RANKS_NAMED of them, the rest counted: `rank 1, rank 3 (and 5 more)`. */
export function nameRanks(ranks: readonly number[], where: (rank: number) => string): string {
  const named = ranks.slice(0, MAX_RANKS_NAMED).map(where).join(", ");
  return ranks.length > MAX_RANKS_NAMED ? `${named} (and ${ranks.length - MAX_RANKS_NAMED} more)` : named;
}

/** How a rank ended, for messages: `killed by SIGKILL`, `exit code 3`. */
export function how(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `killed by ${signal}` : `exit code ${code}`;
}

/** The exit status of a process ended by `signal`, as a shell gives it: 128 plus the signal's number. */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + ((constants.signals as Record<string, number>)[signal] ?? 1);
}
