import { BootstrapError } from "../errors.ts";
import { type JobKey, parseJobKey } from "./job-key.ts";

/**
 * Every environment variable of a job, in one table: lib/, launcher/ and bench/ read and set these names only
 * through it. Stable names: other launchers (ssh, mpirun, Slurm) may set them too.
 */
export const ENV = {
  // Where the rank is in the job (read by connect(), lib/comm). Set by the launcher for every rank.
  /** This process's rank, 0..size-1. */
  rank: "WORKPOOL_RANK",
  /** The number of ranks; without it a process is a world of size 1. */
  size: "WORKPOOL_SIZE",
  /** The job's id. */
  job: "WORKPOOL_JOB",
  /**
   * ZeroMQ endpoint of the rendezvous service. Under mpirun or Slurm (lib/comm/foreign.ts) a user may set it,
   * `tcp://HOST:PORT`: rank 0 serves the rendezvous there (HOST must be rank 0's) and the others connect to it.
   */
  rendezvous: "WORKPOOL_RENDEZVOUS",
  /** `ipc` or `tcp`: how ranks reach each other. */
  transport: "WORKPOOL_TRANSPORT",
  /** Folder for ipc:// endpoints (transport ipc). */
  ipcDir: "WORKPOOL_IPC_DIR",
  /** The launcher's `--pool SPEC`, unparsed; unset without one. */
  pool: "WORKPOOL_POOL",
  /** The job's CURVE key pair (lib/comm/job-key.ts), 80 characters; connect() removes it from the environment. */
  key: "WORKPOOL_KEY",
  /** `1`: the job runs without CURVE and has no key (`workpool launch --insecure`). */
  insecure: "WORKPOOL_INSECURE",

  // Settings a user may give in the launcher's environment; ranks inherit them.
  /**
   * Address other ranks reach this one at (transport tcp); default: the address of the interface that faces the
   * rendezvous host (lib/comm/address.ts), so 127.0.0.1 for a job on one host.
   */
  host: "WORKPOOL_HOST",
  /**
   * How long connect() waits to reach the rendezvous, in ms; default 10000 (then 300 s for the others). Under
   * mpirun or Slurm, also how long a rank waits for rank 0's rendezvous file (default 60 s there).
   */
  connectTimeoutMs: "WORKPOOL_CONNECT_TIMEOUT_MS",
  /**
   * Under mpirun or Slurm without a rendezvous address (lib/comm/foreign.ts): the folder, shared by every rank,
   * where rank 0 leaves the rendezvous file; default the system's temporary folder when every rank runs on one
   * host, else the current folder.
   */
  rendezvousDir: "WORKPOOL_RENDEZVOUS_DIR",
  /** How often a rank checks whether its app ended without close() (lib/comm/router.ts), in ms; default 1000. */
  idleCheckMs: "WORKPOOL_IDLE_CHECK_MS",
  /** How often a rank sends the launcher a heartbeat over its control channel, in ms; 0 or unset: never. */
  heartbeatMs: "WORKPOOL_HEARTBEAT_MS",
  /**
   * A fixed grain (iterations per range task) for every parallel loop that does not set one in code
   * (lib/loop/options.ts); unset: chosen at run time. `WORKPOOL_LOOP_GRAIN=64 workpool launch ...` compares.
   */
  loopGrain: "WORKPOOL_LOOP_GRAIN",

  // The control channel to the launcher (lib/control/channel.ts). Set by the launcher for every rank.
  /** Where the launcher's control server listens: `ipc://PATH` (a Unix socket) or `tcp://HOST:PORT`. */
  control: "WORKPOOL_CONTROL",
  /** The job's secret: a rank's first line on the control channel must carry it. */
  token: "WORKPOOL_TOKEN",
  /** `1`: pools report their statistics after each run. */
  reportStats: "WORKPOOL_REPORT_STATS",
  /** `1`: pools report progress for the live progress line. */
  reportProgress: "WORKPOOL_REPORT_PROGRESS",
  /**
   * A remote rank's job variables as one JSON object, set by the wrapper the launcher starts on its host from
   * the line it sends on standard input (launcher/backends/hosts.ts); lib/control/boot.ts moves them into the
   * environment before anything reads it.
   */
  boot: "WORKPOOL_BOOT",
  /** `1`: pools send the launcher their trace events (`--trace`). */
  reportTrace: "WORKPOOL_REPORT_TRACE",
  /** `1`: every rank sends live samples for the dashboard from its start (lib/control/live.ts). */
  reportLive: "WORKPOOL_REPORT_LIVE",
} as const;

/**
 * The variables a launcher sets for each rank. A rank never inherits these from the launcher's own
 * environment: the ones a job leaves unset (`pool`) are removed.
 */
export const JOB_VARIABLES: readonly string[] = [
  ENV.rank,
  ENV.size,
  ENV.job,
  ENV.rendezvous,
  ENV.transport,
  ENV.ipcDir,
  ENV.pool,
  ENV.key,
  ENV.insecure,
  ENV.control,
  ENV.token,
  ENV.reportStats,
  ENV.reportProgress,
  ENV.reportTrace,
  ENV.reportLive,
];

