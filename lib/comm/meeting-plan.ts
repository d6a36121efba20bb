import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BootstrapError } from "../errors.ts";
import { tcpEndpoint } from "./address.ts";
import { ENV } from "./env.ts";
import { type ForeignLaunch, JOB_ID_VARIABLES, type SlurmStep } from "./foreign-launch.ts";
import { type JobKey, parseJobKey } from "./job-key.ts";
import { expandNodelist } from "./nodelist.ts";
import { privateFolder } from "./private-folder.ts";

/**
 * How the ranks of a job started by mpirun or srun meet (foreign.ts describes the ways): at an address every
 * rank knows (WORKPOOL_RENDEZVOUS with WORKPOOL_KEY, or a Slurm step's port), else through rank 0's rendezvous
 * file, whose name and folder are decided here. Only planning: nothing is served, written or read.
 */

/** The lowest port slurmRendezvousPort gives: above the well-known and most registered services' ports. */
export const SLURM_PORT_BASE = 20_000;
/** How many ports slurmRendezvousPort spreads jobs over: it gives SLURM_PORT_BASE .. SLURM_PORT_BASE + 19999. */
export const SLURM_PORT_SPAN = 20_000;
/**
 * How many ports apart consecutive Slurm jobs' rendezvous are: the first 31 steps of 645 consecutive jobs all get
 * ports of their own (31 × 645 < 20000), and 31, prime to the span, reaches every port of it.
 */
export const SLURM_PORT_JOB_STRIDE = 31;

const LOOPBACK = "127.0.0.1";

/**
 * The port of a Slurm step's rendezvous when WORKPOOL_KEY is set and WORKPOOL_RENDEZVOUS is not:
 * `20000 + (jobId * 31 + stepId) mod 20000`, so in 20000..39999 (see SLURM_PORT_JOB_STRIDE).
 */
export function slurmRendezvousPort(jobId: number, stepId: number): number {
  return SLURM_PORT_BASE + ((jobId * SLURM_PORT_JOB_STRIDE + stepId) % SLURM_PORT_SPAN);
}

/**
 * The name of a job's rendezvous file: `.workpool-<job>.rendezvous`, the job id kept when it is short and made
 * of letters, digits, `.`, `_` and `-`; otherwise those kept and a hash of the whole id added, so that two ids
 * never share a name.
 */
export function meetingFileName(job: string): string {
  const safe = job.replace(/[^A-Za-z0-9._-]/g, "_");
  if (safe === job && job.length <= 64) return `.workpool-${job}.rendezvous`;
  const hash = createHash("sha256").update(job).digest("hex").slice(0, 16);
  return `.workpool-${safe.slice(0, 48)}-${hash}.rendezvous`;
}

/** Where and how rank 0 serves the rendezvous. */
export interface ServeAt {
  /** The host to bind: a name or IPv4 address; undefined: this host's address the others reach (reachableAddress). */
  readonly host: string | undefined;
  /** The port, or `*` for one the system picks. */
  readonly port: number | "*";
  /** Where the address comes from, for error messages. */
  readonly origin: string;
  /** What the user can do when rank 0 cannot bind it. */
  readonly remedy: string;
}

/** The ranks meet at an address every one of them knows, and the key is WORKPOOL_KEY. */
export interface AddressPlan {
  readonly way: "address";
  readonly serve: ServeAt;
  /** `tcp://HOST:PORT`, where ranks other than 0 connect. */
  readonly connect: string;
  readonly key: JobKey;
}

/** Rank 0 writes the rendezvous endpoint and the job key to `file`; the others read it there. */
export interface FilePlan {
  readonly way: "file";
  readonly serve: ServeAt;
  /** The rendezvous file's absolute path. */
  readonly file: string;
  /** WORKPOOL_KEY; undefined when unset, and rank 0 makes the job's key. */
  readonly key: JobKey | undefined;
  /** Why the file is used though an address was known (no WORKPOOL_KEY), for error messages; else "". */
  readonly why: string;
}

/** How the ranks of a job started by mpirun or srun meet: at a known address, or through a file (planMeeting). */
export type MeetingPlan = AddressPlan | FilePlan;

/**
 * Decides how the ranks of `launch` meet (see the file comment), from WORKPOOL_KEY, WORKPOOL_RENDEZVOUS and
 * WORKPOOL_RENDEZVOUS_DIR in `env`. BootstrapError naming the variable when one is malformed; on rank 0 of a
 * Slurm step, also when it does not run on the step's first host, where the others look for it.
 */
