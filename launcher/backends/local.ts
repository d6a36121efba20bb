import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { rankEnvironment } from "../../lib/internal.ts";
import type { RankExit, RankLauncher, RankProcess } from "../backend.ts";

const REAPER = fileURLToPath(new URL("./reaper.js", import.meta.url));

/**
 * The local back-end: every rank a child process of the launcher on this host, leading a process group of its
 * own (so a signal reaches whatever the rank started too), its control channel a Unix socket in the job folder.
 * A detached reaper (reaper.js) is told every group: if the launcher dies without saying the job is done (even
 * by SIGKILL), it brings the groups down and removes the job folder.
 */
export class LocalLauncher implements RankLauncher {
  readonly controlAddress: string;
  private readonly reaper: ChildProcess;

  constructor(jobDir: string) {
    this.controlAddress = `ipc://${join(jobDir, "control")}`;
    this.reaper = spawn(process.execPath, [REAPER, jobDir], { stdio: ["pipe", "ignore", "ignore"], detached: true });
    this.reaper.unref();
    this.reaper.stdin?.on("error", () => {});
  }

  start(_rank: number, env: Readonly<Record<string, string>>, argv: readonly string[]): RankProcess {
    const child = spawn(process.execPath, argv, {
      env: rankEnvironment(process.env, env),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    if (child.pid !== undefined) this.reaper.stdin?.write(`${child.pid}\n`);
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
    return {
      stdout: child.stdout,
      stderr: child.stderr,
      exit,
      signal: (signal) => {
        if (!exited) signalGroup(child, signal);
      },
    };
  }

  close(): void {
    this.reaper.stdin?.end("done\n");
  }
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
