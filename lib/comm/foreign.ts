import { createHash, randomBytes } from "node:crypto";
import { lookup } from "node:dns/promises";
import { constants, type FSWatcher, rmSync, watch } from "node:fs";
import { chmod, type FileHandle, open, rename, rm, writeFile } from "node:fs/promises";
import { isIPv4 } from "node:net";
import { hostname, networkInterfaces, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { BootstrapError } from "../errors.ts";
import { tcpEndpoint } from "./address.ts";
import { ENV, envInteger, type JobEnv, MAX_SIZE } from "./env.ts";
import { formatJobKey, type JobKey, makeJobKey, parseJobKey } from "./job-key.ts";
import { expandNodelist } from "./nodelist.ts";
import { notPrivate, privateFolder } from "./private-folder.ts";
import { connectTimeoutMs, type RendezvousService, serveRendezvous } from "./rendezvous.ts";

/**
 * Running under another launcher: a job started by Open MPI's `mpirun -n 4 node app.js` or Slurm's
 * `srun -n 4 node app.js`, as mpi4py apps are, with no `workpool launch` and no service of ours running.
 *
 * Detection (detectForeignLaunch), only when WORKPOOL_SIZE is unset: the rank and size come from
 * OMPI_COMM_WORLD_RANK/SIZE (mpirun), else PMI_RANK/PMI_SIZE (srun --mpi=pmi2), else SLURM_PROCID/SLURM_NTASKS
 * (srun; only in a job step, with SLURM_STEP_ID set: a batch script's own shell has SLURM_PROCID 0 and the job's
 * SLURM_NTASKS, and a program it runs without srun stays a world of one). The job's id is the first set of
 * PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, PMI_JOBID, SLURM_JOB_ID.SLURM_STEP_ID.
 *
 * Meeting (planMeeting, meetForeignJob): rank 0 serves the rendezvous in its own process (serveRendezvous) and
 * closes it once every rank has joined; every rank, rank 0 included, then joins it as under `workpool launch`.
 * The ranks need its address and the job's key (keys.ts):
 * - WORKPOOL_KEY set (`export WORKPOOL_KEY=$(npx workpool keygen)`; mpirun -x and Slurm pass it on) and
 *   WORKPOOL_RENDEZVOUS=tcp://HOST:PORT: rank 0 serves there (HOST must be its host), the others connect there.
 * - WORKPOOL_KEY set, in a Slurm step: the first host of SLURM_STEP_NODELIST (where task 0 runs), at port
 *   slurmRendezvousPort(SLURM_JOB_ID, SLURM_STEP_ID); 127.0.0.1 when the step has one node.
 * - Otherwise a file: rank 0 serves on a free port and writes the endpoint (and, when WORKPOOL_KEY is unset, the
 *   key it makes for the job) to a file named from the job id (meetingFileName) in a folder every rank sees; the
 *   others wait for it, and use their own WORKPOOL_KEY when they have one. Without WORKPOOL_KEY this is the only way to share a key, so it is taken even in a
 *   Slurm step or with WORKPOOL_RENDEZVOUS (with it, rank 0 still serves at that address, and the file says so).
 * Rank 0 serves on 127.0.0.1 when the launcher says every rank is on its host (OMPI_COMM_WORLD_LOCAL_SIZE equals
 * the size, or SLURM_STEP_NUM_NODES is 1), else on the address of its host the others reach
 * (reachableAddress). Each rank binds its own inbox on the address that faces the rendezvous (address.ts).
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

/** The lowest port slurmRendezvousPort gives: above the well-known and most registered services' ports. */
export const SLURM_PORT_BASE = 20_000;
/** How many ports slurmRendezvousPort spreads jobs over: it gives SLURM_PORT_BASE .. SLURM_PORT_BASE + 19999. */
export const SLURM_PORT_SPAN = 20_000;
/**
 * How many ports apart consecutive Slurm jobs' rendezvous are: the first 31 steps of 645 consecutive jobs all get
 * ports of their own (31 × 645 < 20000), and 31, prime to the span, reaches every port of it.
 */
export const SLURM_PORT_JOB_STRIDE = 31;

/**
 * How long a rank waits for rank 0's rendezvous file unless WORKPOOL_CONNECT_TIMEOUT_MS says otherwise: longer
 * than the connect timeout, because a network file system may show a new file to other hosts only after its
 * attribute cache expires.
 */
export const DEFAULT_FILE_WAIT_MS = 60_000;
/**
 * How often a waiting rank looks for the file besides watching its folder: a watch (inotify) does not see files
 * that another host makes on a network file system.
 */
const FILE_RECHECK_MS = 200;
const LOOPBACK = "127.0.0.1";
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

/** What the rendezvous file holds. */
export interface MeetingFile {
  /** The rendezvous's ZeroMQ endpoint. */
  readonly endpoint: string;
  /**
   * The job's key, when rank 0 made it (no WORKPOOL_KEY). With WORKPOOL_KEY set the file holds none: every rank
   * uses its own, so a rank given another key cannot join.
   */
  readonly key?: JobKey;
  /** Rank 0's process and host: a waiting rank on that host skips a file whose writer is gone (a stale one). */
  readonly pid: number;
  readonly host: string;
}

/** How this rank takes part in a job started by mpirun or srun, from meetForeignJob. */
export interface ForeignMeeting {
  /** The job as `connect()` joins it: rank, size, job id, the rendezvous to join, the key, transport tcp. */
  readonly env: JobEnv;
  /**
   * On rank 0, resolves once every rank has joined and the rendezvous is closed and its file removed (or once
   * `abandon` did so); on the others, resolved.
   */
  readonly done: Promise<void>;
  /** On rank 0, stops serving the rendezvous and removes its file at once (joining failed); else nothing. */
  abandon(): void;
}

/**
 * Gets this rank of `launch` ready to join the job: on rank 0, serves the rendezvous (and writes its file);
 * on the others, learns where it is (reading the file, if that is the way). Rejects with BootstrapError when
 * rank 0 cannot serve it or write the file, or when the file does not come in time (naming the file and folder).
 */
export async function meetForeignJob(
  launch: ForeignLaunch,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ForeignMeeting> {
  const plan = planMeeting(launch, env);
  if (launch.rank === 0) return serveMeeting(launch, plan, env);
  const found =
    plan.way === "address"
      ? { endpoint: plan.connect, key: plan.key }
      : await waitForMeetingFile(plan.file, fileWaitMs(env), `rank ${launch.rank}`, plan.why);
  const endpoint = await ipv4Endpoint(found.endpoint, plan.way === "address" ? plan.serve.origin : plan.file);
  const key = plan.key ?? found.key;
  if (key === undefined) {
    throw new BootstrapError(
      `rank ${launch.rank}: the rendezvous file ${plan.way === "file" ? plan.file : ""} holds no key: rank 0 had ` +
        `${ENV.key} set and this rank has not; give every rank the same ${ENV.key}`,
    );
  }
  return { env: foreignJobEnv(launch, env, endpoint, key), done: Promise.resolve(), abandon: () => {} };
}

/** How long to wait for the rendezvous file: WORKPOOL_CONNECT_TIMEOUT_MS if set, else DEFAULT_FILE_WAIT_MS. */
function fileWaitMs(env: NodeJS.ProcessEnv): number {
  return env[ENV.connectTimeoutMs] === undefined ? DEFAULT_FILE_WAIT_MS : connectTimeoutMs(env);
}

/** The JobEnv of a rank of `launch` that joins the rendezvous at `endpoint` with `key`. */
function foreignJobEnv(launch: ForeignLaunch, env: NodeJS.ProcessEnv, endpoint: string, key: JobKey): JobEnv {
  return {
    rank: launch.rank,
    size: launch.size,
    job: launch.job ?? launch.launcher,
    rendezvous: endpoint,
    transport: "tcp",
    ipcDir: undefined,
    host: env[ENV.host] || undefined,
    pool: env[ENV.pool],
    key,
  };
}

/** Rank 0: serves the rendezvous as `plan` says, writes its file if that is the way, and cleans up when done. */
async function serveMeeting(launch: ForeignLaunch, plan: MeetingPlan, env: NodeJS.ProcessEnv): Promise<ForeignMeeting> {
  const key = plan.key ?? makeJobKey();
  const service = await serve(launch.size, plan.serve, key);
  const file = plan.way === "file" ? plan.file : undefined;
  // A file left behind would hold a dead job's key and send a later job of the same id to a dead address.
  const removeAtExit = (): void => {
    if (file) rmSync(file, { force: true });
  };
  let finished = false;
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => (markDone = resolve));
  const finish = (): void => {
    if (finished) return;
    finished = true;
    service.close();
    removeAtExit();
    process.removeListener("exit", removeAtExit);
    markDone();
  };
  if (file) {
    process.once("exit", removeAtExit);
    try {
      // A key the user gave (WORKPOOL_KEY) every rank has already: it is not written anywhere.
      const shared = plan.key ? {} : { key };
      await writeMeetingFile(file, { endpoint: service.endpoint, ...shared, pid: process.pid, host: hostname() });
    } catch (e) {
      finish();
      throw e;
    }
  }
  service.complete.then(finish, finish);
  return { env: foreignJobEnv(launch, env, service.endpoint, key), done, abandon: finish };
}

/** Binds the rendezvous service at `at`; BootstrapError naming the address, its origin and the remedy if not. */
async function serve(size: number, at: ServeAt, key: JobKey): Promise<RendezvousService> {
  const host = at.host === undefined ? await reachableAddress() : await resolveIPv4(at.host, at.origin);
  const address = tcpEndpoint(host, at.port);
  try {
    return await serveRendezvous(size, address, key);
  } catch (cause) {
    throw new BootstrapError(
      `rank 0 cannot serve the rendezvous at ${address} (${at.origin}): ${(cause as Error).message}${at.remedy}`,
      { cause },
    );
  }
}

/**
 * The address of this host that other hosts reach it at: its host name's IPv4 address when that is not
 * loopback, else its first non-internal IPv4 interface's. BootstrapError if it has neither.
 */
export async function reachableAddress(): Promise<string> {
  const name = hostname();
  const named = await lookup(name, { family: 4 }).then(
    (a) => a.address,
    () => undefined,
  );
  if (named !== undefined && !named.startsWith("127.")) return named;
  const iface = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === "IPv4" && !i.internal);
  if (iface) return iface.address;
  throw new BootstrapError(
    `rank 0: no address of this host (${name}) that other hosts reach: its name resolves to ${named ?? "nothing"} ` +
      `and it has no non-internal IPv4 interface; set ${ENV.rendezvous}=tcp://HOST:PORT`,
  );
}

