// Running a program to the end and collecting its output, for the helpers and tests that start programs other
// than workpool's CLI (ip, ssh, ss, mpirun, srun, a test host's agent); run.ts starts workpool itself.
import { spawn } from "node:child_process";
import { ROOT, type RunResult } from "./run.ts";

/**
 * Names of variables a launcher sets for its tasks. They are removed from the environment of the programs we
 * start, so a test run inside a Slurm allocation or an mpirun job does not make mpirun or srun join that outer job.
 */
const LAUNCHER_VARIABLE = /^(OMPI_|PMIX_|PMI_|SLURM_|WORKPOOL_)/;

/** Our environment without any launcher's task variables (see LAUNCHER_VARIABLE), plus `extra`. */
export function launcherFreeEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!LAUNCHER_VARIABLE.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export interface ProgramOptions {
  /** The whole environment of the program. @default launcherFreeEnv() */
  readonly env?: NodeJS.ProcessEnv;
  /** @default the repository root */
  readonly cwd?: string;
  /** What the program reads on its standard input. @default nothing: it reads end of file at once */
  readonly input?: string;
}

/**
 * Runs `command[0] command[1...]` to the end and collects its output; resolves whatever its exit status.
 * Rejects only if it cannot start.
 */
export function runProgram(command: readonly string[], options: ProgramOptions = {}): Promise<RunResult> {
  const [file, ...args] = command;
  if (file === undefined) return Promise.reject(new Error("runProgram: empty command"));
  const child = spawn(file, args, { cwd: options.cwd ?? ROOT, env: options.env ?? launcherFreeEnv(), stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin.on("error", () => undefined); // a program that does not read its input may close it first
  child.stdin.end(options.input);
  return new Promise<RunResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
