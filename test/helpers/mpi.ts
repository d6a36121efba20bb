// Open MPI's mpirun as a launcher of plain Node.js programs on this machine, for the tests of running under
// existing launchers. The programs never call MPI_Init: mpirun only starts them and sets their environment.
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { launcherFreeEnv } from "./program.ts";

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

/** Open MPI session folders made by `mpiEnv`, removed when this process exits. */
const sessionFolders: string[] = [];
process.once("exit", () => {
  for (const dir of sessionFolders) rmSync(dir, { recursive: true, force: true });
});

/**
 * The environment to start `mpirunCommand(...)` with: launcher-free, plus MPI_ENV, plus `extra`, and a session
 * folder of its own for this mpirun (`orte_tmpdir_base`). Open MPI 4.1 otherwise makes /tmp/ompi.HOST.UID for
 * every mpirun on the machine, and two mpiruns that start at once race to make it: the loser fails in orte_init
 * with "A call to mkdir was unable to create the desired directory ... File exists" (seen once in CI, with the
 * tests of a file running concurrently).
 */
export function mpiEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const session = mkdtempSync(join(tmpdir(), "wp-ompi-session-"));
  sessionFolders.push(session);
  return launcherFreeEnv({ ...MPI_ENV, OMPI_MCA_orte_tmpdir_base: session, ...extra });
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
