// Open MPI's mpirun as a launcher of plain Node.js programs on this machine, for the tests of running under
// existing launchers. The programs never call MPI_Init: mpirun only starts them and sets their environment.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { ROOT, type RunResult } from "./run.ts";

/**
 * Names of variables a launcher sets for its tasks. They are removed from the environment of a launcher we start,
 * so a test run inside a Slurm allocation or an mpirun job does not make mpirun or srun join that outer job.
 */
const LAUNCHER_VARIABLE = /^(OMPI_|PMIX_|PMI_|SLURM_|WORKPOOL_)/;

/**
 * Open MPI settings for mpirun on one machine in a container, passed as environment (mpirun gives them on to the
 * tasks, so a task sees them too). Open MPI 4.1 needs none of them on a machine whose only network is loopback;
 * they keep it from trying other interfaces a container may have down or filtered, and from the shared-memory
 * quirks containers are known for.
 */
export const MPI_ENV: Readonly<Record<string, string>> = {
  /** mpirun's wiring to its local daemon stays on loopback: every rank runs here. */
  OMPI_MCA_oob_tcp_if_include: "lo",
  /** Same for MPI's own TCP transport, should a task ever call MPI_Init. */
  OMPI_MCA_btl_tcp_if_include: "lo",
  /** No cross-memory attach (ptrace), which containers forbid: "Read -1, expected N, errno = 1" otherwise. */
  OMPI_MCA_btl_vader_single_copy_mechanism: "none",
  /** PMIx keeps its job data in its own memory, not in shared-memory files locked across processes. */
  PMIX_MCA_gds: "hash",
};

/** Our environment without any launcher's task variables (see LAUNCHER_VARIABLE), plus `extra`. */
export function launcherFreeEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!LAUNCHER_VARIABLE.test(k)) env[k] = v;
  return { ...env, ...extra };
}

/** The environment to start `mpirunCommand(...)` with: launcher-free, plus MPI_ENV, plus `extra`. */
export function mpiEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return launcherFreeEnv({ ...MPI_ENV, ...extra });
}

/**
 * `mpirun ... -n N argv...`: N tasks on this machine, even when N exceeds its cores (`--oversubscribe`) and when
 * the tests run as root, as they do in CI containers (`--allow-run-as-root`, harmless otherwise). Start it with
 * `mpiEnv()`.
 */
export function mpirunCommand(n: number, argv: readonly string[]): string[] {
  return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", String(n), ...argv];
}

/** The absolute path of `name` found in PATH or in the sbin folders (which a non-root PATH may lack). */
export function findProgram(name: string): string | undefined {
  const folders = [...(process.env.PATH ?? "").split(delimiter), "/usr/local/sbin", "/usr/sbin", "/sbin"];
  for (const folder of folders) {
    if (folder === "") continue;
    const path = join(folder, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** Why mpirun tests cannot run here (no mpirun, or an mpirun that is not Open MPI's), or undefined if they can. */
export function mpiAvailable(): string | undefined {
  const mpirun = findProgram("mpirun");
  if (mpirun === undefined) return "mpirun is not installed (Debian: apt-get install openmpi-bin)";
  const version = spawnSync(mpirun, ["--version"], { encoding: "utf8" });
  if (!/Open MPI/.test(version.stdout ?? ""))
    return `${mpirun} is not Open MPI's (--version printed ${JSON.stringify(version.stdout ?? version.error?.message)})`;
  return undefined;
}

export interface ProgramOptions {
  /** The whole environment of the program. @default launcherFreeEnv() */
  readonly env?: NodeJS.ProcessEnv;
  /** @default the repository root */
  readonly cwd?: string;
}

/** Runs `command[0] command[1...]` to the end, stdin closed, and collects its output. Rejects only if it cannot start. */
export function runProgram(command: readonly string[], options: ProgramOptions = {}): Promise<RunResult> {
  const [file, ...args] = command;
  if (file === undefined) return Promise.reject(new Error("runProgram: empty command"));
  const child = spawn(file, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? launcherFreeEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise<RunResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
