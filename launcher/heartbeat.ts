import { availableParallelism, loadavg } from "node:os";

/** How long a rank may go without a heartbeat before the job is brought down (`--heartbeat`). */
export const DEFAULT_HEARTBEAT_SECONDS = 30;

/**
 * The shortest `--heartbeat` taken. Below it an ordinary pause is mistaken for a stopped rank: a garbage
 * collection of a large heap, a synchronous stretch of the app's of a few hundred ms, a rank waiting for a core
 * on a loaded machine; and the rank would beat (and the launcher check) every few ms.
 */
export const MIN_HEARTBEAT_SECONDS = 1;

/** Heartbeats per heartbeat timeout: a rank beats this many times as often as it must. */
export const BEATS_PER_TIMEOUT = 6;

/**
 * How often a rank beats (WORKPOOL_HEARTBEAT_MS), and the watchdog checks the ranks (watchdog.ts), for a
 * heartbeat timeout of `heartbeatMs`.
 */
export function beatIntervalMs(heartbeatMs: number): number {
  return Math.max(1, Math.floor(heartbeatMs / BEATS_PER_TIMEOUT));
}

/**
 * Before its first record, a rank started through an agent gets at least this long (from its start): an agent
 * that hangs (a host that does not answer ssh without a connect timeout) would otherwise hold the job for ever.
 */
export const REMOTE_START_MS = 30_000;

/** The least a local rank gets to start, beyond `--heartbeat`, however few ranks the machine starts. */
export const START_BASE_MS = 10_000;

/**
 * What each process that competes for this machine's cores (a rank the job starts here, or one the load
 * average counts) adds to a local rank's start allowance, per core. 64 ranks started at once on a 2-core
 * machine whose load average was 7 sent their first records 10.8 to 16.1 s after their processes started,
 * about 0.45 s per process per core; this is twice that.
 */
export const START_PER_PROCESS_MS = 1000;

/**
 * How long node may take to start a rank on this machine, beyond `--heartbeat`, before its first record is
 * overdue: START_BASE_MS, plus START_PER_PROCESS_MS for each of the `localRanks` the job starts here and of the
 * `load` (the 1-minute load average when the job starts), per core. A rank's first record is its first
 * heartbeat, sent by its preload before the app is evaluated (lib/control/channel.ts), so until then the
 * process is node starting, which takes longer the more processes share the cores: 12 s for 4 ranks on an idle
 * 2-core machine, 46 s for 64 ranks there at load average 8.
 */
export function startAllowanceMs(
  localRanks: number,
  cores: number = availableParallelism(),
  load: number = loadavg()[0] ?? 0,
): number {
  const competing = localRanks + Math.max(0, load);
  return START_BASE_MS + Math.ceil((START_PER_PROCESS_MS * competing) / Math.max(1, cores));
}

/**
 * When a rank that has not been heard from at all is overdue, in ms after its process started: a local one
 * after `--heartbeat` plus `startMs` (startAllowanceMs), a remote one after `--heartbeat` or REMOTE_START_MS,
 * whichever is longer (its agent's connection and node's start on a host whose load the launcher cannot see).
 */
export function firstRecordDueMs(heartbeatMs: number, remote: boolean, startMs: number): number {
  return remote ? Math.max(heartbeatMs, REMOTE_START_MS) : heartbeatMs + startMs;
}
