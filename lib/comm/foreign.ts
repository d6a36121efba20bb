import { lookup } from "node:dns/promises";
import { rmSync } from "node:fs";
import { isIPv4 } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import { BootstrapError } from "../errors.ts";
import { tcpEndpoint } from "./address.ts";
import { ENV, type JobEnv } from "./env.ts";
import type { ForeignLaunch } from "./foreign-launch.ts";
import { type JobKey, makeJobKey } from "./job-key.ts";
import { DEFAULT_FILE_WAIT_MS, waitForMeetingFile, writeMeetingFile } from "./meeting-file.ts";
import { type MeetingPlan, planMeeting, type ServeAt } from "./meeting-plan.ts";
import { connectTimeoutMs, type RendezvousService, serveRendezvous } from "./rendezvous.ts";

/**
 * Running under another launcher: a job started by Open MPI's `mpirun -n 4 node app.js` or Slurm's
 * `srun -n 4 node app.js`, as mpi4py apps are, with no `workpool launch` and no service of ours running.
 *
 * Detection (detectForeignLaunch, foreign-launch.ts), only when WORKPOOL_SIZE is unset: the rank and size come from
 * OMPI_COMM_WORLD_RANK/SIZE (mpirun), else PMI_RANK/PMI_SIZE (srun --mpi=pmi2), else SLURM_PROCID/SLURM_NTASKS
 * (srun; only in a job step, with SLURM_STEP_ID set: a batch script's own shell has SLURM_PROCID 0 and the job's
 * SLURM_NTASKS, and a program it runs without srun stays a world of one). The job's id is the first set of
 * PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, PMI_JOBID, SLURM_JOB_ID.SLURM_STEP_ID.
 *
 * Meeting (meetForeignJob, here; the way is planMeeting's, meeting-plan.ts): rank 0 serves the rendezvous in
 * its own process (serveRendezvous) and closes it once every rank has joined; every rank, rank 0 included, then
 * joins it as under `workpool launch`.
 * The ranks need its address and the job's key (job-key.ts):
 * - WORKPOOL_KEY set (`export WORKPOOL_KEY=$(npx workpool keygen)`; mpirun -x and Slurm pass it on) and
 *   WORKPOOL_RENDEZVOUS=tcp://HOST:PORT: rank 0 serves there (HOST must be its host), the others connect there.
 * - WORKPOOL_KEY set, in a Slurm step: the first host of SLURM_STEP_NODELIST (where task 0 runs), at port
 *   slurmRendezvousPort(SLURM_JOB_ID, SLURM_STEP_ID); 127.0.0.1 when the step has one node.
 * - Otherwise a file: rank 0 serves on a free port and writes the endpoint (and, when WORKPOOL_KEY is unset, the
 *   key it makes for the job) to a file named from the job id (meetingFileName) in a folder every rank sees
 *   (meeting-file.ts); the others wait for it, and use their own WORKPOOL_KEY when they have one. Without
 *   WORKPOOL_KEY this is the only way to share a key, so it is taken even in a Slurm step or with
 *   WORKPOOL_RENDEZVOUS (with it, rank 0 still serves at that address, and the file says so).
 * Rank 0 serves on 127.0.0.1 when the launcher says every rank is on its host (OMPI_COMM_WORLD_LOCAL_SIZE equals
 * the size, or SLURM_STEP_NUM_NODES is 1), else on the address of its host the others reach
 * (reachableAddress). Each rank binds its own inbox on the address that faces the rendezvous (address.ts).
 */

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