/** `host` if it is an IPv4 address, else its IPv4 address (ZeroMQ sockets here speak IPv4); BootstrapError if none. */
async function resolveIPv4(host: string, origin: string): Promise<string> {
  if (isIPv4(host)) return host;
  try {
    return (await lookup(host, { family: 4 })).address;
  } catch (cause) {
    throw new BootstrapError(`host ${host} (${origin}) has no IPv4 address: ${(cause as Error).message}`, { cause });
  }
}

/** `tcp://HOST:PORT` with HOST resolved to its IPv4 address. */
async function ipv4Endpoint(endpoint: string, origin: string): Promise<string> {
  const m = /^tcp:\/\/([^:/]+):(\d+)$/.exec(endpoint);
  if (!m) throw new BootstrapError(`the rendezvous endpoint from ${origin} must be tcp://HOST:PORT; got ${endpoint}`);
  return tcpEndpoint(await resolveIPv4(m[1] as string, origin), Number(m[2]));
}

/**
 * Writes the rendezvous file atomically: a temporary name in the same folder, mode 0600 (it holds the job's
 * key), then renamed over `file`. BootstrapError naming the file and its folder if that fails.
 */
export async function writeMeetingFile(file: string, content: MeetingFile): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const text = JSON.stringify({ ...content, key: content.key ? formatJobKey(content.key) : undefined });
  try {
    await writeFile(temp, text, { mode: 0o600, flag: "wx" });
    await chmod(temp, 0o600);
    await rename(temp, file);
  } catch (cause) {
    await rm(temp, { force: true });
    throw new BootstrapError(
      `rank 0 cannot write the rendezvous file ${basename(file)} in ${dirname(file)}: ${(cause as Error).message}; ` +
        `set ${ENV.rendezvousDir} to a folder every rank sees and rank 0 may write`,
      { cause },
    );
  }
}