export function planMeeting(
  launch: ForeignLaunch,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): MeetingPlan {
  const keyText = env[ENV.key];
  const key = keyText ? parseJobKey(keyText, `environment variable ${ENV.key}`) : undefined;
  const rendezvous = env[ENV.rendezvous];
  const given = rendezvous ? givenAddress(rendezvous) : undefined;
  const known = key && (given ?? (launch.step ? slurmAddress(launch, launch.step) : undefined));
  if (key && known) return { way: "address", serve: known.serve, connect: known.connect, key };
  if (launch.job === undefined) {
    throw new BootstrapError(
      `cannot name the rendezvous file, which keeps two jobs apart: none of ${JOB_ID_VARIABLES.join(", ")}, ` +
        `SLURM_JOB_ID with SLURM_STEP_ID is set; set ${ENV.key} and ${ENV.rendezvous}=tcp://HOST:PORT to meet without a file`,
    );
  }
  const dir = resolve(cwd, env[ENV.rendezvousDir] || (launch.local ? localMeetingFolder() : "."));
  const serve: ServeAt = given?.serve ?? {
    host: launch.local ? LOOPBACK : undefined,
    port: "*",
    origin: "a free port, announced in the rendezvous file",
    remedy: `; set ${ENV.rendezvous}=tcp://HOST:PORT, HOST an address of rank 0's host the others reach`,
  };
  const instead = given ? `at ${given.connect}` : launch.step ? "at the port of the Slurm job and step" : "";
  const why = instead
    ? `; without ${ENV.key} the ranks share the job's key through this file (export ${ENV.key}=$(npx workpool keygen) ` +
      `to meet ${instead} without one)`
    : "";
  return { way: "file", serve, file: join(dir, meetingFileName(launch.job)), key, why };
}

/**
 * Where ranks on one host meet by default: this user's private folder under the system's temporary folder
 * (private-folder.ts), so that another user cannot plant a rendezvous file for them. BootstrapError if a folder
 * of that name is there but is not this user's private one.
 */
function localMeetingFolder(): string {
  const folder = privateFolder(tmpdir());
  if ("dir" in folder) return folder.dir;
  throw new BootstrapError(
    `cannot meet in ${folder.why}; another user may have made it: remove it, or set ${ENV.rendezvousDir} to a ` +
      "folder of your own",
  );
}

/** An address every rank knows, with how rank 0 serves it. */
interface KnownAddress {
  readonly serve: ServeAt;
  readonly connect: string;
}

/** WORKPOOL_RENDEZVOUS as rank 0 serves it: `tcp://HOST:PORT`, HOST rank 0's. */
function givenAddress(text: string): KnownAddress {
  const m = /^tcp:\/\/([^:/[\]*]+):(\d+)$/.exec(text);
  const port = Number(m?.[2]);
  if (!m || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new BootstrapError(
      `environment variable ${ENV.rendezvous} must be tcp://HOST:PORT, HOST a name or IPv4 address of rank 0's ` +
        `host and PORT in 1..65535; got ${JSON.stringify(text)}`,
    );
  }
  const origin = `environment variable ${ENV.rendezvous}`;
  const remedy = `; rank 0 serves the rendezvous there, so HOST must be an address of rank 0's host and PORT free`;
  return { serve: { host: m[1], port, origin, remedy }, connect: text };
}

/**
 * A Slurm step's rendezvous: the first host of SLURM_STEP_NODELIST (127.0.0.1 if the step has one node) at
 * slurmRendezvousPort. BootstrapError on rank 0 when SLURMD_NODENAME says it runs elsewhere.
 */
function slurmAddress(launch: ForeignLaunch, step: SlurmStep): KnownAddress {
  const port = slurmRendezvousPort(step.jobId, step.stepId);
  const derived = `port ${port}, derived from Slurm job ${step.jobId} step ${step.stepId}`;
  const remedy = `; another program may hold the port: set ${ENV.rendezvous}=tcp://HOST:PORT to choose the address`;
  if (launch.local) {
    return { serve: { host: LOOPBACK, port, origin: derived, remedy }, connect: tcpEndpoint(LOOPBACK, port) };
  }
  const first = expandNodelist(step.nodelist, "environment variable SLURM_STEP_NODELIST")[0];
  if (first === undefined) {
    throw new BootstrapError(`environment variable SLURM_STEP_NODELIST names no host; got ${step.nodelist}`);
  }
  if (launch.rank === 0 && step.node !== undefined && step.node !== first) {
    throw new BootstrapError(
      `rank 0 runs on ${step.node}, not on ${first}, the first host of SLURM_STEP_NODELIST, where the other ranks ` +
        `look for the rendezvous; set ${ENV.rendezvous}=tcp://${step.node}:${port}`,
    );
  }
  const origin = `${derived}, on ${first}, the first host of SLURM_STEP_NODELIST`;
  return { serve: { host: undefined, port, origin, remedy }, connect: tcpEndpoint(first, port) };
}
