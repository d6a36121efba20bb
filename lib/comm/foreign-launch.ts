import { BootstrapError } from "../errors.ts";
import { ENV, envInteger, MAX_SIZE } from "./env.ts";

/**
 * Which job started by another launcher this process is a rank of (foreign.ts says how such a job meets): the
 * variables of Open MPI's mpirun, of PMI, or of Slurm's srun give its rank and the job's size and id; they also
 * say whether every rank runs on this host, and which Slurm step it is a task of.
 */

/** Which variables gave this process its rank and the job's size. */
export type ForeignLauncher = "Open MPI" | "PMI" | "Slurm";

/** A process started by mpirun or srun rather than by `workpool launch`, as its environment describes it. */
export interface ForeignLaunch {
  /** Whose variables gave the rank and size: Open MPI's (mpirun), PMI's (srun --mpi=pmi2), Slurm's (srun). */
  readonly launcher: ForeignLauncher;
  readonly rank: number;
  readonly size: number;
  /** The job's id (the first set of JOB_ID_VARIABLES, else SLURM_JOB_ID.SLURM_STEP_ID); undefined if none is. */
  readonly job: string | undefined;
  /** True when the launcher says every rank runs on this host; false when it says otherwise or nothing. */
  readonly local: boolean;
  /** The Slurm job step this process is a task of, when its rank comes from Slurm or PMI under srun. */
  readonly step: SlurmStep | undefined;
}

/** A Slurm job step, from the variables srun sets for its tasks. */
export interface SlurmStep {
  /** SLURM_JOB_ID. */
  readonly jobId: number;
  /** SLURM_STEP_ID. */
  readonly stepId: number;
  /** SLURM_STEP_NODELIST, compressed (nodelist.ts expands it): the step's hosts, task 0's first. */
  readonly nodelist: string;
  /** SLURMD_NODENAME: the node this task runs on, when set. */
  readonly node: string | undefined;
}

/** Where each launcher puts the rank and the size, in the order they are looked for. */
const RANK_VARIABLES = [
  { launcher: "Open MPI", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE" },
  { launcher: "PMI", rank: "PMI_RANK", size: "PMI_SIZE" },
  { launcher: "Slurm", rank: "SLURM_PROCID", size: "SLURM_NTASKS" },
] as const;

/** Variables that hold a job's id, first found first; SLURM_JOB_ID.SLURM_STEP_ID comes after them. */
export const JOB_ID_VARIABLES = ["PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_JOBID"] as const;

const UINT32_MAX = 2 ** 32 - 1;

/**
 * The launcher that started this process, when it was mpirun or srun (see the file comment); undefined when
 * WORKPOOL_SIZE is set (`workpool launch` started it) or no launcher's variables are. BootstrapError naming the
 * variable when one of them is not a number in its range.
 */
export function detectForeignLaunch(env: NodeJS.ProcessEnv = process.env): ForeignLaunch | undefined {
  if (env[ENV.size] !== undefined) return undefined;
  const source = RANK_VARIABLES.find(
    (s) =>
      (env[s.rank] !== undefined || env[s.size] !== undefined) &&
      (s.launcher !== "Slurm" || env.SLURM_STEP_ID !== undefined),
  );
  if (!source) return undefined;
  const size = readInteger(env, source.size, 1, MAX_SIZE);
  const rank = readInteger(env, source.rank, 0, size - 1);
  return {
    launcher: source.launcher,
    rank,
    size,
    job: jobId(env),
    local: source.launcher === "Open MPI" ? openMpiLocal(env, size) : slurmLocal(env),
    step: source.launcher === "Open MPI" ? undefined : slurmStep(env),
  };
}

/** The integer in environment variable `name`, in min..max; BootstrapError naming it if unset or malformed. */
function readInteger(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") {
    throw new BootstrapError(
      `environment variable ${name} must be an integer in ${min}..${max}; got ${raw === undefined ? "nothing (unset)" : JSON.stringify(raw)}`,
    );
  }
  return envInteger(name, raw, min, max);
}

/** The job's id: the first set of JOB_ID_VARIABLES, else SLURM_JOB_ID.SLURM_STEP_ID, else undefined. */
function jobId(env: NodeJS.ProcessEnv): string | undefined {
  for (const name of JOB_ID_VARIABLES) if (env[name]) return env[name];
  if (env.SLURM_JOB_ID && env.SLURM_STEP_ID) return `${env.SLURM_JOB_ID}.${env.SLURM_STEP_ID}`;
  return undefined;
}

/** Whether mpirun put every rank on this host: OMPI_COMM_WORLD_LOCAL_SIZE (ranks on this host) is the size. */
function openMpiLocal(env: NodeJS.ProcessEnv, size: number): boolean {
  const name = "OMPI_COMM_WORLD_LOCAL_SIZE";
  return env[name] !== undefined && readInteger(env, name, 1, MAX_SIZE) === size;
}

/** Whether srun runs the step on one node (SLURM_STEP_NUM_NODES is 1). */
function slurmLocal(env: NodeJS.ProcessEnv): boolean {
  const name = "SLURM_STEP_NUM_NODES";
  return env[name] !== undefined && readInteger(env, name, 1, MAX_SIZE) === 1;
}

/** The Slurm step this process is a task of, or undefined outside one (no SLURM_STEP_ID or nodelist). */
function slurmStep(env: NodeJS.ProcessEnv): SlurmStep | undefined {
  const nodelist = env.SLURM_STEP_NODELIST;
  if (env.SLURM_STEP_ID === undefined || env.SLURM_JOB_ID === undefined || !nodelist) return undefined;
  return {
    jobId: readInteger(env, "SLURM_JOB_ID", 0, UINT32_MAX),
    stepId: readInteger(env, "SLURM_STEP_ID", 0, UINT32_MAX),
    nodelist,
    node: env.SLURMD_NODENAME || undefined,
  };
}