/**
 * Waits for rank 0's rendezvous `file` and reads it (see firstFreshFile). Rejects with BootstrapError naming the
 * file and the folder when the file is not there within `ms`, when the folder does not exist, or when the file
 * cannot be read or is not one; `who` names this rank, `why` is added to the message of the timeout.
 */
export async function waitForMeetingFile(file: string, ms: number, who: string, why = ""): Promise<MeetingFile> {
  const dir = dirname(file);
  const name = basename(file);
  const stale: number[] = [];
  let found: MeetingFile | undefined;
  try {
    found = await firstFreshFile(file, ms, (pid) => stale.push(pid));
  } catch (cause) {
    const message =
      (cause as NodeJS.ErrnoException).code === "ENOENT"
        ? `the folder ${dir} of the rendezvous file does not exist (${ENV.rendezvousDir})`
        : `cannot read the rendezvous file ${name} in ${dir}: ${(cause as Error).message}`;
    throw new BootstrapError(`${who}: ${message}`, { cause });
  }
  if (found) return found;
  const skipped = stale.length === 0 ? "" : ` (skipped a stale one left by process ${stale.at(-1)}, gone)`;
  throw new BootstrapError(
    `${who}: the rendezvous file ${name} did not appear in ${dir} within ${ms} ms (${ENV.connectTimeoutMs})${skipped}: ` +
      `rank 0 writes it there once it starts, so every rank must see that folder (${ENV.rendezvousDir}; default ` +
      `the system's temporary folder when every rank runs on one host, else the current folder)${why}`,
  );
}

