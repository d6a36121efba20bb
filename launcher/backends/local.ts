import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { rankEnvironment } from "../../lib/internal-start.ts";
import { type RankExit, type RankLauncher, type RankProcess, watchExit } from "../backend.ts";
import { takeWarm } from "../warm.ts";

/**
 * The job's last line of defence against orphans, started detached by the launcher as `sh -c REAPER reaper DIR`.
 * It reads rank process group ids on stdin, one a line. If stdin ends without the line `done` (the launcher
 * died, even by SIGKILL), it sends SIGTERM to every group, SIGKILL two seconds later, then removes the job folder
 * DIR. A POSIX shell, not node: it costs the job no second node start (about 70 ms of CPU and 40 MB).
 */
const REAPER = `
groups=""
done=""
while IFS= read -r line; do
  case "$line" in
    done) done=1 ;;
    ""|*[!0-9]*) ;;
    *) groups="$groups $line" ;;
  esac
done
if [ -z "$done" ]; then
  for g in $groups; do kill -s TERM -- "-$g" 2>/dev/null; done
  sleep 2
  for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
fi
rm -rf -- "$1"
`;

/**
 * The local back-end: every rank a child process of the launcher on this host, leading a process group of its
 * own (so a signal reaches whatever the rank started too), its control channel a Unix socket in the job folder.
 * A detached reaper (REAPER) is told every group: if the launcher dies without saying the job is done (even
 * by SIGKILL), it brings the groups down and removes the job folder.
 */
export class LocalLauncher implements RankLauncher {
  readonly controlAddress: string;
  private readonly reaper: ChildProcess;

  constructor(jobDir: string) {
    this.controlAddress = `ipc://${join(jobDir, "control")}`;
    this.reaper = spawn("/bin/sh", ["-c", REAPER, "reaper", jobDir], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
    });
    this.reaper.unref();
    this.reaper.stdin?.on("error", () => {});
  }

  start(_rank: number, env: Readonly<Record<string, string>>, argv: readonly string[]): RankProcess {
    const rankEnv = rankEnvironment(process.env, env);
    // A node started before the launcher knew the job, when it would start the same (launcher/warm.ts).
    const warm = takeWarm(argv, rankEnv);
    if (warm !== undefined) {
      this.reaper.stdin?.write(`${warm.child.pid}\n`);
      return rankOf(warm.child, warm.exit, warm.exited);
    }
    return this.spawn(process.execPath, argv, rankEnv).rank;
  }

  /**
   * Starts `command args...` as a rank would be: leading a process group of its own, told to the reaper, its
   * output piped. With `input`, its standard input is a pipe that starts with `input` and stays open (the
   * caller may write more to `stdin`); without, it reads nothing.
   */
  spawn(
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
    input?: string,
  ): { rank: RankProcess; stdin: Writable | undefined } {
    const child = spawn(command, args, {
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
    });
    if (child.pid !== undefined) this.reaper.stdin?.write(`${child.pid}\n`);
    if (input !== undefined) {
      // A rank that exits without reading its input (or dies) must not fail the launcher with EPIPE.
      child.stdin?.on("error", () => {});
      child.stdin?.write(input);
    }
    const { exit, exited } = watchExit(child);
    return { rank: rankOf(child, exit, exited), stdin: child.stdin ?? undefined };
  }

  close(): void {
    this.reaper.stdin?.end("done\n");
  }
}

/** `child`, a process group leader with its output piped, as job supervision sees a rank. */
function rankOf(child: ChildProcess, exit: Promise<RankExit>, exited: () => boolean): RankProcess {
  return {
    stdout: child.stdout as Readable,
    stderr: child.stderr as Readable,
    exit,
    signal: (signal) => {
      if (!exited()) signalGroup(child, signal);
    },
    stopped: () => !exited() && child.pid !== undefined && isStopped(child.pid),
    waitedForCoreMs: () => (exited() || child.pid === undefined ? undefined : waitedForCoreMs(child.pid)),
  };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* gone */
    }
  }
}

/**
 * Whether process `pid` is stopped: its state in /proc/PID/stat (Linux) is T (stopped by a signal) or t (by a
 * debugger). False where /proc cannot tell (another system, a process gone).
 */
export function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // "pid (comm) state ...": comm may hold spaces and parentheses, so the state follows the last ")".
    const state = stat.charAt(stat.lastIndexOf(")") + 2);
    return state === "T" || state === "t";
  } catch {
    return false;
  }
}

/**
 * How long process `pid`'s main thread (the one that runs JavaScript and sends heartbeats) has waited on a run
 * queue, in ms: the second field of /proc/PID/schedstat (Linux, nanoseconds). Undefined where /proc cannot tell.
 */
export function waitedForCoreMs(pid: number): number | undefined {
  try {
    const waited = Number(readFileSync(`/proc/${pid}/schedstat`, "latin1").split(" ")[1]);
    return Number.isFinite(waited) ? waited / 1e6 : undefined;
  } catch {
    return undefined;
  }
}