/** `base` (the launcher's environment) less every job variable, plus `job` (one rank's job variables). */
export function rankEnvironment(
  base: NodeJS.ProcessEnv,
  job: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && !JOB_VARIABLES.includes(name)) env[name] = value;
  }
  return { ...env, ...job };
}

/**
 * Moves the job variables in WORKPOOL_BOOT (a JSON object of strings) into `env`, in place of any job variable
 * already there, and removes WORKPOOL_BOOT. Does nothing without it; BootstrapError if it is not such an object.
 */
export function applyBoot(env: NodeJS.ProcessEnv = process.env): void {
  const raw = env[ENV.boot];
  if (raw === undefined) return;
  delete env[ENV.boot];
  let vars: unknown;
  try {
    vars = JSON.parse(raw);
  } catch {
    vars = undefined;
  }
  if (vars === null || typeof vars !== "object" || Object.values(vars).some((v) => typeof v !== "string")) {
    throw new BootstrapError(`environment variable ${ENV.boot} must be a JSON object of strings`);
  }
  for (const name of JOB_VARIABLES) delete env[name];
  Object.assign(env, vars);
}

/**
 * A duration in ms from environment variable `name`: `fallback` when it is unset, else a positive number
 * (or 0 when `zero` is allowed: "none"); anything else is a BootstrapError naming the variable.
 */
export function envMs(name: string, fallback: number, zero = false, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !zero)) {
    throw new BootstrapError(
      `environment variable ${name} must be a ${zero ? "non-negative" : "positive"} number of ms; got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/** The most ranks a job may have. */
export const MAX_SIZE = 1 << 20;

export type TransportKind = "ipc" | "tcp";

export interface JobEnv {
  readonly rank: number;
  readonly size: number;
  readonly job: string;
  /** ZeroMQ endpoint of the rendezvous service; absent for a one-rank job started without a launcher. */
  readonly rendezvous: string | undefined;
  readonly transport: TransportKind;
  /** Folder for ipc:// endpoints (transport ipc). */
  readonly ipcDir: string | undefined;
  /** Address other ranks reach this one at (transport tcp), when WORKPOOL_HOST gives it; else chosen by connect(). */
  readonly host: string | undefined;
  /** The launcher's `--pool SPEC`, unparsed. */
  readonly pool: string | undefined;
  /**
   * The job's key, which every connection of the job is authenticated with; absent for a world of one, and for a
   * job started without security (`--insecure`).
   */
  readonly key: JobKey | undefined;
}

/**
 * The integer in `raw`, the value of environment variable `name`; BootstrapError naming the variable and the
 * value unless it is a whole number in min..max.
 */
export function envInteger(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new BootstrapError(
      `environment variable ${name} must be an integer in ${min}..${max}; got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

export function readJobEnv(env: NodeJS.ProcessEnv = process.env): JobEnv {
  const sizeRaw = env[ENV.size];
  if (sizeRaw === undefined) {
    return {
      rank: 0,
      size: 1,
      job: "local",
      rendezvous: undefined,
      transport: "ipc",
      ipcDir: undefined,
      host: undefined,
      pool: env[ENV.pool],
      key: undefined,
    };
  }
  const size = envInteger(ENV.size, sizeRaw, 1, MAX_SIZE);
  const rank = envInteger(ENV.rank, env[ENV.rank] ?? "", 0, size - 1);
  const transport = env[ENV.transport] ?? "ipc";
  if (transport !== "ipc" && transport !== "tcp") {
    throw new BootstrapError(
      `environment variable ${ENV.transport} must be ipc or tcp; got ${JSON.stringify(transport)}`,
    );
  }
  const rendezvous = env[ENV.rendezvous];
  if (size > 1 && !rendezvous) {
    throw new BootstrapError(`environment variable ${ENV.rendezvous} is required when ${ENV.size} is ${size}`);
  }
  const ipcDir = env[ENV.ipcDir];
  if (size > 1 && transport === "ipc" && !ipcDir) {
    throw new BootstrapError(`environment variable ${ENV.ipcDir} is required with transport ipc`);
  }
  const keyText = env[ENV.key];
  if (size > 1 && !keyText && env[ENV.insecure] !== "1") {
    throw new BootstrapError(
      `environment variable ${ENV.key} is required when ${ENV.size} is ${size}: every connection of a job is ` +
        `authenticated with the job's key (\`workpool keygen\` makes one; ${ENV.insecure}=1 runs without one)`,
    );
  }
  return {
    rank,
    size,
    job: env[ENV.job] ?? "job",
    rendezvous,
    transport,
    ipcDir,
    host: env[ENV.host] || undefined,
    pool: env[ENV.pool],
    key: keyText ? parseJobKey(keyText, `environment variable ${ENV.key}`) : undefined,
  };
}