/**
 * Resolves with `file`'s content once it holds a fresh one, looking whenever its folder changes (a watch) and
 * every FILE_RECHECK_MS; with undefined if none comes within `ms` (and the reads begun by then have ended). A
 * stale file (its writer was on this host and is gone: a job of the same id left it) goes to `onStale` and the
 * wait goes on. Rejects with the error of a read that fails other than for a missing file, or with the watch's
 * ENOENT when the folder does not exist.
 */
function firstFreshFile(file: string, ms: number, onStale: (pid: number) => void): Promise<MeetingFile | undefined> {
  return new Promise<MeetingFile | undefined>((resolvePromise, rejectPromise) => {
    let watcher: FSWatcher | undefined;
    let settled = false;
    const settle = (then: () => void): void => {
      if (settled) return;
      settled = true;
      watcher?.close();
      clearInterval(poll);
      clearTimeout(timer);
      then();
    };
    // The time is up only once every look begun has ended: on a loaded host the first read can take longer than
    // the whole wait, and a rank must not say the file never appeared without having read the folder once.
    let looking = 0;
    let timeUp = false;
    const giveUpIfDone = (): void => {
      if (timeUp && looking === 0) settle(() => resolvePromise(undefined));
    };
    const look = (): void => {
      if (timeUp) return;
      looking++;
      readMeetingFile(file).then(
        (found) => {
          looking--;
          if (found !== undefined && !settled) {
            if (found.host === hostname() && !isRunning(found.pid)) onStale(found.pid);
            else settle(() => resolvePromise(found));
          }
          giveUpIfDone();
        },
        (e: unknown) => settle(() => rejectPromise(e)),
      );
    };
    const poll = setInterval(look, FILE_RECHECK_MS);
    const timer = setTimeout(() => {
      timeUp = true;
      giveUpIfDone();
    }, ms);
    try {
      watcher = watch(dirname(file), look);
      watcher.on("error", () => watcher?.close());
    } catch (e) {
      // Without a watch (a file system without them, too many watches) looking every FILE_RECHECK_MS still works.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") settle(() => rejectPromise(e));
    }
    // After the watch is set: a file written before it is found here, one written after it by the watch.
    look();
  });
}

/** The rendezvous file's content, or undefined while there is none. Rejects if it is unreadable or not one. */
async function readMeetingFile(file: string): Promise<MeetingFile | undefined> {
  let text: string;
  let handle: FileHandle;
  try {
    // Not through a link; and only a file of this user's that nobody else may read or write (it holds the key):
    // in a shared folder, another user could have planted one.
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    if ((e as NodeJS.ErrnoException).code === "ELOOP") throw new Error("it is a symbolic link, not a rendezvous file");
    throw e;
  }
  try {
    const why = notPrivate(await handle.stat(), "file");
    if (why !== undefined) throw new Error(`it ${why}: not a rendezvous file written by this user's rank 0`);
    text = await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
  let parsed: { endpoint?: unknown; key?: unknown; pid?: unknown; host?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    parsed = {};
  }
  const { endpoint, key, pid, host } = parsed ?? {};
  const validPid = typeof pid === "number" && Number.isInteger(pid) && pid > 0;
  const keyOk = key === undefined || typeof key === "string";
  if (typeof endpoint !== "string" || !keyOk || !validPid || typeof host !== "string") {
    throw new Error("not a rendezvous file (expected JSON with endpoint, pid, host and maybe key)");
  }
  const parsedKey = typeof key === "string" ? parseJobKey(key, `the key in ${file}`) : undefined;
  return { endpoint, ...(parsedKey ? { key: parsedKey } : {}), pid: pid as number, host };
}

/** Whether a process with this pid exists (one of another user's counts). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
