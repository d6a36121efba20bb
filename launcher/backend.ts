import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";

/** How a rank ended. */
export interface RankExit {
  /** The exit status, or null when a signal ended the rank. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Why the back-end could not start or watch the rank, when it could not (say, a failed spawn). */
  readonly error?: string;
}

/** One started rank, as job supervision sees it: its output, its end, and a way to stop it. */
export interface RankProcess {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Settles once the rank has exited: its process, not only a command that started it. Never rejects. */
  readonly exit: Promise<RankExit>;
  /** Sends `signal` to the rank and to the processes it started; does nothing once the rank has exited. */
  signal(signal: NodeJS.Signals): void;
  /**
   * Whether the rank's process is stopped (SIGSTOP, SIGTSTP, a debugger), where the back-end can see it (a local
   * process); absent or false otherwise. Lets the launcher tell a rank stopped before its first record from one
   * that node is still starting on a busy machine, without waiting for the whole start allowance.
   */
  stopped?(): boolean;
  /**
   * How long, in ms, the rank's main thread has waited for a core while it could run, since its process
   * started, where the back-end can see it (a local process on Linux: /proc/PID/schedstat); undefined otherwise.
   * Lets the watchdog tell a rank that a crowded machine kept from running from one that stopped or hung.
   */
  waitedForCoreMs?(): number | undefined;
}

/**
 * How ranks start: one file per back-end in launcher/backends/. Job supervision (output, failure policy,
 * timeout, signals, reports) runs the same over any of them, and knows nothing of hosts, pids or process groups.
 */
export interface RankLauncher {
  /**
   * Where the launcher's control server listens for this back-end's ranks: `ipc://PATH` for ranks on this host,
   * `tcp://HOST:PORT` (port 0: any free port) for ranks that must reach it over the network.
   */
  readonly controlAddress: string;
  /**
   * Where ranks reach the rendezvous when they are on several hosts: the launcher's address that faces them,
   * and the job then runs over TCP. Undefined: every rank is on this host (ipc or loopback, as --transport says).
   */
  readonly rendezvousHost?: string;
  /** The host rank `rank` runs on, for messages; undefined when it runs on this machine. */
  hostOf?(rank: number): string | undefined;
  /**
   * Starts rank `rank` as `node argv...`. `env` holds the job's variables for this rank (WORKPOOL_*, from
   * lib/comm/env.ts); the back-end gives the rank the environment it would otherwise have, less any other job
   * variable, plus these (`rankEnvironment`).
   */
  start(rank: number, env: Readonly<Record<string, string>>, argv: readonly string[]): RankProcess;
  /** Called once the job is over and every rank has exited: releases what the back-end holds. */
  close(): void;
}

/** Makes the back-end for one job, given the job's private folder (removed by the launcher afterwards). */
export type RankLauncherFactory = (jobDir: string) => RankLauncher;

/** How `child` ends, watched from now on: its exit, and whether it has come. */
export function watchExit(child: ChildProcess): { exit: Promise<RankExit>; exited: () => boolean } {
  let exited = false;
  const exit = new Promise<RankExit>((resolve) => {
    let error: string | undefined;
    child.on("error", (e) => {
      error = e.message;
      // A process that could not be started never exits.
      if (child.pid === undefined) resolve({ code: 1, signal: null, error });
    });
    child.on("exit", (code, signal) => {
      exited = true;
      resolve({ code, signal, error });
    });
  });
  return { exit, exited: () => exited };
}
